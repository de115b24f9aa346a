/* Host side of the bridge wire protocol: names, ids and request bodies. */
#include "bridge/protocol.h"

#include <string.h>

#include "base/util.h"

static bool id_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool bridge_id_is_valid(const char *s, size_t len) {
  if (s == NULL || len == 0 || len > BRIDGE_ID_MAX)
    return false;
  for (size_t i = 0; i < len; i++)
    if (!id_char((unsigned char)s[i]))
      return false;
  return true;
}

static bool has_suffix(const char *name, size_t n, const char *suffix,
                       size_t *stem) {
  size_t k = strlen(suffix);
  if (n < k || memcmp(name + n - k, suffix, k) != 0)
    return false;
  *stem = n - k;
  return true;
}

enum bridge_name_kind bridge_classify_name(const char *name,
                                           char id[BRIDGE_ID_MAX + 1]) {
  size_t n = strlen(name), stem;
  /* Any name ending in .done is a call attempt, counted even when its id
   * is bad (a path-traversal attempt like "..%2f..done" included). */
  if (has_suffix(name, n, ".done", &stem)) {
    if (!bridge_id_is_valid(name, stem))
      return BRIDGE_NAME_BAD_MARKER;
    memcpy(id, name, stem);
    id[stem] = '\0';
    return BRIDGE_NAME_MARKER;
  }
  /* Clients write their temp files under a leading dot; the host leaves
   * them alone until they are old enough to be garbage. */
  if (n > 0 && name[0] == '.')
    return BRIDGE_NAME_TEMP;
  if (has_suffix(name, n, ".json", &stem) && bridge_id_is_valid(name, stem)) {
    memcpy(id, name, stem);
    id[stem] = '\0';
    return BRIDGE_NAME_BODY;
  }
  return BRIDGE_NAME_JUNK;
}

static bool tool_name_is_valid(const char *s, size_t len) {
  if (len == 0 || len > BRIDGE_TOOL_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!(id_char(c) || c == '.'))
      return false;
  }
  return true;
}

json_t *bridge_parse_request(const char *buf, size_t len, char **bad_reason) {
  tg_error *err = NULL;
  struct json_parse_options opts = {.max_depth = BRIDGE_REQUEST_DEPTH};
  json_t *req = json_parse(buf, len, &opts, &err);
  if (req == NULL) {
    *bad_reason = xasprintf("request is not valid JSON (%s); send "
                            "{\"v\":1,\"tool\":NAME,\"args\":{...}} in UTF-8",
                            err && err->msg ? err->msg : "parse error");
    tg_error_free(&err);
    return NULL;
  }
  const char *why = NULL;
  long long v = 0;
  json_t *tool = json_object_get(req, "tool");
  json_t *args = json_object_get(req, "args");
  if (!json_is(req, JSON_OBJECT))
    why = "request must be a JSON object {\"v\":1,\"tool\":NAME,\"args\":{...}}";
  else if (!json_integer_value(json_object_get(req, "v"), &v) ||
           v != BRIDGE_PROTOCOL_VERSION)
    why = "request needs \"v\":1 (the only protocol version this host speaks)";
  else if (!json_is(tool, JSON_STRING))
    why = "request needs \"tool\": the tool name as a string (see /run/tollgate/tools.json)";
  else if (!tool_name_is_valid(tool->u.string.s, tool->u.string.len) ||
           strlen(tool->u.string.s) != tool->u.string.len)
    why = "\"tool\" must match [A-Za-z0-9_.-]{1,128} (see /run/tollgate/tools.json)";
  else if (args != NULL && !json_is(args, JSON_OBJECT))
    why = "\"args\" must be a JSON object of keyword arguments";
  else if (req->u.object.len > (args ? 3u : 2u))
    why = "request has unknown fields: only \"v\", \"tool\" and \"args\" are allowed";
  if (why != NULL) {
    json_free(req);
    *bad_reason = xstrdup(why);
    return NULL;
  }
  if (args == NULL) /* "args" may be left out for a tool without arguments */
    json_object_set(req, "args", json_new_object());
  return req;
}

char *bridge_error_body(const char *code, const char *message, size_t *len) {
  json_t *body = json_new_object();
  json_object_set(body, "v", json_new_integer(BRIDGE_PROTOCOL_VERSION));
  json_object_set(body, "ok", json_new_bool(false));
  json_t *e = json_new_object();
  json_object_set(e, "code", json_new_string(code));
  json_object_set(e, "message", json_new_string(message));
  json_object_set(body, "error", e);
  char *s = json_dump(body, false, len);
  json_free(body);
  return s;
}

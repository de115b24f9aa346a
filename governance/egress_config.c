/* Parsing the http backend of a policy (egress_config.h), and reading the
 * injected credentials at call time. */
#include "governance/egress_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

#define SECRET_FILE_MAX 8192

void egress_config_free(struct egress_config *c) {
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->nallow; i++) {
    egress_url_clear(&c->allow[i].url);
    for (char **m = c->allow[i].methods; m && *m; m++)
      free(*m);
    free(c->allow[i].methods);
  }
  free(c->allow);
  for (size_t i = 0; i < c->ninject; i++) {
    free(c->inject[i].name);
    free(c->inject[i].value_template);
  }
  free(c->inject);
  free(c);
}

json_t *egress_args_schema(void) {
  static const char text[] =
      "{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"method\", \"url\"],"
      " \"properties\": {"
      "  \"method\": {\"type\": \"string\", \"pattern\": \"^[A-Z]{1,16}$\","
      "              \"description\": \"GET, POST, ... (uppercase)\"},"
      "  \"url\": {\"type\": \"string\", \"maxLength\": 8192,"
      "           \"description\": \"an absolute http:// or https:// URL the tool's allow list admits\"},"
      "  \"headers\": {\"type\": \"object\", \"description\": \"header name to string value\"},"
      "  \"body\": {\"type\": \"string\", \"description\": \"the request body as text\"},"
      "  \"body_base64\": {\"type\": \"string\", \"description\": \"the request body, base64-encoded\"}}}";
  return json_parse(text, sizeof text - 1, NULL, NULL);
}

/* A template's references: ${env:NAME} (NAME a shell variable name) and
 * ${file:/absolute/path}; any other "${" is an error, so that a typo
 * never sends a literal "${env:TOKEN" as the credential. */
static bool template_ok(const char *t, char **why) {
  for (const char *p = t; (p = strstr(p, "${")) != NULL;) {
    const char *end = strchr(p, '}');
    if (end == NULL) {
      *why = xstrdup("a \"${\" without its \"}\"");
      return false;
    }
    if (strncmp(p, "${env:", 6) == 0) {
      const char *n = p + 6;
      bool ok = n < end && (isalpha((unsigned char)*n) || *n == '_');
      for (const char *c = n; ok && c < end; c++)
        ok = isalnum((unsigned char)*c) || *c == '_';
      if (!ok) {
        *why = xstrdup("${env:NAME} needs a variable name (letters, digits, _)");
        return false;
      }
    } else if (strncmp(p, "${file:", 7) == 0) {
      if (p[7] != '/' || end == p + 8) {
        *why = xstrdup("${file:PATH} needs an absolute path");
        return false;
      }
    } else {
      *why = xstrdup("use ${env:NAME} or ${file:/absolute/path}");
      return false;
    }
    p = end + 1;
  }
  return true;
}

static void parse_allow(struct egress_config *c, const json_t *v, const char *path,
                        struct policy_errors *errs) {
  if (!json_is(v, JSON_ARRAY) || json_array_len(v) == 0) {
    policy_error_add(errs, v, path, "must be a non-empty array of {\"url\": \"https://host/prefix/\", \"methods\": [\"GET\"]}");
    return;
  }
  c->allow = xcalloc(json_array_len(v), sizeof *c->allow);
  for (size_t i = 0; i < json_array_len(v); i++) {
    const json_t *e = json_array_get(v, i);
    cleanup_free char *ep = xasprintf("%s[%zu]", path, i);
    const json_t *url = json_object_get(e, "url"), *methods = json_object_get(e, "methods");
    if (!json_is(e, JSON_OBJECT) || !json_is(url, JSON_STRING)) {
      policy_error_add(errs, e, ep, "must be an object with \"url\" (a string) and \"methods\"");
      continue;
    }
    for (size_t k = 0; k < e->u.object.len; k++)
      if (strcmp(e->u.object.keys[k], "url") && strcmp(e->u.object.keys[k], "methods"))
        policy_error_add(errs, e->u.object.values[k], ep, "unknown key \"%s\"; allowed here: url, methods",
                         e->u.object.keys[k]);
    struct egress_allow *a = &c->allow[c->nallow];
    cleanup_free char *why = NULL;
    cleanup_free char *up = xasprintf("%s.url", ep);
    bool ok = egress_url_parse(json_string_value(url), true, &a->url, &why);
    if (!ok)
      policy_error_add(errs, url, up, "%s", why);
    else if (a->url.query) {
      policy_error_add(errs, url, up, "an allow entry is a scheme, host, port and path prefix: remove the query");
      ok = false;
    }
    /* The methods are checked even when the URL is wrong: every problem
     * in one `policy check`. */
    cleanup_free char *mp = xasprintf("%s.methods", ep);
    if (!json_is(methods, JSON_ARRAY) || json_array_len(methods) == 0) {
      policy_error_add(errs, methods ? methods : e, mp, "%s: the methods this entry allows, e.g. [\"GET\"]",
                       methods ? "must be a non-empty array" : "missing");
      ok = false;
    }
    a->methods = xcalloc(json_array_len(methods) + 1, sizeof *a->methods);
    for (size_t m = 0; m < json_array_len(methods); m++) {
      const char *s = json_string_value(json_array_get(methods, m));
      if (s == NULL || !egress_method_ok(s)) {
        policy_error_add(errs, json_array_get(methods, m), mp,
                         "a method is 1 to 16 uppercase letters, such as \"GET\" or \"POST\"");
        ok = false;
      }
      a->methods[m] = xstrdup(s ? s : "");
    }
    if (!ok) {
      egress_url_clear(&a->url);
      for (char **m = a->methods; *m; m++)
        free(*m);
      free(a->methods);
      a->methods = NULL;
      continue;
    }
    c->nallow++;
  }
}

static void parse_inject(struct egress_config *c, const json_t *v, const char *path,
                         struct policy_errors *errs) {
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(errs, v, path, "must be an object mapping header names to values, e.g. {\"Authorization\": \"Bearer ${env:TOKEN}\"}");
    return;
  }
  c->inject = xcalloc(v->u.object.len, sizeof *c->inject);
  for (size_t i = 0; i < v->u.object.len; i++) {
    const char *name = v->u.object.keys[i];
    const json_t *val = v->u.object.values[i];
    cleanup_free char *hp = xasprintf("%s.%s", path, name);
    cleanup_free char *why = NULL;
    const char *s = json_string_value(val);
    if (s == NULL || strlen(s) != val->u.string.len) {
      policy_error_add(errs, val, hp, "must be a string without NUL bytes");
      continue;
    }
    /* The literal text is checked like a program's header (a CR/LF in
     * the policy would split the request too). */
    if (!egress_header_ok(name, s, strlen(s), &why) || !template_ok(s, &why)) {
      policy_error_add(errs, val, hp, "%s", why);
      continue;
    }
    c->inject[c->ninject].name = xstrdup(name);
    c->inject[c->ninject++].value_template = xstrdup(s);
  }
}

static long long parse_bytes(const json_t *v, const char *path, long long max,
                             struct policy_errors *errs, long long dflt) {
  long long n;
  if (v == NULL)
    return dflt;
  if (!json_integer_value(v, &n) || n < 1 || n > max) {
    policy_error_add(errs, v, path, "must be a whole number from 1 to %lld", max);
    return dflt;
  }
  return n;
}

struct egress_config *egress_config_parse(const json_t *v, const char *path,
                                          struct policy_errors *errs) {
  static const char *const keys[] = {"type", "allow", "inject_headers", "redact_query",
                                     "max_request_bytes", "max_response_bytes",
                                     "max_redirects", NULL};
  struct egress_config *c = xcalloc(1, sizeof *c);
  for (size_t i = 0; i < v->u.object.len; i++) {
    bool known = false;
    for (const char *const *k = keys; *k && !known; k++)
      known = strcmp(*k, v->u.object.keys[i]) == 0;
    if (!known) {
      cleanup_free char *kp = xasprintf("%s.%s", path, v->u.object.keys[i]);
      policy_error_add(errs, v->u.object.values[i], kp,
                       "unknown key \"%s\"; allowed here: type, allow, inject_headers, redact_query, max_request_bytes, max_response_bytes, max_redirects",
                       v->u.object.keys[i]);
    }
  }
  cleanup_free char *ap = xasprintf("%s.allow", path);
  const json_t *f = json_object_get(v, "allow");
  if (f == NULL)
    policy_error_add(errs, v, ap, "missing: what the tool may reach, e.g. [{\"url\": \"https://api.example.com/v1/\", \"methods\": [\"GET\"]}]");
  else
    parse_allow(c, f, ap, errs);
  cleanup_free char *ip = xasprintf("%s.inject_headers", path);
  if ((f = json_object_get(v, "inject_headers")) != NULL)
    parse_inject(c, f, ip, errs);
  cleanup_free char *rp = xasprintf("%s.redact_query", path);
  if ((f = json_object_get(v, "redact_query")) != NULL) {
    if (!json_is(f, JSON_BOOL))
      policy_error_add(errs, f, rp, "must be true or false");
    else
      c->redact_query = f->u.boolean;
  }
  cleanup_free char *qp = xasprintf("%s.max_request_bytes", path);
  cleanup_free char *sp = xasprintf("%s.max_response_bytes", path);
  cleanup_free char *dp = xasprintf("%s.max_redirects", path);
  c->max_request_bytes = parse_bytes(json_object_get(v, "max_request_bytes"), qp, 16 << 20, errs,
                                     EGRESS_DEFAULT_REQUEST_BYTES);
  c->max_response_bytes = parse_bytes(json_object_get(v, "max_response_bytes"), sp,
                                      EGRESS_MAX_RESPONSE_BYTES, errs,
                                      EGRESS_DEFAULT_RESPONSE_BYTES);
  long long r = EGRESS_DEFAULT_REDIRECTS;
  if ((f = json_object_get(v, "max_redirects")) != NULL &&
      (!json_integer_value(f, &r) || r < 0 || r > EGRESS_MAX_REDIRECTS)) {
    policy_error_add(errs, f, dp, "must be a whole number from 0 to %d", EGRESS_MAX_REDIRECTS);
    r = EGRESS_DEFAULT_REDIRECTS;
  }
  c->max_redirects = (int)r;
  return c;
}

bool egress_is_injected(const struct egress_config *c, const char *name) {
  for (size_t i = 0; c && i < c->ninject; i++)
    if (strcasecmp(c->inject[i].name, name) == 0)
      return true;
  return false;
}

/* The secret file's content without one trailing newline (owned), or
 * NULL with *why. */
static char *read_secret_file(const char *path, char **why) {
  cleanup_error tg_error *err = NULL;
  char *buf = NULL;
  size_t len = 0;
  if (read_file(path, SECRET_FILE_MAX, &buf, &len, &err) < 0) {
    *why = xasprintf("cannot read the secret file %s (%s)", path, strerror(err->errnum));
    return NULL;
  }
  if (len > 0 && buf[len - 1] == '\n')
    buf[--len] = '\0';
  if (len > 0 && buf[len - 1] == '\r')
    buf[--len] = '\0';
  return buf;
}

void egress_secrets_free(struct egress_secrets *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

static void secret_add(struct egress_secrets *s, const char *v) {
  s->v = xrealloc(s->v, (s->n + 1) * sizeof *s->v);
  s->v[s->n++] = xstrdup(v);
}

char *egress_scrub(const char *buf, size_t len, const struct egress_secrets *s, size_t *outlen) {
  /* Every byte inside an occurrence of any secret is covered, and each
   * run of covered bytes becomes one "[redacted]".  Replacing the first
   * match and going on after it would leave the rest of another secret
   * that overlaps it (two values sharing bytes, a value inside the header
   * made of it). */
  cleanup_free unsigned char *cover = xcalloc(len + 1, 1);
  for (size_t k = 0; k < s->n; k++) {
    size_t n = strlen(s->v[k]);
    if (n < EGRESS_SECRET_MIN || n > len)
      continue;
    for (const char *p = buf; (p = memmem(p, len - (size_t)(p - buf), s->v[k], n)) != NULL; p++)
      memset(cover + (p - buf), 1, n);
  }
  struct json_buf out = {0};
  json_buf_reserve(&out, len);
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && cover[j] == cover[i])
      j++;
    if (cover[i])
      json_buf_lit(&out, "[redacted]");
    else
      json_buf_raw(&out, buf + i, j - i);
    i = j;
  }
  if (out.s == NULL)
    out.s = xstrdup("");
  *outlen = out.len;
  return out.s;
}

char *egress_scrub_message(const char *msg, const struct egress_secrets *s) {
  size_t n;
  char *clean = egress_scrub(msg, strlen(msg), s, &n);
  if (n <= EGRESS_MESSAGE_MAX)
    return clean;
  /* Cut only now, after the scrubbing: a secret the cut would have split
   * was replaced whole before it, so no piece of one is left at the end.
   * (Cutting first left 26 of a 27-byte token that a server had echoed
   * into a redirect.)  Nothing is guessed at the cut either: dropping a
   * tail that looks like a secret's start would tell a program that can
   * place text there, byte by byte, whether its guess is right. */
  size_t cut = EGRESS_MESSAGE_MAX;
  while (cut > 0 && ((unsigned char)clean[cut] & 0xc0) == 0x80)
    cut--;
  char *m = xasprintf("%.*s...", (int)cut, clean);
  free(clean);
  return m;
}

char *egress_inject_value(const struct egress_inject *h, struct egress_secrets *s, char **why) {
  struct json_buf out = {0};
  const char *t = h->value_template;
  for (const char *p; (p = strstr(t, "${")) != NULL;) {
    json_buf_raw(&out, t, (size_t)(p - t));
    const char *end = strchr(p, '}');
    bool env = strncmp(p, "${env:", 6) == 0;
    const char *ref = p + (env ? 6 : 7);
    cleanup_free char *name = xstrndup(ref, (size_t)(end - ref));
    if (env) {
      const char *val = getenv(name);
      if (val == NULL) {
        free(out.s);
        *why = xasprintf("inject_headers.%s: the host's environment has no %s (set it where tollgate runs)",
                         h->name, name);
        return NULL;
      }
      json_buf_raw(&out, val, strlen(val));
      secret_add(s, val);
    } else {
      cleanup_free char *val = read_secret_file(name, why);
      if (val == NULL) {
        free(out.s);
        return NULL;
      }
      json_buf_raw(&out, val, strlen(val));
      secret_add(s, val);
    }
    t = end + 1;
  }
  json_buf_raw(&out, t, strlen(t));
  char *value = out.s ? out.s : xstrdup("");
  cleanup_free char *bad = NULL;
  /* A CR or LF from the environment or the file would split the request;
   * bytes that are not UTF-8 could not be scrubbed reliably from text. */
  if (!egress_header_ok(h->name, value, strlen(value), &bad) ||
      json_utf8_check(value, strlen(value)) != strlen(value)) {
    free(value);
    *why = xasprintf("inject_headers.%s: the value read from the host holds a control byte (CR, LF, NUL) or is not UTF-8: fix the secret",
                     h->name);
    return NULL;
  }
  secret_add(s, value);
  return value;
}

/* Address-space rlimits moved from runc to the container's first exec
 * (oci/rlimits_defer.h). */
#include "oci/rlimits_defer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const char *const moved[] = {"RLIMIT_AS", "RLIMIT_DATA"};

static bool is_moved(const char *type, size_t len) {
  for (size_t i = 0; type && i < sizeof moved / sizeof moved[0]; i++)
    if (strlen(moved[i]) == len && strncmp(type, moved[i], len) == 0)
      return true;
  return false;
}

/* One limit value as the wrapper reads it: decimal, or "unlimited" for a
 * number past what a long long holds (specs write 2^64-1).  NULL when it
 * is not a number >= 0: runc refuses it, and names it. */
static char *value_text(const json_t *n) {
  long long v;
  if (json_integer_value(n, &v))
    return v >= 0 ? xasprintf("%lld", v) : NULL;
  return json_is(n, JSON_NUMBER) && n->u.number.value >= 9.2e18 ? xstrdup("unlimited") : NULL;
}

enum fate { STAYS, MOVES, REFUSED };

/* What becomes of one rlimits entry; *spec (owned) is "TYPE=SOFT:HARD"
 * when it moves. */
static enum fate entry_fate(const json_t *r, char **spec, tg_error **err) {
  *spec = NULL;
  const char *type = json_string_value(json_object_get(r, "type"));
  if (type == NULL || !is_moved(type, strlen(type)))
    return STAYS;
  cleanup_free char *soft = value_text(json_object_get(r, "soft"));
  cleanup_free char *hard = value_text(json_object_get(r, "hard"));
  if (soft == NULL || hard == NULL)
    return STAYS;
  bool soft_inf = strcmp(soft, "unlimited") == 0, hard_inf = strcmp(hard, "unlimited") == 0;
  if (soft_inf && hard_inf)
    return STAYS;
  /* runc refuses soft above hard (prlimit's EINVAL) when it applies them:
   * said here, at create, as runc would have. */
  if (soft_inf || (!hard_inf && strtoll(soft, NULL, 10) > strtoll(hard, NULL, 10))) {
    tg_error_set(err, 0, "process.rlimits: %s has soft %s above hard %s: set soft <= hard", type, soft, hard);
    return REFUSED;
  }
  *spec = xasprintf("%s=%s:%s", type, soft, hard);
  return MOVES;
}

static bool args_ok(const json_t *args) {
  if (json_array_len(args) == 0)
    return false;
  for (size_t i = 0; i < json_array_len(args); i++)
    if (json_string_value(json_array_get(args, i)) == NULL)
      return false;
  return true;
}

int oci_rlimits_defer(json_t *process, const char *wrapper, tg_error **err) {
  json_t *rls = json_object_get(process, "rlimits");
  json_t *args = json_object_get(process, "args");
  cleanup_json json_t *kept = json_new_array();
  cleanup_json json_t *wrapped = json_new_array();
  json_array_append(wrapped, json_new_string(wrapper));
  json_array_append(wrapped, json_new_string(OCI_RLIMITS_FLAG));
  for (size_t i = 0; i < json_array_len(rls); i++) {
    const json_t *r = json_array_get(rls, i);
    char *spec;
    enum fate f = entry_fate(r, &spec, err);
    if (f == REFUSED)
      return -1;
    if (f == MOVES) {
      json_array_append(wrapped, json_new_string(spec));
      free(spec);
    } else {
      json_array_append(kept, json_copy(r));
    }
  }
  if (json_array_len(kept) == json_array_len(rls))
    return 0;
  if (!args_ok(args))
    return tg_error_set(err, 0, "process.args must be a non-empty array of strings");
  json_array_append(wrapped, json_new_string("--"));
  for (size_t i = 0; i < json_array_len(args); i++)
    json_array_append(wrapped, json_copy(json_array_get(args, i)));
  /* Both replaced at once: never a limit gone from rlimits and not in the
   * args. */
  json_object_set(process, "rlimits", kept);
  json_object_set(process, "args", wrapped);
  kept = wrapped = NULL;
  return 0;
}

/* A decimal value or "unlimited" back into JSON (unlimited as 2^64-1). */
static json_t *value_json(const char *s, size_t len) {
  if (len == 9 && memcmp(s, "unlimited", 9) == 0)
    return json_new_number_text("18446744073709551615", 20);
  long long v = 0;
  if (len == 0 || len > 19)
    return NULL;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9' || v > (LLONG_MAX - (s[i] - '0')) / 10)
      return NULL;
    v = v * 10 + (s[i] - '0');
  }
  return json_new_integer(v);
}

/* "TYPE=SOFT:HARD" as an rlimits entry, or NULL. */
static json_t *spec_entry(const char *spec) {
  const char *eq = strchr(spec, '='), *colon = eq ? strchr(eq, ':') : NULL;
  if (colon == NULL || !is_moved(spec, (size_t)(eq - spec)))
    return NULL;
  json_t *soft = value_json(eq + 1, (size_t)(colon - eq - 1));
  json_t *hard = value_json(colon + 1, strlen(colon + 1));
  if (soft == NULL || hard == NULL) {
    json_free(soft);
    json_free(hard);
    return NULL;
  }
  json_t *r = json_new_object();
  json_object_set(r, "type", json_new_stringn(spec, (size_t)(eq - spec)));
  json_object_set(r, "hard", hard);
  json_object_set(r, "soft", soft);
  return r;
}

bool oci_rlimits_undefer(json_t *process, const char *wrapper) {
  const json_t *args = json_object_get(process, "args");
  size_t n = json_array_len(args);
  const char *a0 = json_string_value(json_array_get(args, 0));
  const char *a1 = json_string_value(json_array_get(args, 1));
  if (n < 2 || a0 == NULL || a1 == NULL || strcmp(a0, wrapper) != 0 || strcmp(a1, OCI_RLIMITS_FLAG) != 0)
    return false;
  cleanup_json json_t *back = json_new_array();
  size_t i = 2;
  for (; i < n; i++) {
    const char *s = json_string_value(json_array_get(args, i));
    if (s == NULL)
      return false;
    if (strcmp(s, "--") == 0)
      break;
    json_t *r = spec_entry(s);
    if (r == NULL)
      return false;
    json_array_append(back, r);
  }
  if (i + 1 >= n)
    return false;
  json_t *orig = json_new_array();
  for (size_t k = i + 1; k < n; k++)
    json_array_append(orig, json_copy(json_array_get(args, k)));
  json_t *rls = json_object_ensure_array(process, "rlimits");
  for (size_t k = 0; k < json_array_len(back); k++)
    json_array_append(rls, json_copy(json_array_get(back, k)));
  json_object_set(process, "args", orig);
  return true;
}

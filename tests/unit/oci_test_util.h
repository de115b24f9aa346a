/* Helpers shared by the tests/unit/test_oci*.c suites (header-only: each
 * suite is its own binary). */
#ifndef TOLLGATE_TEST_OCI_UTIL_H
#define TOLLGATE_TEST_OCI_UTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"

#define PROFILES_DIR "bundles/profiles"
#define SECCOMP_DIR "bundles/seccomp"

static inline json_t *parse_or_die(const char *text) {
  tg_error *err = NULL;
  json_t *v = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(v, "bad JSON in test: %s: %s", err ? err->msg : "?", text);
  return v;
}

static inline json_t *load_fixture(const char *name) {
  tg_error *err = NULL;
  char *buf = NULL;
  size_t len;
  char *path = xasprintf("tests/unit/fixtures/%s", name);
  cr_assert_eq(read_file(path, 1 << 20, &buf, &len, &err), 0, "%s", err ? err->msg : path);
  json_t *v = json_parse(buf, len, NULL, &err);
  cr_assert_not_null(v);
  free(buf);
  free(path);
  return v;
}

/* Deep merge: objects merge key by key, null deletes, anything else
 * replaces. */
static inline void merge_into(json_t *dst, const json_t *patch) {
  for (size_t i = 0; i < patch->u.object.len; i++) {
    const char *k = patch->u.object.keys[i];
    const json_t *v = patch->u.object.values[i];
    json_t *have = json_object_get(dst, k);
    if (json_is(v, JSON_NULL))
      json_object_del(dst, k);
    else if (json_is(v, JSON_OBJECT) && json_is(have, JSON_OBJECT))
      merge_into(have, v);
    else
      json_object_set(dst, k, json_copy(v));
  }
}

static inline bool str_in(const json_t *arr, const char *s) {
  for (size_t i = 0; i < json_array_len(arr); i++) {
    const char *v = json_string_value(json_array_get(arr, i));
    if (v && strcmp(v, s) == 0)
      return true;
  }
  return false;
}

static inline const json_t *mount_at(const json_t *cfg, const char *dst) {
  const json_t *ms = json_object_get(cfg, "mounts");
  for (size_t i = 0; i < json_array_len(ms); i++) {
    const char *d = json_string_value(json_object_get(json_array_get(ms, i), "destination"));
    if (d && strcmp(d, dst) == 0)
      return json_array_get(ms, i);
  }
  return NULL;
}

static inline long long ll_at(const json_t *cfg, const char *path, long long fallback) {
  long long v;
  return json_integer_value(json_get_path(cfg, path), &v) ? v : fallback;
}

#endif

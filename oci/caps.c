/* Capabilities and the user a container runs as. */
#include <cap-ng.h>
#include <ctype.h>
#include <string.h>

#include "oci/transform.h"
#include "base/util.h"

static const char *const cap_sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};

/* Keep, in order, only the entries of set that pass keep(). */
static void filter_set(json_t *caps, const char *set, bool (*keep)(const char *, const void *), const void *arg) {
  json_t *arr = json_object_get(caps, set);
  if (!json_is(arr, JSON_ARRAY)) {
    /* A missing set already grants nothing; spelling it out as [] makes
     * the effective config say so. */
    json_object_set(caps, set, json_new_array());
    return;
  }
  for (size_t i = json_array_len(arr); i-- > 0;) {
    const char *name = json_string_value(json_array_get(arr, i));
    bool dup = false;
    for (size_t k = 0; name && k < i; k++) {
      const char *other = json_string_value(json_array_get(arr, k));
      dup |= other && strcmp(other, name) == 0;
    }
    if (name == NULL || dup || !keep(name, arg))
      json_array_remove(arr, i);
  }
}

static bool in_namelist(const char *name, const void *l) { return namelist_has(l, name); }
static bool in_json_array(const char *name, const void *arr) { return json_array_has_string(arr, name); }

void oci_caps_restrict(json_t *process, const struct namelist *keep) {
  json_t *caps = json_object_ensure_object(process, "capabilities");
  for (size_t i = 0; i < sizeof cap_sets / sizeof cap_sets[0]; i++)
    filter_set(caps, cap_sets[i], in_namelist, keep);
}

void oci_caps_intersect(json_t *process, const json_t *limit) {
  json_t *caps = json_object_ensure_object(process, "capabilities");
  const json_t *lcaps = json_object_get(limit, "capabilities");
  for (size_t i = 0; i < sizeof cap_sets / sizeof cap_sets[0]; i++) {
    const json_t *allowed = json_object_get(lcaps, cap_sets[i]);
    json_t *empty = NULL;
    if (!json_is(allowed, JSON_ARRAY))
      allowed = empty = json_new_array();
    filter_set(caps, cap_sets[i], in_json_array, allowed);
    json_free(empty);
  }
}

void oci_user_harden(json_t *process, const struct oci_profile *p) {
  if (p->allow_root)
    return;
  json_t *user = json_object_ensure_object(process, "user");
  long long uid = 0, gid = 0;
  /* A missing uid or gid means 0 to the runtime. */
  if (!json_integer_value(json_object_get(user, "uid"), &uid) || uid == 0)
    json_object_set(user, "uid", json_new_integer(p->uid));
  if (!json_integer_value(json_object_get(user, "gid"), &gid) || gid == 0)
    json_object_set(user, "gid", json_new_integer(p->gid));
  /* Group 0 owns much of a typical rootfs and of /proc; drop it. */
  json_t *extra = json_object_get(user, "additionalGids");
  for (size_t i = json_array_len(extra); i-- > 0;) {
    long long g;
    if (!json_integer_value(json_array_get(extra, i), &g) || g == 0)
      json_array_remove(extra, i);
  }
}

bool oci_cap_name_known(const char *name) {
  if (name == NULL || strncmp(name, "CAP_", 4) != 0)
    return false;
  char low[64];
  size_t i;
  for (i = 0; name[4 + i] && i < sizeof low - 1; i++)
    low[i] = (char)tolower((unsigned char)name[4 + i]);
  if (name[4 + i] != '\0' || i == 0)
    return false;
  low[i] = '\0';
  return capng_name_to_capability(low) >= 0;
}

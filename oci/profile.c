/* Loading, validating and comparing hardening profiles. */
#include "oci/profile.h"
#include "oci/transform.h"

#include <cap-ng.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "oci/seccomp.h"
#include "base/util.h"

static const struct std_device std_devices[] = {
    {"null", 'c', 1, 3},    {"zero", 'c', 1, 5}, {"full", 'c', 1, 7},
    {"random", 'c', 1, 8},  {"urandom", 'c', 1, 9}, {"tty", 'c', 5, 0},
};

const struct std_device *profile_std_device(const char *name) {
  for (size_t i = 0; name && i < sizeof std_devices / sizeof std_devices[0]; i++)
    if (strcmp(std_devices[i].name, name) == 0)
      return &std_devices[i];
  return NULL;
}

static const char *const rlimit_names[] = {
    "RLIMIT_AS",     "RLIMIT_CORE",   "RLIMIT_CPU",    "RLIMIT_DATA",   "RLIMIT_FSIZE",  "RLIMIT_LOCKS",
    "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS",
    "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK",
};

static bool rlimit_name_known(const char *n) {
  for (size_t i = 0; i < sizeof rlimit_names / sizeof rlimit_names[0]; i++)
    if (strcmp(rlimit_names[i], n) == 0)
      return true;
  return false;
}

static bool name_is_plain(const char *n) {
  /* A profile name becomes part of a path: the id rule keeps it one
   * component with no "..". */
  return n && container_id_is_valid(n);
}

static int get_bool(const json_t *doc, const char *key, bool *out, const char *src, tg_error **err) {
  const json_t *v = json_object_get(doc, key);
  if (!json_is(v, JSON_BOOL))
    return tg_error_set(err, 0, "%s: \"%s\" must be true or false", src, key);
  *out = v->u.boolean;
  return 0;
}

static int get_int(const json_t *doc, const char *key, long long min, long long *out, const char *src,
                   tg_error **err) {
  const json_t *v = json_object_get(doc, key);
  if (!json_integer_value(v, out) || *out < min)
    return tg_error_set(err, 0, "%s: \"%s\" must be an integer >= %lld", src, key, min);
  return 0;
}

static int get_list(const json_t *doc, const char *key, struct namelist *l, const char *src, tg_error **err) {
  cleanup_free char *what = xasprintf("%s: \"%s\"", src, key);
  return namelist_from_json(json_object_get(doc, key), l, what, err);
}

static const char *const profile_keys[] = {
    "name", "description", "strictness", "passthrough", "capabilities", "no_new_privileges",
    "readonly_rootfs", "seccomp", "network", "user", "tmpfs", "masked_paths", "readonly_paths",
    "devices", "sysctls", "rlimits", "memory_mib", "pids", "cpus",
};

int profile_from_json(const json_t *doc, const char *seccomp_dir, const char *src, struct oci_profile *p,
                      tg_error **err) {
  memset(p, 0, sizeof *p);
  if (!json_is(doc, JSON_OBJECT))
    return tg_error_set(err, 0, "%s: a profile must be a JSON object", src);
  for (size_t i = 0; i < doc->u.object.len; i++) {
    bool known = false;
    for (size_t k = 0; k < sizeof profile_keys / sizeof profile_keys[0]; k++)
      known |= strcmp(doc->u.object.keys[i], profile_keys[k]) == 0;
    if (!known)
      return tg_error_set(err, 0, "%s: unknown key \"%s\" (see docs/hardening.md for the profile format)", src,
                          doc->u.object.keys[i]);
  }
  const char *name = json_string_value(json_object_get(doc, "name"));
  if (!name_is_plain(name))
    return tg_error_set(err, 0, "%s: \"name\" must be a plain name like \"hardened\"", src);
  p->name = xstrdup(name);
  long long v;
  if (get_int(doc, "strictness", 0, &v, src, err) < 0 || v > 100)
    return tg_error_set(err, 0, "%s: \"strictness\" must be an integer 0..100", src);
  p->strictness = (int)v;
  if (get_bool(doc, "passthrough", &p->passthrough, src, err) < 0)
    return -1;
  if (p->passthrough) {
    /* Passthrough has nothing to configure; anything else in the file
     * would suggest a protection that is not applied. */
    if (doc->u.object.len > 4 || (doc->u.object.len == 4 && !json_object_get(doc, "description")))
      return tg_error_set(err, 0, "%s: a passthrough profile takes only name, description, strictness, passthrough", src);
    if (p->strictness != 0)
      return tg_error_set(err, 0, "%s: a passthrough profile must have strictness 0", src);
    return 0;
  }
  for (size_t k = 0; k < sizeof profile_keys / sizeof profile_keys[0]; k++)
    if (strcmp(profile_keys[k], "description") != 0 && json_object_get(doc, profile_keys[k]) == NULL)
      return tg_error_set(err, 0, "%s: missing key \"%s\"", src, profile_keys[k]);

  if (get_list(doc, "capabilities", &p->caps, src, err) < 0)
    return -1;
  for (size_t i = 0; i < p->caps.n; i++)
    if (!oci_cap_name_known(p->caps.v[i]))
      return tg_error_set(err, 0, "%s: unknown capability \"%s\" (write it like CAP_CHOWN)", src, p->caps.v[i]);
  if (get_bool(doc, "no_new_privileges", &p->no_new_privileges, src, err) < 0 ||
      get_bool(doc, "readonly_rootfs", &p->readonly_rootfs, src, err) < 0)
    return -1;

  const json_t *sc = json_object_get(doc, "seccomp");
  if (json_is(sc, JSON_STRING)) {
    const char *f = json_string_value(sc);
    if (!name_is_plain(f))
      return tg_error_set(err, 0, "%s: \"seccomp\" must be a file name inside the seccomp directory", src);
    if (seccomp_dir == NULL)
      return tg_error_set(err, 0, "%s: names seccomp list %s but no seccomp directory was given", src, f);
    cleanup_free char *path = xasprintf("%s/%s", seccomp_dir, f);
    if (oci_seccomp_load(path, &p->seccomp, err) < 0)
      return tg_error_wrap(err, "%s", src);
    p->seccomp_file = xstrdup(f);
  } else if (!json_is(sc, JSON_NULL)) {
    return tg_error_set(err, 0, "%s: \"seccomp\" must be a file name or null", src);
  }

  const char *net = json_string_value(json_object_get(doc, "network"));
  if (net == NULL || (strcmp(net, "none") != 0 && strcmp(net, "keep") != 0))
    return tg_error_set(err, 0, "%s: \"network\" must be \"none\" or \"keep\"", src);
  p->network_none = strcmp(net, "none") == 0;

  const json_t *user = json_object_get(doc, "user");
  if (!json_is(user, JSON_OBJECT) || get_bool(user, "allow_root", &p->allow_root, src, err) < 0 ||
      get_int(user, "uid", 1, &p->uid, src, err) < 0 || get_int(user, "gid", 1, &p->gid, src, err) < 0)
    return tg_error_set(err, 0, "%s: \"user\" must be {\"allow_root\": bool, \"uid\": N>0, \"gid\": N>0}", src);

  const json_t *tmpfs = json_object_get(doc, "tmpfs");
  if (!json_is(tmpfs, JSON_ARRAY))
    return tg_error_set(err, 0, "%s: \"tmpfs\" must be an array", src);
  p->tmpfs = xcalloc(json_array_len(tmpfs) + 1, sizeof *p->tmpfs);
  for (size_t i = 0; i < json_array_len(tmpfs); i++) {
    const json_t *t = json_array_get(tmpfs, i);
    const char *path = json_string_value(json_object_get(t, "path"));
    long long mib;
    if (path == NULL || path[0] != '/' || strstr(path, "..") || !json_integer_value(json_object_get(t, "size_mib"), &mib) ||
        mib < 1)
      return tg_error_set(err, 0, "%s: tmpfs[%zu] must be {\"path\": \"/abs\", \"size_mib\": N>0}", src, i);
    p->tmpfs[p->n_tmpfs].path = xstrdup(path);
    p->tmpfs[p->n_tmpfs++].size_bytes = mib << 20;
  }

  if (get_list(doc, "masked_paths", &p->masked_paths, src, err) < 0 ||
      get_list(doc, "readonly_paths", &p->readonly_paths, src, err) < 0 ||
      get_list(doc, "devices", &p->devices, src, err) < 0 || get_list(doc, "sysctls", &p->sysctls, src, err) < 0)
    return -1;
  for (size_t i = 0; i < p->devices.n; i++)
    if (!profile_std_device(p->devices.v[i]))
      return tg_error_set(err, 0, "%s: device \"%s\" is not one of null, zero, full, random, urandom, tty", src,
                          p->devices.v[i]);

  const json_t *rl = json_object_get(doc, "rlimits");
  if (!json_is(rl, JSON_OBJECT))
    return tg_error_set(err, 0, "%s: \"rlimits\" must be an object like {\"RLIMIT_NOFILE\": 1024}", src);
  p->rlimits = xcalloc(rl->u.object.len + 1, sizeof *p->rlimits);
  for (size_t i = 0; i < rl->u.object.len; i++) {
    long long lim;
    if (!rlimit_name_known(rl->u.object.keys[i]))
      return tg_error_set(err, 0, "%s: unknown rlimit \"%s\"", src, rl->u.object.keys[i]);
    if (!json_integer_value(rl->u.object.values[i], &lim) || lim < 0)
      return tg_error_set(err, 0, "%s: rlimit %s must be an integer >= 0", src, rl->u.object.keys[i]);
    p->rlimits[p->n_rlimits].type = xstrdup(rl->u.object.keys[i]);
    p->rlimits[p->n_rlimits++].value = lim;
  }

  long long mib;
  if (get_int(doc, "memory_mib", 0, &mib, src, err) < 0 || get_int(doc, "pids", 0, &p->pids, src, err) < 0)
    return -1;
  p->memory_bytes = mib << 20;
  const json_t *cpus = json_object_get(doc, "cpus");
  if (!json_is(cpus, JSON_NUMBER) || cpus->u.number.value < 0 || cpus->u.number.value > 1024)
    return tg_error_set(err, 0, "%s: \"cpus\" must be a number of CPUs (0 = no limit), e.g. 1 or 0.5", src);
  p->cpu_millis = (long long)(cpus->u.number.value * 1000 + 0.5);
  return 0;
}

int profile_load(const char *profiles_dir, const char *seccomp_dir, const char *name, struct oci_profile *out,
                 tg_error **err) {
  memset(out, 0, sizeof *out);
  if (!name_is_plain(name))
    return tg_error_set(err, 0, "profile name \"%s\" is not a plain name like \"hardened\"", name ? name : "");
  if (profiles_dir == NULL)
    return tg_error_set(err, 0, "no profiles directory to load profile %s from; set data_dir in the host config", name);
  cleanup_free char *path = xasprintf("%s/%s.json", profiles_dir, name);
  cleanup_free char *buf = NULL;
  size_t len;
  if (read_file(path, 1 << 20, &buf, &len, err) < 0)
    return tg_error_wrap(err, "profile %s (the profiles are in %s)", name, profiles_dir);
  struct json_parse_options o = {.track_positions = true};
  cleanup_json json_t *doc = json_parse(buf, len, &o, err);
  if (doc == NULL)
    return tg_error_wrap(err, "%s", path);
  if (profile_from_json(doc, seccomp_dir, path, out, err) < 0) {
    profile_free(out);
    return -1;
  }
  if (strcmp(out->name, name) != 0) {
    tg_error_set(err, 0, "%s: \"name\" is \"%s\"; it must match the file name", path, out->name);
    profile_free(out);
    return -1;
  }
  return 0;
}

void profile_free(struct oci_profile *p) {
  free(p->name);
  namelist_free(&p->caps);
  json_free(p->seccomp);
  free(p->seccomp_file);
  for (size_t i = 0; i < p->n_tmpfs; i++)
    free(p->tmpfs[i].path);
  free(p->tmpfs);
  namelist_free(&p->masked_paths);
  namelist_free(&p->readonly_paths);
  namelist_free(&p->devices);
  namelist_free(&p->sysctls);
  for (size_t i = 0; i < p->n_rlimits; i++)
    free(p->rlimits[i].type);
  free(p->rlimits);
  memset(p, 0, sizeof *p);
}

/* 0 means "no limit", which is the loosest value. */
static bool limit_le(long long a, long long b) {
  if (b == 0)
    return true;
  return a != 0 && a <= b;
}

#define LOOSER(...)                          \
  do {                                       \
    if (why)                                 \
      *why = xasprintf(__VA_ARGS__);         \
    return false;                            \
  } while (0)

bool profile_at_least_as_strict(const struct oci_profile *a, const struct oci_profile *b, char **why) {
  if (why)
    *why = NULL;
  if (b->passthrough)
    return true; /* nothing is looser than passthrough */
  if (a->passthrough)
    LOOSER("profile %s applies no hardening at all", a->name);
  for (size_t i = 0; i < a->caps.n; i++)
    if (!namelist_has(&b->caps, a->caps.v[i]))
      LOOSER("profile %s keeps capability %s, which %s drops", a->name, a->caps.v[i], b->name);
  if (b->no_new_privileges && !a->no_new_privileges)
    LOOSER("profile %s allows new privileges", a->name);
  if (b->readonly_rootfs && !a->readonly_rootfs)
    LOOSER("profile %s leaves the root filesystem writable", a->name);
  if (b->network_none && !a->network_none)
    LOOSER("profile %s keeps the network", a->name);
  if (a->allow_root && !b->allow_root)
    LOOSER("profile %s allows running as root", a->name);
  char *sc_why = NULL;
  if (!oci_seccomp_subset(a->seccomp, b->seccomp, &sc_why)) {
    if (why)
      *why = xasprintf("profile %s: %s", a->name, sc_why);
    free(sc_why);
    return false;
  }
  for (size_t i = 0; i < a->n_tmpfs; i++) {
    const struct profile_tmpfs *match = NULL;
    for (size_t k = 0; k < b->n_tmpfs; k++)
      if (strcmp(a->tmpfs[i].path, b->tmpfs[k].path) == 0)
        match = &b->tmpfs[k];
    if (match == NULL)
      LOOSER("profile %s adds a writable tmpfs at %s", a->name, a->tmpfs[i].path);
    if (a->tmpfs[i].size_bytes > match->size_bytes)
      LOOSER("profile %s has a larger tmpfs at %s", a->name, a->tmpfs[i].path);
  }
  for (size_t i = 0; i < b->masked_paths.n; i++)
    if (!namelist_has(&a->masked_paths, b->masked_paths.v[i]))
      LOOSER("profile %s does not mask %s", a->name, b->masked_paths.v[i]);
  for (size_t i = 0; i < b->readonly_paths.n; i++)
    if (!namelist_has(&a->readonly_paths, b->readonly_paths.v[i]) &&
        !namelist_has(&a->masked_paths, b->readonly_paths.v[i]))
      LOOSER("profile %s does not make %s read-only", a->name, b->readonly_paths.v[i]);
  for (size_t i = 0; i < a->devices.n; i++)
    if (!namelist_has(&b->devices, a->devices.v[i]))
      LOOSER("profile %s allows device %s", a->name, a->devices.v[i]);
  for (size_t i = 0; i < a->sysctls.n; i++)
    if (!namelist_has(&b->sysctls, a->sysctls.v[i]))
      LOOSER("profile %s allows sysctl %s", a->name, a->sysctls.v[i]);
  for (size_t k = 0; k < b->n_rlimits; k++) {
    const struct profile_rlimit *match = NULL;
    for (size_t i = 0; i < a->n_rlimits; i++)
      if (strcmp(a->rlimits[i].type, b->rlimits[k].type) == 0)
        match = &a->rlimits[i];
    if (match == NULL || match->value > b->rlimits[k].value)
      LOOSER("profile %s has a higher %s", a->name, b->rlimits[k].type);
  }
  if (!limit_le(a->memory_bytes, b->memory_bytes))
    LOOSER("profile %s allows more memory", a->name);
  if (!limit_le(a->pids, b->pids))
    LOOSER("profile %s allows more processes", a->name);
  if (!limit_le(a->cpu_millis, b->cpu_millis))
    LOOSER("profile %s allows more CPU", a->name);
  /* Checked last so that the sentence names a concrete axis when there is
   * one; the number alone orders profiles an operator wrote to be equal
   * on every axis. */
  if (a->strictness < b->strictness)
    LOOSER("profile %s has strictness %d, below %s's %d", a->name, a->strictness, b->name, b->strictness);
  return true;
}

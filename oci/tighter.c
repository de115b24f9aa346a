/* The "only tighter" property, checked on the result: for every axis,
 * what the output permits, the input permitted too. */
#include <stdlib.h>
#include <string.h>

#include "oci/seccomp.h"
#include "oci/transform.h"
#include "base/util.h"

static long long get_ll(const json_t *v, long long fallback) {
  long long x;
  return json_integer_value(v, &x) ? x : fallback;
}

static int caps_tighter(const json_t *in, const json_t *out, tg_error **err) {
  static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
  for (size_t s = 0; s < 5; s++) {
    const json_t *o = json_get_path(out, "process.capabilities");
    const json_t *i = json_get_path(in, "process.capabilities");
    const json_t *oa = json_object_get(o, sets[s]), *ia = json_object_get(i, sets[s]);
    for (size_t k = 0; k < json_array_len(oa); k++) {
      const char *c = json_string_value(json_array_get(oa, k));
      if (c && !json_array_has_string(ia, c))
        return tg_error_set(err, 0, "capabilities: %s set gained %s", sets[s], c);
    }
  }
  return 0;
}

static bool json_array_has_int(const json_t *arr, long long v) {
  for (size_t i = 0; i < json_array_len(arr); i++) {
    long long x;
    if (json_integer_value(json_array_get(arr, i), &x) && x == v)
      return true;
  }
  return false;
}

static int flags_tighter(const json_t *in, const json_t *out, tg_error **err) {
  if (json_is_true(json_get_path(in, "process.noNewPrivileges")) && !json_is_true(json_get_path(out, "process.noNewPrivileges")))
    return tg_error_set(err, 0, "process.noNewPrivileges was turned off");
  if (json_is_true(json_get_path(in, "root.readonly")) && !json_is_true(json_get_path(out, "root.readonly")))
    return tg_error_set(err, 0, "root.readonly was turned off");
  long long iu = get_ll(json_get_path(in, "process.user.uid"), 0), ou = get_ll(json_get_path(out, "process.user.uid"), 0);
  long long ig = get_ll(json_get_path(in, "process.user.gid"), 0), og = get_ll(json_get_path(out, "process.user.gid"), 0);
  if ((ou == 0 && iu != 0) || (og == 0 && ig != 0))
    return tg_error_set(err, 0, "process.user became root");
  if (!json_array_has_int(json_get_path(in, "process.user.additionalGids"), 0) && ig != 0 &&
      json_array_has_int(json_get_path(out, "process.user.additionalGids"), 0))
    return tg_error_set(err, 0, "process.user gained group 0");
  static const char *const labels[] = {"process.apparmorProfile", "process.selinuxLabel"};
  for (size_t k = 0; k < 2; k++) {
    const json_t *il = json_get_path(in, labels[k]), *ol = json_get_path(out, labels[k]);
    if (il && !json_equal(il, ol))
      return tg_error_set(err, 0, "%s was changed", labels[k]);
  }
  long long ia = get_ll(json_get_path(in, "process.oomScoreAdj"), 0), oa = get_ll(json_get_path(out, "process.oomScoreAdj"), 0);
  if (oa < ia)
    return tg_error_set(err, 0, "process.oomScoreAdj was lowered");
  return 0;
}

static const json_t *find_ns(const json_t *cfg, const char *type) {
  const json_t *nss = json_get_path(cfg, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const char *t = json_string_value(json_object_get(json_array_get(nss, i), "type"));
    if (t && strcmp(t, type) == 0)
      return json_array_get(nss, i);
  }
  return NULL;
}

static int namespaces_tighter(const json_t *in, const json_t *out, tg_error **err) {
  const json_t *nss = json_get_path(in, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const char *t = json_string_value(json_object_get(json_array_get(nss, i), "type"));
    if (t && find_ns(out, t) == NULL)
      return tg_error_set(err, 0, "namespaces: the %s namespace was dropped (the host's would be shared)", t);
  }
  nss = json_get_path(out, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *t = json_string_value(json_object_get(ns, "type"));
    const char *path = json_string_value(json_object_get(ns, "path"));
    if (path == NULL || t == NULL)
      continue;
    const char *ipath = json_string_value(json_object_get(find_ns(in, t), "path"));
    if (ipath == NULL || strcmp(ipath, path) != 0)
      return tg_error_set(err, 0, "namespaces: %s namespace path %s was added", t, path);
  }
  return 0;
}

static bool mount_is_bind(const json_t *m) {
  const char *type = json_string_value(json_object_get(m, "type"));
  const json_t *opts = json_object_get(m, "options");
  return (type && strcmp(type, "bind") == 0) || json_array_has_string(opts, "bind") || json_array_has_string(opts, "rbind");
}

static bool str_eq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Options hardening may add to a mount: each only takes something away. */
static bool option_tightens(const char *o) {
  static const char *const words[] = {"ro", "rro", "nosuid", "rnosuid", "nodev", "rnodev", "noexec", "rnoexec"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcmp(o, words[i]) == 0)
      return true;
  return strncmp(o, "size=", 5) == 0; /* bounded below by the size check */
}

/* Every option of out against the matching input mount: the effective
 * flags (last word wins) keep every protection, the size does not grow,
 * a bind does not become recursive, and no option appears that could
 * loosen (exec, dev, suid, rw, defaults, a mode or uid...). */
static int options_tighter(const json_t *im, const json_t *om, const char *dst, tg_error **err) {
  struct oci_mount_flags fi, fo;
  oci_mount_flags(im, &fi);
  oci_mount_flags(om, &fo);
  const bool in_on[] = {fi.ro, fi.nosuid, fi.nodev, fi.noexec}, out_on[] = {fo.ro, fo.nosuid, fo.nodev, fo.noexec};
  static const char *const names[] = {"ro", "nosuid", "nodev", "noexec"};
  for (size_t k = 0; k < 4; k++)
    if (in_on[k] && !out_on[k])
      return tg_error_set(err, 0, "mounts: %s lost option %s", dst, names[k]);
  if (fo.rbind && !fi.rbind)
    return tg_error_set(err, 0, "mounts: %s became a recursive bind", dst);
  const json_t *oo = json_object_get(om, "options"), *io = json_object_get(im, "options");
  for (size_t k = 0; k < json_array_len(oo); k++) {
    const char *o = json_string_value(json_array_get(oo, k));
    if (o && !json_array_has_string(io, o) && !option_tightens(o))
      return tg_error_set(err, 0, "mounts: %s gained option %s", dst, o);
  }
  const char *type = json_string_value(json_object_get(om, "type"));
  if (str_eq(type, "tmpfs")) {
    long long isz = fi.size, osz = fo.size;
    if (isz > 0 && (osz <= 0 || osz > isz))
      return tg_error_set(err, 0, "mounts: tmpfs %s grew", dst);
  }
  return 0;
}

static int mounts_tighter(const json_t *in, const json_t *out, tg_error **err) {
  const json_t *om = json_object_get(out, "mounts"), *im = json_object_get(in, "mounts");
  for (size_t i = 0; i < json_array_len(om); i++) {
    const json_t *m = json_array_get(om, i);
    const char *dst = json_string_value(json_object_get(m, "destination"));
    const char *src = json_string_value(json_object_get(m, "source"));
    const char *type = json_string_value(json_object_get(m, "type"));
    const json_t *match = NULL;
    for (size_t k = 0; k < json_array_len(im) && !match; k++) {
      const json_t *c = json_array_get(im, k);
      if (str_eq(json_string_value(json_object_get(c, "destination")), dst) &&
          mount_is_bind(c) == mount_is_bind(m) &&
          (!mount_is_bind(m) || str_eq(json_string_value(json_object_get(c, "source")), src)))
        match = c;
    }
    if (mount_is_bind(m) && match == NULL)
      return tg_error_set(err, 0, "mounts: bind mount of %s at %s was added", src ? src : "?", dst ? dst : "?");
    if (match == NULL) {
      /* A new tmpfs hides what is below it and exposes nothing; a new
       * kernel filesystem (a second procfs) would expose host state. */
      if (!str_eq(type, "tmpfs"))
        return tg_error_set(err, 0, "mounts: a %s mount at %s was added", type ? type : "?", dst ? dst : "?");
      continue;
    }
    if (!str_eq(type, json_string_value(json_object_get(match, "type"))))
      return tg_error_set(err, 0, "mounts: %s changed type", dst ? dst : "?");
    if (options_tighter(match, m, dst ? dst : "?", err) < 0)
      return -1;
  }
  return 0;
}

static int superset(const json_t *in, const json_t *out, const char *path, tg_error **err) {
  const json_t *ia = json_get_path(in, path), *oa = json_get_path(out, path);
  for (size_t i = 0; i < json_array_len(ia); i++) {
    const char *s = json_string_value(json_array_get(ia, i));
    if (s && !json_array_has_string(oa, s))
      return tg_error_set(err, 0, "%s: %s was removed", path, s);
  }
  return 0;
}

static int devices_tighter(const json_t *in, const json_t *out, tg_error **err) {
  const json_t *od = json_get_path(out, "linux.devices"), *id = json_get_path(in, "linux.devices");
  for (size_t i = 0; i < json_array_len(od); i++) {
    const json_t *d = json_array_get(od, i);
    bool found = false;
    for (size_t k = 0; k < json_array_len(id) && !found; k++)
      found = json_equal(d, json_array_get(id, k));
    if (!found)
      return tg_error_set(err, 0, "linux.devices: %s was added or changed",
                          json_string_value(json_object_get(d, "path")) ?: "?");
  }
  return 0;
}

static int rlimits_tighter(const json_t *in, const json_t *out, tg_error **err) {
  const json_t *ir = json_get_path(in, "process.rlimits"), *orl = json_get_path(out, "process.rlimits");
  for (size_t i = 0; i < json_array_len(ir); i++) {
    const json_t *r = json_array_get(ir, i);
    const char *type = json_string_value(json_object_get(r, "type"));
    long long ih = get_ll(json_object_get(r, "hard"), -1), is = get_ll(json_object_get(r, "soft"), -1);
    bool found = false;
    for (size_t k = 0; k < json_array_len(orl); k++) {
      const json_t *o = json_array_get(orl, k);
      if (!str_eq(json_string_value(json_object_get(o, "type")), type))
        continue;
      found = true;
      long long oh = get_ll(json_object_get(o, "hard"), -1), os = get_ll(json_object_get(o, "soft"), -1);
      if ((ih >= 0 && (oh < 0 || oh > ih)) || (is >= 0 && (os < 0 || os > is)))
        return tg_error_set(err, 0, "rlimits: %s was raised", type);
    }
    if (!found)
      return tg_error_set(err, 0, "rlimits: %s was removed", type);
  }
  return 0;
}

/* a <= b where <= 0 means unlimited. */
static bool limit_le(long long a, long long b) { return b <= 0 || (a > 0 && a <= b); }

static int resources_tighter(const json_t *in, const json_t *out, tg_error **err) {
  if (!limit_le(get_ll(json_get_path(out, "linux.resources.memory.limit"), 0),
                get_ll(json_get_path(in, "linux.resources.memory.limit"), 0)))
    return tg_error_set(err, 0, "linux.resources.memory.limit was raised");
  if (!limit_le(get_ll(json_get_path(out, "linux.resources.pids.limit"), 0),
                get_ll(json_get_path(in, "linux.resources.pids.limit"), 0)))
    return tg_error_set(err, 0, "linux.resources.pids.limit was raised");
  if (!limit_le(oci_cpu_millis(out), oci_cpu_millis(in)))
    return tg_error_set(err, 0, "linux.resources.cpu quota was raised");
  if (json_is_true(json_get_path(out, "linux.resources.memory.disableOOMKiller")) &&
      !json_is_true(json_get_path(in, "linux.resources.memory.disableOOMKiller")))
    return tg_error_set(err, 0, "linux.resources.memory.disableOOMKiller was turned on");
  return 0;
}

static int sysctl_tighter(const json_t *in, const json_t *out, tg_error **err) {
  const json_t *os = json_get_path(out, "linux.sysctl"), *is = json_get_path(in, "linux.sysctl");
  if (!json_is(os, JSON_OBJECT))
    return 0;
  for (size_t i = 0; i < os->u.object.len; i++) {
    const json_t *v = json_object_get(is, os->u.object.keys[i]);
    if (v == NULL || !json_equal(v, os->u.object.values[i]))
      return tg_error_set(err, 0, "linux.sysctl: %s was added or changed", os->u.object.keys[i]);
  }
  return 0;
}

static int hooks_tighter(const json_t *in, const json_t *out, tg_error **err) {
  const json_t *oh = json_object_get(out, "hooks");
  if (!json_is(oh, JSON_OBJECT))
    return 0;
  for (size_t i = 0; i < oh->u.object.len; i++)
    if (!json_equal(oh->u.object.values[i], json_get_path(json_object_get(in, "hooks"), oh->u.object.keys[i])))
      return tg_error_set(err, 0, "hooks: %s hooks were changed", oh->u.object.keys[i]);
  return 0;
}

/* A mapping the output has and the input did not may only send container
 * ids to host ids above the host's own users (the pool starts at 100000,
 * base/hostconfig.c): never to host root or a host account. */
static int mappings_tighter(const json_t *in, const json_t *out, tg_error **err) {
  static const char *const keys[] = {"linux.uidMappings", "linux.gidMappings"};
  for (size_t k = 0; k < 2; k++) {
    const json_t *oa = json_get_path(out, keys[k]), *ia = json_get_path(in, keys[k]);
    for (size_t i = 0; i < json_array_len(oa); i++) {
      const json_t *m = json_array_get(oa, i);
      bool found = false;
      for (size_t j = 0; j < json_array_len(ia) && !found; j++)
        found = json_equal(m, json_array_get(ia, j));
      if (!found && get_ll(json_object_get(m, "hostID"), 0) < 100000)
        return tg_error_set(err, 0, "%s: a mapping to host id %lld was added", keys[k],
                            get_ll(json_object_get(m, "hostID"), 0));
    }
  }
  return 0;
}

int oci_check_tighter(const json_t *in, const json_t *out, tg_error **err) {
  if (caps_tighter(in, out, err) < 0 || flags_tighter(in, out, err) < 0 || namespaces_tighter(in, out, err) < 0 ||
      mounts_tighter(in, out, err) < 0 || superset(in, out, "linux.maskedPaths", err) < 0 ||
      superset(in, out, "linux.readonlyPaths", err) < 0 || devices_tighter(in, out, err) < 0 ||
      rlimits_tighter(in, out, err) < 0 || resources_tighter(in, out, err) < 0 ||
      sysctl_tighter(in, out, err) < 0 || hooks_tighter(in, out, err) < 0 ||
      mappings_tighter(in, out, err) < 0)
    return -1;
  char *why = NULL;
  if (!oci_seccomp_subset(json_get_path(out, "linux.seccomp"), json_get_path(in, "linux.seccomp"), &why)) {
    tg_error_set(err, 0, "linux.seccomp: %s", why);
    free(why);
    return -1;
  }
  return 0;
}

int oci_check_process_tighter(const json_t *in, const json_t *out, tg_error **err) {
  cleanup_json json_t *wi = json_new_object(), *wo = json_new_object();
  json_object_set(wi, "process", json_copy(in));
  json_object_set(wo, "process", json_copy(out));
  return oci_check_tighter(wi, wo, err);
}

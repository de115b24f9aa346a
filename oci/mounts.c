/* The filesystem view: read-only root, bounded tmpfs scratch space,
 * mount flags, masked and read-only paths, and the device cgroup. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "oci/transform.h"
#include "base/util.h"

/* Ensure option on (e.g. "nodev") and remove its opposite ("dev"). */
static void opt_set(json_t *m, const char *on, const char *opposite) {
  json_t *opts = json_object_ensure_array(m, "options");
  for (size_t i = json_array_len(opts); i-- > 0;) {
    const char *o = json_string_value(json_array_get(opts, i));
    /* The opposite anywhere (also runc's recursive "r" form, and
     * "defaults", which means rw,suid,dev,exec) would undo `on` wherever
     * it comes after it. */
    if (o && ((opposite && strcmp(o, opposite) == 0) || (opposite && o[0] == 'r' && strcmp(o + 1, opposite) == 0) ||
              strcmp(o, "defaults") == 0))
      json_array_remove(opts, i);
  }
  if (!json_array_has_string(opts, on))
    json_array_append(opts, json_new_string(on));
}

void oci_mount_keep_source_flags(json_t *m, unsigned long st_flags) {
  /* A bind mount made in a user namespace cannot drop the flags of the
   * mount it copies (the kernel locks them: MNT_LOCK_*), and runc's
   * remount for the bind's options fails EPERM when they would (e.g.
   * containerd's noexec sandbox /dev/shm).  Asking for them explicitly
   * only says what the kernel enforces anyway. */
  static const struct { unsigned long flag; const char *on, *opposite; } keep[] = {
      {ST_RDONLY, "ro", "rw"},   {ST_NOSUID, "nosuid", "suid"},      {ST_NODEV, "nodev", "dev"},
      {ST_NOEXEC, "noexec", "exec"}, {ST_NOATIME, "noatime", "atime"}, {ST_NODIRATIME, "nodiratime", "diratime"},
  };
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    if (st_flags & keep[i].flag)
      opt_set(m, keep[i].on, keep[i].opposite);
  /* Neither relatime nor noatime: strictatime, else runc's remount
   * defaults to relatime, which is a change of a locked flag too. */
  if (!(st_flags & (ST_RELATIME | ST_NOATIME)))
    opt_set(m, "strictatime", "relatime");
}

static bool mount_is_bind(const json_t *m) {
  const char *type = json_string_value(json_object_get(m, "type"));
  const json_t *opts = json_object_get(m, "options");
  return (type && strcmp(type, "bind") == 0) || json_array_has_string(opts, "bind") ||
         json_array_has_string(opts, "rbind");
}

/* A tmpfs size option's value in bytes: size=N[kKmMgG] or nr_blocks=N
 * (pages).  -1 when it is not a fixed bound (a percentage of host memory,
 * a suffix we do not take); 0 means unlimited to the kernel. */
static long long size_value(const char *o) {
  bool blocks = strncmp(o, "nr_blocks=", 10) == 0;
  const char *v = o + (blocks ? 10 : 5);
  char *end;
  long long n = strtoll(v, &end, 10);
  if (end == v || n < 0)
    return -1;
  long long unit = 1;
  if (blocks)
    unit = 4096;
  else if (*end != '\0')
    switch (tolower((unsigned char)*end++)) {
    case 'k': unit = 1LL << 10; break;
    case 'm': unit = 1LL << 20; break;
    case 'g': unit = 1LL << 30; break;
    default: return -1; /* a percentage of host memory: not a fixed bound */
    }
  long long bytes;
  if (*end != '\0' || __builtin_mul_overflow(n, unit, &bytes))
    return -1;
  return bytes;
}

static bool is_size_option(const char *o) {
  return strncmp(o, "size=", 5) == 0 || strncmp(o, "nr_blocks=", 10) == 0;
}

/* The flag options runc and runsc act on, and which protective flag each
 * sets (on) or clears (off).  The kernel, runc and runsc all take the
 * options in order, the last word winning: ["ro", "rw"] is read-write. */
static const struct {
  const char *name;
  int flag; /* index into oci_mount_flags' bools */
  bool on;
} flag_words[] = {
    {"ro", 0, true},      {"rro", 0, true},     {"rw", 0, false},       {"rrw", 0, false},
    {"nosuid", 1, true},  {"rnosuid", 1, true}, {"suid", 1, false},     {"rsuid", 1, false},
    {"nodev", 2, true},   {"rnodev", 2, true},  {"dev", 2, false},      {"rdev", 2, false},
    {"noexec", 3, true},  {"rnoexec", 3, true}, {"exec", 3, false},     {"rexec", 3, false},
};

void oci_mount_flags(const json_t *m, struct oci_mount_flags *out) {
  bool f[4] = {false, false, false, false};
  out->size = -1;
  out->rbind = false;
  const json_t *opts = json_object_get(m, "options");
  for (size_t i = 0; i < json_array_len(opts); i++) {
    const char *o = json_string_value(json_array_get(opts, i));
    if (o == NULL)
      continue;
    if (strcmp(o, "defaults") == 0) {
      /* mount(8)'s "defaults" is rw,suid,dev,exec */
      f[0] = f[1] = f[2] = f[3] = false;
      continue;
    }
    if (strcmp(o, "rbind") == 0)
      out->rbind = true;
    if (is_size_option(o))
      out->size = size_value(o);
    for (size_t k = 0; k < sizeof flag_words / sizeof flag_words[0]; k++)
      if (strcmp(o, flag_words[k].name) == 0)
        f[flag_words[k].flag] = flag_words[k].on;
  }
  out->ro = f[0];
  out->nosuid = f[1];
  out->nodev = f[2];
  out->noexec = f[3];
}

long long oci_tmpfs_size(const json_t *m) {
  struct oci_mount_flags f;
  oci_mount_flags(m, &f);
  return f.size;
}

static void set_tmpfs_size(json_t *m, long long bytes) {
  /* Every size option goes, so the one left is the one the kernel uses
   * (with "size=1m", "size=8g" it would take the last). */
  json_t *opts = json_object_ensure_array(m, "options");
  size_t n = 0;
  bool same = false;
  for (size_t i = 0; i < json_array_len(opts); i++) {
    const char *o = json_string_value(json_array_get(opts, i));
    if (o && is_size_option(o)) {
      n++;
      same = size_value(o) == bytes;
    }
  }
  if (n == 1 && same)
    return; /* already the one bound: hardening twice changes nothing */
  for (size_t i = json_array_len(opts); i-- > 0;) {
    const char *o = json_string_value(json_array_get(opts, i));
    if (o && is_size_option(o))
      json_array_remove(opts, i);
  }
  cleanup_free char *s = (bytes % (1 << 20)) == 0 ? xasprintf("size=%lldm", bytes >> 20) : xasprintf("size=%lldk", (bytes + 1023) >> 10);
  json_array_append(opts, json_new_string(s));
}

static const struct profile_tmpfs *profile_tmpfs_at(const struct oci_profile *p, const char *dst) {
  for (size_t i = 0; dst && i < p->n_tmpfs; i++)
    if (strcmp(p->tmpfs[i].path, dst) == 0)
      return &p->tmpfs[i];
  return NULL;
}

static json_t *new_tmpfs(const char *dst) {
  json_t *m = json_new_object();
  json_object_set(m, "destination", json_new_string(dst));
  json_object_set(m, "type", json_new_string("tmpfs"));
  json_object_set(m, "source", json_new_string("tmpfs"));
  json_t *opts = json_new_array();
  json_array_append(opts, json_new_string("mode=1777"));
  json_object_set(m, "options", opts);
  return m;
}

/* The cap for a tmpfs the profile does not name: the smallest one it
 * does name (or 64 MiB), so no tmpfs can hold more than the profile's
 * scratch space. */
static long long default_tmpfs_cap(const struct oci_profile *p) {
  long long cap = 64LL << 20;
  for (size_t i = 0; i < p->n_tmpfs; i++)
    if (i == 0 || p->tmpfs[i].size_bytes < cap)
      cap = p->tmpfs[i].size_bytes;
  return cap;
}

/* An option and its opposite both given ("ro", "rw"): the input's
 * intent is unclear, so the tighter one is kept (the kernel would take
 * whichever came last). */
static void resolve_conflicts(json_t *m, const char *dst) {
  static const char *const pairs[][2] = {{"ro", "rw"}, {"nosuid", "suid"}, {"nodev", "dev"}, {"noexec", "exec"}};
  const json_t *opts = json_object_get(m, "options");
  for (size_t k = 0; k < 4; k++) {
    bool on = false, off = false;
    for (size_t i = 0; i < json_array_len(opts); i++) {
      const char *o = json_string_value(json_array_get(opts, i));
      if (o == NULL)
        continue;
      on |= strcmp(o, pairs[k][0]) == 0 || (o[0] == 'r' && strcmp(o + 1, pairs[k][0]) == 0);
      off |= strcmp(o, pairs[k][1]) == 0 || (o[0] == 'r' && strcmp(o + 1, pairs[k][1]) == 0);
    }
    if (on && off && !(k == 2 && dst && strcmp(dst, "/dev") == 0))
      opt_set(m, pairs[k][0], pairs[k][1]);
  }
}

static void harden_one_mount(json_t *m, const struct oci_profile *p) {
  const char *type = json_string_value(json_object_get(m, "type"));
  const char *dst = json_string_value(json_object_get(m, "destination"));
  resolve_conflicts(m, dst);
  if (mount_is_bind(m)) {
    /* Set-uid binaries and device nodes from the host are how a bind
     * mount turns into privilege; the data itself stays usable. */
    opt_set(m, "nosuid", "suid");
    opt_set(m, "nodev", "dev");
    return;
  }
  if (type == NULL)
    return;
  if (strcmp(type, "tmpfs") == 0) {
    const struct profile_tmpfs *t = profile_tmpfs_at(p, dst);
    long long cap = t ? t->size_bytes : default_tmpfs_cap(p);
    long long have = oci_tmpfs_size(m);
    set_tmpfs_size(m, have <= 0 || have > cap ? cap : have);
    opt_set(m, "nosuid", "suid");
    opt_set(m, "noexec", "exec");
    /* /dev holds the device nodes the runtime creates there; nodev on it
     * would make even /dev/null unusable. */
    if (dst == NULL || strcmp(dst, "/dev") != 0)
      opt_set(m, "nodev", "dev");
  } else if (strcmp(type, "proc") == 0 || strcmp(type, "mqueue") == 0) {
    opt_set(m, "nosuid", "suid");
    opt_set(m, "nodev", "dev");
    opt_set(m, "noexec", "exec");
  } else if (strcmp(type, "sysfs") == 0 || strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0) {
    opt_set(m, "nosuid", "suid");
    opt_set(m, "nodev", "dev");
    opt_set(m, "noexec", "exec");
    opt_set(m, "ro", "rw");
  } else if (strcmp(type, "devpts") == 0) {
    opt_set(m, "nosuid", "suid");
    opt_set(m, "noexec", "exec");
  }
}

static bool is_below(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return path && strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* Put m at index i of arr, shifting the rest up. */
static void array_insert(json_t *arr, size_t i, json_t *m) {
  json_array_append(arr, m);
  size_t last = arr->u.array.len - 1;
  memmove(&arr->u.array.items[i + 1], &arr->u.array.items[i], (last - i) * sizeof *arr->u.array.items);
  arr->u.array.items[i] = m;
}

static void ensure_profile_tmpfs(json_t *mounts, const struct oci_profile *p) {
  for (size_t k = 0; k < p->n_tmpfs; k++) {
    const char *want = p->tmpfs[k].path;
    bool have = false;
    for (size_t i = 0; i < json_array_len(mounts); i++) {
      json_t *m = json_array_get(mounts, i);
      const char *dst = json_string_value(json_object_get(m, "destination"));
      const char *type = json_string_value(json_object_get(m, "type"));
      if (dst == NULL || strcmp(dst, want) != 0)
        continue;
      if (type && strcmp(type, "tmpfs") == 0 && !mount_is_bind(m)) {
        have = true;
        continue;
      }
      /* Whatever was mounted there (a host directory, say) is replaced,
       * in place, by bounded scratch space: the container loses no
       * isolation, and mounts below it keep their order. */
      json_t *t = new_tmpfs(want);
      harden_one_mount(t, p);
      json_free(m);
      mounts->u.array.items[i] = t;
      have = true;
    }
    if (have)
      continue;
    /* Mounts are made in order: the new tmpfs goes before anything
     * mounted below it (a bind at /tmp/work), or it would hide them. */
    size_t at = json_array_len(mounts);
    for (size_t i = 0; i < json_array_len(mounts); i++)
      if (is_below(json_string_value(json_object_get(json_array_get(mounts, i), "destination")), want)) {
        at = i;
        break;
      }
    json_t *t = new_tmpfs(want);
    harden_one_mount(t, p);
    array_insert(mounts, at, t);
  }
}

static void extend_list(json_t *linux, const char *key, const struct namelist *add) {
  json_t *arr = json_object_ensure_array(linux, key);
  for (size_t i = 0; i < add->n; i++)
    if (!json_array_has_string(arr, add->v[i]))
      json_array_append(arr, json_new_string(add->v[i]));
}

/* The device cgroup entries behind each profile device name.  "tty"
 * includes the terminal devices a console needs: /dev/console (5:1),
 * /dev/ptmx (5:2) and the pts slaves (136:*). */
struct dev_rule {
  const char *name;
  long long major, minor; /* -1 = any */
};
static const struct dev_rule dev_rules[] = {
    {"null", 1, 3},   {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9},
    {"tty", 5, 0},    {"tty", 5, 1},  {"tty", 5, 2},  {"tty", 136, -1},
};

static bool rule_matches(const json_t *r, long long major, long long minor) {
  const char *type = json_string_value(json_object_get(r, "type"));
  long long rmaj = -1, rmin = -1;
  if (type && strcmp(type, "a") != 0 && strcmp(type, "c") != 0)
    return false;
  json_integer_value(json_object_get(r, "major"), &rmaj);
  json_integer_value(json_object_get(r, "minor"), &rmin);
  /* A wildcard in our entry (136:*) matches only a wildcard rule. */
  return (rmaj == -1 || rmaj == major) && (rmin == -1 || (minor != -1 && rmin == minor));
}

/* Which of r, w, m the input's rules allow for one device, evaluating them
 * in order as the kernel's device cgroup (and runc's emulator) do.  With
 * no rules at all the cgroup default allows everything. */
static void allowed_access(const json_t *rules, long long major, long long minor, char out[4]) {
  bool a[3] = {true, true, true};
  static const char acc[] = "rwm";
  for (size_t i = 0; i < json_array_len(rules); i++) {
    const json_t *r = json_array_get(rules, i);
    if (!rule_matches(r, major, minor))
      continue;
    const char *access = json_string_value(json_object_get(r, "access"));
    bool allow = json_is_true(json_object_get(r, "allow"));
    for (int k = 0; k < 3; k++)
      if (access == NULL || strchr(access, acc[k]))
        a[k] = allow;
  }
  int n = 0;
  for (int k = 0; k < 3; k++)
    if (a[k])
      out[n++] = acc[k];
  out[n] = '\0';
}

static void device_rules_harden(json_t *resources, const struct oci_profile *p) {
  const json_t *in = json_object_get(resources, "devices");
  json_t *out = json_new_array();
  json_t *deny = json_new_object();
  json_object_set(deny, "allow", json_new_bool(false));
  json_object_set(deny, "access", json_new_string("rwm"));
  json_array_append(out, deny);
  for (size_t i = 0; i < sizeof dev_rules / sizeof dev_rules[0]; i++) {
    if (!namelist_has(&p->devices, dev_rules[i].name))
      continue;
    char acc[4];
    allowed_access(in, dev_rules[i].major, dev_rules[i].minor, acc);
    if (acc[0] == '\0')
      continue;
    /* mknod stays out: without CAP_MKNOD it cannot succeed anyway. */
    char *mk = strchr(acc, 'm');
    if (mk)
      *mk = '\0';
    if (acc[0] == '\0')
      continue;
    json_t *r = json_new_object();
    json_object_set(r, "allow", json_new_bool(true));
    json_object_set(r, "type", json_new_string("c"));
    json_object_set(r, "major", json_new_integer(dev_rules[i].major));
    if (dev_rules[i].minor >= 0)
      json_object_set(r, "minor", json_new_integer(dev_rules[i].minor));
    json_object_set(r, "access", json_new_string(acc));
    json_array_append(out, r);
  }
  json_object_set(resources, "devices", out);
}

void oci_mounts_harden(json_t *config, const struct oci_profile *p) {
  if (p->readonly_rootfs)
    json_object_set(json_object_ensure_object(config, "root"), "readonly", json_new_bool(true));
  json_t *mounts = json_object_ensure_array(config, "mounts");
  ensure_profile_tmpfs(mounts, p);
  for (size_t i = 0; i < json_array_len(mounts); i++)
    harden_one_mount(json_array_get(mounts, i), p);
  json_t *linux = json_object_ensure_object(config, "linux");
  extend_list(linux, "maskedPaths", &p->masked_paths);
  extend_list(linux, "readonlyPaths", &p->readonly_paths);
  device_rules_harden(json_object_ensure_object(linux, "resources"), p);
}

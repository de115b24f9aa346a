/* The base config for `tollgate spec`, mirroring `runc spec`. */
#include "oci/spec.h"

#include "base/util.h"

static json_t *strings(const char *const *v) {
  json_t *a = json_new_array();
  for (; *v; v++)
    json_array_append(a, json_new_string(*v));
  return a;
}

static json_t *mount(const char *dst, const char *type, const char *src, const char *const *opts) {
  json_t *m = json_new_object();
  json_object_set(m, "destination", json_new_string(dst));
  json_object_set(m, "type", json_new_string(type));
  json_object_set(m, "source", json_new_string(src));
  json_object_set(m, "options", strings(opts));
  return m;
}

json_t *oci_default_spec(const char *rootfs, char *const *args, size_t nargs) {
  json_t *c = json_new_object();
  json_object_set(c, "ociVersion", json_new_string("1.0.2-dev"));

  json_t *p = json_new_object();
  json_object_set(p, "terminal", json_new_bool(false));
  json_t *user = json_new_object();
  json_object_set(user, "uid", json_new_integer(0));
  json_object_set(user, "gid", json_new_integer(0));
  json_object_set(p, "user", user);
  json_t *argv = json_new_array();
  for (size_t i = 0; i < nargs; i++)
    json_array_append(argv, json_new_string(args[i]));
  if (nargs == 0)
    json_array_append(argv, json_new_string("sh"));
  json_object_set(p, "args", argv);
  static const char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", NULL};
  json_object_set(p, "env", strings(env));
  json_object_set(p, "cwd", json_new_string("/"));
  /* runc spec's own defaults; hardening reduces them to the profile's. */
  static const char *const caps[] = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL};
  json_t *c_caps = json_new_object();
  static const char *const sets[] = {"bounding", "effective", "permitted", "ambient"};
  for (size_t i = 0; i < 4; i++)
    json_object_set(c_caps, sets[i], strings(caps));
  json_object_set(p, "capabilities", c_caps);
  json_t *rl = json_new_object();
  json_object_set(rl, "type", json_new_string("RLIMIT_NOFILE"));
  json_object_set(rl, "hard", json_new_integer(1024));
  json_object_set(rl, "soft", json_new_integer(1024));
  json_t *rls = json_new_array();
  json_array_append(rls, rl);
  json_object_set(p, "rlimits", rls);
  json_object_set(p, "noNewPrivileges", json_new_bool(true));
  json_object_set(c, "process", p);

  json_t *root = json_new_object();
  json_object_set(root, "path", json_new_string(rootfs));
  json_object_set(root, "readonly", json_new_bool(true));
  json_object_set(c, "root", root);
  json_object_set(c, "hostname", json_new_string("tollgate"));

  json_t *mounts = json_new_array();
  static const char *const o_proc[] = {"nosuid", "noexec", "nodev", NULL};
  static const char *const o_dev[] = {"nosuid", "strictatime", "mode=755", "size=65536k", NULL};
  static const char *const o_pts[] = {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", NULL};
  static const char *const o_shm[] = {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL};
  static const char *const o_sys[] = {"nosuid", "noexec", "nodev", "ro", NULL};
  static const char *const o_cg[] = {"nosuid", "noexec", "nodev", "relatime", "ro", NULL};
  json_array_append(mounts, mount("/proc", "proc", "proc", o_proc));
  json_array_append(mounts, mount("/dev", "tmpfs", "tmpfs", o_dev));
  json_array_append(mounts, mount("/dev/pts", "devpts", "devpts", o_pts));
  json_array_append(mounts, mount("/dev/shm", "tmpfs", "shm", o_shm));
  json_array_append(mounts, mount("/dev/mqueue", "mqueue", "mqueue", o_proc));
  json_array_append(mounts, mount("/sys", "sysfs", "sysfs", o_sys));
  json_array_append(mounts, mount("/sys/fs/cgroup", "cgroup", "cgroup", o_cg));
  json_object_set(c, "mounts", mounts);

  json_t *linux = json_new_object();
  json_t *ns = json_new_array();
  static const char *const kinds[] = {"pid", "network", "ipc", "uts", "mount"};
  for (size_t i = 0; i < 5; i++) {
    json_t *n = json_new_object();
    json_object_set(n, "type", json_new_string(kinds[i]));
    json_array_append(ns, n);
  }
  json_object_set(linux, "namespaces", ns);
  json_t *res = json_new_object();
  json_t *devs = json_new_array();
  json_t *deny = json_new_object();
  json_object_set(deny, "allow", json_new_bool(false));
  json_object_set(deny, "access", json_new_string("rwm"));
  json_array_append(devs, deny);
  json_object_set(res, "devices", devs);
  json_object_set(linux, "resources", res);
  json_object_set(c, "linux", linux);
  return c;
}

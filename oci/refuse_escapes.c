/* Refusal of the known container-escape shapes in the input config (a cwd
 * or source through a /proc fd, the host's namespaces, host sockets and
 * sensitive host paths, block filesystems, a second procfs, devices and
 * sysctls outside the profile, unknown capabilities).  Each check runs on
 * the config as it came in, before any rewrite, so the error names what
 * the user wrote. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "oci/harden.h"
#include "oci/transform.h"
#include "base/term_escape.h"
#include "base/util.h"

static bool all_digits(const char *s, size_t n) {
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isdigit((unsigned char)s[i]))
      return false;
  return true;
}

/* Does the component at *p equal word or (digits) a number?  Advances. */
static bool take(const char **p, const char *word) {
  const char *s = *p;
  if (*s != '/')
    return false;
  s++;
  const char *e = strchrnul(s, '/');
  size_t n = (size_t)(e - s);
  bool ok = word ? (strlen(word) == n && memcmp(s, word, n) == 0) : all_digits(s, n);
  if (ok)
    *p = e;
  return ok;
}

bool oci_path_is_fd_escape(const char *path) {
  if (path == NULL)
    return false;
  cleanup_free char *c = oci_path_clean(path);
  const char *p = c;
  /* /dev/fd and /dev/std* are links into /proc/self/fd. */
  if (take(&p, "dev")) {
    const char *q = p;
    return take(&q, "fd") || take(&p, "stdin") || take(&p, "stdout") || take(&p, "stderr");
  }
  p = c;
  if (!take(&p, "proc"))
    return false;
  /* /proc/self, /proc/thread-self, /proc/<pid>, optionally /task/<tid> */
  if (!take(&p, "self") && !take(&p, "thread-self") && !take(&p, NULL))
    return false;
  const char *q = p;
  if (take(&q, "task") && take(&q, NULL))
    p = q;
  return take(&p, "fd");
}

/* The host's own namespace of a kind, by device and inode. */
static bool same_as_host(const char *nspath, const char *kind, int *why_errno) {
  struct stat target, host;
  if (stat(nspath, &target) < 0) {
    *why_errno = errno;
    return true; /* cannot check it: treat it as the host's (fail closed) */
  }
  const char *refs[] = {"/proc/1/ns/", "/proc/self/ns/"};
  for (size_t i = 0; i < 2; i++) {
    cleanup_free char *ref = xasprintf("%s%s", refs[i], kind);
    if (stat(ref, &host) == 0 && host.st_dev == target.st_dev && host.st_ino == target.st_ino)
      return true;
  }
  return false;
}

/* The runtime spec's namespace types and their names under /proc/<pid>/ns. */
static const char *const ns_types[][2] = {{"pid", "pid"},   {"network", "net"}, {"mount", "mnt"},
                                          {"ipc", "ipc"},   {"uts", "uts"},     {"user", "user"},
                                          {"cgroup", "cgroup"}, {"time", "time"}};
#define N_NS_TYPES (sizeof ns_types / sizeof ns_types[0])

static const char *ns_proc_name(const char *type) {
  for (size_t i = 0; type && i < N_NS_TYPES; i++)
    if (strcmp(ns_types[i][0], type) == 0)
      return ns_types[i][1];
  return NULL;
}

/* An entry whose type is none of the spec's: a runtime fails on it or
 * skips it, and either way it is not the namespace the author meant.  The
 * type is shown escaped: a format character (U+202E) would otherwise make
 * the message read as a known type. */
static int unknown_namespace_type(size_t i, const char *type, tg_error **err) {
  char known[96] = "";
  size_t used = 0;
  for (size_t k = 0; k < N_NS_TYPES; k++)
    used += (size_t)snprintf(known + used, used < sizeof known ? sizeof known - used : 0, "%s%s",
                             k ? ", " : "", ns_types[k][0]);
  if (type == NULL)
    return tg_error_set(err, 0, "linux.namespaces[%zu]: \"type\" must be a string naming the namespace: one of %s",
                        i, known);
  cleanup_free char *shown = escape_for_terminal(type, false);
  return tg_error_set(err, 0, "linux.namespaces[%zu]: unknown namespace type \"%s\"; use one of %s", i, shown, known);
}

/* The OCI type of the namespace the file at path is ("pid", "network",
 * ...), "" when it is no namespace file, NULL when it cannot be looked at
 * (the caller's same_as_host() then reports why).  The author's path is
 * opened O_PATH only, which neither blocks on a FIFO nor acts on a device;
 * the namespace is asked its type only once fstatfs() shows an nsfs
 * inode. */
const char *oci_namespace_kind(const char *path) {
  static const struct {
    int flag;
    const char *type;
  } kinds[] = {{CLONE_NEWPID, "pid"}, {CLONE_NEWNET, "network"}, {CLONE_NEWNS, "mount"},
               {CLONE_NEWIPC, "ipc"}, {CLONE_NEWUTS, "uts"},     {CLONE_NEWUSER, "user"},
               {CLONE_NEWCGROUP, "cgroup"}, {0x00000080 /* CLONE_NEWTIME */, "time"}};
  cleanup_close int pfd = open(path, O_PATH | O_CLOEXEC);
  struct statfs sf;
  if (pfd < 0 || fstatfs(pfd, &sf) < 0)
    return NULL;
  if (sf.f_type != NSFS_MAGIC)
    return "";
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
  cleanup_close int fd = open(proc, O_RDONLY | O_CLOEXEC);
  int t = fd < 0 ? -1 : ioctl(fd, NS_GET_NSTYPE);
  for (size_t i = 0; t >= 0 && i < sizeof kinds / sizeof kinds[0]; i++)
    if (kinds[i].flag == t)
      return kinds[i].type;
  return NULL;
}

/* linux.namespaces[i]: a type the runtime spec knows, and a path (if
 * any) that is a namespace of that very type. */
static int check_namespace_kind(size_t i, const json_t *ns, tg_error **err) {
  const char *type = json_string_value(json_object_get(ns, "type"));
  const char *path = json_string_value(json_object_get(ns, "path"));
  const char *kind = ns_proc_name(type);
  if (kind == NULL)
    return unknown_namespace_type(i, type, err);
  if (path == NULL || path[0] == '\0')
    return 0;
  /* A path of another kind would fail in the backend's setns() (EINVAL),
   * or be taken for a join of the wrong namespace by what follows. */
  const char *is = oci_namespace_kind(path);
  if (is != NULL && is[0] == '\0')
    return tg_error_set(err, 0, "linux.namespaces[%zu]: %s is not a namespace file; give a %s namespace's path "
                        "(/proc/<pid>/ns/%s) or remove \"path\" so the container gets a new namespace",
                        i, path, type, kind);
  if (is != NULL && strcmp(is, type) != 0)
    return tg_error_set(err, 0, "linux.namespaces[%zu]: %s is a %s namespace, given as \"type\": \"%s\"; give a "
                        "%s namespace's path (/proc/<pid>/ns/%s) or remove \"path\" so the container gets a new "
                        "namespace", i, path, is, type, type, kind);
  return 0;
}

int oci_check_namespace_kinds(const json_t *config, tg_error **err) {
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++)
    if (check_namespace_kind(i, json_array_get(nss, i), err) < 0)
      return -1;
  return 0;
}

static int check_namespaces(const json_t *config, tg_error **err) {
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type"));
    const char *path = json_string_value(json_object_get(ns, "path"));
    if (check_namespace_kind(i, ns, err) < 0)
      return -1;
    if (path == NULL || path[0] == '\0')
      continue;
    const char *kind = ns_proc_name(type);
    int e = 0;
    /* Joining the host's namespace is what "privileged" containers do to
     * see host processes, mounts or network; nothing a sandbox needs. */
    if (same_as_host(path, kind, &e)) {
      if (e)
        return tg_error_set(err, e, "linux.namespaces[%zu]: cannot check %s namespace path %s; remove \"path\" so the container gets a new namespace",
                            i, type, path);
      return tg_error_set(err, 0, "linux.namespaces[%zu]: %s is the host's %s namespace; remove \"path\" so the container gets a new namespace",
                          i, path, type);
    }
  }
  return 0;
}

static bool is_bind(const json_t *m) {
  const char *type = json_string_value(json_object_get(m, "type"));
  const json_t *opts = json_object_get(m, "options");
  return (type && strcmp(type, "bind") == 0) || json_array_has_string(opts, "bind") ||
         json_array_has_string(opts, "rbind");
}

static const char *const allowed_fs[] = {"bind", "tmpfs", "proc", "sysfs", "cgroup", "cgroup2", "mqueue", "devpts", "none"};

/* The kernel filesystems that show host-wide state through what they
 * contain, each at the one place the masked and read-only path lists
 * cover: a second procfs at /p2 would show /p2/interrupts, /p2/kcore...
 * unmasked.  cgroup and cgroup2 share /sys/fs/cgroup. */
static const struct {
  const char *type, *destination;
} pseudo_fs[] = {
    {"proc", "/proc"},   {"sysfs", "/sys"},          {"mqueue", "/dev/mqueue"},
    {"devpts", "/dev/pts"}, {"cgroup", "/sys/fs/cgroup"}, {"cgroup2", "/sys/fs/cgroup"},
};
#define N_PSEUDO (sizeof pseudo_fs / sizeof pseudo_fs[0])

static int check_pseudo_mount(const json_t *m, size_t i, const char *type, unsigned *seen, tg_error **err) {
  const char *dst = json_string_value(json_object_get(m, "destination"));
  for (size_t k = 0; k < N_PSEUDO; k++) {
    if (strcmp(type, pseudo_fs[k].type) != 0)
      continue;
    cleanup_free char *clean = dst && dst[0] == '/' ? oci_path_clean(dst) : NULL;
    if (clean == NULL || strcmp(clean, pseudo_fs[k].destination) != 0)
      return tg_error_set(err, 0, "mounts[%zu]: a %s filesystem may only be mounted at %s, not at %s (elsewhere it shows what the masked paths hide); remove it or set \"destination\": \"%s\"",
                          i, type, pseudo_fs[k].destination, dst ? dst : "(none)", pseudo_fs[k].destination);
    /* one bit per destination: cgroup and cgroup2 count as one */
    unsigned bit = 1u << (k == 5 ? 4 : k);
    if (*seen & bit)
      return tg_error_set(err, 0, "mounts[%zu]: a second %s mount at %s; keep only one", i, type, clean);
    *seen |= bit;
  }
  return 0;
}

static int check_mount(const json_t *m, size_t i, const struct harden_options *o, unsigned *seen, tg_error **err) {
  const char *src = json_string_value(json_object_get(m, "source"));
  const char *dst = json_string_value(json_object_get(m, "destination"));
  const char *type = json_string_value(json_object_get(m, "type"));
  if (oci_path_is_fd_escape(src))
    return tg_error_set(err, 0, "mounts[%zu]: source %s is a file descriptor path under /proc (the CVE-2024-21626 shape); use a real host path",
                        i, src);
  if (!is_bind(m)) {
    bool ok = type == NULL;
    for (size_t k = 0; type && k < sizeof allowed_fs / sizeof allowed_fs[0]; k++)
      ok |= strcmp(type, allowed_fs[k]) == 0;
    if (!ok)
      return tg_error_set(err, 0, "mounts[%zu] (%s): filesystem type %s gives the container a host device or filesystem; use a bind mount of a directory instead",
                          i, dst ? dst : "?", type);
    return type ? check_pseudo_mount(m, i, type, seen, err) : 0;
  }
  if (src == NULL || src[0] == '\0')
    return tg_error_set(err, 0, "mounts[%zu]: a bind mount needs a source", i);
  /* A relative source names a path in the bundle directory: that is
   * where runc and runsc resolve it, so that is what is checked. */
  cleanup_free char *host = oci_host_path(src, o ? o->bundle_dir : NULL);
  if (host == NULL)
    return tg_error_set(err, 0, "mounts[%zu]: relative bind source %s cannot be checked without the bundle directory; give an absolute path",
                        i, src);
  cleanup_free char *field = xasprintf("mounts[%zu] (bind source)", i);
  return oci_check_host_path(field, src, host, false, o, err);
}

static int check_root(const json_t *config, const struct harden_options *o, tg_error **err) {
  const char *root = json_string_value(json_get_path(config, "root.path"));
  if (root == NULL)
    return 0;
  if (oci_path_is_fd_escape(root))
    return tg_error_set(err, 0, "root.path %s is a file descriptor path; use the rootfs directory", root);
  cleanup_free char *host = oci_host_path(root, o ? o->bundle_dir : NULL);
  if (host == NULL)
    return tg_error_set(err, 0, "root.path %s is relative and cannot be checked without the bundle directory; give an absolute path",
                        root);
  return oci_check_host_path("root.path", root, host, true, o, err);
}

static int check_devices(const json_t *config, const struct oci_profile *p, tg_error **err) {
  const json_t *devs = json_get_path(config, "linux.devices");
  for (size_t i = 0; i < json_array_len(devs); i++) {
    const json_t *d = json_array_get(devs, i);
    const char *path = json_string_value(json_object_get(d, "path"));
    const char *type = json_string_value(json_object_get(d, "type"));
    const char *name = path && strncmp(path, "/dev/", 5) == 0 ? path + 5 : NULL;
    const struct std_device *sd = profile_std_device(name);
    long long major = -1, minor = -1;
    json_integer_value(json_object_get(d, "major"), &major);
    json_integer_value(json_object_get(d, "minor"), &minor);
    if (sd == NULL || !namelist_has(&p->devices, name))
      return tg_error_set(err, 0, "linux.devices[%zu]: %s is not allowed by profile %s (only /dev/null, zero, full, random, urandom, tty); remove it",
                          i, path ? path : "(no path)", p->name);
    /* The name is not enough: /dev/null with a disk's numbers is a disk. */
    if (type == NULL || type[0] != sd->type || type[1] || major != sd->major || minor != sd->minor)
      return tg_error_set(err, 0, "linux.devices[%zu]: %s must be a character device %lld:%lld; fix its type and numbers or remove it",
                          i, path, sd->major, sd->minor);
  }
  return 0;
}

static int check_sysctls(const json_t *config, const struct oci_profile *p, tg_error **err) {
  const json_t *s = json_get_path(config, "linux.sysctl");
  if (!json_is(s, JSON_OBJECT))
    return 0;
  for (size_t i = 0; i < s->u.object.len; i++)
    if (!namelist_has(&p->sysctls, s->u.object.keys[i]))
      return tg_error_set(err, 0, "linux.sysctl: %s is not on profile %s's safe list (see docs/hardening.md); remove it",
                          s->u.object.keys[i], p->name);
  return 0;
}

static int check_capabilities(const json_t *process, const char *field, tg_error **err) {
  static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
  const json_t *caps = json_object_get(process, "capabilities");
  for (size_t s = 0; s < 5; s++) {
    const json_t *arr = json_object_get(caps, sets[s]);
    for (size_t k = 0; k < json_array_len(arr); k++) {
      const char *name = json_string_value(json_array_get(arr, k));
      /* The runtime spec: an unknown capability MUST be an error.  A
       * silently dropped name hides a typo that may matter (CAP_SYS_ADMN). */
      if (name == NULL || !oci_cap_name_known(name))
        return tg_error_set(err, 0, "%s.capabilities.%s[%zu]: unknown capability %s%s%s; use a name from capabilities(7) such as CAP_CHOWN, or remove it",
                            field, sets[s], k, name ? "\"" : "", name ? name : "(not a string)", name ? "\"" : "");
    }
  }
  return 0;
}

int oci_check_process_escapes(const json_t *process, const char *field, tg_error **err) {
  const char *cwd = json_string_value(json_object_get(process, "cwd"));
  /* CVE-2024-21626: a cwd under /proc/self/fd/N resolves through a file
   * descriptor the runtime leaked from the host, outside the rootfs. */
  if (oci_path_is_fd_escape(cwd))
    return tg_error_set(err, 0, "%s.cwd %s is a file descriptor path under /proc (the CVE-2024-21626 shape); use a directory inside the container",
                        field, cwd);
  return check_capabilities(process, field, err);
}

int oci_refuse_escapes(const json_t *config, const struct oci_profile *p, const struct harden_options *o,
                       tg_error **err) {
  if (oci_check_process_escapes(json_object_get(config, "process"), "process", err) < 0)
    return -1;
  if (check_root(config, o, err) < 0)
    return -1;
  const json_t *mounts = json_object_get(config, "mounts");
  unsigned seen = 0;
  for (size_t i = 0; i < json_array_len(mounts); i++)
    if (check_mount(json_array_get(mounts, i), i, o, &seen, err) < 0)
      return -1;
  if (check_namespaces(config, err) < 0 || check_devices(config, p, err) < 0 || check_sysctls(config, p, err) < 0)
    return -1;
  return 0;
}

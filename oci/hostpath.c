/* Which host paths a bind source or root.path may name.  The rules are
 * applied twice: on the path as written (resolved against the bundle, as
 * the backend resolves it) when the config is checked, and again by
 * shim/lifecycle/mount_pin.c on the object it actually opened, which is the check
 * that counts (see docs/hardening.md, "Mount sources are pinned"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oci/harden.h"
#include "oci/transform.h"
#include "base/util.h"

/* Host paths that must never be bind-mounted, nor any directory above
 * them (a directory exposes every socket below it). */
static const char *const sensitive[] = {
    "/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/var/run/containerd",
    "/run/crio", "/var/run/crio", "/run/podman", "/run/dbus", "/var/run/dbus", "/run/systemd",
    "/var/lib/docker", "/var/lib/containerd", "/var/lib/kubelet", "/etc/shadow", "/root",
    "/etc/tollgate",
};
/* Host trees that must never be bind-mounted, nor anything inside. */
static const char *const sensitive_trees[] = {"/proc", "/sys", "/dev", "/boot", "/lib/modules", "/usr/lib/modules"};

static bool is_under(const char *path, const char *tree) {
  if (strcmp(tree, "/") == 0)
    return true;
  size_t n = strlen(tree);
  return strncmp(path, tree, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *oci_host_path(const char *path, const char *bundle_dir) {
  if (path == NULL)
    return NULL;
  if (path[0] == '/')
    return oci_path_clean(path);
  if (bundle_dir == NULL || bundle_dir[0] != '/')
    return NULL;
  cleanup_free char *joined = xasprintf("%s/%s", bundle_dir, path);
  return oci_path_clean(joined);
}

/* A directory under the tollgate root that is a container's state: made
 * 0700 by state_create_dir(), holding state.json once created.  A bundle
 * kept under the root (tests do) is neither. */
static bool is_state_dir_path(const char *path, const char *root) {
  size_t n = strlen(root);
  const char *rest = path + n;
  while (*rest == '/')
    rest++;
  if (*rest == '\0')
    return true;
  const char *slash = strchrnul(rest, '/');
  cleanup_free char *first = xasprintf("%.*s/%.*s", (int)n, root, (int)(slash - rest), rest);
  cleanup_free char *state = xasprintf("%s/state.json", first);
  struct stat st;
  if (lstat(first, &st) < 0)
    return false;
  return !S_ISDIR(st.st_mode) || (st.st_mode & 0777) == 0700 || lstat(state, &st) == 0;
}

/* One candidate spelling of the path (lexical or with links resolved). */
static int check_one(const char *field, const char *written, const char *p, bool rootfs,
                     const struct harden_options *o, tg_error **err) {
  const char *what = rootfs ? "use the container's own root filesystem directory" : "mount a narrower directory";
  if (strcmp(p, "/") == 0)
    return tg_error_set(err, 0, "%s: %s is the host's root directory%s; %s", field, written,
                        strcmp(written, p) ? " (after resolving it)" : "", what);
  size_t n = strlen(p);
  /* A socket gives the container a host service to talk to (the
   * docker.sock shape): root on the host in one request. */
  if (!rootfs && ((n > 5 && strcmp(p + n - 5, ".sock") == 0) || (n > 7 && strcmp(p + n - 7, ".socket") == 0)))
    return tg_error_set(err, 0, "%s: %s looks like a host socket; host sockets are never mounted into a container", field,
                        written);
  for (size_t k = 0; k < sizeof sensitive / sizeof sensitive[0]; k++)
    if (is_under(sensitive[k], p))
      return tg_error_set(err, 0, "%s: %s (%s) would expose %s from the host; %s", field, written, p, sensitive[k], what);
  for (size_t k = 0; k < sizeof sensitive_trees / sizeof sensitive_trees[0]; k++)
    if (is_under(p, sensitive_trees[k]))
      return tg_error_set(err, 0, "%s: %s (%s) exposes the host's %s; %s", field, written, p, sensitive_trees[k], what);
  /* tollgate's own state (other containers' bridge areas and configs)
   * and the audit log are what the sandbox is checked against. */
  const char *own[] = {o ? o->state_root : NULL, o ? o->audit_dir : NULL};
  for (size_t k = 0; k < 2; k++) {
    if (own[k] == NULL || own[k][0] != '/')
      continue;
    cleanup_free char *dir = oci_path_clean(own[k]);
    cleanup_free char *real = realpath(dir, NULL);
    const char *forms[] = {dir, real};
    for (size_t f = 0; f < 2; f++) {
      if (forms[f] == NULL)
        continue;
      bool same = strcmp(p, forms[f]) == 0;
      bool inside = is_under(p, forms[f]) && (k == 1 || is_state_dir_path(p, forms[f]));
      if (is_under(forms[f], p) || inside)
        return tg_error_set(err, 0, "%s: %s (%s) %s tollgate's %s %s; %s", field, written, p,
                            same ? "is" : inside ? "is inside" : "contains", k == 0 ? "state root" : "audit directory",
                            forms[f], what);
    }
  }
  return 0;
}

int oci_check_host_path(const char *field, const char *written, const char *resolved, bool rootfs,
                        const struct harden_options *o, tg_error **err) {
  if (resolved == NULL || resolved[0] != '/')
    return tg_error_set(err, 0, "%s: %s does not name a reachable host path; %s", field, written,
                        rootfs ? "set root.path to the rootfs directory" : "use an existing host directory or file");
  cleanup_free char *clean = oci_path_clean(resolved);
  if (check_one(field, written, clean, rootfs, o, err) < 0)
    return -1;
  cleanup_free char *real = realpath(clean, NULL);
  if (real && strcmp(real, clean) != 0 && check_one(field, written, real, rootfs, o, err) < 0)
    return -1;
  struct stat st;
  if (!rootfs && stat(clean, &st) == 0 && S_ISSOCK(st.st_mode))
    return tg_error_set(err, 0, "%s: %s is a host socket; host sockets are never mounted into a container", field, written);
  return 0;
}

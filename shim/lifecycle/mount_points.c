/* Mount points made as host root (see shim/lifecycle/mount_points.h). */
#include "shim/lifecycle/mount_points.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"

/* path (relative, no leading '/') resolved with root_fd as "/": symlinks
 * in the image are followed inside it only, and /proc magic links not at
 * all. */
static int open_in_root(int root_fd, const char *path, int flags) {
  struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC),
                         .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, root_fd, path[0] ? path : ".", &how, sizeof how);
}

static bool below(const char *dest, const char *parent) {
  size_t n = strlen(parent);
  while (n > 1 && parent[n - 1] == '/')
    n--;
  if (n <= 1)
    return false; /* "/" is the rootfs itself */
  return strncmp(dest, parent, n) == 0 && dest[n] == '/';
}

/* Make rel (components separated by '/', none "." or "..") under root_fd:
 * parents as directories, the last one as a file or a directory.  0, or -1
 * with errno; EEXIST and a path that cannot be resolved count as done. */
static int make_path(int root_fd, char *rel, bool file) {
  char *last = strrchr(rel, '/');
  const char *name = last ? last + 1 : rel;
  cleanup_close int parent = -1;
  if (last == NULL) {
    parent = open_in_root(root_fd, "", O_PATH | O_DIRECTORY);
  } else {
    *last = '\0';
    parent = open_in_root(root_fd, rel, O_PATH | O_DIRECTORY);
    if (parent < 0 && errno == ENOENT) {
      if (make_path(root_fd, rel, false) < 0)
        return -1;
      parent = open_in_root(root_fd, rel, O_PATH | O_DIRECTORY);
    }
    *last = '/';
  }
  if (parent < 0)
    /* A component that is a dangling link, or not a directory: runc
     * resolves it the same way and reports it. */
    return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -1;
  /* Never through a link: mkdirat and O_EXCL|O_NOFOLLOW refuse to create
   * where a link stands (EEXIST), and a link that is there already is
   * runc's to resolve inside the rootfs. */
  if (!file)
    return mkdirat(parent, name, 0755) == 0 || errno == EEXIST ? 0 : -1;
  int fd = openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return errno == EEXIST ? 0 : -1;
}

/* The destination as components without "." or "..", or NULL when it is
 * not a plain absolute path (left to runc, which cleans it its own way). */
static char *relative_destination(const char *dest) {
  if (dest == NULL || dest[0] != '/')
    return NULL;
  char *rel = xstrdup(dest + strspn(dest, "/"));
  size_t w = 0;
  for (char *p = rel; *p;) {
    size_t n = strcspn(p, "/");
    if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
      free(rel);
      return NULL;
    }
    if (n > 0) {
      if (w > 0)
        rel[w++] = '/';
      memmove(rel + w, p, n);
      w += n;
    }
    p += n;
    p += strspn(p, "/");
  }
  rel[w] = '\0';
  if (w == 0) {
    free(rel);
    return NULL;
  }
  return rel;
}

/* Whether dest lies strictly below the destination of any mount of
 * config among the first n (all of them with n = SIZE_MAX). */
static bool below_a_mount(const json_t *mounts, size_t n, const char *dest) {
  for (size_t j = 0; j < n && j < json_array_len(mounts); j++)
    if (below(dest, json_string_value(json_object_get(json_array_get(mounts, j), "destination")) ?: ""))
      return true;
  return false;
}

static bool is_bind(const json_t *m) {
  const char *type = json_string_value(json_object_get(m, "type"));
  if (type != NULL && strcmp(type, "bind") == 0)
    return true;
  const json_t *opts = json_object_get(m, "options");
  for (size_t k = 0; k < json_array_len(opts); k++) {
    const char *o = json_string_value(json_array_get(opts, k));
    if (o != NULL && (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0))
      return true;
  }
  return false;
}

/* dest at or below prefix (NULL: every path). */
static bool within(const char *dest, const char *prefix) {
  if (prefix == NULL)
    return true;
  size_t n = strlen(prefix);
  return strncmp(dest, prefix, n) == 0 && (dest[n] == '\0' || dest[n] == '/');
}

/* root.path (relative to bundle unless absolute) opened as a directory,
 * its last component never a link: 0 with *fd -1 when there is none, -1
 * with *err.  *root is the path as written. */
static int open_rootfs(const json_t *config, const char *bundle, const char **root, int *fd,
                       tg_error **err) {
  *root = json_string_value(json_get_path(config, "root.path"));
  *fd = -1;
  if (*root == NULL || (*root)[0] == '\0' || ((*root)[0] != '/' && bundle == NULL))
    return 0;
  cleanup_free char *path = (*root)[0] == '/' ? xstrdup(*root) : xasprintf("%s/%s", bundle, *root);
  *fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*fd < 0)
    return tg_error_set(err, errno, "root.path %s", path);
  return 0;
}

int mount_points_make(const json_t *config, const char *bundle, const char *only, tg_error **err) {
  const char *root = NULL;
  cleanup_close int root_fd = -1;
  if (open_rootfs(config, bundle, &root, &root_fd, err) < 0)
    return -1;
  if (root_fd < 0)
    return 0;
  const json_t *mounts = json_get_path(config, "mounts");
  for (size_t i = 0; i < json_array_len(mounts); i++) {
    const json_t *m = json_array_get(mounts, i);
    const char *dest = json_string_value(json_object_get(m, "destination"));
    if (dest == NULL || !within(dest, only) || below_a_mount(mounts, i, dest))
      continue;
    cleanup_free char *rel = relative_destination(dest);
    if (rel == NULL)
      continue;
    /* A bind of a file needs a file to mount on; everything else a
     * directory.  The source is a pin or tollgate's own by now. */
    const char *src = json_string_value(json_object_get(m, "source"));
    struct stat st;
    bool file = is_bind(m) && src != NULL && stat(src, &st) == 0 && !S_ISDIR(st.st_mode);
    if (make_path(root_fd, rel, file) < 0 && errno != EROFS)
      return tg_error_set(err, errno, "mounts[%zu]: cannot make its mount point %s in the rootfs %s", i, dest,
                          root);
  }
  return 0;
}

int mount_points_make_cwd(const json_t *config, const char *bundle, tg_error **err) {
  const char *cwd = json_string_value(json_get_path(config, "process.cwd"));
  /* Below a mount, the directory is the mount's to hold: runc makes it
   * there (in a tmpfs its mapped root owns), and one made in the rootfs
   * would only be hidden. */
  if (cwd == NULL || below_a_mount(json_get_path(config, "mounts"), SIZE_MAX, cwd))
    return 0;
  cleanup_free char *rel = relative_destination(cwd);
  if (rel == NULL)
    return 0;
  const char *root = NULL;
  cleanup_close int root_fd = -1;
  if (open_rootfs(config, bundle, &root, &root_fd, err) < 0)
    return -1;
  if (root_fd < 0)
    return 0;
  if (make_path(root_fd, rel, false) < 0 && errno != EROFS)
    return tg_error_set(err, errno, "process.cwd: cannot make %s in the rootfs %s", cwd, root);
  return 0;
}

/* Pinning bind sources and the rootfs: see mount_pin.h. */
#include "shim/lifecycle/mount_pin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "oci/namelist.h"
#include "base/util.h"

#define PINS_DIR "pins"

static bool mount_is_bind(const json_t *m) {
  const char *type = json_string_value(json_object_get(m, "type"));
  const json_t *opts = json_object_get(m, "options");
  return (type && strcmp(type, "bind") == 0) || json_array_has_string(opts, "bind") ||
         json_array_has_string(opts, "rbind");
}

/* What the kernel says an fd names, or NULL (deleted, unreachable). */
static char *fd_path(int fd) {
  char link[64], buf[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, buf, sizeof buf - 1);
  if (n <= 0 || (size_t)n >= sizeof buf - 1)
    return NULL;
  buf[n] = '\0';
  if (buf[0] != '/' || (n > 10 && strcmp(buf + n - 10, " (deleted)") == 0))
    return NULL;
  return xstrdup(buf);
}

/* Open, check and pin one source; *pin gets the pin's path. */
static int pin_one(int pins_fd, const char *pins, const char *name, const char *field, const char *written,
                   bool rootfs, bool recursive, const struct harden_options *o, char **pin, tg_error **err) {
  cleanup_free char *host = oci_host_path(written, o->bundle_dir);
  if (host == NULL)
    return tg_error_set(err, 0, "%s: %s is relative and there is no bundle directory to resolve it in; give an absolute path",
                        field, written);
  /* O_PATH follows links like the backend would; what is checked from
   * here on is the object opened, never the path again. */
  cleanup_close int fd = open(host, O_PATH | O_CLOEXEC);
  if (fd < 0)
    return tg_error_set(err, errno, "%s: %s (%s) cannot be opened; %s", field, written, host,
                        rootfs ? "build the rootfs first, or fix root.path" : "create the source first, or fix \"source\"");
  struct stat st;
  if (fstat(fd, &st) < 0)
    return tg_error_set(err, errno, "%s: stat %s", field, written);
  cleanup_free char *real = fd_path(fd);
  if (oci_check_host_path(field, written, real, rootfs, o, err) < 0)
    return -1;
  if (S_ISSOCK(st.st_mode))
    return tg_error_set(err, 0, "%s: %s is a host socket; host sockets are never mounted into a container", field, written);
  if (rootfs && !S_ISDIR(st.st_mode))
    return tg_error_set(err, ENOTDIR, "%s: %s is not a directory; set root.path to the rootfs directory", field, written);
  /* The mount point: a directory for a directory, an empty file for
   * anything else (a bind mount needs the same kind on both sides). */
  if (S_ISDIR(st.st_mode) ? mkdirat(pins_fd, name, 0700) < 0
                          : mknodat(pins_fd, name, S_IFREG | 0600, 0) < 0)
    return tg_error_set(err, errno, "%s: make the mount point %s/%s", field, pins, name);
  char src[64];
  snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
  cleanup_free char *target = xasprintf("%s/%s", pins, name);
  if (mount(src, target, NULL, MS_BIND | (recursive ? MS_REC : 0), NULL) < 0)
    return tg_error_set(err, errno, "%s: bind %s onto %s (tollgate needs CAP_SYS_ADMIN)", field, written, target);
  /* Private: nothing mounted later on the host side shows up in the pin
   * (and so in the container), and the pin's unmount stays here. */
  if (mount(NULL, target, NULL, MS_PRIVATE | MS_REC, NULL) < 0)
    return tg_error_set(err, errno, "%s: make %s private", field, target);
  *pin = xstrdup(target);
  return 0;
}

int mount_pin_all(const char *state_dir, json_t *config, const struct harden_options *o, tg_error **err) {
  cleanup_free char *pins = xasprintf("%s/" PINS_DIR, state_dir);
  if (mkdir(pins, 0700) < 0)
    return tg_error_set(err, errno, "mkdir %s", pins);
  /* A container with a user namespace (shim/lifecycle/idrange.h) is set up by an
   * unprivileged host id, its mapped root, which must walk to the pinned
   * rootfs: the state directory is 0711 then, and so are the pins (search
   * only, no listing; each pin is the very object the checks passed). */
  struct stat sst;
  if (stat(state_dir, &sst) == 0 && (sst.st_mode & S_IXOTH) && chmod(pins, 0711) < 0)
    return tg_error_set(err, errno, "chmod %s", pins);
  cleanup_close int pins_fd = open(pins, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (pins_fd < 0)
    return tg_error_set(err, errno, "open %s", pins);
  json_t *root = json_object_get(config, "root");
  const char *rootfs = json_string_value(json_object_get(root, "path"));
  if (rootfs != NULL) {
    char *pin = NULL;
    /* recursive, as runc binds the rootfs itself */
    if (pin_one(pins_fd, pins, "rootfs", "root.path", rootfs, true, true, o, &pin, err) < 0)
      return -1;
    json_object_set(root, "path", json_new_string(pin));
    free(pin);
  }
  bool userns = json_array_len(json_get_path(config, "linux.uidMappings")) > 0;
  json_t *mounts = json_object_get(config, "mounts");
  for (size_t i = 0; i < json_array_len(mounts); i++) {
    json_t *m = json_array_get(mounts, i);
    const char *src = json_string_value(json_object_get(m, "source"));
    if (!mount_is_bind(m) || src == NULL)
      continue;
    char name[32], field[48];
    snprintf(name, sizeof name, "%zu", i);
    snprintf(field, sizeof field, "mounts[%zu] (bind source)", i);
    bool rec = json_array_has_string(json_object_get(m, "options"), "rbind");
    char *pin = NULL;
    if (pin_one(pins_fd, pins, name, field, src, false, rec, o, &pin, err) < 0)
      return -1;
    json_object_set(m, "source", json_new_string(pin));
    /* The pin carries its source's mount flags; in the container's own
     * user namespace they are locked, so the bind must ask for them. */
    struct statvfs vfs;
    if (userns && statvfs(pin, &vfs) == 0)
      oci_mount_keep_source_flags(m, vfs.f_flag);
    free(pin);
  }
  return 0;
}

int mount_pin_release(const char *state_dir, tg_error **err) {
  cleanup_free char *pins = xasprintf("%s/" PINS_DIR, state_dir);
  DIR *d = opendir(pins);
  if (d == NULL)
    return errno == ENOENT ? 0 : tg_error_set(err, errno, "open %s", pins);
  int ret = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    cleanup_free char *p = xasprintf("%s/%s", pins, de->d_name);
    /* Lazily: a backend process on its way out may still hold it; the
     * host object is never touched, only the pin is detached.  Until
     * EINVAL, in case something was stacked on it. */
    for (int k = 0; k < 8 && umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW) == 0; k++)
      ;
    if (unlinkat(dirfd(d), de->d_name, 0) < 0 && (errno != EISDIR || unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0) &&
        errno != ENOENT && ret == 0)
      ret = tg_error_set(err, errno, "remove the pin %s (still mounted? see /proc/self/mountinfo)", p);
  }
  closedir(d);
  if (ret == 0 && rmdir(pins) < 0 && errno != ENOENT)
    ret = tg_error_set(err, errno, "rmdir %s", pins);
  return ret;
}

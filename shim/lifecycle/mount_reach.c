/* The state directory's reachable view (see shim/lifecycle/mount_reach.h). */
#include "shim/lifecycle/mount_reach.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/util.h"

#define VIEW_MOUNT "state"

/* The name an older tollgate gave dir's view: the first 32 hex of
 * SHA-256(realpath), guessable by anyone who knows the path.  Only looked
 * for on release, to remove such a view. */
static char *legacy_view_of(const char *dir) {
  cleanup_free char *real = realpath(dir, NULL);
  if (real == NULL)
    return NULL;
  char hex[DIGEST_HEX_SIZE];
  if (digest_buffer_hex(real, strlen(real), hex, NULL) < 0)
    return NULL;
  return xasprintf("%s/%.32s", MOUNT_REACH_DIR, hex);
}

static bool is_hex_name(const char *s, size_t len) {
  if (strlen(s) != len)
    return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* The view name recorded in dir, or NULL.  The record is tollgate's own
 * (the state directory is root's), but it becomes a path: only 32 hex
 * digits are taken. */
static char *recorded_name(const char *dir) {
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return NULL;
  char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dfd, REACH_RECORD, 64, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return NULL;
  }
  if (!is_hex_name(buf, 32)) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* The host id the mappings give container id 0, or -1. */
static long long mapped_root(const json_t *config, const char *key) {
  const json_t *maps = json_get_path(config, key);
  for (size_t i = 0; i < json_array_len(maps); i++) {
    const json_t *m = json_array_get(maps, i);
    long long c = 0, h = 0, n = 0;
    if (json_integer_value(json_object_get(m, "containerID"), &c) &&
        json_integer_value(json_object_get(m, "hostID"), &h) && json_integer_value(json_object_get(m, "size"), &n) &&
        c == 0 && n > 0)
      return h;
  }
  return -1;
}

/* path: root's, of group gid, 0710.  Only host root and the mapped
 * root's group walk through it; the mapped root cannot change it. */
static int close_to_group(const char *path, gid_t gid, tg_error **err) {
  if (chown(path, 0, gid) < 0 || chmod(path, 0710) < 0)
    return tg_error_set(err, errno, "chown %s to 0:%u, mode 0710", path, (unsigned)gid);
  return 0;
}

/* Can "others" search every directory above dir? */
static bool parents_reachable(const char *dir) {
  cleanup_free char *real = realpath(dir, NULL);
  if (real == NULL)
    return true; /* nothing to do: create fails on its own */
  char *last = strrchr(real, '/');
  if (last == NULL || last == real)
    return true;
  *last = '\0';
  for (char *p = real + 1;; p++) {
    bool end = *p == '\0';
    if (*p == '/' || end) {
      char c = *p;
      *p = '\0';
      struct stat st;
      bool ok = stat(real, &st) == 0 && (st.st_mode & S_IXOTH);
      *p = c;
      if (!ok)
        return false;
      if (end)
        return true;
    }
  }
}

/* Is path the root of a mount?  (Not by st_dev: a bind of a directory of
 * the same filesystem has its parent's device.) */
static bool is_mounted(const char *path) {
  struct statx sx;
  return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
         (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* path through view when it names dir or something below it, else NULL. */
static char *rewrite(const char *path, const char *dir, const char *view) {
  size_t n = strlen(dir);
  if (path == NULL || strncmp(path, dir, n) != 0 || (path[n] != '/' && path[n] != '\0'))
    return NULL;
  return xasprintf("%s%s", view, path + n);
}

int mount_reach_make(const char *state_dir, json_t *config, tg_error **err) {
  long long root_gid = mapped_root(config, "linux.gidMappings");
  if (root_gid <= 0 || mapped_root(config, "linux.uidMappings") <= 0)
    return tg_error_set(err, 0, "the user namespace maps no container root (containerID 0 in linux.uidMappings "
                        "and linux.gidMappings) to an unprivileged host id: map container id 0");
  gid_t gid = (gid_t)root_gid;
  /* The state directory and its pins: the mapped root's walk alone (the
   * pins are the host objects themselves). */
  cleanup_free char *pins = xasprintf("%s/pins", state_dir);
  struct stat st;
  if (close_to_group(state_dir, gid, err) < 0 ||
      (stat(pins, &st) == 0 && S_ISDIR(st.st_mode) && close_to_group(pins, gid, err) < 0))
    return -1;
  if (parents_reachable(state_dir))
    return 0;
  cleanup_free char *real = realpath(state_dir, NULL);
  if (real == NULL)
    return tg_error_set(err, errno, "state directory %s", state_dir);
  unsigned char raw[16];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return tg_error_set(err, errno, "reach view: getrandom");
  char name[33];
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(name + 2 * i, 3, "%02x", raw[i]);
  /* Recorded before anything is made, so create's undo (and a delete
   * after a crash) finds what to remove. */
  cleanup_close int sfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sfd < 0 || write_file_atomic(sfd, REACH_RECORD, name, 32, 0600, false, err) < 0)
    return sfd < 0 ? tg_error_set(err, errno, "open %s", state_dir) : -1;
  /* 0711: every mapped root may pass through, nobody may list the views. */
  if (mkdir(MOUNT_REACH_DIR, 0711) < 0 && errno != EEXIST)
    return tg_error_set(err, errno, "mkdir %s", MOUNT_REACH_DIR);
  if (chmod(MOUNT_REACH_DIR, 0711) < 0)
    return tg_error_set(err, errno, "chmod %s", MOUNT_REACH_DIR);
  cleanup_free char *outer = xasprintf("%s/%s", MOUNT_REACH_DIR, name);
  cleanup_free char *view = xasprintf("%s/" VIEW_MOUNT, outer);
  if (mkdir(outer, 0700) < 0)
    return tg_error_set(err, errno, "mkdir %s", outer);
  if (close_to_group(outer, gid, err) < 0)
    return -1;
  if (mkdir(view, 0700) < 0)
    return tg_error_set(err, errno, "mkdir %s", view);
  if (mount(real, view, NULL, MS_BIND | MS_REC, NULL) < 0)
    return tg_error_set(err, errno, "bind %s onto %s (its parents are not searchable by the container's root)",
                        real, view);
  /* Private: the view's own unmount must not reach the state directory's
   * mounts, nor theirs the view. */
  mount(NULL, view, NULL, MS_REC | MS_PRIVATE, NULL);
  json_t *root = json_object_get(config, "root");
  const char *rp = json_string_value(json_object_get(root, "path"));
  char *through = NULL;
  if ((through = rewrite(rp, real, view)) != NULL || (through = rewrite(rp, state_dir, view)) != NULL) {
    json_object_set(root, "path", json_new_string(through));
    free(through);
  }
  json_t *mounts = json_object_get(config, "mounts");
  for (size_t i = 0; i < json_array_len(mounts); i++) {
    json_t *m = json_array_get(mounts, i);
    const char *src = json_string_value(json_object_get(m, "source"));
    if ((through = rewrite(src, real, view)) != NULL || (through = rewrite(src, state_dir, view)) != NULL) {
      json_object_set(m, "source", json_new_string(through));
      free(through);
    }
  }
  return 0;
}

/* Unmount view (when mounted) and remove it. */
static int remove_view(const char *view, tg_error **err) {
  struct stat st;
  if (stat(view, &st) < 0)
    return 0;
  if (is_mounted(view) && umount2(view, MNT_DETACH) < 0)
    return tg_error_set(err, errno, "unmount %s", view);
  if (rmdir(view) < 0 && errno != ENOENT)
    return tg_error_set(err, errno, "rmdir %s", view);
  return 0;
}

int mount_reach_release(const char *state_dir, tg_error **err) {
  cleanup_free char *name = recorded_name(state_dir);
  if (name != NULL) {
    cleanup_free char *outer = xasprintf("%s/%s", MOUNT_REACH_DIR, name);
    cleanup_free char *view = xasprintf("%s/" VIEW_MOUNT, outer);
    if (remove_view(view, err) < 0 || remove_view(outer, err) < 0)
      return -1;
    cleanup_free char *record = xasprintf("%s/" REACH_RECORD, state_dir);
    unlink(record);
    return 0;
  }
  cleanup_free char *legacy = legacy_view_of(state_dir);
  return legacy ? remove_view(legacy, err) : 0;
}

/* The state directory's reachable view (see shim/mount_reach.h). */
#include "shim/mount_reach.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/util.h"

/* The view of dir: MOUNT_REACH_DIR/<first 32 hex of SHA-256(realpath)>.
 * The same for delete as for create, whatever --root spelling was used. */
static char *view_of(const char *dir, tg_error **err) {
  cleanup_free char *real = realpath(dir, NULL);
  if (real == NULL) {
    tg_error_set(err, errno, "state directory %s", dir);
    return NULL;
  }
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(real, strlen(real), d, &n, EVP_sha256(), NULL) != 1 || n < 16) {
    tg_error_set(err, 0, "state directory %s: SHA-256 failed", dir);
    return NULL;
  }
  char hex[33];
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", d[i]);
  return xasprintf("%s/%s", MOUNT_REACH_DIR, hex);
}

/* Can "others" search every directory from / down to dir? */
static bool reachable(const char *dir) {
  cleanup_free char *real = realpath(dir, NULL);
  if (real == NULL)
    return true; /* nothing to do: create fails on its own */
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
  if (reachable(state_dir))
    return 0;
  cleanup_free char *view = view_of(state_dir, err);
  if (view == NULL)
    return -1;
  cleanup_free char *real = realpath(state_dir, NULL);
  if (real == NULL)
    return tg_error_set(err, errno, "state directory %s", state_dir);
  /* 0711: the container's root may pass through, nobody may list which
   * state directories have views. */
  if (mkdir(MOUNT_REACH_DIR, 0711) < 0 && errno != EEXIST)
    return tg_error_set(err, errno, "mkdir %s", MOUNT_REACH_DIR);
  if (chmod(MOUNT_REACH_DIR, 0711) < 0)
    return tg_error_set(err, errno, "chmod %s", MOUNT_REACH_DIR);
  if (mkdir(view, 0711) < 0 && errno != EEXIST)
    return tg_error_set(err, errno, "mkdir %s", view);
  if (!is_mounted(view) && mount(real, view, NULL, MS_BIND | MS_REC, NULL) < 0) {
    int e = errno;
    rmdir(view);
    return tg_error_set(err, e, "bind %s onto %s (its parents are not searchable by the container's root)",
                        real, view);
  }
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

int mount_reach_release(const char *state_dir, tg_error **err) {
  tg_error *e = NULL;
  cleanup_free char *view = view_of(state_dir, &e);
  if (view == NULL) {
    tg_error_free(&e);
    return 0; /* no state directory, no view of it */
  }
  struct stat st;
  if (stat(view, &st) < 0)
    return 0;
  if (is_mounted(view) && umount2(view, MNT_DETACH) < 0)
    return tg_error_set(err, errno, "unmount %s", view);
  if (rmdir(view) < 0 && errno != ENOENT)
    return tg_error_set(err, errno, "rmdir %s", view);
  return 0;
}

/* create's bundle: its config.json read (the user's, or behind tollgate's
 * mark the original kept beside it), its rootfs checked, and the effective
 * config written in its place (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/backend_bundle.h"
#include "shim/lifecycle/effective_mark.h"

#define CONFIG_MAX_BYTES (16u * 1024 * 1024)

static json_t *parse_config(const char *bundle, const char *name,
                            const char *buf, size_t len, tg_error **err) {
  struct json_parse_options po = {.max_depth = 64, .track_positions = true};
  tg_error *pe = NULL;
  json_t *v = json_parse(buf, len, &po, &pe);
  if (v == NULL) {
    tg_error_set(err, 0, "bundle %s: %s: %s: fix the JSON", bundle, name,
                 pe->msg);
    tg_error_free(&pe);
    return NULL;
  }
  if (!json_is(v, JSON_OBJECT)) {
    json_free(v);
    tg_error_set(err, 0, "bundle %s: %s must hold a JSON object", bundle, name);
    return NULL;
  }
  return v;
}

/* Open and lock the bundle, and read its config.json's bytes into
 * u->config_before. */
static int open_bundle(struct create_context *cx, tg_error **err) {
  struct undo *u = cx->u;
  const char *given = cx->req->bundle ? cx->req->bundle : ".";
  cx->bundle = realpath(given, NULL);
  const char *bundle = cx->bundle;
  if (bundle == NULL)
    return tg_error_set(err, 0,
                        "bundle %s does not exist: pass --bundle DIR, the "
                        "directory that holds config.json",
                        given);
  u->bundle_fd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (u->bundle_fd < 0)
    return tg_error_set(err, errno, "bundle %s is not a directory", bundle);
  /* config.json, config.json.orig and the mark beside them are read and
   * rewritten as one step: a second create from the same bundle that read
   * config.json between another's mark and config.json writes, or after a
   * third create replaced the mark, took the other's effective config for
   * the user's (20 concurrent creates from one bundle hit it).  Held until
   * create and its undo are over (closing bundle_fd drops it); only
   * creates from this very bundle wait. */
  int locked;
  do
    locked = flock(u->bundle_fd, LOCK_EX);
  while (locked < 0 && errno == EINTR);
  if (locked < 0)
    return tg_error_set(err, errno, "bundle %s: cannot lock it against concurrent creates", bundle);
  tg_error *re = NULL;
  if (read_file_untrusted(u->bundle_fd, "config.json", CONFIG_MAX_BYTES,
                          &u->config_before, &u->config_before_len, &re) < 0) {
    if (re->errnum == ENOENT) {
      tg_error_free(&re);
      return tg_error_set(err, 0,
                          "bundle %s has no config.json: write one with "
                          "'tollgate spec' or 'runc spec'",
                          bundle);
    }
    *err = re;
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  return 0;
}

int create_read_bundle(struct create_context *cx, tg_error **err) {
  struct undo *u = cx->u;
  if (open_bundle(cx, err) < 0)
    return -1;
  const char *bundle = cx->bundle;
  cx->config_st = (struct stat){0};
  u->config_mode = 0644;
  if (fstatat(u->bundle_fd, "config.json", &cx->config_st, AT_SYMLINK_NOFOLLOW) == 0)
    u->config_mode = cx->config_st.st_mode & 0777;
  cleanup_json json_t *current = parse_config(
      bundle, "config.json", u->config_before, u->config_before_len, err);
  if (current == NULL) {
    /* The effective config is written without a sync (see below), so a
     * crash can leave it empty: the user's original is then beside it. */
    if (err != NULL && *err != NULL &&
        faccessat(u->bundle_fd, "config.json.orig", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
      tg_error *pe = *err;
      *err = NULL;
      tg_error_set(err, 0, "%s; config.json.orig beside it is the original "
                   "an earlier create kept: if config.json is a half-written "
                   "effective config, move config.json.orig back to "
                   "config.json", pe->msg);
      tg_error_free(&pe);
    }
    return -1;
  }
  /* Which file is the user's?  An effective config that tollgate wrote on
   * an earlier create is hardened from the original kept beside it. */
  cx->ours = effective_mark_is_ours(u->bundle_fd, u->config_before, u->config_before_len, current);
  if (cx->ours) {
    tg_error *oe = NULL;
    if (read_file_untrusted(u->bundle_fd, "config.json.orig", CONFIG_MAX_BYTES,
                            &cx->orig_buf, &cx->orig_len, &oe) < 0) {
      tg_error_free(&oe);
      return tg_error_set(err, 0,
                          "bundle %s: config.json was written by tollgate but "
                          "the original config.json.orig is gone: put the "
                          "original config.json back",
                          bundle);
    }
    cx->config = parse_config(bundle, "config.json.orig", cx->orig_buf, cx->orig_len, err);
    if (cx->config == NULL)
      return -1;
  } else {
    cx->config = json_copy(current);
  }
  return 0;
}

char *create_rootfs_path(const char *bundle, const json_t *config) {
  const char *root = json_string_value(json_get_path(config, "root.path"));
  if (root == NULL)
    return xstrdup("");
  if (root[0] == '/')
    return xstrdup(root);
  return xasprintf("%s/%s", bundle, root);
}

int create_check_rootfs(struct create_context *cx, tg_error **err) {
  const char *bundle = cx->bundle;
  /* Check the rootfs here: runsc reports a missing one only as "cannot read
   * client sync file", which names neither the problem nor the fix. */
  cleanup_free char *rootfs = create_rootfs_path(bundle, cx->config);
  struct stat rst;
  int e = 0;
  if (rootfs[0] == '\0')
    return tg_error_set(err, 0, "bundle %s: config.json has no root.path: "
                        "set it to the container's root filesystem", bundle);
  if (stat(rootfs, &rst) < 0)
    e = errno;
  else if (!S_ISDIR(rst.st_mode))
    e = ENOTDIR;
  if (e != 0)
    return tg_error_set(err, e, "bundle %s: root.path %s is not a usable "
                        "directory (build the rootfs first, or fix root.path "
                        "in config.json)", bundle, rootfs);
  return 0;
}

static int write_bundle_file(int bundle_fd, const char *bundle,
                             const char *name, const void *data, size_t len,
                             mode_t mode, tg_error **err) {
  if (write_file_atomic(bundle_fd, name, data, len, mode, true, err) < 0)
    return tg_error_wrap(err, "bundle %s", bundle);
  return 0;
}

/* Keep the user's config.json as config.json.orig before the effective
 * config replaces it: a hard link to the very file that was read (same
 * inode, so the same bytes, mode and owner), made under a temporary name
 * and renamed into place.  No byte is copied, so there is nothing to sync:
 * the original's data is whatever the user's file already had on disk, and
 * at every moment one of the two names holds it.  Filesystems without hard
 * links, or a config.json swapped by someone else since it was read, get a
 * synced copy of the bytes that were read instead. */
static int keep_original(int bundle_fd, const char *bundle, const struct stat *read_st,
                         const char *data, size_t len, mode_t mode, tg_error **err) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, "config.json.orig.tmp.%d", (int)getpid());
  unlinkat(bundle_fd, tmp, 0); /* a leftover of a killed create */
  if (linkat(bundle_fd, "config.json", bundle_fd, tmp, 0) == 0) {
    struct stat st;
    if (fstatat(bundle_fd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_ino == read_st->st_ino && st.st_dev == read_st->st_dev) {
      if (renameat(bundle_fd, tmp, bundle_fd, "config.json.orig") == 0)
        return 0;
      int e = errno;
      unlinkat(bundle_fd, tmp, 0);
      return tg_error_set(err, e, "bundle %s: rename %s to config.json.orig",
                          bundle, tmp);
    }
    unlinkat(bundle_fd, tmp, 0); /* not the file we read: copy its bytes */
  } else if (errno != EPERM && errno != EXDEV && errno != ENOTSUP &&
             errno != EMLINK && errno != ENOSYS &&
             /* The file we read was renamed over (a concurrent create of
              * another container from this bundle wrote its effective
              * config): link(2) then fails ENOENT on the dying inode.
              * Its bytes are still ours to copy. */
             errno != ENOENT) {
    return tg_error_set(err, errno, "bundle %s: link config.json to %s",
                        bundle, tmp);
  }
  return write_bundle_file(bundle_fd, bundle, "config.json.orig", data, len,
                           mode, err);
}

int create_write_configs(struct create_context *cx, tg_error **err) {
  struct undo *u = cx->u;
  const char *bundle = cx->bundle;
  /* The effective config: under a bare passthrough the very bytes the
   * user wrote (never re-serialised: hooks and conformance tests compare
   * them), otherwise the hardened tree. */
  const char *user_bytes = cx->ours ? cx->orig_buf : u->config_before;
  size_t user_len = cx->ours ? cx->orig_len : u->config_before_len;
  cleanup_free char *dumped = NULL;
  const char *eff = user_bytes;
  size_t eff_len = user_len;
  if (cx->out->bridged) {
    dumped = json_dump_checked(cx->config, true, &eff_len, err);
    if (dumped == NULL) /* a host path or flag that is not UTF-8 */
      return tg_error_wrap(err, "bundle %s: the effective config.json", bundle);
    eff = dumped;
  }
  /* Into the bundle, the user's kept beside it; a bundle whose
   * config.json already holds exactly these bytes is left alone. */
  bool same = eff_len == u->config_before_len &&
              memcmp(eff, u->config_before, eff_len) == 0;
  if (!same) {
    if (!cx->ours) {
      if (keep_original(u->bundle_fd, bundle, &cx->config_st, u->config_before,
                        u->config_before_len, u->config_mode, err) < 0)
        return -1;
      u->wrote_orig = true;
      u->wrote_mark = faccessat(u->bundle_fd, EFFECTIVE_MARK, F_OK, AT_SYMLINK_NOFOLLOW) != 0;
    }
    if (effective_mark_write(u->bundle_fd, bundle, eff, eff_len, u->config_before,
                             u->config_before_len, cx->ours, err) < 0)
      return -1;
    u->wrote_config = true;
    /* Not synced: the effective config is derived, rewritten by every
     * create, and the original is safe under config.json.orig whatever a
     * crash leaves here (create names it when config.json does not parse).
     * The sync cost 0.3-50 ms on the test machine's disk, in front of every
     * container start. */
    if (write_file_atomic(u->bundle_fd, "config.json", eff, eff_len,
                          u->config_mode, false, err) < 0)
      return tg_error_wrap(err, "bundle %s", bundle);
  }
  /* The state directory's copy is the same bytes: not serialised again. */
  cleanup_close int sfd = open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sfd < 0 || write_file_atomic(sfd, "config.json", eff, eff_len, 0600, false, err) < 0) {
    if (sfd < 0)
      tg_error_set(err, errno, "open %s", u->dir);
    return -1;
  }
  /* The backend reads its own copy, never the bundle's shared file
   * (shim/lifecycle/backend_bundle.h). */
  return backend_bundle_write(u->dir, bundle, cx->config, eff, eff_len, err);
}

/* A bundle's config files before a create; see bundle_snapshot.h. */
#include "shim/lifecycle/bundle_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/lifecycle/effective_mark.h"
#include "base/util.h"

/* as create reads it (create_bundle.c CONFIG_MAX_BYTES) */
#define SNAPSHOT_MAX_BYTES (16u * 1024 * 1024)

static bool present(int dir_fd, const char *name) {
  return faccessat(dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

void bundle_snapshot_take(const char *bundle, struct bundle_snapshot *s) {
  memset(s, 0, sizeof *s);
  s->dir_fd = -1;
  int fd = open(bundle ? bundle : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  /* The bundle is the config author's: the file is read as create reads
   * it, never through a symlink, bounded. */
  tg_error *e = NULL;
  struct stat st;
  /* Under create's lock: config.json and the mark read as one state,
   * never between another create's writes of the two. */
  int locked;
  do
    locked = flock(fd, LOCK_EX);
  while (locked < 0 && errno == EINTR);
  if (locked < 0 ||
      read_file_untrusted(fd, "config.json", SNAPSHOT_MAX_BYTES, &s->config, &s->len, &e) < 0 ||
      fstatat(fd, "config.json", &st, AT_SYMLINK_NOFOLLOW) < 0) {
    tg_error_free(&e);
    free(s->config);
    s->config = NULL;
    close(fd);
    return;
  }
  s->mode = st.st_mode & 07777;
  s->had_orig = present(fd, "config.json.orig");
  s->had_mark = present(fd, EFFECTIVE_MARK);
  s->ours = effective_mark_is_ours(fd, s->config, s->len, NULL);
  flock(fd, LOCK_UN);
  s->dir_fd = fd;
}

void bundle_snapshot_restore(struct bundle_snapshot *s) {
  if (s->dir_fd < 0)
    return;
  /* create's lock: no create from this bundle is between its reads and
   * writes while we put the files back */
  int locked;
  do
    locked = flock(s->dir_fd, LOCK_EX);
  while (locked < 0 && errno == EINTR);
  if (locked < 0)
    return;
  /* An effective config tollgate wrote is not the user's to get back, and
   * another create from this bundle may have replaced it since: written
   * back, bytes the mark no longer knows became "the user's config" for
   * every later create (seen: a run whose delete failed under `list`
   * loops left config.json an earlier run's effective config, whose
   * rootfs path was gone; every run of the bundle failed after it). */
  if (s->ours) {
    flock(s->dir_fd, LOCK_UN);
    return;
  }
  cleanup_free char *now = NULL;
  size_t now_len = 0;
  tg_error *e = NULL;
  bool same = read_file_untrusted(s->dir_fd, "config.json", SNAPSHOT_MAX_BYTES, &now, &now_len, &e) == 0 &&
              now_len == s->len && memcmp(now, s->config, s->len) == 0;
  tg_error_free(&e);
  if (!same) {
    if (write_file_atomic(s->dir_fd, "config.json", s->config, s->len, s->mode, true, &e) < 0)
      tg_error_free(&e);
  }
  if (!s->had_orig)
    unlinkat(s->dir_fd, "config.json.orig", 0);
  if (!s->had_mark)
    unlinkat(s->dir_fd, EFFECTIVE_MARK, 0);
  flock(s->dir_fd, LOCK_UN);
}

void bundle_snapshot_free(struct bundle_snapshot *s) {
  free(s->config);
  if (s->dir_fd >= 0)
    close(s->dir_fd);
  memset(s, 0, sizeof *s);
  s->dir_fd = -1;
}

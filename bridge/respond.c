/* Responses and removals in the container-shared directories; see
 * respond.h.  Every name used here was written by the container, so every
 * open is O_NOFOLLOW | O_NONBLOCK, every create O_EXCL, and only names
 * checked by bridge_classify_name() become paths. */
#include "bridge/respond.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge/protocol.h"
#include "base/util.h"

#define REMOVE_DEPTH 8

static bool remove_entry(int parent, const char *name, int depth);



static void remove_dir_contents(int parent, const char *name, int depth) {
  if (depth >= REMOVE_DEPTH)
    return; /* deeper trees stay; the tmpfs size bounds them */
  int fd = openat(parent, name,
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    remove_entry(dirfd(d), de->d_name, depth + 1);
  }
  closedir(d);
}

/* true when this call removed the entry (so an entry reported twice, by
 * inotify and by a rescan, is counted once). */
static bool remove_entry(int parent, const char *name, int depth) {
  if (unlinkat(parent, name, 0) == 0)
    return true;
  if (errno != EISDIR && errno != EPERM)
    return false;
  remove_dir_contents(parent, name, depth);
  return unlinkat(parent, name, AT_REMOVEDIR) == 0;
}

bool bridge_remove_entry(int parent, const char *name) { return remove_entry(parent, name, 0); }

static int create_marker(int dirfd, const char *name) {
  for (int attempt = 0; attempt < 2; attempt++) {
    /* mknodat creates the empty file in one system call (openat plus
     * close was two) and, like O_EXCL, fails on any name that exists,
     * including a symlink the container may have planted: nothing is
     * followed. */
    if (mknodat(dirfd, name, S_IFREG | 0644, 0) == 0)
      return 0;
    if (errno != EEXIST)
      return -1;
    remove_entry(dirfd, name, 0);
  }
  errno = EEXIST;
  return -1;
}

/* Write the response body straight to resp/<id>.json.  The client reads
 * it only once the marker exists, which is created after the body is
 * complete, so a temporary name and a rename add nothing (they cost two
 * system calls per call: getpid for the name, and renameat).  O_EXCL with
 * O_NOFOLLOW: whatever the container planted at that name (a file, a
 * symlink, a directory) is removed, never written through.  A body that
 * could not be written whole is removed. */
static int write_body(int dirfd, const char *name, const char *body, size_t len) {
  for (int attempt = 0; attempt < 3; attempt++) {
    int fd = openat(dirfd, name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno != EEXIST)
        return -1;
      remove_entry(dirfd, name, 0);
      continue;
    }
    if (write_all(fd, body, len) < 0) {
      int e = errno;
      close(fd);
      unlinkat(dirfd, name, 0);
      errno = e;
      return -1;
    }
    if (close(fd) < 0) {
      int e = errno;
      unlinkat(dirfd, name, 0);
      errno = e;
      return -1;
    }
    return 0;
  }
  errno = EEXIST;
  return -1;
}

int bridge_write_response(int resp_fd, const char *id, const char *body, size_t len) {
  char name[BRIDGE_ID_MAX + 8], marker[BRIDGE_ID_MAX + 8];
  snprintf(name, sizeof name, "%s.json", id);
  snprintf(marker, sizeof marker, "%s.done", id);
  if (write_body(resp_fd, name, body, len) < 0)
    return -1;
  return create_marker(resp_fd, marker);
}

/* Is resp/<name> there?  lstat only: a planted symlink counts as there
 * (the container answered itself; nothing of ours is written through). */
static bool exists(int dirfd, const char *name) {
  struct stat st;
  return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void answer_one(int req_fd, int resp_fd, const char *id, const char *body, size_t len,
                       size_t max_listed, struct bridge_orphans *o, unsigned long long *n) {
  char name[BRIDGE_ID_MAX + 8], marker[BRIDGE_ID_MAX + 8];
  snprintf(name, sizeof name, "%s.json", id);
  snprintf(marker, sizeof marker, "%s.done", id);
  /* The body first: it frees the inode the answer needs when the
   * container filled the area. */
  remove_entry(req_fd, name, 0);
  if (exists(resp_fd, marker)) {
    /* Answered before the sidecar died (the request files are removed
     * after the response), or a marker the container planted: it is not
     * overwritten, and the id is still listed, because only the dead
     * gate's own record could say it was answered, and a planted marker
     * must not hide a call that may have run from the log. */
    o->already++;
  } else if (bridge_write_response(resp_fd, id, body, len) == 0) {
    (*n)++;
  } else {
    o->failed++;
  }
  if (o->nids < max_listed)
    o->ids[o->nids++] = xstrdup(id);
  else
    o->unlisted++;
  /* The marker last: once it is gone nobody takes this call again. */
  remove_entry(req_fd, marker, 0);
}

unsigned long long bridge_answer_orphans(int req_fd, int resp_fd, const char *body, size_t len,
                                         size_t max_listed, struct bridge_orphans *o) {
  memset(o, 0, sizeof *o);
  o->ids = xcalloc(max_listed ? max_listed : 1, sizeof *o->ids);
  unsigned long long n = 0;
  int fd = openat(req_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return 0;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char id[BRIDGE_ID_MAX + 1];
    /* Markers only, and only with a valid id: a bad name is never a path
     * and never gets an answer (it had none to get); bodies, temp files
     * and junk are the next sidecar's to handle. */
    if (bridge_classify_name(de->d_name, id) != BRIDGE_NAME_MARKER)
      continue;
    answer_one(req_fd, resp_fd, id, body, len, max_listed, o, &n);
  }
  closedir(d);
  return n;
}

void bridge_orphans_free(struct bridge_orphans *o) {
  for (size_t i = 0; o->ids && i < o->nids; i++)
    free(o->ids[i]);
  free(o->ids);
  memset(o, 0, sizeof *o);
}

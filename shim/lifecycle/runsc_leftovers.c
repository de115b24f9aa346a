/* runsc's leftovers of a container whose `runsc run`/`runsc create` was
 * killed half-way (tollgate run killed -9: `runsc run` dies with it).
 * Seen on runsc 20240729: killed a moment before its state named the
 * container, it leaves "<sandbox>_sandbox:<id>.lock" or the sandbox's
 * socket "runsc-<id>.sock" in its root (its empty cgroups are
 * cgroup_leftovers.h's, as runc's are).  Either piles up one per killed
 * run, and the lock file makes the id look known to tollgate's own "may
 * the backend know it" check forever. */
#include "shim/lifecycle/runsc_leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/util.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* In runsc's root: "<sandbox>_sandbox:<bid>.lock" with no ".state" of
 * the same name, and the sandbox socket "runsc-<bid>.sock" when no state
 * names <bid> as its sandbox ("<bid>_sandbox:<member>.state": a pod's
 * sandbox with members left is still in use). */
static void clear_root_files(const char *root, const char *bid) {
  cleanup_close int dfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return;
  int dup_fd = dup(dfd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (d == NULL) {
    if (dup_fd >= 0)
      close(dup_fd);
    return;
  }
  cleanup_free char *lock_suffix = xasprintf("_sandbox:%s.lock", bid);
  cleanup_free char *sandbox_prefix = xasprintf("%s_sandbox:", bid);
  cleanup_free char *sock = xasprintf("runsc-%s.sock", bid);
  bool sandbox_in_use = false;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strncmp(de->d_name, sandbox_prefix, strlen(sandbox_prefix)) == 0 && ends_with(de->d_name, ".state"))
      sandbox_in_use = true;
    if (!ends_with(de->d_name, lock_suffix))
      continue;
    cleanup_free char *state = xasprintf("%.*s.state", (int)(strlen(de->d_name) - 5), de->d_name);
    if (faccessat(dfd, state, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
      continue; /* runsc still has a state for it: its business */
    unlinkat(dfd, de->d_name, 0);
  }
  closedir(d);
  struct stat st;
  if (!sandbox_in_use && fstatat(dfd, sock, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
    unlinkat(dfd, sock, 0);
}

void runsc_clear_leftovers(const struct container *c) {
  if (c->backend.kind != BACKEND_RUNSC || c->backend_id == NULL || c->backend.root == NULL)
    return;
  clear_root_files(c->backend.root, c->backend_id);
}

/* Does argv (NUL-separated, n bytes) hold the argument want exactly? */
static bool argv_has(const char *argv, size_t n, const char *want) {
  for (size_t i = 0; i < n; i += strlen(argv + i) + 1)
    if (strcmp(argv + i, want) == 0)
      return true;
  return false;
}

/* SIGKILL every runsc process of c: runsc-sandbox, runsc-gofer and runsc
 * itself carry --log=<state dir>/backend.log, a path under tollgate's
 * root that only this container's backend processes are given (the
 * processes are host root's, started by runsc for tollgate: their argv is
 * not the container's to write). */
static void kill_backend_processes(const struct container *c) {
  cleanup_free char *want = xasprintf("--log=%s/backend.log", c->dir);
  DIR *d = opendir("/proc");
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end != '\0' || pid <= 1 || pid == (long)getpid())
      continue;
    cleanup_free char *path = xasprintf("/proc/%ld/cmdline", pid);
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    char *argv = NULL;
    ssize_t n = read_all_bounded(fd, 1 << 16, &argv);
    if (n > 0 && strncmp(argv, "runsc", 5) == 0 && argv_has(argv, (size_t)n, want))
      kill((pid_t)pid, SIGKILL);
    free(argv);
  }
  closedir(d);
}

bool runsc_forget_torn_state(const struct container *c) {
  if (c->backend.kind != BACKEND_RUNSC || c->backend_id == NULL || c->backend.root == NULL)
    return false;
  cleanup_close int dfd = open(c->backend.root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return false;
  cleanup_free char *state = xasprintf("%s_sandbox:%s.state", c->backend_id, c->backend_id);
  char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dfd, state, 1 << 20, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return false;
  }
  json_t *v = json_parse(buf, len, NULL, &e);
  free(buf);
  tg_error_free(&e);
  if (v != NULL) {
    json_free(v);
    return false; /* a whole state: runsc's own delete is the way */
  }
  kill_backend_processes(c);
  unlinkat(dfd, state, 0);
  cleanup_free char *lock = xasprintf("%s_sandbox:%s.lock", c->backend_id, c->backend_id);
  unlinkat(dfd, lock, 0);
  cleanup_free char *sock = xasprintf("runsc-%s.sock", c->backend_id);
  unlinkat(dfd, sock, 0);
  return true;
}

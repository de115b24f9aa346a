#include "shim/lifecycle/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#define STATE_MAX_BYTES (4u * 1024 * 1024)

int state_check_id(const char *id, tg_error **err) {
  if (!container_id_is_valid(id))
    return tg_error_set(err, 0,
                        "invalid container id \"%s\": an id is 1 to 128 of "
                        "[A-Za-z0-9_.-] and starts with a letter or digit",
                        id);
  if (strcmp(id, "backend") == 0)
    return tg_error_set(err, 0,
                        "container id \"backend\" is reserved (tollgate keeps "
                        "the backends' state under <root>/backend): choose "
                        "another id");
  return 0;
}

int state_create_dir(const char *root, const char *id, char **dir,
                     tg_error **err) {
  if (state_check_id(id, err) < 0)
    return -1;
  if (mkdir_p(root, 0711, err) < 0)
    return tg_error_wrap(err, "state root %s", root);
  char *d = xasprintf("%s/%s", root, id);
  /* mkdir is the atomic claim: two creates of one id cannot both win. */
  if (mkdir(d, 0700) < 0) {
    int e = errno;
    free(d);
    if (e == EEXIST)
      return tg_error_set(err, 0,
                          "container with id exists: %s: delete it with "
                          "'tollgate delete %s' or choose another id",
                          id, id);
    return tg_error_set(err, e, "create state directory %s/%s", root, id);
  }
  *dir = d;
  return 0;
}

static int lock_dir(const char *dir, int how) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -1;
  int r;
  do
    r = flock(fd, how);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int state_lock(const char *dir) { return lock_dir(dir, LOCK_EX); }

int state_lock_shared(const char *dir) {
  int fd = lock_dir(dir, LOCK_SH);
  if (fd < 0)
    return -1;
  /* The delete we waited for removed the directory (and a create may
   * have made a new one of the same name): the lock we hold is on a
   * directory nobody else will ever lock again. */
  struct stat held, now;
  if (fstat(fd, &held) < 0 || stat(dir, &now) < 0 || held.st_ino != now.st_ino ||
      held.st_dev != now.st_dev || held.st_nlink == 0) {
    close(fd);
    errno = ENOENT;
    return -1;
  }
  return fd;
}

json_t *state_read_json(const char *dir, const char *name, tg_error **err) {
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    tg_error_set(err, errno, "open %s", dir);
    return NULL;
  }
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file_untrusted(dfd, name, STATE_MAX_BYTES, &buf, &len, err) < 0)
    return NULL;
  json_t *v = json_parse(buf, len, NULL, err);
  if (v == NULL)
    tg_error_wrap(err, "%s/%s", dir, name);
  return v;
}

int state_load(const char *root, const char *id, json_t **state, char **dir,
               tg_error **err) {
  if (!container_id_is_valid(id) || strcmp(id, "backend") == 0)
    return state_check_id(id, err);
  cleanup_free char *d = xasprintf("%s/%s", root, id);
  struct stat st;
  if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode))
    return tg_error_set(err, 0, "container %s does not exist", id);
  tg_error *e = NULL;
  json_t *s = state_read_json(d, "state.json", &e);
  if (s == NULL) {
    bool missing = e && e->errnum == ENOENT;
    tg_error_free(&e);
    if (missing)
      return tg_error_set(err, 0,
                          "container %s does not exist (its state directory "
                          "%s has no state.json: a create was interrupted; "
                          "remove it with 'tollgate delete --force %s')",
                          id, d, id);
    return tg_error_set(err, 0,
                        "container %s: state.json in %s is unreadable: "
                        "remove it with 'tollgate delete --force %s'",
                        id, d, id);
  }
  *state = s;
  *dir = d;
  d = NULL;
  return 0;
}

const char *state_backend_id(const json_t *state, const char *id) {
  const json_t *v = json_object_get(state, "backend_id");
  if (v == NULL)
    return id;
  const char *s = json_string_value(v);
  /* It becomes a backend argument and a name in the backend's root. */
  return s && container_id_is_valid(s) ? s : NULL;
}

int state_write_json(const char *dir, const char *name, const json_t *json,
                     tg_error **err) {
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return tg_error_set(err, errno, "open %s", dir);
  size_t len = 0;
  cleanup_free char *text = json_dump_checked(json, true, &len, err);
  if (text == NULL)
    return tg_error_wrap(err, "%s/%s", dir, name);
  return write_file_atomic(dfd, name, text, len, 0600, false, err);
}

int state_write_pid_file(const char *path, long pid, tg_error **err) {
  cleanup_free char *copy1 = xstrdup(path);
  cleanup_free char *copy2 = xstrdup(path);
  const char *dir = dirname(copy1);
  const char *base = basename(copy2);
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return tg_error_set(err, errno,
                        "pid file %s: its directory cannot be opened", path);
  char digits[32];
  int n = snprintf(digits, sizeof digits, "%ld", pid);
  if (write_file_atomic(dfd, base, digits, (size_t)n, 0644, false, err) < 0)
    return tg_error_wrap(err, "pid file %s", path);
  return 0;
}

int state_read_pid_file(const char *path, long *pid, tg_error **err) {
  cleanup_free char *buf = NULL;
  if (read_file(path, 64, &buf, NULL, err) < 0)
    return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(buf, &end, 10);
  while (end && (*end == '\n' || *end == ' '))
    end++;
  if (errno != 0 || end == buf || *end != '\0' || v <= 0)
    return tg_error_set(err, 0, "pid file %s does not hold a pid", path);
  *pid = v;
  return 0;
}

#define REMOVING ".removing-"

int state_remove_dir(const char *dir, tg_error **err) {
  cleanup_free char *copy = xstrdup(dir);
  char *slash = strrchr(copy, '/');
  if (slash == NULL || slash[1] == '\0')
    return remove_tree(dir, err);
  *slash = '\0';
  cleanup_free char *aside = xasprintf("%s/" REMOVING "%s.%d.%llu", copy, slash + 1, (int)getpid(),
                                       monotonic_ns());
  if (rename(dir, aside) < 0) {
    if (errno == ENOENT)
      return 0;
    return remove_tree(dir, err); /* not renamable (another file system): as before */
  }
  /* A call that began before the rename may still finish its file in it
   * (seen: a `list`'s backend log, under four list loops beside runs);
   * nothing new can start there, so a few passes empty it. */
  for (int pass = 0;; pass++) {
    tg_error *e = NULL;
    if (remove_tree(aside, &e) == 0)
      return 0;
    if (pass >= 50 || e->errnum != ENOTEMPTY) {
      *err = e;
      return -1;
    }
    tg_error_free(&e);
    struct timespec pause = {0, 2 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

void state_remove_leftovers(const char *root) {
  DIR *d = opendir(root);
  if (d == NULL)
    return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, REMOVING, strlen(REMOVING)) != 0)
      continue;
    /* .removing-<id>.<pid>.<ns>: the pid is the second field from the end. */
    const char *end = strrchr(e->d_name, '.');
    const char *p = end;
    while (p != NULL && p > e->d_name && p[-1] != '.')
      p--;
    long pid = p != NULL && p > e->d_name ? strtol(p, NULL, 10) : 0;
    if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
      continue; /* its delete is still removing it */
    cleanup_free char *path = xasprintf("%s/%s", root, e->d_name);
    tg_error *err = NULL;
    remove_tree(path, &err);
    tg_error_free(&err);
  }
  closedir(d);
}

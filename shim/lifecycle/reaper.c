/* The reaper (shim/lifecycle/reaper.h). */
#include "shim/lifecycle/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/lifetime.h"
#include "shim/lifecycle/state.h"

#define STAMP ".reaper"
#define MIN_INTERVAL_NS 1000000000LL

/* Whether someone holds the container's lock (a create, delete or a verb
 * on it): then it is not ours to delete now.  gc waits up to wait_ms for
 * it (a verb in flight ends soon: the killed owner's last `state` or
 * `kill`); the sweep before a verb never waits. */
static bool busy(const char *dir, unsigned wait_ms) {
  cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return true;
  for (unsigned waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 20) {
    if (errno != EWOULDBLOCK || waited >= wait_ms)
      return true;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  flock(fd, LOCK_UN);
  return false;
}

static void reap_one(const struct cli *cli, const char *root, const char *id, const char *why,
                     struct reaper_report *rep) {
  struct cli here = *cli;
  here.root = root;
  /* The id claim goes back to the pool the container claimed from (its
   * creator may have had another host config: the SDK writes its own). */
  cleanup_free char *dir = xasprintf("%s/%s", root, id);
  tg_error *e = NULL;
  cleanup_json json_t *state = state_read_json(dir, "state.json", &e);
  tg_error_free(&e);
  const char *pool = json_string_value(json_get_path(state, "id_range.pool"));
  if (pool != NULL && pool[0] == '/')
    here.config.id_range_dir = (char *)pool;
  if (container_delete(&here, id, true, &e) < 0) {
    rep->failed++;
    cleanup_free char *msg = xasprintf("reaper: container %s under %s is due (%s) but could not be deleted: %s",
                                       id, root, why, e ? e->msg : "unknown error");
    log_line(cli->log_path, cli->log_json, "warning", msg);
    tg_error_free(&e);
    return;
  }
  rep->reaped++;
  cleanup_free char *msg = xasprintf("reaper: deleted container %s under %s: %s", id, root, why);
  /* gc prints its own line on stdout: stderr only gets the log line when
   * no --log file takes it. */
  if (rep->out == NULL || cli->log_path != NULL)
    log_line(cli->log_path, cli->log_json, "warning", msg);
  if (rep->out != NULL)
    fprintf(rep->out, "%s\t%s\t%s\n", root, id, why);
}

/* lifetime_pidns_ended(ns), asked once a sweep for each of the first few
 * namespaces (a scan of /proc each). */
struct ns_verdict {
  unsigned long long ns;
  bool ended;
};

static bool namespace_ended(unsigned long long ns, struct ns_verdict *seen, size_t *n) {
  for (size_t i = 0; i < *n; i++)
    if (seen[i].ns == ns)
      return seen[i].ended;
  bool ended = lifetime_pidns_ended(ns);
  if (*n < 8)
    seen[(*n)++] = (struct ns_verdict){ns, ended};
  return ended;
}

void reaper_sweep(const struct cli *cli, const char *root, struct reaper_report *rep) {
  DIR *d = opendir(root);
  if (d == NULL)
    return;
  state_remove_leftovers(root);
  time_t now = time(NULL);
  /* The due ids first, deleted after the scan: a delete changes the
   * directory being read. */
  char **due = NULL, **why = NULL;
  size_t n = 0;
  bool sees_all = lifetime_sees_every_pidns();
  struct ns_verdict ended[8];
  size_t n_ended = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (!container_id_is_valid(e->d_name) || strcmp(e->d_name, "backend") == 0)
      continue;
    rep->scanned++;
    cleanup_free char *dir = xasprintf("%s/%s", root, e->d_name);
    struct lifetime lt;
    tg_error *err = NULL;
    int r = lifetime_read(dir, &lt, &err);
    tg_error_free(&err); /* unreadable: proves nothing, never reaped */
    char *reason = r > 0 ? lifetime_verdict(&lt, now) : NULL;
    if (reason == NULL && !sees_all)
      continue;
    /* Made in a pid namespace that is not ours: its processes cannot
     * be signalled from here (lifetime.h); that namespace's own sweeps
     * reap it, whatever its lifetime says.  Once that namespace has
     * ended, its processes have too, with or without an owner or a
     * deadline: the initial namespace's sweep removes what is left. */
    cleanup_json json_t *st = state_read_json(dir, "state.json", &err);
    tg_error_free(&err);
    unsigned long long ns = lifetime_state_pidns(st);
    if (lifetime_pidns_elsewhere(ns)) {
      free(reason);
      reason = NULL;
      if (namespace_ended(ns, ended, &n_ended))
        reason = xasprintf("its pid namespace (%llu) ended, and its processes with it", ns);
    }
    if (reason == NULL)
      continue;
    due = xrealloc(due, (n + 1) * sizeof *due);
    why = xrealloc(why, (n + 1) * sizeof *why);
    due[n] = xstrdup(e->d_name);
    why[n++] = reason;
  }
  closedir(d);
  for (size_t i = 0; i < n; i++) {
    cleanup_free char *dir = xasprintf("%s/%s", root, due[i]);
    if (rep->max_reaps == 0 || rep->reaped < rep->max_reaps) {
      if (!busy(dir, rep->busy_wait_ms)) {
        reap_one(cli, root, due[i], why[i], rep);
      } else if (rep->busy_wait_ms > 0) {
        rep->failed++;
        cleanup_free char *msg = xasprintf("reaper: container %s under %s is due (%s) but a verb has held its lock "
                                           "for %u ms; run `tollgate gc` again when it ends",
                                           due[i], root, why[i], rep->busy_wait_ms);
        log_line(cli->log_path, cli->log_json, "warning", msg);
      }
    }
    free(due[i]);
    free(why[i]);
  }
  free(due);
  free(why);
}

void reaper_implicit(const struct cli *cli) {
  cleanup_free char *stamp = xasprintf("%s/%s", cli->root, STAMP);
  struct stat st;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (stat(stamp, &st) == 0) {
    long long age = (long long)(now.tv_sec - st.st_mtim.tv_sec) * 1000000000LL + (now.tv_nsec - st.st_mtim.tv_nsec);
    if (age >= 0 && age < MIN_INTERVAL_NS)
      return;
  } else if (errno != ENOENT) {
    return;
  }
  /* Touch first: the verbs that start meanwhile see a fresh stamp. */
  cleanup_close int fd = open(stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) /* no root yet, or not ours to write: nothing to sweep */
    return;
  if (futimens(fd, NULL) < 0)
    return;
  struct reaper_report rep = {.max_reaps = REAPER_IMPLICIT_MAX};
  reaper_sweep(cli, cli->root, &rep);
}

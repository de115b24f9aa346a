/* The bridge server: one watcher thread reads untrusted requests, a pool
 * of workers that grows on demand governs and answers them.  See server.h. */
#include "bridge/server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bridge/protocol.h"
#include "bridge/respond.h"
#include "bridge/seccomp.h"
#include "bridge/seen.h"
#include "base/util.h"

#define QUEUE_CAP 1024
/* Request bytes parsed and waiting in the queue: a container's big
 * requests stall the watcher (back-pressure) rather than grow the
 * sidecar's memory, whatever the policy's cap. */
#define QUEUE_BYTES (512 * 1024)
#define SEEN_PURGE_NS 1000000000ull   /* at most one seen_purge a second */
#define BACKOFF_WINDOW_NS 1000000000ull
#define RESERVE_NAME ".reserve"
#define RESERVE_BYTES (128 * 1024)    /* room for error responses when full */
#define GC_TICK_MS 5000
#define WORKER_STACK (512 * 1024)
#define BRIDGE_FULL "bridge_full"

enum job_kind { JOB_CALL, JOB_REFUSED, JOB_RESERVE, JOB_FLUSH };

struct job {
  enum job_kind kind;
  char id[BRIDGE_ID_MAX + 1];
  json_t *request;   /* JOB_CALL: parsed request or NULL */
  struct seen_id *seen; /* JOB_CALL: req/<id>.done and .json are still
                           there, for the worker to remove once answered */
  bool withdrawn;    /* JOB_CALL: the body was gone: audit, answer nothing */
  bool claimed;      /* JOB_CALL: an id not remembered (over the cap): the
                        watcher removed its marker, the worker its body */
  enum gate_refusal refusal; /* JOB_REFUSED: why */
  char *reason;      /* JOB_CALL: why request is NULL; JOB_REFUSED: what */
  size_t bytes;      /* JOB_CALL: the request body's size, for QUEUE_BYTES */
};

struct bridge_service {
  struct bridge_service_options opt;
  int inotify_fd, epoll_fd, wake_fd;
  int pause_epoll_fd; /* the stop fds only: waited on during a back-off */
  unsigned long long refused_window_start, refused_window_base; /* watcher */
  bool over_cap_read;   /* watcher: the first over-cap attempt's body was read */
  pthread_t watcher;
  bool watcher_joined;
  pthread_t *workers;   /* room for max_threads */
  unsigned nworkers;    /* started so far; grows under mu, see worker_main */
  unsigned parked;      /* workers waiting for a person's approval; under mu.
                           They do not count toward opt.workers: a parked
                           call holds none of the pool (worker_parks) */
  unsigned max_threads; /* opt.workers + the policy's max_pending */
  unsigned idle;        /* workers waiting for a job; under mu */
  unsigned running;     /* workers running a job that has not said it may
                           block; under mu, at most opt.run_limit */
  pthread_attr_t attr;  /* for workers started later */

  pthread_mutex_t mu;
  pthread_cond_t work;  /* a job was queued, or a running slot came free */
  pthread_cond_t not_full;
  struct job *queue[QUEUE_CAP];
  size_t head, count;
  size_t queued_bytes;  /* the bytes of the queued jobs; under mu */
  bool closing;    /* workers: drain the queue and exit */
  atomic_bool stopping; /* watcher: stop taking requests */

  pthread_mutex_t reserve_mu;
  bool reserve_present;

  struct seen_set seen;
  struct {
    atomic_ullong requests, bad, replays, bad_ids, junk, answered, no_space;
    atomic_ullong withdrawn, backoffs;
  } st;
};

/* ---- the job queue ---- */

static void add_worker(struct bridge_service *s);

/* With mu held: may another worker start?  opt.workers of them may run
 * calls; the ones parked on an approval come on top (up to max_pending),
 * so approvals never take the pool from allowed calls. */
static bool pool_has_room(const struct bridge_service *s) {
  return !s->closing && s->nworkers < s->max_threads &&
         s->nworkers - s->parked < s->opt.workers;
}

/* A job is queued (or a running slot came free): decide, with mu held, who
 * takes it.  Nobody while run_limit workers are already running jobs that
 * do not block: one of them takes it when it finishes, without sleeping in
 * between.  Else an idle worker (true: the caller signals `work` after
 * unlocking), else, when may_spawn, a new worker while the pool has room.
 * The watcher never spawns (its seccomp filter has no clone): when it finds
 * no idle worker, a running one takes the job next, and a worker that
 * blocks leaves an idle spare behind (worker_may_block).
 *
 * Why a limit: every job handed to a sleeping worker costs a futex wake
 * and a context switch, on a core the callers need too.  With the pool at
 * 8 workers and 8 callers, every call woke a different, cold thread and
 * the sidecar spent ~150 us of CPU per call against ~100 us with the
 * running workers capped at the number of CPUs (docs/performance.md). */
static bool offer_job(struct bridge_service *s, bool may_spawn) {
  if (s->count == 0 || (s->running >= s->opt.run_limit && !s->closing))
    return false;
  if (s->idle > 0)
    return true;
  if (may_spawn && pool_has_room(s))
    add_worker(s);
  return false;
}

/* Blocks while the queue is full (back-pressure on the watcher; inotify
 * may overflow meanwhile, and the rescan then catches up).  Returns false
 * when the server is stopping and the job was not queued. */
static bool queue_full(const struct bridge_service *s, const struct job *j) {
  return s->count == QUEUE_CAP || (s->count > 0 && s->queued_bytes + j->bytes > QUEUE_BYTES);
}

static bool queue_push(struct bridge_service *s, struct job *j) {
  pthread_mutex_lock(&s->mu);
  while (queue_full(s, j) && !s->closing && !atomic_load(&s->stopping))
    pthread_cond_wait(&s->not_full, &s->mu);
  if (queue_full(s, j)) {
    pthread_mutex_unlock(&s->mu);
    return false;
  }
  s->queue[(s->head + s->count) % QUEUE_CAP] = j;
  s->count++;
  s->queued_bytes += j->bytes;
  bool wake = offer_job(s, false);
  pthread_mutex_unlock(&s->mu);
  if (wake)
    pthread_cond_signal(&s->work); /* after the unlock: the woken worker takes mu next */
  return true;
}

static void job_free(struct job *j) {
  if (j == NULL)
    return;
  json_free(j->request);
  free(j->reason);
  free(j);
}


/* A taken call's request files, once it is answered (or dropped): the
 * body, then the marker, then the mark that the marker is gone. */
static void remove_request_files(struct bridge_service *s, struct job *j) {
  if (j->kind != JOB_CALL || (j->seen == NULL && !j->claimed))
    return;
  char name[BRIDGE_ID_MAX + 8];
  snprintf(name, sizeof name, "%s.json", j->id);
  bridge_remove_entry(s->opt.req_fd, name);
  if (j->claimed) { /* its marker is gone already, and it is not in the set */
    j->claimed = false;
    return;
  }
  snprintf(name, sizeof name, "%s.done", j->id);
  bridge_remove_entry(s->opt.req_fd, name);
  atomic_store(&j->seen->marker_gone, true);
  j->seen = NULL;
}

static void post(struct bridge_service *s, struct job *j) {
  if (!queue_push(s, j)) {
    remove_request_files(s, j);
    job_free(j);
  }
}

static void post_refused(struct bridge_service *s, enum gate_refusal why, const char *id,
                         char *what) {
  struct job *j = xcalloc(1, sizeof *j);
  j->kind = JOB_REFUSED;
  j->refusal = why;
  if (id)
    memcpy(j->id, id, strlen(id) + 1);
  j->reason = what;
  post(s, j);
}

/* ---- the watcher: the only code that reads container bytes ---- */

static char *unreadable_reason(int e, const char *name, size_t max) {
  switch (e) {
  case ENOENT:
    return xasprintf("request body req/%s is missing: write it (temp file "
                     "plus rename) before creating the .done marker", name);
  case ELOOP:
    return xasprintf("request body req/%s is a symbolic link; write a "
                     "regular file", name);
  case EINVAL:
  case EISDIR:
  case ENXIO:
    return xasprintf("request body req/%s is not a regular file", name);
  case EFBIG:
    return xasprintf("request body req/%s is over the limit of %zu bytes; "
                     "send smaller arguments", name, max);
  default:
    return xasprintf("request body req/%s cannot be read: %s", name,
                     strerror(e));
  }
}

static void process_marker(struct bridge_service *s, const char *id) {
  char marker[BRIDGE_ID_MAX + 8], body[BRIDGE_ID_MAX + 8];
  snprintf(marker, sizeof marker, "%s.done", id);
  snprintf(body, sizeof body, "%s.json", id);
  /* The seen set, not an unlink, decides who handles a marker: the same
   * marker can be reported twice (inotify plus a rescan), and the marker
   * is removed by the worker after the response (an unlink on the watcher,
   * which every call passes through, was ~5 us of each call's latency). */
  struct seen_id *taken = seen_find(&s->seen, id);
  if (taken != NULL) {
    /* Its marker not yet removed: this is that marker, reported again.
     * Removed, and here again: a new one for an id already answered.
     * Never answer twice (the first caller may not have read its response
     * yet), but count and audit the attempt.  The one call that removes
     * the new marker handles it. */
    if (!atomic_load(&taken->marker_gone) ||
        !bridge_remove_entry(s->opt.req_fd, marker))
      return;
    bridge_remove_entry(s->opt.req_fd, body);
    atomic_fetch_add(&s->st.replays, 1);
    post_refused(s, GATE_REFUSED_REPLAY, id, xasprintf("replayed call id %s", id));
    return;
  }
  if ((long long)s->seen.len >= s->seen.cap_calls) {
    /* Every id in the set is an attempt counted toward max_tool_calls:
     * with limit (the cap) of them, this one is over the cap.  It is
     * answered (budget_exhausted) but not remembered, so the set stays
     * bounded whatever the container writes; the one call that removes
     * the marker handles it.  Only the first one's body is read (bounded
     * like any request), so the one full audit record of the cap being
     * hit names the tool and arguments; later ones are only counted. */
    if (!bridge_remove_entry(s->opt.req_fd, marker))
      return;
    struct job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_CALL;
    j->claimed = true;
    memcpy(j->id, id, strlen(id) + 1);
    if (!s->over_cap_read) {
      s->over_cap_read = true;
      char *buf = NULL;
      size_t len = 0;
      tg_error *err = NULL;
      if (read_file_untrusted(s->opt.req_fd, body, s->opt.request_max_bytes, &buf, &len, &err) == 0) {
        j->request = bridge_parse_request(buf, len, &j->reason);
        j->bytes = len;
        free(buf);
      }
      tg_error_free(&err);
    }
    if (j->request == NULL && j->reason == NULL)
      j->reason = xstrdup("the request was not read: max_tool_calls was spent when it arrived");
    atomic_fetch_add(&s->st.requests, 1);
    post(s, j);
    return;
  }
  taken = seen_add(&s->seen, id);
  if (taken == NULL) {
    unsigned long long now = monotonic_ns();
    /* A purge walks the set: again at once when the last one made room
     * (steady calls whose callers collect their answers), else at most
     * once a second (a container that never collects). */
    if (s->seen.last_purge_freed || now - s->seen.last_purge >= SEEN_PURGE_NS) {
      s->seen.last_purge = now;
      seen_purge(&s->seen, s->opt.resp_fd);
      taken = seen_add(&s->seen, id);
    }
  }
  if (taken == NULL) {
    if (!bridge_remove_entry(s->opt.req_fd, marker))
      return;
    bridge_remove_entry(s->opt.req_fd, body);
    /* refused, and told so: an error answer is the same however often
     * it is written, so an id not remembered may get it */
    post_refused(s, GATE_REFUSED_UNREMEMBERED, id,
                 xasprintf("call id %s: %u calls are in flight or their responses not "
                           "collected; collect responses (resp/<id>.json) and call again",
                           id, s->opt.seen_max));
    return;
  }
  struct job *j = xcalloc(1, sizeof *j);
  j->kind = JOB_CALL;
  j->seen = taken;
  memcpy(j->id, id, strlen(id) + 1);
  char *buf = NULL;
  size_t len = 0;
  tg_error *err = NULL;
  if (read_file_untrusted(s->opt.req_fd, body, s->opt.request_max_bytes, &buf,
                          &len, &err) < 0) {
    /* No body behind the marker: the caller withdrew the call (its client
     * timed out and removed the request).  Audited as withdrawn, and no
     * response is written for nobody to collect. */
    j->withdrawn = errno == ENOENT;
    j->reason = unreadable_reason(errno, body, s->opt.request_max_bytes);
    tg_error_free(&err);
  } else {
    j->request = bridge_parse_request(buf, len, &j->reason);
    j->bytes = len;
    free(buf);
  }
  /* The body and the marker are removed by the worker once the response
   * is out (run_job): off the watcher, which every call passes through,
   * and after the part the caller waits for.  A rescan leaves bodies alone
   * until they are old. */
  atomic_fetch_add(&s->st.requests, 1);
  if (j->request == NULL)
    atomic_fetch_add(&s->st.bad, 1);
  if (j->withdrawn)
    atomic_fetch_add(&s->st.withdrawn, 1);
  post(s, j);
}

/* Handle one name that appeared in calls/req.  old: the entry's age is
 * past the garbage-collection limit (rescans only). */
static void handle_name(struct bridge_service *s, const char *name, bool old) {
  char id[BRIDGE_ID_MAX + 1];
  switch (bridge_classify_name(name, id)) {
  case BRIDGE_NAME_MARKER:
    process_marker(s, id);
    break;
  case BRIDGE_NAME_BAD_MARKER: {
    if (!bridge_remove_entry(s->opt.req_fd, name))
      break; /* already handled */
    atomic_fetch_add(&s->st.bad_ids, 1);
    /* The name is container data: keep only a bounded, printable prefix
     * for the audit record. */
    char safe[BRIDGE_ID_MAX + 1];
    size_t k = 0;
    for (const char *p = name; *p && k < BRIDGE_ID_MAX; p++)
      safe[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
    safe[k] = '\0';
    post_refused(s, GATE_REFUSED_BAD_ID, NULL,
                 xasprintf("call marker with an invalid id: \"%s\"", safe));
    break;
  }
  case BRIDGE_NAME_JUNK:
    if (bridge_remove_entry(s->opt.req_fd, name)) {
      atomic_fetch_add(&s->st.junk, 1);
      post_refused(s, GATE_REFUSED_JUNK, NULL,
                   xstrdup("a file in calls/req that is no part of the protocol was removed"));
    }
    break;
  case BRIDGE_NAME_TEMP:
  case BRIDGE_NAME_BODY:
    if (old)
      bridge_remove_entry(s->opt.req_fd, name);
    break;
  }
}

static bool maybe_back_off(struct bridge_service *s);

static bool is_old(int dirfd, const char *name, time_t cutoff) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return false;
  return st.st_mtime < cutoff;
}

/* Walk calls/req (markers missed by inotify, leftovers) and, on gc ticks,
 * calls/resp (responses nobody collected). */
static void rescan(struct bridge_service *s, bool gc, bool final) {
  time_t cutoff = time(NULL) - (time_t)s->opt.gc_seconds;
  int fd = openat(s->opt.req_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    DIR *d = fdopendir(fd);
    if (d != NULL) {
      struct dirent *de;
      unsigned seen_names = 0;
      while ((de = readdir(d)) != NULL && (final || !atomic_load(&s->stopping))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
          continue;
        /* a directory full of a flood's markers: the budget applies here too */
        if (!final && ++seen_names % 64 == 0)
          maybe_back_off(s);
        handle_name(s, de->d_name, gc && is_old(s->opt.req_fd, de->d_name, cutoff));
      }
      closedir(d);
    } else {
      close(fd);
    }
  }
  if (!gc)
    return;
  fd = openat(s->opt.resp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    DIR *d = fdopendir(fd);
    if (d != NULL) {
      struct dirent *de;
      while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
          continue;
        if (is_old(s->opt.resp_fd, de->d_name, cutoff))
          bridge_remove_entry(s->opt.resp_fd, de->d_name);
      }
      closedir(d);
    } else {
      close(fd);
    }
  }
  pthread_mutex_lock(&s->reserve_mu);
  bool need_reserve = !s->reserve_present;
  pthread_mutex_unlock(&s->reserve_mu);
  if (need_reserve) {
    struct job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_RESERVE;
    post(s, j);
  }
}

/* One read per wake-up: the epoll registration is level-triggered, so
 * events left over (more than a buffer's worth) wake the next epoll_wait
 * at once.  Reading until EAGAIN cost a second read on nearly every call. */
static void drain_inotify(struct bridge_service *s) {
  char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  {
    ssize_t n = read(s->inotify_fd, buf, sizeof buf);
    if (n <= 0)
      return; /* EAGAIN: nothing (yet) */
    bool overflow = false;
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW)
        overflow = true;
      else if (ev->len > 0 && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
        handle_name(s, ev->name, false);
    }
    if (overflow)
      rescan(s, false, false);
    else if (n > 4096)
      maybe_back_off(s);
  }
}

/* The per-container attempt budget.  Past opt.refused_per_second refused
 * attempts within a second, stop reading this container's requests for
 * opt.backoff_ms: the markers wait in calls/req (bounded by the bridge
 * area's size) and the host spends nothing on them meanwhile.  Other
 * containers have their own sidecars and are never slowed by it.  The
 * pause is audited (the first in full, later ones counted).  Returns
 * true when it paused. */
static bool maybe_back_off(struct bridge_service *s) {
  unsigned long long count = gate_refused_count(s->opt.gate);
  if (count - s->refused_window_base <= s->opt.refused_per_second)
    return false; /* the common case: no clock read */
  unsigned long long now = monotonic_ns();
  if (now - s->refused_window_start >= BACKOFF_WINDOW_NS) {
    s->refused_window_start = now;
    s->refused_window_base = count;
    return false;
  }
  atomic_fetch_add(&s->st.backoffs, 1);
  post_refused(s, GATE_REFUSED_BACKOFF, NULL,
               xasprintf("%llu refused attempts in under a second (limit %u, "
                         "bridge_refused_per_second in the host config): the bridge "
                         "stopped reading this container's requests for %u ms",
                         count - s->refused_window_base, s->opt.refused_per_second,
                         s->opt.backoff_ms));
  unsigned long long until = now + (unsigned long long)s->opt.backoff_ms * 1000000ull;
  while (!atomic_load(&s->stopping)) {
    now = monotonic_ns();
    if (now >= until)
      break;
    struct epoll_event ev;
    int n = epoll_wait(s->pause_epoll_fd, &ev, 1, (int)((until - now) / 1000000ull) + 1);
    if (n > 0)
      atomic_store(&s->stopping, true); /* wake fd, pidfd or signalfd */
  }
  /* the attempts refused while the queue drained belong to this pause */
  s->refused_window_start = monotonic_ns();
  s->refused_window_base = gate_refused_count(s->opt.gate);
  return true;
}

static void *watcher_main(void *arg) {
  struct bridge_service *s = arg;
  if (s->opt.seccomp) {
    tg_error *err = NULL;
    /* Failing to confine is fatal for the watcher: better no bridge than an
     * unconfined parser.  Clients then time out with a clear error. */
    if (bridge_seccomp_confine_watcher(&err) < 0) {
      tg_error_free(&err);
      atomic_store(&s->stopping, true);
      return NULL;
    }
  }
  rescan(s, false, false); /* requests written before the watch started */
  unsigned long long next_gc = monotonic_ns() + GC_TICK_MS * 1000000ull;
  while (!atomic_load(&s->stopping)) {
    struct epoll_event evs[4];
    unsigned long long now = monotonic_ns();
    int timeout = now >= next_gc ? 0 : (int)((next_gc - now) / 1000000ull) + 1;
    int n = epoll_wait(s->epoll_fd, evs, 4, timeout);
    if (n < 0 && errno != EINTR)
      break;
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == s->inotify_fd)
        drain_inotify(s);
      else
        atomic_store(&s->stopping, true); /* wake fd, pidfd or signalfd */
    }
    maybe_back_off(s);
    if (monotonic_ns() >= next_gc && !atomic_load(&s->stopping)) {
      rescan(s, true, false);
      struct job *j = xcalloc(1, sizeof *j);
      j->kind = JOB_FLUSH; /* the refusal summaries that are due */
      post(s, j);
      next_gc = monotonic_ns() + GC_TICK_MS * 1000000ull;
    }
  }
  /* Take the markers that are already there, so their callers hear
   * container_stopped from the gate instead of timing out. */
  atomic_store(&s->stopping, true);
  rescan(s, false, true);
  return NULL;
}

/* ---- the workers: govern and answer ---- */

static int write_response_once(struct bridge_service *s, const char *id,
                               const char *body, size_t len) {
  return bridge_write_response(s->opt.resp_fd, id, body, len);
}

static void release_reserve(struct bridge_service *s) {
  pthread_mutex_lock(&s->reserve_mu);
  if (s->reserve_present) {
    unlinkat(s->opt.area_fd, RESERVE_NAME, 0);
    s->reserve_present = false;
  }
  pthread_mutex_unlock(&s->reserve_mu);
}

static void make_reserve(struct bridge_service *s) {
  pthread_mutex_lock(&s->reserve_mu);
  if (!s->reserve_present) {
    int fd = openat(s->opt.area_fd, RESERVE_NAME,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      if (posix_fallocate(fd, 0, RESERVE_BYTES) == 0)
        s->reserve_present = true;
      else
        unlinkat(s->opt.area_fd, RESERVE_NAME, 0);
      close(fd);
    }
  }
  pthread_mutex_unlock(&s->reserve_mu);
}

static void write_response(struct bridge_service *s, const char *id,
                           const char *body, size_t len) {
  if (write_response_once(s, id, body, len) == 0) {
    atomic_fetch_add(&s->st.answered, 1);
    return;
  }
  if (errno != ENOSPC && errno != EDQUOT)
    return; /* nothing more we can do; the client times out */
  /* The container filled the bridge area.  Give back the space held in
   * reserve so the caller hears why, rather than waiting for a timeout. */
  atomic_fetch_add(&s->st.no_space, 1);
  release_reserve(s);
  if (write_response_once(s, id, body, len) == 0) {
    atomic_fetch_add(&s->st.answered, 1);
    return;
  }
  char *msg = xasprintf("the bridge area /run/tollgate/calls is full, so the "
                        "response (%zu bytes) could not be written; remove "
                        "files from /run/tollgate/calls and call again", len);
  size_t elen;
  char *err_body = bridge_error_body(BRIDGE_FULL, msg, &elen);
  if (write_response_once(s, id, err_body, elen) == 0)
    atomic_fetch_add(&s->st.answered, 1);
  free(msg);
  free(err_body);
}

static void run_job(struct bridge_service *s, struct job *j) {
  switch (j->kind) {
  case JOB_CALL: {
    if (j->withdrawn) {
      gate_record_refused(s->opt.gate, GATE_REFUSED_WITHDRAWN, j->id, j->reason);
      remove_request_files(s, j);
      break;
    }
    size_t len = 0;
    char *body = gate_handle(s->opt.gate, j->id, j->request,
                             j->request ? NULL : j->reason, &len);
    if (body != NULL)
      write_response(s, j->id, body, len);
    free(body);
    remove_request_files(s, j);
    break;
  }
  case JOB_REFUSED:
    gate_record_refused(s->opt.gate, j->refusal, j->id[0] ? j->id : NULL, j->reason);
    if (j->refusal == GATE_REFUSED_UNREMEMBERED) {
      size_t len;
      char *body = bridge_error_body(BRIDGE_FULL, j->reason, &len);
      write_response(s, j->id, body, len);
      free(body);
    }
    break;
  case JOB_RESERVE:
    make_reserve(s);
    break;
  case JOB_FLUSH:
    gate_flush_refusals(s->opt.gate);
    break;
  }
}

static void *worker_main(void *arg);

/* Start one more worker; with mu held.  A failure only means fewer
 * workers than asked (at least one is always running). */
static void add_worker(struct bridge_service *s) {
  if (pthread_create(&s->workers[s->nworkers], &s->attr, worker_main, s) == 0)
    s->nworkers++;
}

/* Whether the job this worker thread runs has said it may block. */
static __thread bool worker_blocked;

/* The gate's block hook (gate_set_block_hook): the job on this worker is
 * about to wait (for a person, a tool that is not builtin, a synced intent
 * record).  It stops counting toward run_limit, so the next job is taken
 * by another worker (started if none is idle) instead of waiting behind
 * it: a blocked call never holds up the calls after it while the pool has
 * room. */
static void worker_may_block(void *arg) {
  struct bridge_service *s = arg;
  if (worker_blocked)
    return;
  worker_blocked = true;
  pthread_mutex_lock(&s->mu);
  s->running--;
  bool wake = offer_job(s, true);
  /* Keep a spare: jobs queued while every worker waits would otherwise
   * wait too (the watcher cannot start a worker). */
  if (s->idle == 0 && pool_has_room(s))
    add_worker(s);
  pthread_mutex_unlock(&s->mu);
  if (wake)
    pthread_cond_signal(&s->work);
}

/* The gate's park hook (gate_set_park_hook): the job on this worker
 * waits for a person (parked true) or has its decision (false).  A parked
 * worker stops counting toward opt.workers, so the pool can start another
 * in its place: parked calls are bounded by the policy's max_pending, not
 * by the pool, and allowed calls keep flowing while approvals wait. */
static void worker_parks(void *arg, bool parked) {
  struct bridge_service *s = arg;
  pthread_mutex_lock(&s->mu);
  bool wake = false;
  if (parked) {
    s->parked++;
    wake = offer_job(s, true);
    if (s->idle == 0 && pool_has_room(s))
      add_worker(s);
  } else {
    s->parked--;
  }
  pthread_mutex_unlock(&s->mu);
  if (wake)
    pthread_cond_signal(&s->work);
}

/* The pool starts with one worker and grows to opt.workers, but at most
 * opt.run_limit of them run jobs that do not block at once (offer_job says
 * why).  A worker that finishes a job takes the next queued one before it
 * sleeps, so under load the same warm threads keep the queue moving. */
static void *worker_main(void *arg) {
  struct bridge_service *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if (s->count > 0 && (s->running < s->opt.run_limit || s->closing)) {
      struct job *j = s->queue[s->head];
      s->head = (s->head + 1) % QUEUE_CAP;
      s->count--;
      s->queued_bytes -= j->bytes;
      s->running++;
      pthread_cond_signal(&s->not_full);
      /* More queued than running, and a slot left: bring in a helper. */
      bool wake = offer_job(s, true);
      pthread_mutex_unlock(&s->mu);
      if (wake)
        pthread_cond_signal(&s->work);
      worker_blocked = false;
      run_job(s, j);
      job_free(j);
      pthread_mutex_lock(&s->mu);
      if (!worker_blocked)
        s->running--;
      continue;
    }
    if (s->closing && s->count == 0)
      break; /* the queue is drained */
    s->idle++;
    pthread_cond_wait(&s->work, &s->mu);
    s->idle--;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- lifecycle ---- */

static int epoll_add(int epfd, int fd, tg_error **err) {
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
    return tg_error_set(err, errno, "bridge: epoll_ctl");
  return 0;
}

/* Close the inotify descriptor without waiting for the kernel to free its
 * watch.  The last close of an inotify descriptor that had a watch waits
 * for an SRCU grace period (7-15 ms on the test machine, measured with
 * strace -T: most of tollgate's own time in a `tollgate run` of /bin/true,
 * and it delays the sidecar's exit, which `delete` waits for).  A child
 * takes the last reference and pays that wait after we have moved on;
 * nobody waits for it (the sidecar's or run's parent reaps it, or init
 * once we have exited).  If there can be no child, close here. */
static void close_inotify_off_path(int fd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    close(fd);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    /* Async-signal-safe calls only (we may have other threads): keep the
     * inotify descriptor and the pipe's read end, wait for EOF, exit. */
    int lo = fd < p[0] ? fd : p[0], hi = fd < p[0] ? p[0] : fd;
    if (lo > 0)
      syscall(SYS_close_range, 0U, (unsigned)lo - 1, 0U);
    if (hi > lo + 1)
      syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0U);
    syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
    char c;
    while (read(p[0], &c, 1) > 0)
      ;
    _exit(0);
  }
  close(fd); /* fast while the child holds a reference */
  close(p[0]);
  close(p[1]); /* EOF: the child exits and drops the last reference */
}

static void server_free(struct bridge_service *s) {
  if (s->inotify_fd >= 0)
    close_inotify_off_path(s->inotify_fd);
  if (s->epoll_fd >= 0)
    close(s->epoll_fd);
  if (s->pause_epoll_fd >= 0)
    close(s->pause_epoll_fd);
  if (s->wake_fd >= 0)
    close(s->wake_fd);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->reserve_mu);
  pthread_cond_destroy(&s->work);
  pthread_cond_destroy(&s->not_full);
  seen_free(&s->seen);
  pthread_attr_destroy(&s->attr);
  free(s->workers);
  free(s);
}

int bridge_service_start(const struct bridge_service_options *opts,
                        struct bridge_service **out, tg_error **err) {
  struct bridge_service *s = xcalloc(1, sizeof *s);
  s->opt = *opts;
  if (s->opt.request_max_bytes == 0)
    s->opt.request_max_bytes = BRIDGE_DEFAULT_REQUEST_MAX;
  if (s->opt.workers == 0)
    s->opt.workers = 8;
  if (s->opt.gc_seconds == 0)
    s->opt.gc_seconds = 300;
  if (s->opt.refused_per_second == 0)
    s->opt.refused_per_second = BRIDGE_DEFAULT_REFUSED_PER_SECOND;
  if (s->opt.backoff_ms == 0)
    s->opt.backoff_ms = BRIDGE_DEFAULT_BACKOFF_MS;
  if (s->opt.seen_max == 0)
    s->opt.seen_max = BRIDGE_SEEN_MAX;
  s->seen.max = s->opt.seen_max;
  s->seen.cap_calls = gate_max_calls(s->opt.gate);
  {
    long long mp = gate_max_pending(s->opt.gate);
    if (mp < 0)
      mp = 0;
    if (mp > 4096)
      mp = 4096; /* a thread each; the policy's limit still applies */
    s->max_threads = s->opt.workers + (unsigned)mp;
  }
  if (s->opt.run_limit == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->opt.run_limit = cpus > 0 ? (unsigned)cpus : 1;
  }
  if (s->opt.run_limit > s->opt.workers)
    s->opt.run_limit = s->opt.workers;
  s->inotify_fd = s->epoll_fd = s->wake_fd = s->pause_epoll_fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->reserve_mu, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->not_full, NULL);
  pthread_attr_init(&s->attr);
  pthread_attr_setstacksize(&s->attr, WORKER_STACK);

  s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (s->inotify_fd < 0) {
    server_free(s);
    return tg_error_set(err, errno, "bridge: inotify_init1 (raise "
                        "fs.inotify.max_user_instances if it is exhausted)");
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", s->opt.req_fd);
  if (inotify_add_watch(s->inotify_fd, path,
                        IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
    server_free(s);
    return tg_error_set(err, errno, "bridge: watch calls/req (raise "
                        "fs.inotify.max_user_watches if it is exhausted)");
  }
  s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  s->pause_epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->epoll_fd < 0 || s->wake_fd < 0 || s->pause_epoll_fd < 0) {
    server_free(s);
    return tg_error_set(err, errno, "bridge: epoll/eventfd");
  }
  if (epoll_add(s->epoll_fd, s->inotify_fd, err) < 0 ||
      epoll_add(s->epoll_fd, s->wake_fd, err) < 0 ||
      (s->opt.stop_fd >= 0 && epoll_add(s->epoll_fd, s->opt.stop_fd, err) < 0) ||
      (s->opt.stop_fd2 >= 0 && epoll_add(s->epoll_fd, s->opt.stop_fd2, err) < 0) ||
      epoll_add(s->pause_epoll_fd, s->wake_fd, err) < 0 ||
      (s->opt.stop_fd >= 0 && epoll_add(s->pause_epoll_fd, s->opt.stop_fd, err) < 0) ||
      (s->opt.stop_fd2 >= 0 && epoll_add(s->pause_epoll_fd, s->opt.stop_fd2, err) < 0)) {
    server_free(s);
    return -1;
  }
  make_reserve(s);
  gate_set_block_hook(s->opt.gate, worker_may_block, s);
  gate_set_park_hook(s->opt.gate, worker_parks, s);

  s->workers = xcalloc(s->max_threads, sizeof *s->workers);
  { /* one worker to begin with; worker_main adds more when needed */
    pthread_mutex_lock(&s->mu);
    int r = pthread_create(&s->workers[0], &s->attr, worker_main, s);
    if (r == 0)
      s->nworkers++;
    pthread_mutex_unlock(&s->mu);
    if (r != 0) {
      gate_set_block_hook(s->opt.gate, NULL, NULL);
    gate_set_park_hook(s->opt.gate, NULL, NULL);
      server_free(s);
      return tg_error_set(err, r, "bridge: start worker thread");
    }
  }
  int r = pthread_create(&s->watcher, &s->attr, watcher_main, s);
  if (r != 0) {
    pthread_mutex_lock(&s->mu);
    s->closing = true; /* no worker is added after this */
    unsigned n = s->nworkers;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    for (unsigned k = 0; k < n; k++)
      pthread_join(s->workers[k], NULL);
    gate_set_block_hook(s->opt.gate, NULL, NULL);
    gate_set_park_hook(s->opt.gate, NULL, NULL);
    server_free(s);
    return tg_error_set(err, r, "bridge: start watcher thread");
  }
  *out = s;
  return 0;
}

void bridge_service_wait(struct bridge_service *s) {
  if (!s->watcher_joined) {
    pthread_join(s->watcher, NULL);
    s->watcher_joined = true;
  }
}

void bridge_service_stop(struct bridge_service *s) {
  if (s == NULL)
    return;
  atomic_store(&s->stopping, true);
  uint64_t one = 1;
  if (write(s->wake_fd, &one, sizeof one) < 0) {
    /* the eventfd counter cannot overflow here; the flag is set anyway */
  }
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->not_full);
  pthread_mutex_unlock(&s->mu);
  bridge_service_wait(s);
  /* Parked approvals end now; the calls still queued are answered by the
   * gate, which knows the container stopped. */
  gate_container_stopped(s->opt.gate);
  pthread_mutex_lock(&s->mu);
  s->closing = true; /* no worker is added after this */
  unsigned n = s->nworkers;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->mu);
  for (unsigned k = 0; k < n; k++)
    pthread_join(s->workers[k], NULL);
  gate_set_block_hook(s->opt.gate, NULL, NULL);
    gate_set_park_hook(s->opt.gate, NULL, NULL);
  server_free(s);
}

void bridge_service_get_stats(struct bridge_service *s,
                             struct bridge_service_stats *o) {
  o->requests = atomic_load(&s->st.requests);
  o->bad = atomic_load(&s->st.bad);
  o->replays = atomic_load(&s->st.replays);
  o->bad_ids = atomic_load(&s->st.bad_ids);
  o->junk = atomic_load(&s->st.junk);
  o->answered = atomic_load(&s->st.answered);
  o->no_space = atomic_load(&s->st.no_space);
  o->withdrawn = atomic_load(&s->st.withdrawn);
  o->backoffs = atomic_load(&s->st.backoffs);
  o->seen_ids = atomic_load(&s->seen.count);
}

/* The bridge server's watcher: the only code of the server that reads
 * container bytes.  See server_watcher.h.
 *
 * Everything the container writes under calls/req is untrusted, and this
 * file is where it is read: names become paths only once
 * bridge_classify_name() accepted them as ids; bodies are read with
 * read_file_untrusted() (O_NOFOLLOW: a planted symlink is not followed;
 * O_NONBLOCK: a FIFO does not block the open; a regular file only, at most
 * opt.request_max_bytes) and parsed with bridge_parse_request()'s nesting
 * limit; a name that is no part of the protocol is removed, never read
 * (bridge_remove_entry follows no link).  What this makes the host hold is
 * bounded: the seen set (seen.h), the queued bytes (server_pool.h) and the
 * work (the attempt budget, maybe_back_off).  With opt.seccomp (every
 * caller sets it) the thread runs under a seccomp filter (seccomp.h) from
 * its first line.  The other parts of the server get parsed requests and
 * validated ids: none of them reads what the container wrote, and they
 * write and remove in the shared directories only through respond.h.
 * (The end of this file makes and closes the watcher's descriptors; the
 * thread that starts and stops the service runs that part.)
 */
#include "bridge/server_watcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "bridge/server_answer.h"
#include "bridge/server_pool.h"
#include "base/util.h"

#define SEEN_PURGE_NS 1000000000ull   /* at most one seen_purge a second */
#define BACKOFF_WINDOW_NS 1000000000ull
#define GC_TICK_MS 5000

/* ---- handing jobs to the pool ---- */

static void post(struct bridge_service *s, struct job *j) {
  if (!pool_push(s, j)) {
    answer_remove_request_files(s, j);
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

/* ---- one marker ---- */

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

/* A marker for an id already taken.  Its marker not yet removed: this is
 * that marker, reported again.  Removed, and here again: a new one for an
 * id already answered.  Never answer twice (the first caller may not have
 * read its response yet), but count and audit the attempt.  The one call
 * that removes the new marker handles it. */
static void refuse_replay(struct bridge_service *s, struct seen_id *taken, const char *id,
                          const char *marker, const char *body) {
  if (!atomic_load(&taken->marker_gone) ||
      !bridge_remove_entry(s->opt.req_fd, marker))
    return;
  bridge_remove_entry(s->opt.req_fd, body);
  atomic_fetch_add(&s->st.replays, 1);
  post_refused(s, GATE_REFUSED_REPLAY, id, xasprintf("replayed call id %s", id));
}

/* Every id in the set is an attempt counted toward max_tool_calls: with
 * limit (the cap) of them, this one is over the cap.  It is answered
 * (budget_exhausted) but not remembered, so the set stays bounded
 * whatever the container writes; the one call that removes the marker
 * handles it.  Only the first one's body is read (bounded like any
 * request), so the one full audit record of the cap being hit names the
 * tool and arguments; later ones are only counted. */
static void take_over_cap(struct bridge_service *s, const char *id, const char *marker,
                          const char *body) {
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
}

/* Remember id in the seen set, purging it first when it is full.  NULL:
 * no room. */
static struct seen_id *remember(struct bridge_service *s, const char *id) {
  struct seen_id *taken = seen_add(&s->seen, id);
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
  return taken;
}

static void refuse_unremembered(struct bridge_service *s, const char *id, const char *marker,
                                const char *body) {
  if (!bridge_remove_entry(s->opt.req_fd, marker))
    return;
  bridge_remove_entry(s->opt.req_fd, body);
  /* refused, and told so: an error answer is the same however often
   * it is written, so an id not remembered may get it */
  post_refused(s, GATE_REFUSED_UNREMEMBERED, id,
               xasprintf("call id %s: %u calls are in flight or their responses not "
                         "collected; collect responses (resp/<id>.json) and call again",
                         id, s->opt.seen_max));
}

/* A call taken: read its body, untrusted, and hand it to the pool. */
static void take_call(struct bridge_service *s, struct seen_id *taken, const char *id,
                      const char *body) {
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
   * is out (answer_job): off the watcher, which every call passes through,
   * and after the part the caller waits for.  A rescan leaves bodies alone
   * until they are old. */
  atomic_fetch_add(&s->st.requests, 1);
  if (j->request == NULL)
    atomic_fetch_add(&s->st.bad, 1);
  if (j->withdrawn)
    atomic_fetch_add(&s->st.withdrawn, 1);
  post(s, j);
}

/* id: a valid call id (bridge_classify_name said MARKER). */
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
    refuse_replay(s, taken, id, marker, body);
    return;
  }
  if ((long long)s->seen.len >= s->seen.cap_calls) {
    take_over_cap(s, id, marker, body);
    return;
  }
  taken = remember(s, id);
  if (taken == NULL) {
    refuse_unremembered(s, id, marker, body);
    return;
  }
  take_call(s, taken, id, body);
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

/* ---- scans ---- */

static bool maybe_back_off(struct bridge_service *s);

static bool is_old(int dirfd, const char *name, time_t cutoff) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return false;
  return st.st_mtime < cutoff;
}

/* A listing of the directory dirfd holds, on a descriptor of its own
 * (closedir closes that one, never dirfd).  NULL when it cannot be read. */
static DIR *open_listing(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  DIR *d = fdopendir(fd);
  if (d == NULL)
    close(fd);
  return d;
}

/* Every name in calls/req (markers missed by inotify, leftovers). */
static void scan_requests(struct bridge_service *s, bool gc, bool final, time_t cutoff) {
  DIR *d = open_listing(s->opt.req_fd);
  if (d == NULL)
    return;
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
}

/* The responses in calls/resp that nobody collected in time. */
static void collect_responses(struct bridge_service *s, time_t cutoff) {
  DIR *d = open_listing(s->opt.resp_fd);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (is_old(s->opt.resp_fd, de->d_name, cutoff))
      bridge_remove_entry(s->opt.resp_fd, de->d_name);
  }
  closedir(d);
}

/* Walk calls/req (markers missed by inotify, leftovers) and, on gc ticks,
 * calls/resp (responses nobody collected). */
static void rescan(struct bridge_service *s, bool gc, bool final) {
  time_t cutoff = time(NULL) - (time_t)s->opt.gc_seconds;
  scan_requests(s, gc, final, cutoff);
  if (!gc)
    return;
  collect_responses(s, cutoff);
  if (answer_reserve_missing(s)) {
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

/* ---- the thread ---- */

void *watcher_main(void *arg) {
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

void watcher_stop(struct bridge_service *s) {
  atomic_store(&s->stopping, true);
  uint64_t one = 1;
  if (write(s->wake_fd, &one, sizeof one) < 0) {
    /* the eventfd counter cannot overflow here; the flag is set anyway */
  }
}

/* ---- its descriptors ---- */

static int epoll_add(int epfd, int fd, tg_error **err) {
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
    return tg_error_set(err, errno, "bridge: epoll_ctl");
  return 0;
}

int watcher_open(struct bridge_service *s, tg_error **err) {
  s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (s->inotify_fd < 0)
    return tg_error_set(err, errno, "bridge: inotify_init1 (raise "
                        "fs.inotify.max_user_instances if it is exhausted)");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", s->opt.req_fd);
  if (inotify_add_watch(s->inotify_fd, path,
                        IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0)
    return tg_error_set(err, errno, "bridge: watch calls/req (raise "
                        "fs.inotify.max_user_watches if it is exhausted)");
  s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  s->pause_epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->epoll_fd < 0 || s->wake_fd < 0 || s->pause_epoll_fd < 0)
    return tg_error_set(err, errno, "bridge: epoll/eventfd");
  if (epoll_add(s->epoll_fd, s->inotify_fd, err) < 0 ||
      epoll_add(s->epoll_fd, s->wake_fd, err) < 0 ||
      (s->opt.stop_fd >= 0 && epoll_add(s->epoll_fd, s->opt.stop_fd, err) < 0) ||
      (s->opt.stop_fd2 >= 0 && epoll_add(s->epoll_fd, s->opt.stop_fd2, err) < 0) ||
      epoll_add(s->pause_epoll_fd, s->wake_fd, err) < 0 ||
      (s->opt.stop_fd >= 0 && epoll_add(s->pause_epoll_fd, s->opt.stop_fd, err) < 0) ||
      (s->opt.stop_fd2 >= 0 && epoll_add(s->pause_epoll_fd, s->opt.stop_fd2, err) < 0))
    return -1;
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

void watcher_close(struct bridge_service *s) {
  if (s->inotify_fd >= 0)
    close_inotify_off_path(s->inotify_fd);
  if (s->epoll_fd >= 0)
    close(s->epoll_fd);
  if (s->pause_epoll_fd >= 0)
    close(s->pause_epoll_fd);
  if (s->wake_fd >= 0)
    close(s->wake_fd);
}

/* The sidecar's supervisor: start the worker, notice its death at once,
 * answer its callers, restart it or stop the container.  See supervisor.h.
 *
 * Single-threaded on purpose: it forks workers, and a fork of a threaded
 * process may only exec.  It never reads what the container wrote: it
 * lists calls/req by name (bridge_answer_orphans), and everything it
 * decides comes from its own pidfds and the host config.
 */
#include "bridge/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bridge/area.h"
#include "bridge/protocol.h"
#include "bridge/respond.h"
#include "bridge/sidecar.h"
#include "base/util.h"


#define READY_TIMEOUT_MS 30000   /* a worker's start: policy, MCP servers, audit */
#define RESTART_WINDOW_NS (60ull * 1000000000ull)
#define MAX_RESTARTS_CAP 100     /* the host config's limit (base/hostconfig.c) */
#define UNKNOWN_LISTED 1024      /* unknown calls named one by one in the log */
#define DEFAULT_MAX_RESTARTS 3

struct supervisor {
  const struct bridge_setup *setup;
  int init_pidfd, sigfd, epfd, state_fd;
  int area_fd, req_fd, resp_fd;
  pid_t worker;
  int worker_pidfd;
  bool stopping;      /* told to stop: no restart */
  bool init_gone;     /* the container's init exited */
  int log_closed;     /* at the end: 1 the log closed whole, 0 records lost, -1 not yet */
  bool restart;       /* sidecar_on_death: restart (else stop) */
  unsigned max_restarts;
  unsigned restarts;  /* in this run */
  unsigned long long recent[MAX_RESTARTS_CAP]; /* monotonic ns of the last restarts */
  /* Calls answered outcome_unknown that no gate has recorded yet: a
   * worker that fails before its gate opens leaves them to the next. */
  char *unknown[UNKNOWN_LISTED];
  size_t nunknown;
  unsigned long long unlisted;
  char last_death[256];
};

static bool readable(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

/* <state_dir>/sidecar.json, for `tollgate state` (bridge_sidecar_status).
 * Host only: the container never sees the state directory. */
static void write_status(struct supervisor *s, const char *status) {
  json_t *o = json_new_object();
  json_object_set(o, "status", json_new_string(status));
  json_object_set(o, "supervisor", json_new_integer(getpid()));
  json_object_set(o, "worker", json_new_integer(s->worker));
  json_object_set(o, "restarts", json_new_integer(s->restarts));
  json_object_set(o, "on_death", json_new_string(s->restart ? "restart" : "stop"));
  json_object_set(o, "last_death",
                  s->last_death[0] ? json_new_string(s->last_death) : json_new_null());
  if (s->log_closed >= 0)
    json_object_set(o, "log_closed", json_new_bool(s->log_closed == 1));
  size_t len = 0;
  cleanup_free char *text = json_dump(o, false, &len);
  json_free(o);
  write_file_atomic(s->state_fd, BRIDGE_SIDECAR_STATUS, text, len, 0644, false, NULL);
}

/* Read a worker's report: "ready <pid>\n" or "error: ...", within
 * READY_TIMEOUT_MS.  *msg is owned; NULL when it said nothing (died). */
static bool read_report(int fd, int worker_pidfd, char **msg) {
  char buf[2048];
  size_t n = 0;
  unsigned long long end = monotonic_ns() + READY_TIMEOUT_MS * 1000000ull;
  *msg = NULL;
  while (n < sizeof buf - 1) {
    unsigned long long now = monotonic_ns();
    if (now >= end)
      break;
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = worker_pidfd, .events = POLLIN}};
    int r = poll(p, 2, (int)((end - now) / 1000000ull) + 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    if (!(p[0].revents & (POLLIN | POLLHUP)))
      break; /* the worker exited without a word */
    ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    n += (size_t)k;
    if (memchr(buf, '\n', n) != NULL)
      break;
  }
  buf[n] = '\0';
  if (n > 0)
    *msg = xstrdup(buf);
  return n > 0 && strncmp(buf, "ready ", 6) == 0;
}

/* Start a worker and wait for its word.  resume: what its gate records
 * first (NULL: the first worker).  true when it is serving. */
static bool start_worker(struct supervisor *s, const struct gate_resume *resume, char **msg,
                         tg_error **err) {
  int rd = -1;
  pid_t pid = bridge_worker_fork(s->setup, s->init_pidfd, resume, &rd, err);
  if (pid < 0)
    return false;
  int pidfd = pidfd_open_pid(pid);
  if (pidfd < 0) {
    tg_error_set(err, errno, "bridge: pidfd_open the sidecar %d", (int)pid);
    close(rd);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return false;
  }
  bool ok = read_report(rd, pidfd, msg);
  close(rd);
  /* Silent past READY_TIMEOUT_MS (or it said no): a worker that is not
   * known to serve is not left running unsupervised in spirit; killed, it
   * comes back through the pidfd as a death like any other. */
  if (!ok)
    pidfd_signal(pidfd, SIGKILL);
  s->worker = pid;
  s->worker_pidfd = pidfd;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = pidfd};
  epoll_ctl(s->epfd, EPOLL_CTL_ADD, pidfd, &ev);
  if (!ok)
    tg_error_set(err, 0, "%s", *msg ? *msg : "the sidecar exited before it was ready");
  return ok;
}

/* The worker is gone: reap it, forget its pidfd.  *how describes the end.
 * Its exit status, or -1 when it did not exit (killed, or unknown). */
static int reap_worker(struct supervisor *s, char *how, size_t howlen) {
  int status = 0;
  pid_t r;
  do
    r = waitpid(s->worker, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    snprintf(how, howlen, "exited (status unknown: %s)", strerror(errno));
  else if (WIFSIGNALED(status))
    snprintf(how, howlen, "was killed by signal %d (%s)", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
  else
    snprintf(how, howlen, "exited with status %d", WEXITSTATUS(status));
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->worker_pidfd, NULL);
  close(s->worker_pidfd);
  s->worker_pidfd = -1;
  return r == s->worker && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* May another restart happen now?  At most max_restarts within a minute:
 * a sidecar that dies at once every time must not spin. */
static bool restart_allowed(struct supervisor *s) {
  if (!s->restart || s->max_restarts == 0)
    return false;
  unsigned long long now = monotonic_ns();
  unsigned recent = 0;
  for (unsigned i = 0; i < s->max_restarts; i++)
    if (s->recent[i] != 0 && now - s->recent[i] < RESTART_WINDOW_NS)
      recent++;
  return recent < s->max_restarts;
}

static void note_restart(struct supervisor *s) {
  s->recent[s->restarts % s->max_restarts] = monotonic_ns();
  s->restarts++;
}

/* Every call left in calls/req gets outcome_unknown now: the dead worker
 * may have run it (or been about to), so "not run" would be a lie and a
 * rerun by the next worker a second execution.  Its request files go, so
 * no later worker takes it again. */
static void answer_in_flight(struct supervisor *s, const char *death, const char *next) {
  cleanup_free char *msg = xasprintf(
      "the tollgate bridge sidecar %s while this call was in flight or queued: the call may "
      "or may not have run (check its effect before calling again); %s", death, next);
  size_t len = 0;
  cleanup_free char *body = bridge_error_body(GATE_OUTCOME_UNKNOWN, msg, &len);
  /* The dead worker's space reserve (bridge/server_answer.c) is given up, so a
   * container that filled the area still hears; the next worker makes
   * it again. */
  unlinkat(s->area_fd, ".reserve", 0);
  struct bridge_orphans o;
  bridge_answer_orphans(s->req_fd, s->resp_fd, body, len, UNKNOWN_LISTED, &o);
  for (size_t i = 0; i < o.nids; i++) {
    if (s->nunknown < UNKNOWN_LISTED) {
      s->unknown[s->nunknown++] = o.ids[i];
      o.ids[i] = NULL;
    } else {
      s->unlisted++;
    }
  }
  s->unlisted += o.unlisted;
  bridge_orphans_free(&o);
}

static void forget_unknown(struct supervisor *s) {
  for (size_t i = 0; i < s->nunknown; i++)
    free(s->unknown[i]);
  s->nunknown = 0;
  s->unlisted = 0;
}

static struct gate_resume resume_for(const struct supervisor *s, const char *reason,
                                     const char *action) {
  return (struct gate_resume){.reason = reason, .action = action,
                              .dead_pid = s->worker, .restarts = s->restarts,
                              .unknown_ids = (const char *const *)s->unknown,
                              .nunknown = s->nunknown, .unlisted = s->unlisted};
}

/* The dead worker (s->worker) closed nothing: continue its log with
 * its death and the calls it left (answered outcome_unknown by now),
 * then close it, so no intent stays unresolved. */
static void record_death(struct supervisor *s, const char *reason) {
  snprintf(s->last_death, sizeof s->last_death, "%s", reason);
  struct gate_resume r = resume_for(s, reason, "stop");
  cleanup_free char *control = NULL;
  struct gate_config cfg;
  bridge_gate_config(s->setup, &cfg, &control);
  cfg.resume = &r;
  s->worker = 0;
  s->log_closed = gate_record_death(&cfg, NULL) == 0 ? 1 : 0;
  write_status(s, "dead");
  forget_unknown(s);
}

/* sidecar_on_death "stop", or too many restarts: kill the container
 * (through the pidfd: exactly its init) and record why in its log. */
__attribute__((noreturn)) static void stop_container(struct supervisor *s, const char *why) {
  if (!s->init_gone)
    pidfd_signal(s->init_pidfd, SIGKILL);
  cleanup_free char *reason = xasprintf("%s; the container was killed", why);
  record_death(s, reason);
  _exit(1);
}

/* The worker ended while the container stops (delete, or its init
 * exited).  A worker that exited 0 closed its gate; one killed just then
 * (kill -9 as the container exits) wrote neither its callers' outcomes
 * nor "closed": the log would end on unresolved intents, and `audit
 * verify` fail.  Its death is recorded as any other's, restarting
 * nothing. */
static void worker_ended_at_stop(struct supervisor *s) {
  char how[160];
  pid_t dead = s->worker;
  int st = reap_worker(s, how, sizeof how);
  if (st == 0 || st == BRIDGE_SIDECAR_EXIT_LOG_LOST) {
    /* It closed its gate: whole, or with records lost to the disk. */
    s->log_closed = st == 0;
    return;
  }
  char death[256];
  snprintf(death, sizeof death, "(pid %d) %s", (int)dead, how);
  answer_in_flight(s, death, "the container is stopping");
  cleanup_free char *why =
      xasprintf("the bridge sidecar %s as the container stopped; nothing restarted", death);
  record_death(s, why);
}

/* The worker died while the container runs. */
static void on_death(struct supervisor *s) {
  char how[160];
  pid_t dead = s->worker;
  reap_worker(s, how, sizeof how);
  char death[256];
  snprintf(death, sizeof death, "(pid %d) %s", (int)dead, how);
  bool again = restart_allowed(s);
  cleanup_free char *why = NULL;
  if (again)
    why = xasprintf("the bridge sidecar %s; restarted (%u of at most %u a minute)", death,
                    s->restarts + 1, s->max_restarts);
  else if (!s->restart)
    why = xasprintf("the bridge sidecar %s; sidecar_on_death is \"stop\"", death);
  else
    why = xasprintf("the bridge sidecar %s; it was restarted %u times within a minute "
                    "(sidecar_max_restarts)", death, s->max_restarts);
  /* The callers first: they hear within milliseconds, whatever comes next. */
  answer_in_flight(s, death, again ? "a new sidecar serves later calls"
                                   : "the container is being stopped");
  snprintf(s->last_death, sizeof s->last_death, "%s", why);
  if (!again)
    stop_container(s, why);
  note_restart(s);
  s->worker = dead; /* for the record: the pid that died */
  struct gate_resume r = resume_for(s, why, "restart");
  write_status(s, "restarting");
  cleanup_free char *msg = NULL;
  tg_error *err = NULL;
  if (start_worker(s, &r, &msg, &err)) {
    forget_unknown(s); /* its gate recorded them */
    write_status(s, "running");
  } else if (s->worker_pidfd < 0) {
    /* Not even forked: nothing will serve this container. */
    cleanup_free char *also = xasprintf("%s; no new sidecar could be started: %s", why,
                                        err ? err->msg : "fork failed");
    tg_error_free(&err);
    stop_container(s, also);
  } else {
    /* Its pidfd is watched: when it has exited, the loop comes back here
     * and the restart budget decides again. */
    snprintf(s->last_death, sizeof s->last_death, "%s; the new sidecar failed: %s", why,
             err ? err->msg : "no report");
    write_status(s, "restarting");
  }
  tg_error_free(&err);
}

static int setup_fds(struct supervisor *s, pid_t init_pid, tg_error **err) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  s->init_pidfd = pidfd_open_pid(init_pid);
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  s->state_fd = open(s->setup->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->sigfd < 0 || s->init_pidfd < 0 || s->epfd < 0 || s->state_fd < 0)
    return tg_error_set(err, errno, "watch the container's init (pid %d) with a pidfd",
                        (int)init_pid);
  if (bridge_area_open(s->setup->state_dir, &s->area_fd, &s->req_fd, &s->resp_fd, err) < 0)
    return -1;
  struct epoll_event a = {.events = EPOLLIN, .data.fd = s->sigfd};
  struct epoll_event b = {.events = EPOLLIN, .data.fd = s->init_pidfd};
  if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sigfd, &a) < 0 ||
      epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->init_pidfd, &b) < 0)
    return tg_error_set(err, errno, "bridge: epoll_ctl");
  return 0;
}

static void configure(struct supervisor *s) {
  const struct host_config *h = s->setup->host;
  s->restart = h == NULL || h->sidecar_on_death == NULL ||
               strcmp(h->sidecar_on_death, "stop") != 0;
  int max = h ? h->sidecar_max_restarts : DEFAULT_MAX_RESTARTS;
  s->max_restarts = max < 0 ? 0 : max > MAX_RESTARTS_CAP ? MAX_RESTARTS_CAP : (unsigned)max;
}

void bridge_supervise(const struct bridge_setup *setup, pid_t init_pid, int ready) {
  struct supervisor sv = {.setup = setup, .worker_pidfd = -1, .area_fd = -1, .req_fd = -1,
                          .resp_fd = -1, .log_closed = -1};
  struct supervisor *s = &sv;
  tg_error *err = NULL;
  prctl(PR_SET_NAME, "tollgate-superv");
  if (chdir("/") < 0) {
    /* "/" always exists */
  }
  umask(022);
  configure(s);
  int lock = -1;
  if (setup_fds(s, init_pid, &err) < 0 ||
      (lock = bridge_take_lock(setup->state_dir, BRIDGE_SUPERVISOR_LOCK, &err)) < 0 ||
      bridge_sidecar_drop_capabilities(&err) < 0) {
    bridge_report(ready, "error: %s", err->msg);
    _exit(1);
  }
  cleanup_free char *msg = NULL;
  if (!start_worker(s, NULL, &msg, &err)) {
    bridge_report(ready, "%s", msg ? msg : "error: the sidecar exited before it was ready");
    if (s->worker_pidfd >= 0) {
      kill(s->worker, SIGKILL);
      waitpid(s->worker, NULL, 0);
    }
    _exit(1);
  }
  write_status(s, "running");
  bridge_report(ready, "ready %d\n", (int)s->worker);
  close(ready);
  malloc_trim(0);
  bridge_sidecar_drop_clean_file_pages();

  while (s->worker_pidfd >= 0) {
    struct epoll_event evs[4];
    int n = epoll_wait(s->epfd, evs, 4, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    for (int i = 0; i < n && s->worker_pidfd >= 0; i++) {
      int fd = evs[i].data.fd;
      if (fd == s->sigfd) {
        struct signalfd_siginfo si;
        while (read(s->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
          ;
        /* delete: stop the worker (it answers what is queued with
         * container_stopped and closes the log) and restart nothing. */
        s->stopping = true;
        pidfd_signal(s->worker_pidfd, SIGTERM);
      } else if (fd == s->init_pidfd) {
        /* The container exited: the worker sees it too and stops. */
        s->init_gone = true;
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->init_pidfd, NULL);
      } else if (fd == s->worker_pidfd) {
        if (!s->init_gone && readable(s->init_pidfd))
          s->init_gone = true;
        if (s->stopping || s->init_gone) {
          worker_ended_at_stop(s);
          break;
        }
        on_death(s);
      }
    }
  }
  s->worker = 0;
  write_status(s, "stopped");
  close(lock);
  _exit(0);
}

/* The per-container bridge sidecar.
 *
 * `create` returns to containerd while the container lives on, so the
 * bridge must outlive it without holding anything of its caller: double
 * fork, setsid, stdio on /dev/null and every inherited fd closed (as conmon
 * does), readiness reported through a pipe before create returns.  The
 * double-forked process is the supervisor (supervisor.c), which forks the
 * worker that serves: the sidecar proper.  The worker stops on SIGTERM
 * (from the supervisor, which delete signals) or when the container's init
 * exits (pidfd).
 */
#include "bridge/sidecar.h"

#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bridge/area.h"
#include "bridge/heartbeat.h"
#include "bridge/server.h"
#include "bridge/supervisor.h"
#include "base/util.h"


void bridge_gate_config(const struct bridge_setup *setup,
                        struct gate_config *cfg, char **control_socket) {
  const struct host_config *h = setup->host;
  *control_socket = xasprintf("%s/control.sock", setup->state_dir);
  *cfg = (struct gate_config){
      .container_id = setup->container_id,
      .policy_path = setup->policy_path,
      .audit_dir = h ? h->audit_dir : NULL,
      .audit_key = h ? h->audit_key : NULL,
      .approval_hook = h ? h->approval_hook : NULL,
      .approval_timeout_ms = h ? h->approval_timeout_ms : 0,
      .approver_group = h ? h->approver_group : NULL,
      .control_socket = *control_socket,
      .audit_max_bytes = h ? h->audit_max_bytes : 0,
      .state_dir = setup->state_dir,
      .policy_ceiling = h ? h->policy_ceiling : NULL,
  };
}

pid_t bridge_lock_holder(const char *state_dir, const char *name) {
  cleanup_free char *path = xasprintf("%s/%s", state_dir, name);
  cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
    return 0;
  return fl.l_pid;
}

pid_t bridge_sidecar_pid(const char *state_dir) {
  return bridge_lock_holder(state_dir, BRIDGE_SIDECAR_LOCK);
}

pid_t bridge_supervisor_pid(const char *state_dir) {
  return bridge_lock_holder(state_dir, BRIDGE_SUPERVISOR_LOCK);
}

static bool wait_pidfd(int pidfd, int ms) {
  struct pollfd p = {.fd = pidfd, .events = POLLIN};
  int r;
  do
    r = poll(&p, 1, ms);
  while (r < 0 && errno == EINTR);
  return r > 0;
}

/* SIGTERM, up to 5 s, then SIGKILL: through a pidfd, so the signal
 * reaches exactly the process that held the lock. */
static int stop_process(pid_t pid, const char *what, tg_error **err) {
  if (pid <= 0)
    return 0;
  cleanup_close int pidfd = pidfd_open_pid(pid);
  if (pidfd < 0)
    return errno == ESRCH ? 0
                          : tg_error_set(err, errno, "bridge: pidfd_open %s %d", what, (int)pid);
  pidfd_signal(pidfd, SIGTERM);
  if (wait_pidfd(pidfd, 5000))
    return 0;
  pidfd_signal(pidfd, SIGKILL);
  if (!wait_pidfd(pidfd, 5000))
    return tg_error_set(err, 0, "bridge: %s %d did not exit after SIGKILL", what, (int)pid);
  return 0;
}

int bridge_sidecar_stop(const char *state_dir, tg_error **err) {
  /* The supervisor first: told to stop, it stops its worker (which
   * answers what is queued and closes the audit log) and exits, and it
   * restarts nothing.  Then whatever worker is left: one whose supervisor
   * was killed, or one the supervisor could not stop in time. */
  if (stop_process(bridge_supervisor_pid(state_dir), "sidecar supervisor", err) < 0)
    return -1;
  return stop_process(bridge_sidecar_pid(state_dir), "sidecar", err);
}

json_t *bridge_sidecar_status(const char *state_dir) {
  pid_t worker = bridge_sidecar_pid(state_dir);
  pid_t supervisor = bridge_supervisor_pid(state_dir);
  cleanup_free char *path = xasprintf("%s/%s", state_dir, BRIDGE_SIDECAR_STATUS);
  char *buf = NULL;
  size_t len = 0;
  json_t *rec = NULL;
  /* Host-only file in the state directory, written by the supervisor
   * (write then rename): never container data. */
  if (read_file(path, 1 << 16, &buf, &len, NULL) == 0)
    rec = json_parse(buf, len, NULL, NULL);
  free(buf);
  if (rec == NULL && worker == 0 && supervisor == 0)
    return NULL; /* no sidecar was ever started here */
  json_t *o = json_new_object();
  const char *recorded = json_string_value(json_object_get(rec, "status"));
  long long recorded_worker = 0;
  json_integer_value(json_object_get(rec, "worker"), &recorded_worker);
  /* Running only once the supervisor has seen this worker ready: a new
   * worker holds its lock from its first moment, before its gate opens. */
  bool ready = recorded && strcmp(recorded, "running") == 0 && worker > 0 &&
               recorded_worker == (long long)worker;
  const char *status = supervisor ? (ready ? "running" : "restarting")
                       : worker   ? "unsupervised"
                       : recorded && strcmp(recorded, "stopped") == 0 ? "stopped"
                                                                        : "dead";
  json_object_set(o, "status", json_new_string(status));
  json_object_set(o, "pid", json_new_integer(worker));
  json_object_set(o, "supervisor_pid", json_new_integer(supervisor));
  long long restarts = 0;
  json_integer_value(json_object_get(rec, "restarts"), &restarts);
  json_object_set(o, "restarts", json_new_integer(restarts));
  const json_t *death = json_object_get(rec, "last_death");
  json_object_set(o, "last_death", death ? json_copy(death) : json_new_null());
  const json_t *closed = json_object_get(rec, "log_closed");
  if (closed != NULL)
    json_object_set(o, "log_closed", json_copy(closed));
  json_free(rec);
  return o;
}

/* Report to the parent and carry on (ok) or exit (error). */
void bridge_report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bridge_report(int fd, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 1)
    n = (int)sizeof buf - 1;
  if (write_all(fd, buf, (size_t)n) < 0) {
    /* the parent is gone; nothing to tell */
  }
}

/* Keep what serving needs: reading and writing files the container's uid
 * owns (DAC_OVERRIDE, FOWNER, CHOWN), and running tools as an unprivileged
 * uid and stopping them (SETUID, SETGID, KILL).  Everything else, the
 * bounding set included, goes. */
int bridge_sidecar_drop_capabilities(tg_error **err) {
  capng_clear(CAPNG_SELECT_BOTH);
  if (capng_updatev(CAPNG_ADD,
                    CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
                    CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL,
                    CAP_SETGID, CAP_SETUID, -1) < 0)
    return tg_error_set(err, 0, "bridge: capng_updatev");
  int r = capng_apply(CAPNG_SELECT_BOTH);
  if (r < 0)
    return tg_error_set(err, 0, "bridge: drop capabilities (capng_apply %d)", r);
  return 0;
}

int bridge_take_lock(const char *state_dir, const char *name, tg_error **err) {
  cleanup_free char *path = xasprintf("%s/%s", state_dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return tg_error_set(err, errno, "bridge: open %s", path);
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fcntl(fd, F_SETLK, &fl) < 0) {
    close(fd);
    return tg_error_set(err, errno, "bridge: %s is held by another sidecar", path);
  }
  return fd; /* held for the life of the process */
}

/* Let go of the code pages create's work faulted in (much of libcrypto,
 * the CLI's own code): they are shared page cache, come back on demand,
 * and otherwise count as this long-lived process's resident memory. */
void bridge_sidecar_drop_clean_file_pages(void) {
  FILE *f = fopen("/proc/self/maps", "re");
  if (f == NULL)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    unsigned long start, end;
    char perms[5];
    if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) != 3)
      continue;
    /* Code only: a read-only data mapping may be RELRO, written by the
     * dynamic loader before it was sealed, and must not be dropped. */
    if (strcmp(perms, "r-xp") != 0 || strchr(line, '/') == NULL)
      continue;
    madvise((void *)start, end - start, MADV_DONTNEED);
  }
  fclose(f);
}

/* The gate's stop hook (an anomaly whose action is "stop"): kill the
 * container's init through its pidfd, as the supervisor's
 * sidecar_on_death "stop" does; its death then stops this worker. */
static void kill_container(void *ctx) { pidfd_signal(*(const int *)ctx, SIGKILL); }

/* The worker: serves the bridge until the container's init exits or it is
 * told to stop (SIGTERM from the supervisor, or from delete when the
 * supervisor is gone).  fd 3 is the pipe to the supervisor, fd 4 a pidfd
 * of the container's init (the supervisor's, so a recycled pid is never
 * watched).  resume: what this worker's gate records first after a crash
 * of the one before. */
__attribute__((noreturn)) static void worker_main(const struct bridge_setup *setup,
                                                  const struct gate_resume *resume) {
  tg_error *err = NULL;
  int ready = 3;
  static int pidfd = 4; /* static: the gate's stop hook keeps its address */
  prctl(PR_SET_NAME, "tollgate-bridge");
  /* One malloc arena per thread would cost each worker its own heap. */
  mallopt(M_ARENA_MAX, 2);
  sigset_t mask, chld;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  /* Blocked before any thread exists, so every thread inherits the mask
   * and only the signalfd sees these.  SIGCHLD, which the supervisor
   * blocks for its own signalfd, is the tools' business here. */
  sigprocmask(SIG_BLOCK, &mask, NULL);
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_UNBLOCK, &chld, NULL);
  signal(SIGPIPE, SIG_IGN);

  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    bridge_report(ready, "error: signalfd: %s", strerror(errno));
    _exit(1);
  }
  int lock = bridge_take_lock(setup->state_dir, BRIDGE_SIDECAR_LOCK, &err);
  if (lock < 0) {
    bridge_report(ready, "error: %s", err->msg);
    _exit(1);
  }
  cleanup_free char *control = NULL;
  struct gate_config gcfg;
  bridge_gate_config(setup, &gcfg, &control);
  gcfg.resume = resume;
  struct gate *gate = NULL;
  int afd = -1, rfd = -1, qfd = -1;
  if (gate_open(&gcfg, &gate, &err) < 0 ||
      bridge_area_open(setup->state_dir, &afd, &rfd, &qfd, &err) < 0 ||
      gate_write_tools_json(gate, afd, "tools.json", &err) < 0) {
    bridge_report(ready, "error: %s", err->msg);
    _exit(1);
  }
  gate_set_stop_hook(gate, kill_container, &pidfd);
  struct bridge_service_options o = {
      .area_fd = afd, .req_fd = rfd, .resp_fd = qfd, .gate = gate,
      .request_max_bytes = setup->host ? setup->host->request_max_bytes : 0,
      .stop_fd = pidfd, .stop_fd2 = sigfd, .seccomp = true,
      .refused_per_second = setup->host ? (unsigned)setup->host->bridge_refused_per_second : 0,
      .backoff_ms = setup->host ? (unsigned)setup->host->bridge_backoff_ms : 0,
  };
  struct bridge_service *svc = NULL;
  if (bridge_service_start(&o, &svc, &err) < 0 || bridge_heartbeat_start(afd, &err) < 0) {
    bridge_report(ready, "error: %s", err->msg);
    _exit(1);
  }
  /* Small at rest: the heap inherited from create is garbage here. */
  malloc_trim(0);
  bridge_sidecar_drop_clean_file_pages();
  bridge_report(ready, "ready %d\n", (int)getpid());
  close(ready);
  bridge_service_wait(svc);
  bridge_service_stop(svc);
  /* A log that lost its closing records is said to the supervisor, which
   * records it for whoever waits on the container's end (checkpoint). */
  int closed = gate_close(gate);
  close(lock);
  _exit(closed < 0 ? BRIDGE_SIDECAR_EXIT_LOG_LOST : 0);
}

pid_t bridge_worker_fork(const struct bridge_setup *setup, int init_pidfd,
                         const struct gate_resume *resume, int *ready_rd, tg_error **err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return tg_error_set(err, errno, "bridge: pipe");
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return tg_error_set(err, e, "bridge: fork the sidecar");
  }
  if (pid == 0) {
    /* The worker keeps its report pipe (3) and the init's pidfd (4), and
     * nothing else of the supervisor's: not create's pipe, not its locks
     * or signalfd.  Both stay close-on-exec for the tools it runs. */
    int r = fcntl(p[1], F_DUPFD_CLOEXEC, 5), i = fcntl(init_pidfd, F_DUPFD_CLOEXEC, 5);
    if (r < 0 || i < 0 || dup3(r, 3, O_CLOEXEC) < 0 || dup3(i, 4, O_CLOEXEC) < 0)
      _exit(1);
    close_range(5, ~0U, 0);
    worker_main(setup, resume);
  }
  close(p[1]);
  *ready_rd = p[0];
  return pid;
}

int bridge_spawn_sidecar(const struct bridge_setup *setup, pid_t init_pid,
                         pid_t *pid, tg_error **err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return tg_error_set(err, errno, "bridge: pipe");
  pid_t child = fork();
  if (child < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return tg_error_set(err, e, "bridge: fork the sidecar");
  }
  if (child == 0) {
    close(p[0]);
    /* A new session without a controlling terminal, then fork again so
     * the supervisor is not a session leader and is reparented away from
     * create's caller (containerd's shim must never wait on it). */
    if (setsid() < 0)
      _exit(1);
    pid_t g = fork();
    if (g != 0)
      _exit(g < 0 ? 1 : 0);
    /* Move the readiness pipe above stdio first: the caller may have
     * started us with fd 0, 1 or 2 closed. */
    int ready = fcntl(p[1], F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (ready < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
        dup2(null, 2) < 0)
      _exit(1);
    /* No inherited fd may keep a caller's pipe open: close everything but
     * stdio and the readiness pipe. */
    if (ready != 3) {
      if (dup2(ready, 3) < 0)
        _exit(1);
      ready = 3;
    }
    close_range(4, ~0U, 0);
    fcntl(ready, F_SETFD, FD_CLOEXEC);
    bridge_supervise(setup, init_pid, ready);
  }
  close(p[1]);
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  char *msg = NULL;
  ssize_t n = read_all_bounded(p[0], 4096, &msg);
  close(p[0]);
  if (n <= 0) {
    free(msg);
    return tg_error_set(err, 0, "bridge: the sidecar exited before it was ready");
  }
  int sidecar_pid = 0;
  if (sscanf(msg, "ready %d", &sidecar_pid) == 1 && sidecar_pid > 0) {
    free(msg);
    *pid = sidecar_pid;
    return 0;
  }
  msg[strcspn(msg, "\n")] = '\0';
  tg_error_set(err, 0, "bridge: sidecar failed: %s",
               strncmp(msg, "error: ", 7) == 0 ? msg + 7 : msg);
  free(msg);
  return -1;
}

/* The per-container bridge sidecar.
 *
 * `create` returns to containerd while the container lives on, so the
 * bridge must outlive it without holding anything of its caller: double
 * fork, setsid, stdio on /dev/null and every inherited fd closed (as conmon
 * does), readiness reported through a pipe before create returns.  It
 * stops on SIGTERM (delete) or when the container's init exits (pidfd).
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
#include "bridge/server.h"
#include "shim/util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static int pidfd_open_(pid_t pid) {
  return (int)syscall(SYS_pidfd_open, pid, 0);
}

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
  };
}

pid_t bridge_sidecar_pid(const char *state_dir) {
  cleanup_free char *path = xasprintf("%s/%s", state_dir, BRIDGE_SIDECAR_LOCK);
  cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
    return 0;
  return fl.l_pid;
}

static bool wait_pidfd(int pidfd, int ms) {
  struct pollfd p = {.fd = pidfd, .events = POLLIN};
  int r;
  do
    r = poll(&p, 1, ms);
  while (r < 0 && errno == EINTR);
  return r > 0;
}

int bridge_sidecar_stop(const char *state_dir, tg_error **err) {
  pid_t pid = bridge_sidecar_pid(state_dir);
  if (pid <= 0)
    return 0;
  cleanup_close int pidfd = pidfd_open_(pid);
  if (pidfd < 0)
    return errno == ESRCH ? 0
                          : tg_error_set(err, errno, "bridge: pidfd_open sidecar %d",
                                         (int)pid);
  /* Through the pidfd: the signal reaches exactly this process. */
  syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
  if (wait_pidfd(pidfd, 5000))
    return 0;
  syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
  if (!wait_pidfd(pidfd, 5000))
    return tg_error_set(err, 0, "bridge: sidecar %d did not exit after SIGKILL",
                        (int)pid);
  return 0;
}

/* Report to the parent and carry on (ok) or exit (error). */
static void report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int fd, const char *fmt, ...) {
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
static int drop_capabilities(tg_error **err) {
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

static int take_lock(const char *state_dir, tg_error **err) {
  cleanup_free char *path = xasprintf("%s/%s", state_dir, BRIDGE_SIDECAR_LOCK);
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
static void drop_clean_file_pages(void) {
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

__attribute__((noreturn)) static void sidecar_main(const struct bridge_setup *setup,
                                                   pid_t init_pid, int ready) {
  tg_error *err = NULL;
  prctl(PR_SET_NAME, "tollgate-bridge");
  /* One malloc arena per thread would cost each worker its own heap. */
  mallopt(M_ARENA_MAX, 2);
  if (chdir("/") < 0) {
    /* "/" always exists */
  }
  umask(022);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  /* Blocked before any thread exists, so every thread inherits the mask
   * and only the signalfd sees these. */
  sigprocmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);

  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int pidfd = pidfd_open_(init_pid);
  if (sigfd < 0 || pidfd < 0) {
    report(ready, "error: watch the container's init (pid %d) with a pidfd: %s",
           (int)init_pid, strerror(errno));
    _exit(1);
  }
  int lock = take_lock(setup->state_dir, &err);
  if (lock < 0 || drop_capabilities(&err) < 0) {
    report(ready, "error: %s", err->msg);
    _exit(1);
  }
  cleanup_free char *control = NULL;
  struct gate_config gcfg;
  bridge_gate_config(setup, &gcfg, &control);
  struct gate *gate = NULL;
  int afd = -1, rfd = -1, qfd = -1;
  if (gate_open(&gcfg, &gate, &err) < 0 ||
      bridge_area_open(setup->state_dir, &afd, &rfd, &qfd, &err) < 0 ||
      gate_write_tools_json(gate, afd, "tools.json", &err) < 0) {
    report(ready, "error: %s", err->msg);
    _exit(1);
  }
  struct bridge_service_options o = {
      .area_fd = afd, .req_fd = rfd, .resp_fd = qfd, .gate = gate,
      .request_max_bytes = setup->host ? setup->host->request_max_bytes : 0,
      .stop_fd = pidfd, .stop_fd2 = sigfd, .seccomp = true,
      .refused_per_second = setup->host ? (unsigned)setup->host->bridge_refused_per_second : 0,
      .backoff_ms = setup->host ? (unsigned)setup->host->bridge_backoff_ms : 0,
  };
  struct bridge_service *svc = NULL;
  if (bridge_service_start(&o, &svc, &err) < 0) {
    report(ready, "error: %s", err->msg);
    _exit(1);
  }
  /* Small at rest: the heap inherited from create is garbage here. */
  malloc_trim(0);
  drop_clean_file_pages();
  report(ready, "ready %d\n", (int)getpid());
  close(ready);
  bridge_service_wait(svc);
  bridge_service_stop(svc);
  gate_close(gate);
  close(lock);
  _exit(0);
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
     * the sidecar is not a session leader and is reparented away from
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
    sidecar_main(setup, init_pid, ready);
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

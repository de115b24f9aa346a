/* The guard of a `tollgate run` container (run_guard.h says why). */
#include "shim/lifecycle/run_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/backend.h"

#define GUARD_DONE 'd'

/* In the forked guard: async-signal-safe calls only (tollgate has
 * threads).  Returns only to _exit. */
static void guard_main(int done_rd, int init_fd, char *const *kill_argv) {
  /* Nothing of tollgate's stays open here but the pipe and the pidfd:
   * a held stdout pipe would keep the caller's $(tollgate run) waiting,
   * a held bridge or audit fd would outlive the gate. */
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
  }
  int keep_lo = done_rd < init_fd ? done_rd : init_fd;
  int keep_hi = done_rd < init_fd ? init_fd : done_rd;
  if (keep_lo < 0)
    keep_lo = keep_hi;
  if (keep_lo > 3)
    syscall(SYS_close_range, 3u, (unsigned)keep_lo - 1, 0u);
  if (keep_hi > keep_lo + 1)
    syscall(SYS_close_range, (unsigned)keep_lo + 1, (unsigned)keep_hi - 1, 0u);
  syscall(SYS_close_range, (unsigned)keep_hi + 1, ~0u, 0u);
  char b = 0;
  ssize_t n;
  do {
    struct pollfd p = {.fd = done_rd, .events = POLLIN};
    if (poll(&p, 1, -1) < 0 && errno != EINTR)
      _exit(1);
    n = read(done_rd, &b, 1);
  } while (n < 0 && (errno == EINTR || errno == EAGAIN));
  if (n == 1 && b == GUARD_DONE)
    _exit(0);
  /* tollgate died: nothing serves the container's calls any more.  The
   * pidfd names exactly its init (a recycled pid cannot be hit). */
  if (init_fd >= 0)
    syscall(SYS_pidfd_send_signal, init_fd, SIGKILL, NULL, 0);
  execv(kill_argv[0], kill_argv);
  _exit(127);
}

int run_guard_start(const struct cli *cli, const struct container *c, pid_t init_pid,
                    struct run_guard *g, tg_error **err) {
  *g = (struct run_guard){.pid = 0, .done_fd = -1};
  cleanup_close int init_fd = init_pid > 0 ? pidfd_open_pid(init_pid) : -1;
  if (init_pid > 0 && init_fd < 0)
    return tg_error_set(err, errno, "run: watch the container's init %d", (int)init_pid);
  /* Built before the fork: the guard may only call async-signal-safe
   * functions. */
  struct backend_call call = {.systemd_cgroup = cli->systemd_cgroup};
  struct argv args = {0};
  backend_argv(&c->backend, &call, "kill", &args);
  argv_add(&args, "--all");
  argv_add(&args, c->backend_id ? c->backend_id : c->id);
  argv_add(&args, "KILL");
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    argv_free(&args);
    return tg_error_set(err, errno, "run: the guard's pipe");
  }
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    argv_free(&args);
    return tg_error_set(err, e, "run: fork the container's guard");
  }
  if (pid == 0) {
    close(p[1]);
    guard_main(p[0], init_fd, args.v);
  }
  close(p[0]);
  argv_free(&args);
  g->pid = pid;
  g->done_fd = p[1];
  return 0;
}

void run_guard_release(struct run_guard *g) {
  if (g->done_fd >= 0) {
    char b = GUARD_DONE;
    if (write(g->done_fd, &b, 1) != 1) {
      /* The guard is gone already: nothing listens. */
    }
    close(g->done_fd);
    g->done_fd = -1;
  }
  if (g->pid > 0) {
    while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
      ;
    g->pid = 0;
  }
}

/* The guard of a `tollgate run` container (run_guard.h says why). */
#include "shim/lifecycle/run_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/backend.h"

#define GUARD_DONE 'd'
#define GUARD_RUNNER 'r'
#define GUARD_INIT 'i'
/* How long the guard waits for a killed `runc run` to be gone before it
 * goes on to the backend's kill anyway: a bound, so that a runner stuck
 * in the kernel cannot keep the guard (and the kill) waiting forever. */
#define GUARD_RUNNER_WAIT_MS 5000

/* Close every fd but keep (sorted ascending, n of them, -1s ignored). */
static void close_all_but(const int *keep, int n) {
  unsigned from = 3;
  for (int i = 0; i < n; i++) {
    if (keep[i] < (int)from)
      continue;
    if ((unsigned)keep[i] > from)
      syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0u);
    from = (unsigned)keep[i] + 1;
  }
  syscall(SYS_close_range, from, ~0u, 0u);
}

/* One message from tollgate: its byte, and the pidfd it carries (-1 if
 * none).  The byte, 0 on EOF, or -1 on an error. */
static int receive(int sock, int *fd) {
  *fd = -1;
  char b = 0;
  struct iovec iov = {.iov_base = &b, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                     .msg_controllen = sizeof u.buf};
  ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  if (n < 0)
    return errno == EINTR || errno == EAGAIN ? -2 : -1;
  if (n == 0)
    return 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(fd, CMSG_DATA(c), sizeof(int));
  return (unsigned char)b;
}

/* In the forked guard: async-signal-safe calls only (tollgate has
 * threads).  Returns only to _exit. */
static void guard_main(int sock, int init_fd, char *const *kill_argv) {
  /* Nothing of tollgate's stays open here but the socket and the pidfd:
   * a held stdout pipe would keep the caller's $(tollgate run) waiting,
   * a held bridge or audit fd would outlive the gate. */
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
  }
  int keep[2] = {sock < init_fd ? sock : init_fd, sock < init_fd ? init_fd : sock};
  close_all_but(keep, 2);
  int runner_fd = -1;
  for (;;) {
    struct pollfd p = {.fd = sock, .events = POLLIN};
    if (poll(&p, 1, -1) < 0 && errno != EINTR)
      _exit(1);
    int fd = -1;
    int b = receive(sock, &fd);
    if (b == -2)
      continue;
    if (b == GUARD_DONE)
      _exit(0);
    if (b == GUARD_RUNNER && fd >= 0 && runner_fd < 0) {
      runner_fd = fd;
      continue;
    }
    if (b == GUARD_INIT && fd >= 0 && init_fd < 0) {
      init_fd = fd;
      continue;
    }
    if (fd >= 0)
      close(fd);
    if (b <= 0)
      break; /* EOF (or a broken socket): tollgate is gone */
  }
  /* tollgate died: nothing serves the container's calls any more.  First
   * the `runc run` that may still be starting the container: killed, it
   * can no longer let the user's process exec, and once it is gone
   * nothing new appears that the kills below would miss.  Its pidfd and
   * the init's name exactly those processes (a recycled pid cannot be
   * hit). */
  if (runner_fd >= 0 && syscall(SYS_pidfd_send_signal, runner_fd, SIGKILL, NULL, 0) == 0) {
    struct pollfd p = {.fd = runner_fd, .events = POLLIN};
    while (poll(&p, 1, GUARD_RUNNER_WAIT_MS) < 0 && errno == EINTR)
      ;
  }
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
  /* A socket rather than a pipe: pidfds learnt after the start (`runc
   * run`'s, its init's) go to the guard with SCM_RIGHTS.  Close-on-exec
   * on tollgate's end, or a backend child would hold it and the guard
   * would never see tollgate's death. */
  int p[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0) {
    argv_free(&args);
    return tg_error_set(err, errno, "run: the guard's socket");
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

/* Send byte b, with fd when fd >= 0. */
static int send_to_guard(struct run_guard *g, char b, int fd) {
  if (g->done_fd < 0) {
    errno = EBADF;
    return -1;
  }
  struct iovec iov = {.iov_base = &b, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    m.msg_control = u.buf;
    m.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do
    n = sendmsg(g->done_fd, &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == 1 ? 0 : -1;
}

int run_guard_watch_runner(struct run_guard *g, int pidfd) {
  return send_to_guard(g, GUARD_RUNNER, pidfd);
}

int run_guard_watch_init(struct run_guard *g, int pidfd) {
  return send_to_guard(g, GUARD_INIT, pidfd);
}

void run_guard_release(struct run_guard *g) {
  if (g->done_fd >= 0) {
    if (send_to_guard(g, GUARD_DONE, -1) < 0) {
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

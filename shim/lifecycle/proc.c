#include "shim/lifecycle/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

#define CAPTURE_MAX (16u * 1024 * 1024)

int proc_exit_status(int ws) {
  if (WIFEXITED(ws))
    return WEXITSTATUS(ws);
  if (WIFSIGNALED(ws))
    return 128 + WTERMSIG(ws);
  return 255;
}

static void close_pipe(int fds[2]) {
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
}

/* posix_spawn, not fork: glibc's clone(CLONE_VM|CLONE_VFORK) copies no
 * page tables, where a fork of tollgate (libcrypto mapped, bridge
 * threads running) cost ~1.5 ms in front of every backend call.  The
 * child gets default dispositions for every signal and an empty mask
 * (run blocks the forwarded signals in tollgate); an exec failure comes
 * back as posix_spawn's own error. */
static int spawn_plain(char *const argv[], int out_w, int err_w, pid_t *pid) {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t fa;
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_init(&fa);
  if (out_w >= 0)
    posix_spawn_file_actions_adddup2(&fa, out_w, STDOUT_FILENO);
  if (err_w >= 0)
    posix_spawn_file_actions_adddup2(&fa, err_w, STDERR_FILENO);
  int e = posix_spawn(pid, argv[0], &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return e;
}

/* In a forked child: point stdout and stderr at out_w and err_w (when
 * given), unblock every signal and exec argv; on failure write the errno
 * to report and exit 127.  Async-signal-safe calls only. */
static _Noreturn void exec_reporting(char *const argv[], int out_w, int err_w, int report) {
  int e = 0;
  if (out_w >= 0 && dup2(out_w, STDOUT_FILENO) < 0)
    e = errno;
  if (e == 0 && err_w >= 0 && dup2(err_w, STDERR_FILENO) < 0)
    e = errno;
  if (e == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(argv[0], argv, environ);
    e = errno;
  }
  (void)!write(report, &e, sizeof e);
  _exit(127);
}

/* PR_SET_PDEATHSIG, then exec: the child dies with tollgate. */
static _Noreturn void exec_dying_with_parent(char *const argv[], int out_w, int err_w, int report,
                                             pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
    int e = errno;
    (void)!write(report, &e, sizeof e);
    _exit(127);
  }
  if (getppid() != parent) /* tollgate died before the prctl */
    _exit(127);
  exec_reporting(argv, out_w, err_w, report);
}

/* unshare(CLONE_NEWPID) and fork again: the grandchild execs as PID 1 of
 * a namespace nothing else is in; this child waits for it and exits with
 * its status. */
static _Noreturn void exec_in_fresh_pid_ns(char *const argv[], int out_w, int err_w, int report) {
  pid_t inner = -1;
  if (unshare(CLONE_NEWPID) == 0)
    inner = fork();
  if (inner == 0)
    exec_reporting(argv, out_w, err_w, report);
  if (inner < 0) {
    int e = errno;
    (void)!write(report, &e, sizeof e);
    _exit(127);
  }
  close(report); /* the grandchild's copy closes at its exec */
  int ws = 0;
  while (waitpid(inner, &ws, 0) < 0)
    if (errno != EINTR)
      _exit(127);
  _exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
}

enum forked_kind { DYING_WITH_PARENT, IN_FRESH_PID_NS };

/* fork + exec where posix_spawn cannot do the step before exec: a
 * parent-death signal (a child that must die with tollgate), or a pid
 * namespace of its own.  No signal handler of tollgate's runs in the
 * child (tollgate may have threads, so it makes async-signal-safe calls
 * only); an exec failure comes back as its errno through a close-on-exec
 * pipe. */
static int spawn_forked(enum forked_kind kind, char *const argv[], int out_w, int err_w, pid_t *pid_out) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) < 0)
    return errno;
  pid_t parent = getpid();
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
      sigaction(sig, &dfl, NULL); /* KILL, STOP and the gaps just fail */
    if (kind == DYING_WITH_PARENT)
      exec_dying_with_parent(argv, out_w, err_w, report[1], parent);
    exec_in_fresh_pid_ns(argv, out_w, err_w, report[1]);
  }
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return fork_errno;
  }
  int child_errno = 0;
  ssize_t n;
  do
    n = read(report[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == (ssize_t)sizeof child_errno) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    return child_errno;
  }
  *pid_out = pid;
  return 0;
}

int proc_spawn(char *const argv[], const struct proc_opts *opts,
               struct proc *p, tg_error **err) {
  int out[2] = {-1, -1}, errp[2] = {-1, -1};
  p->pid = -1;
  p->out_fd = p->err_fd = -1;
  if ((opts->capture_stdout && pipe2(out, O_CLOEXEC) < 0) ||
      (opts->capture_stderr && pipe2(errp, O_CLOEXEC) < 0)) {
    int e = errno;
    close_pipe(out);
    close_pipe(errp);
    return tg_error_set(err, e, "pipe for %s", argv[0]);
  }
  /* The usual path is posix_spawn; only a child that must die with
   * tollgate, or run in a pid namespace of its own, pays for a fork
   * (spawn_forked). */
  pid_t pid = -1;
  int e = opts->fresh_pid_ns      ? spawn_forked(IN_FRESH_PID_NS, argv, out[1], errp[1], &pid)
          : opts->die_with_parent ? spawn_forked(DYING_WITH_PARENT, argv, out[1], errp[1], &pid)
                                  : spawn_plain(argv, out[1], errp[1], &pid);
  if (e != 0) {
    close_pipe(out);
    close_pipe(errp);
    return tg_error_set(err, e, "exec %s", argv[0]);
  }
  if (out[1] >= 0)
    close(out[1]);
  if (errp[1] >= 0)
    close(errp[1]);
  p->pid = pid;
  p->out_fd = out[0];
  p->err_fd = errp[0];
  return 0;
}

/* The child whose signals are forwarded; one at a time is enough since
 * tollgate runs its backend calls one after another. */
static volatile pid_t forward_to = -1;
static void forward_signal(int sig) {
  pid_t pid = forward_to;
  if (pid > 0)
    kill(pid, sig);
}

struct buf {
  char *data;
  size_t len;
};

static void append(struct buf *b, const char *src, size_t n) {
  if (b->len + n > CAPTURE_MAX)
    n = CAPTURE_MAX - b->len; /* keep the head, drop the rest */
  b->data = xrealloc(b->data, b->len + n + 1);
  memcpy(b->data + b->len, src, n);
  b->len += n;
  b->data[b->len] = '\0';
}

int proc_finish(struct proc *p, const struct proc_opts *opts,
                struct proc_result *res, tg_error **err) {
  memset(res, 0, sizeof *res);
  static const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  struct sigaction old[4];
  if (opts->forward_signals) {
    forward_to = p->pid;
    struct sigaction sa = {.sa_handler = forward_signal};
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++)
      sigaction(fwd[i], &sa, &old[i]);
  }
  struct buf out = {xstrdup(""), 0}, errb = {xstrdup(""), 0};
  struct pollfd pfd[2] = {{.fd = p->out_fd, .events = POLLIN},
                          {.fd = p->err_fd, .events = POLLIN}};
  while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
    if (poll(pfd, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (pfd[i].fd < 0 || pfd[i].revents == 0)
        continue;
      char chunk[8192];
      ssize_t n = read(pfd[i].fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        close(pfd[i].fd);
        pfd[i].fd = -1;
        continue;
      }
      append(i == 0 ? &out : &errb, chunk, (size_t)n);
    }
  }
  p->out_fd = p->err_fd = -1;
  int ws = 0;
  pid_t r;
  do
    r = waitpid(p->pid, &ws, 0);
  while (r < 0 && errno == EINTR);
  int wait_errno = errno;
  if (opts->forward_signals) {
    forward_to = -1;
    for (int i = 0; i < 4; i++)
      sigaction(fwd[i], &old[i], NULL);
  }
  if (opts->capture_stdout)
    res->out = out.data;
  else
    free(out.data);
  if (opts->capture_stderr)
    res->err_text = errb.data;
  else
    free(errb.data);
  if (r < 0) {
    proc_result_free(res);
    return tg_error_set(err, wait_errno, "wait for pid %d", (int)p->pid);
  }
  res->status = proc_exit_status(ws);
  return 0;
}

int proc_run(char *const argv[], const struct proc_opts *opts,
             struct proc_result *res, tg_error **err) {
  struct proc p;
  if (proc_spawn(argv, opts, &p, err) < 0)
    return -1;
  return proc_finish(&p, opts, res, err);
}

void proc_result_free(struct proc_result *res) {
  free(res->out);
  free(res->err_text);
  res->out = res->err_text = NULL;
}

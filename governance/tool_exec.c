/* The exec backend and the sandboxed child runner.
 *
 * The child is set up between fork and exec with raw system calls only:
 * the gate forks from a multi-threaded process (the bridge's worker pool),
 * where only async-signal-safe calls are allowed in the child, so nothing
 * there may allocate or take a lock (libcap-ng's helpers do both).  Every
 * string the child needs is prepared before fork. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "governance/gate.h"
#include "governance/tools.h"
#include "base/util.h"

static int cap_last_cap(void) {
  static int last = -1;
  if (last < 0) {
    char buf[16] = "";
    int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n > 0)
        last = atoi(buf);
    }
    if (last <= 0)
      last = 63;
  }
  return last;
}

static void child_fail(int fd, const char *what) {
  /* async-signal-safe: write and _exit only */
  if (fd >= 0) {
    (void)!write(fd, "tollgate: ", 10);
    (void)!write(fd, what, strlen(what));
    (void)!write(fd, "\n", 1);
  }
  _exit(126);
}

/* Write text to a /proc/self file, async-signal-safely. */
static bool write_proc_self(const char *name, const char *text) {
  int fd = open(name, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text);
}

/* In the child, already running as the tools' uid: move into a user, pid
 * and mount namespace of the tool's own.  The tool becomes pid 1 of a pid
 * namespace that holds nothing else, with a /proc of its own, so no
 * container, sandbox or gofer process can even be named by it, let alone
 * signalled, traced or read through /proc.  The user namespace is what
 * lets an unprivileged process make the other two (the sidecar keeps no
 * CAP_SYS_ADMIN); it maps only the tool's own uid and gid, and execve()
 * as that non-root uid leaves the tool no capability in it either.
 * This process stays outside as the tool's parent and passes its exit
 * status on; only the tool returns.  Fails closed: no unisolated run. */
static void enter_own_namespaces(const char *uid_map, const char *gid_map) {
  if (unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS) < 0)
    child_fail(2, "cannot create the tool's own user, pid and mount namespaces (are unprivileged user namespaces disabled? see docs/hardening.md)");
  /* The id change made us non-dumpable, which leaves /proc/self root's:
   * dumpable just long enough to write our own maps. */
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  bool mapped = write_proc_self("/proc/self/uid_map", uid_map) && write_proc_self("/proc/self/setgroups", "deny") &&
                write_proc_self("/proc/self/gid_map", gid_map);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (!mapped)
    child_fail(2, "cannot map the tool's uid in its user namespace");
  /* Raw clone: glibc's fork() runs atfork handlers and takes locks. */
  pid_t tool = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, 0UL);
  if (tool < 0)
    child_fail(2, "cannot start the tool in its pid namespace");
  if (tool == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Our mount namespace is a copy: keep its changes from propagating
     * back to the host, then a procfs of the new pid namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
      child_fail(2, "cannot mount the tool's own /proc");
    /* pid 1 here: getppid() is 0 whether or not the parent lives.  The
     * gate holds the read end of our stdout while it waits for us; with
     * no reader left the write end reports POLLERR. */
    struct pollfd alive = {.fd = 1, .events = POLLOUT};
    if (poll(&alive, 1, 0) == 1 && (alive.revents & POLLERR))
      _exit(126);
    return;
  }
  close(0);
  close(1);
  close(2);
  int status = 0;
  while (syscall(SYS_wait4, tool, &status, 0, NULL) < 0)
    if (errno != EINTR)
      _exit(126);
  if (WIFEXITED(status))
    _exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  syscall(SYS_kill, syscall(SYS_getpid), sig);
  _exit(128 + sig);
}

/* In the child: become an unprivileged, capability-less process in its own
 * session, then exec.  Never returns. */
static void child_exec(char *const argv[], char *const envp[], int in, int out, int errfd,
                       int last_cap, pid_t parent, uid_t uid, gid_t gid, const char *uid_map,
                       const char *gid_map) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setsid();
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
    _exit(126);
  if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
    for (int fd = 3; fd < 4096; fd++) /* kernels before 5.9 */
      close(fd);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  signal(SIGPIPE, SIG_DFL);
  if (chdir("/") < 0)
    child_fail(2, "chdir /");
  struct rlimit nofile = {256, 256}, core = {0, 0}, fsize = {64 << 20, 64 << 20},
                as = {2UL << 30, 2UL << 30}, nproc = {256, 256};
  setrlimit(RLIMIT_NOFILE, &nofile);
  setrlimit(RLIMIT_CORE, &core);
  setrlimit(RLIMIT_FSIZE, &fsize);
  setrlimit(RLIMIT_AS, &as);
  if (geteuid() == 0) {
    /* Drop the bounding set first (needs CAP_SETPCAP, still held), then
     * the groups and ids; moving every uid off 0 clears the permitted,
     * effective and ambient sets, so nothing can be regained. */
    for (int c = 0; c <= last_cap; c++)
      prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
      child_fail(2, "cannot drop to the tools' uid (tool_uid in the host config)");
    setrlimit(RLIMIT_NPROC, &nproc);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    child_fail(2, "no_new_privs");
  /* Die with the gate.  Set after the id change, which clears it; and if
   * the parent is already gone, the signal will never come: leave now. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(126);
  enter_own_namespaces(uid_map, gid_map);
  execve(argv[0], argv, envp);
  child_fail(2, "exec failed (is the program readable and executable by the tools' uid, tool_uid in the host config?)");
}

void sigpipe_block(struct sigpipe_guard *g) {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
  g->blocked_before = sigismember(&g->old, SIGPIPE);
}

void sigpipe_unblock(struct sigpipe_guard *g) {
  if (g->blocked_before)
    return;
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  struct timespec zero = {0, 0};
  while (sigtimedwait(&pipe, NULL, &zero) > 0)
    ;
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The tool's user namespace maps only the ids it runs as: the tools' ids
 * when the gate is root (it drops to them), else the gate's own.  Made
 * before fork: the child may not format strings. */
static void id_maps(uid_t uid, gid_t gid, char uid_map[32], char gid_map[32]) {
  if (geteuid() != 0) {
    uid = geteuid();
    gid = getegid();
  }
  snprintf(uid_map, 32, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  snprintf(gid_map, 32, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
}

static char **build_env(char *const extra[]) {
  size_t n = 0;
  while (extra && extra[n])
    n++;
  char **env = xcalloc(n + 4, sizeof *env);
  size_t i = 0;
  env[i++] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
  env[i++] = xstrdup("LANG=C.UTF-8");
  env[i++] = xstrdup("HOME=/");
  for (size_t j = 0; j < n; j++)
    env[i++] = xstrdup(extra[j]);
  return env;
}

static void free_env(char **env) {
  for (char **e = env; *e; e++)
    free(*e);
  free(env);
}

void sandbox_output_clear(struct sandbox_output *o) {
  free(o->out);
  free(o->err_tail);
  memset(o, 0, sizeof *o);
}

static long long ms_left(unsigned long long deadline_ns) {
  unsigned long long now = monotonic_ns();
  return now >= deadline_ns ? 0 : (long long)((deadline_ns - now) / 1000000ULL) + 1;
}

int sandbox_run(char *const argv[], char *const extra_env[], const char *input,
                size_t inlen, int timeout_ms, const struct sandbox_watch *watch,
                struct sandbox_output *out, tg_error **err) {
  memset(out, 0, sizeof *out);
  int inp[2], outp[2], errp[2];
  if (pipe2(inp, O_CLOEXEC) < 0)
    return tg_error_set(err, errno, "pipe");
  if (pipe2(outp, O_CLOEXEC) < 0) {
    close(inp[0]); close(inp[1]);
    return tg_error_set(err, errno, "pipe");
  }
  if (pipe2(errp, O_CLOEXEC) < 0) {
    close(inp[0]); close(inp[1]); close(outp[0]); close(outp[1]);
    return tg_error_set(err, errno, "pipe");
  }
  char **env = build_env(extra_env);
  int last = cap_last_cap();
  pid_t self = getpid();
  uid_t uid = sandbox_uid();
  gid_t gid = sandbox_gid();
  char uid_map[32], gid_map[32];
  id_maps(uid, gid, uid_map, gid_map);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    free_env(env);
    close(inp[0]); close(inp[1]); close(outp[0]); close(outp[1]); close(errp[0]); close(errp[1]);
    return tg_error_set(err, e, "fork for %s", argv[0]);
  }
  if (pid == 0)
    child_exec(argv, env, inp[0], outp[1], errp[1], last, self, uid, gid, uid_map, gid_map);
  free_env(env);
  if (watch)
    watch->pid(watch->ctx, pid);
  close(inp[0]);
  close(outp[1]);
  close(errp[1]);
  fcntl(inp[1], F_SETFL, O_NONBLOCK);
  size_t cap = 4096, len = 0;
  char *buf = xmalloc(cap);
  char tail[STDERR_TAIL];
  size_t tail_len = 0;
  size_t written = 0;
  int fds[3] = {inp[1], outp[0], errp[0]};
  if (inlen == 0) {
    close(fds[0]);
    fds[0] = -1;
  }
  unsigned long long deadline = monotonic_ns() + (unsigned long long)timeout_ms * 1000000ULL;
  struct sigpipe_guard guard;
  sigpipe_block(&guard);
  while (fds[1] >= 0 || fds[2] >= 0) {
    struct pollfd p[3];
    for (int i = 0; i < 3; i++)
      p[i] = (struct pollfd){.fd = fds[i], .events = i == 0 ? POLLOUT : POLLIN};
    long long left = ms_left(deadline);
    if (left == 0) {
      out->timed_out = true;
      break;
    }
    int r = poll(p, 3, (int)(left > 1000000 ? 1000000 : left));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    if (fds[0] >= 0 && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(fds[0], input + written, inlen - written);
      if (n > 0)
        written += n;
      if ((n < 0 && errno != EAGAIN) || written == inlen) {
        close(fds[0]);
        fds[0] = -1;
      }
    }
    if (fds[1] >= 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      if (cap - len < 4096) {
        cap *= 2;
        buf = xrealloc(buf, cap);
      }
      ssize_t n = read(fds[1], buf + len, cap - len - 1);
      if (n > 0) {
        len += n;
        if (len > TOOL_OUTPUT_MAX) {
          out->too_big = true;
          break;
        }
      } else if (n == 0 || errno != EINTR) {
        close(fds[1]);
        fds[1] = -1;
      }
    }
    if (fds[2] >= 0 && (p[2].revents & (POLLIN | POLLERR | POLLHUP))) {
      char chunk[4096];
      ssize_t n = read(fds[2], chunk, sizeof chunk);
      if (n > 0) {
        if ((size_t)n >= STDERR_TAIL) {
          memcpy(tail, chunk + n - STDERR_TAIL, STDERR_TAIL);
          tail_len = STDERR_TAIL;
        } else {
          size_t un = (size_t)n;
          size_t keep = tail_len + un > STDERR_TAIL ? STDERR_TAIL - un : tail_len;
          memmove(tail, tail + tail_len - keep, keep);
          memcpy(tail + keep, chunk, n);
          tail_len = keep + n;
        }
      } else if (n == 0 || errno != EINTR) {
        close(fds[2]);
        fds[2] = -1;
      }
    }
  }
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  sigpipe_unblock(&guard);
  if (out->timed_out || out->too_big)
    kill(-pid, SIGKILL); /* the whole group: helpers the tool forked too */
  /* stdout closed: the tool is exiting; wait for it, but never past the
   * deadline (a tool that closed stdout and then hangs still times out). */
  int status = 0;
  for (;;) {
    /* Peek first: WNOWAIT keeps the exited tool a zombie, so its pid and
     * process group stay ours while we kill what it left behind in the
     * group and tell the watcher; only then reap. */
    siginfo_t si = {0};
    int r = waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (r < 0 && errno != EINTR)
      break; /* not our child any more: nothing left to wait for */
    if (r == 0 && si.si_pid == pid) {
      kill(-pid, SIGKILL);
      if (watch)
        watch->pid(watch->ctx, 0);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
      break;
    }
    if (!out->timed_out && ms_left(deadline) == 0) {
      out->timed_out = true;
      kill(-pid, SIGKILL);
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  buf[len] = '\0';
  out->out = buf;
  out->outlen = len;
  out->err_tail = xstrndup(tail, tail_len);
  out->status = status;
  return 0;
}

int sandbox_spawn(char *const argv[], pid_t *pid, int *to_child, int *from_child,
                  tg_error **err) {
  int inp[2], outp[2];
  if (pipe2(inp, O_CLOEXEC) < 0)
    return tg_error_set(err, errno, "pipe");
  if (pipe2(outp, O_CLOEXEC) < 0) {
    close(inp[0]); close(inp[1]);
    return tg_error_set(err, errno, "pipe");
  }
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  char **env = build_env(NULL);
  int last = cap_last_cap();
  pid_t self = getpid();
  uid_t uid = sandbox_uid();
  gid_t gid = sandbox_gid();
  char uid_map[32], gid_map[32];
  id_maps(uid, gid, uid_map, gid_map);
  pid_t p = fork();
  if (p < 0) {
    int e = errno;
    free_env(env);
    close(inp[0]); close(inp[1]); close(outp[0]); close(outp[1]);
    if (devnull >= 0)
      close(devnull);
    return tg_error_set(err, e, "fork for %s", argv[0]);
  }
  if (p == 0)
    child_exec(argv, env, inp[0], outp[1], devnull, last, self, uid, gid, uid_map, gid_map);
  free_env(env);
  close(inp[0]);
  close(outp[1]);
  if (devnull >= 0)
    close(devnull);
  *pid = p;
  *to_child = inp[1];
  *from_child = outp[0];
  return 0;
}

static void fail_with_tail(struct tool_result *r, const char *code, const char *what,
                           const char *tail) {
  r->code = code;
  /* Keep only the last line-ish part: the tail is already bounded. */
  while (tail && *tail == '\n')
    tail++;
  if (tail && *tail)
    r->message = xasprintf("%s; stderr: %s", what, tail);
  else
    r->message = xstrdup(what);
  size_t n = strlen(r->message);
  while (n > 0 && (r->message[n - 1] == '\n' || r->message[n - 1] == ' '))
    r->message[--n] = '\0';
}

void tool_exec_run(const struct tool *t, const json_t *args, const char *call_id,
                   struct tool_result *r) {
  memset(r, 0, sizeof *r);
  size_t inlen = 0;
  cleanup_free char *input = args ? json_dump(args, false, &inlen) : xstrdup("{}");
  if (args == NULL)
    inlen = 2;
  cleanup_free char *env_call = xasprintf("TOLLGATE_CALL_ID=%s", call_id ? call_id : "");
  cleanup_free char *env_tool = xasprintf("TOLLGATE_TOOL=%s", t->name);
  char *extra[] = {env_call, env_tool, NULL};
  struct sandbox_output o;
  cleanup_error tg_error *err = NULL;
  if (sandbox_run(t->backend.argv, extra, input, inlen, t->timeout_ms, NULL, &o, &err) < 0) {
    r->code = GATE_TOOL_FAILED;
    r->message = xstrdup(err->msg);
    return;
  }
  if (o.timed_out) {
    cleanup_free char *what = xasprintf("%s did not finish within %d ms and was killed", t->name,
                                        t->timeout_ms);
    fail_with_tail(r, GATE_TOOL_TIMEOUT, what, o.err_tail);
  } else if (o.too_big) {
    cleanup_free char *what = xasprintf("%s printed more than %u bytes", t->name, TOOL_OUTPUT_MAX);
    fail_with_tail(r, GATE_TOOL_FAILED, what, o.err_tail);
  } else if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0) {
    cleanup_free char *what = WIFEXITED(o.status)
                                  ? xasprintf("%s exited with status %d", t->name, WEXITSTATUS(o.status))
                                  : xasprintf("%s was killed by signal %d", t->name, WTERMSIG(o.status));
    fail_with_tail(r, GATE_TOOL_FAILED, what, o.err_tail);
  } else {
    cleanup_error tg_error *perr = NULL;
    r->result = o.outlen ? json_parse(o.out, o.outlen, NULL, &perr) : NULL;
    if (r->result == NULL) {
      cleanup_free char *what = xasprintf("%s did not print a JSON result on stdout%s%s", t->name,
                                          perr ? ": " : " (it printed nothing)",
                                          perr ? perr->msg : "");
      fail_with_tail(r, GATE_TOOL_FAILED, what, o.err_tail);
    }
  }
  sandbox_output_clear(&o);
}

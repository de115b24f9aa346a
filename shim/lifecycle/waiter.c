/* The waiter of a container inside its pod's sandbox: shim/lifecycle/waiter.h. */
#include "shim/lifecycle/waiter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#define START_FIFO "waiter.start"
#define REPLY_FIFO "waiter.reply"
/* One reply is written with one write(): at most PIPE_BUF bytes reach the
 * reader whole. */
#define REPLY_MAX 2048
/* How long `tollgate start` waits for the waiter's answer: runsc's own
 * start of a container in a busy sandbox takes seconds, not minutes. */
#define START_TIMEOUT_MS (120 * 1000)

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof forwarded / sizeof forwarded[0])

bool waiter_recorded(const json_t *state) {
  return json_is_true(json_object_get(state, "waiter"));
}

bool waiter_alive(const json_t *st) {
  long long pid = 0, started = 0;
  json_integer_value(json_object_get(st, "init_pid"), &pid);
  json_integer_value(json_object_get(st, "waiter_start_time"), &started);
  if (pid <= 0 || pid > INT_MAX || started <= 0)
    return false;
  if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
    return false;
  /* A zombie still has its stat: only a live waiter counts. */
  char path[64], state = 0;
  snprintf(path, sizeof path, "/proc/%lld/stat", pid);
  FILE *f = fopen(path, "re");
  if (f != NULL) {
    char line[1024];
    if (fgets(line, sizeof line, f) != NULL) {
      char *p = strrchr(line, ')');
      if (p != NULL && p[1] == ' ')
        state = p[2];
    }
    fclose(f);
  }
  return state != 0 && state != 'Z' && state != 'X' &&
         process_start_time((pid_t)pid) == (unsigned long long)started;
}

/* Write one reply line to whoever waits on the reply FIFO.  Nobody there
 * (the `tollgate start` that asked was killed) is not an error. */
static void reply(const char *dir, const char *text) {
  cleanup_free char *path = xasprintf("%s/%s", dir, REPLY_FIFO);
  cleanup_close int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return;
  size_t len = strlen(text);
  if (len > REPLY_MAX)
    len = REPLY_MAX;
  ssize_t w = write(fd, text, len);
  (void)w;
}

/* Forward one signal read from sfd to the container. */
static void forward_signal(const struct waiter_calls *calls, int sfd) {
  struct signalfd_siginfo si;
  if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
    return;
  calls->kill(calls->arg, (int)si.ssi_signo);
}

/* Whether the state directory still holds the FIFO the waiter listens
 * on: a delete (or the undo of a failed create) removes it. */
static bool still_wanted(const char *path, const struct stat *listening) {
  struct stat st;
  return stat(path, &st) == 0 && st.st_ino == listening->st_ino && st.st_dev == listening->st_dev;
}

/* Listen until a start request came and the backend's start succeeded
 * (0), or the container is gone (-1). */
static int serve_start(const struct waiter_calls *calls, const char *dir, int start_fd,
                       const char *start_path, const struct stat *listening, int sfd) {
  for (;;) {
    struct pollfd p[2] = {{.fd = start_fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    int n = poll(p, 2, 1000);
    if (n < 0 && errno != EINTR)
      return -1;
    if (!still_wanted(start_path, listening))
      return -1;
    if (n <= 0)
      continue;
    if (p[1].revents & POLLIN)
      forward_signal(calls, sfd);
    if (!(p[0].revents & POLLIN))
      continue;
    char req[64];
    ssize_t r = read(start_fd, req, sizeof req - 1);
    if (r <= 0)
      continue;
    req[r] = '\0';
    /* The FIFO is 0600 root in the state directory: only tollgate writes
     * it.  Anything but "start" is ignored all the same. */
    if (strstr(req, "start") == NULL)
      continue;
    tg_error *e = NULL;
    if (calls->start(calls->arg, &e) == 0) {
      reply(dir, "ok\n");
      return 0;
    }
    cleanup_free char *text = xasprintf("error %s\n", e ? e->msg : "runsc start failed");
    tg_error_free(&e);
    reply(dir, text);
  }
}

/* The memory watch of a container with a limit (waiter.h): `runsc
 * events` lines, each {"data":{"memory":{"usage":{"usage":N}}}}. */
struct mem_watch {
  struct proc child;
  bool on, killed;
  char buf[8192];
  size_t len;
};

static void mem_watch_start(const struct waiter_calls *calls, struct mem_watch *mw) {
  tg_error *e = NULL;
  mw->on = calls->memory_limit > 0 && calls->events != NULL && calls->events(calls->arg, &mw->child, &e) == 0;
  tg_error_free(&e);
}

/* Read what events printed; a container above its limit is killed. */
static void mem_watch_read(const struct waiter_calls *calls, struct mem_watch *mw) {
  ssize_t r = read(mw->child.out_fd, mw->buf + mw->len, sizeof mw->buf - 1 - mw->len);
  if (r <= 0) {
    mw->on = false; /* events ended: the sandbox is gone */
    return;
  }
  mw->len += (size_t)r;
  mw->buf[mw->len] = '\0';
  char *nl;
  while ((nl = memchr(mw->buf, '\n', mw->len)) != NULL) {
    /* runsc's own output, bounded and parsed like anything else */
    json_t *v = json_parse(mw->buf, (size_t)(nl - mw->buf), NULL, NULL);
    long long used = 0;
    if (json_integer_value(json_get_path(v, "data.memory.usage.usage"), &used) && used > calls->memory_limit &&
        !mw->killed) {
      mw->killed = true;
      fprintf(stderr, "tollgate: the container used %lld MiB, above its memory limit of %lld MiB "
                      "(linux.resources.memory.limit): killed\n", used >> 20, calls->memory_limit >> 20);
      calls->kill(calls->arg, SIGKILL);
    }
    json_free(v);
    mw->len -= (size_t)(nl + 1 - mw->buf);
    memmove(mw->buf, nl + 1, mw->len);
  }
  if (mw->len == sizeof mw->buf - 1)
    mw->len = 0; /* a line longer than any events prints: dropped */
}

static void mem_watch_stop(struct mem_watch *mw) {
  if (mw->child.pid <= 0)
    return;
  kill(mw->child.pid, SIGKILL);
  if (mw->child.out_fd >= 0)
    close(mw->child.out_fd);
  if (mw->child.err_fd >= 0)
    close(mw->child.err_fd);
  while (waitpid(mw->child.pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* `runsc wait`: the container's exit status, 128+N for signal N; 255 when
 * it cannot be had (the sandbox itself is gone). */
static int wait_for_exit(const struct waiter_calls *calls, int sfd) {
  struct proc child;
  tg_error *e = NULL;
  if (calls->wait(calls->arg, &child, &e) < 0) {
    tg_error_free(&e);
    return 255;
  }
  struct mem_watch mw = {.child = {.pid = 0, .out_fd = -1, .err_fd = -1}};
  mem_watch_start(calls, &mw);
  cleanup_close int pidfd = pidfd_open_pid(child.pid);
  while (pidfd >= 0) {
    struct pollfd p[4] = {{.fd = pidfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN},
                          {.fd = mw.on ? mw.child.out_fd : -1, .events = POLLIN},
                          {.fd = mw.on ? mw.child.err_fd : -1, .events = POLLIN}};
    if (poll(p, 4, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents & POLLIN)
      forward_signal(calls, sfd);
    if (p[2].revents & (POLLIN | POLLHUP))
      mem_watch_read(calls, &mw);
    /* events' stderr is drained, never left to fill its pipe and stop it */
    char junk[512];
    if ((p[3].revents & (POLLIN | POLLHUP)) && read(mw.child.err_fd, junk, sizeof junk) <= 0)
      mw.on = false;
    if (p[0].revents & POLLIN)
      break;
  }
  mem_watch_stop(&mw);
  struct proc_result res = {0};
  int st = calls->finish(calls->arg, &child, &res, &e);
  tg_error_free(&e);
  int status = 255;
  if (st == 0 && res.out != NULL) {
    /* {"id":"...","exitStatus":N}: runsc's own output, but bounded and
     * parsed like anything else. */
    json_t *v = json_parse(res.out, strlen(res.out), NULL, NULL);
    long long code = -1;
    if (json_integer_value(json_object_get(v, "exitStatus"), &code) && code >= 0 && code <= 255)
      status = (int)code;
    json_free(v);
  }
  proc_result_free(&res);
  /* Killed for its memory: SIGKILL's status whatever runsc made of it. */
  return mw.killed ? 128 + SIGKILL : status;
}

/* The waiter's whole life, in the forked child. */
static _Noreturn void waiter_main(const struct waiter_calls *calls, const char *dir, int ready) {
  /* Nothing of create's but stdio: its state and bundle locks (flock
   * locks belong to the open file, which a child shares) would block
   * every later delete of this container and every create from the
   * bundle for the container's lifetime. */
  if (ready > 3)
    syscall(SYS_close_range, 3, ready - 1, 0);
  syscall(SYS_close_range, ready + 1, ~0U, 0);
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < N_FORWARDED; i++)
    sigaddset(&set, forwarded[i]);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  cleanup_free char *start_path = xasprintf("%s/%s", dir, START_FIFO);
  /* Read and write: a FIFO with a writer never reads as EOF, so poll
   * wakes for a request only, and a `tollgate start` opening it to write
   * never blocks (nor fails) while the waiter lives. */
  int start_fd = open(start_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  struct stat listening;
  if (sfd < 0 || start_fd < 0 || fstat(start_fd, &listening) < 0)
    _exit(255);
  if (write(ready, "r", 1) != 1)
    _exit(255);
  close(ready);
  if (serve_start(calls, dir, start_fd, start_path, &listening, sfd) < 0)
    _exit(255);
  close(start_fd);
  _exit(wait_for_exit(calls, sfd));
}

int waiter_spawn(const char *id, const char *dir, const struct waiter_calls *calls, pid_t *pid,
                 tg_error **err) {
  *pid = 0;
  static const char *const fifos[] = {START_FIFO, REPLY_FIFO};
  for (size_t i = 0; i < 2; i++) {
    cleanup_free char *path = xasprintf("%s/%s", dir, fifos[i]);
    unlink(path);
    if (mkfifo(path, 0600) < 0)
      return tg_error_set(err, errno, "container %s: make the waiter's FIFO %s", id, path);
  }
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) < 0)
    return tg_error_set(err, errno, "container %s: pipe for the waiter", id);
  pid_t child = fork();
  if (child < 0) {
    int e = errno;
    close(ready[0]);
    close(ready[1]);
    return tg_error_set(err, e, "container %s: fork the waiter", id);
  }
  if (child == 0) {
    close(ready[0]);
    waiter_main(calls, dir, ready[1]);
  }
  close(ready[1]);
  char b = 0;
  ssize_t n;
  do
    n = read(ready[0], &b, 1);
  while (n < 0 && errno == EINTR);
  close(ready[0]);
  if (n != 1) {
    waitpid(child, NULL, 0);
    return tg_error_set(err, 0, "container %s: its waiter exited before it listened for start", id);
  }
  *pid = child;
  return 0;
}

void waiter_record(json_t *state, pid_t pid) {
  json_object_set(state, "waiter", json_new_bool(true));
  json_object_set(state, "init_pid", json_new_integer(pid));
  json_object_set(state, "waiter_start_time", json_new_integer((long long)process_start_time(pid)));
}

int waiter_start(const char *id, const char *dir, const json_t *state, tg_error **err) {
  cleanup_free char *reply_path = xasprintf("%s/%s", dir, REPLY_FIFO);
  cleanup_free char *start_path = xasprintf("%s/%s", dir, START_FIFO);
  /* The reply FIFO first: the waiter's non-blocking open of it for
   * writing needs a reader. */
  cleanup_close int rfd = open(reply_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (rfd < 0)
    return tg_error_set(err, errno, "container %s has no waiter to start it (%s): remove it with 'tollgate delete --force %s'",
                        id, reply_path, id);
  /* One start at a time: a second one gets the first one's answer's
   * successor, "already running", from runsc. */
  while (flock(rfd, LOCK_EX) < 0)
    if (errno != EINTR)
      return tg_error_set(err, errno, "container %s: lock %s", id, reply_path);
  {
    cleanup_close int sfd = open(start_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (sfd < 0 || !waiter_alive(state))
      return tg_error_set(err, sfd < 0 ? errno : 0,
                          "container %s cannot be started: its waiter (the process that runs it inside the pod's sandbox) is gone; remove it with 'tollgate delete --force %s'",
                          id, id);
    if (write(sfd, "start\n", 6) != 6)
      return tg_error_set(err, errno, "container %s: ask its waiter to start it", id);
  }
  char buf[REPLY_MAX + 1];
  size_t len = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    struct pollfd p = {.fd = rfd, .events = POLLIN};
    int n = poll(&p, 1, 500);
    if (n < 0 && errno != EINTR)
      return tg_error_set(err, errno, "container %s: wait for its waiter", id);
    if (n > 0 && (p.revents & POLLIN)) {
      ssize_t r = read(rfd, buf + len, sizeof buf - 1 - len);
      if (r > 0)
        len += (size_t)r;
      if (len > 0 && (buf[len - 1] == '\n' || len == sizeof buf - 1))
        break;
      if (r > 0)
        continue;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
    if (!waiter_alive(state))
      return tg_error_set(err, 0, "container %s: its waiter exited before it answered the start; remove it with 'tollgate delete --force %s'",
                          id, id);
    if (ms > START_TIMEOUT_MS)
      return tg_error_set(err, ETIMEDOUT, "container %s: its waiter did not answer the start in %d s", id,
                          START_TIMEOUT_MS / 1000);
  }
  buf[len] = '\0';
  if (len > 0 && buf[len - 1] == '\n')
    buf[--len] = '\0';
  if (strcmp(buf, "ok") == 0)
    return 0;
  if (strncmp(buf, "error ", 6) == 0)
    return tg_error_set(err, 0, "%s", buf + 6);
  return tg_error_set(err, 0, "container %s: its waiter answered the start with something unexpected", id);
}

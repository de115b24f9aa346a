/* A backend call held at the open of its log (backend_hold.h). */
#include "shim/lifecycle/backend_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

/* The FIFO's buffer: what runc may write before tollgate drains it (the
 * run waits polling the FIFO too; the size only spares wake-ups). */
#define HOLD_PIPE_SIZE (1024 * 1024)
#define HOLD_FIFO "backend.hold"

void backend_hold_prepare(struct backend_hold *h, const char *verb, char *const *args) {
  *h = (struct backend_hold){.proc = {.pid = -1, .out_fd = -1, .err_fd = -1},
                             .opts = {.die_with_parent = true},
                             .read_fd = -1};
  size_t n = 0;
  while (args != NULL && args[n] != NULL)
    n++;
  h->argv = xmalloc((n + 1) * sizeof *h->argv);
  for (size_t i = 0; i < n; i++)
    h->argv[i] = xstrdup(args[i]);
  h->argv[n] = NULL;
  h->verb = xstrdup(verb);
}

int backend_hold_spawn(const struct cli *cli, const struct container *c, struct backend_hold *h,
                       tg_error **err) {
  /* --debug: runc's debug log could outgrow what the FIFO holds before
   * the run drains it; started at release, as every other call. */
  if (cli->debug || h->proc.pid > 0)
    return 0;
  char *fifo = xasprintf("%s/%s", c->dir, HOLD_FIFO);
  /* 0600 in root's state directory: no one else opens either end. */
  if (mkfifo(fifo, 0600) < 0) {
    free(fifo);
    return 0;
  }
  h->fifo = fifo;
  if (container_spawn_logging(cli, c, h->verb, h->argv, NULL, &h->opts, h->fifo, &h->proc, err) < 0) {
    unlink(h->fifo);
    free(h->fifo);
    h->fifo = NULL;
    return -1;
  }
  return 0;
}

int backend_hold_start(const struct cli *cli, const struct container *c, struct backend_hold *h,
                       tg_error **err) {
  if (h->proc.pid > 0)
    return 0;
  return container_spawn(cli, c, h->verb, h->argv, NULL, &h->opts, &h->proc, err);
}

int backend_hold_release(const struct container *c, struct backend_hold *h, tg_error **err) {
  if (h->fifo == NULL || h->read_fd >= 0)
    return 0;
  h->log_from = container_log_size(c);
  /* Non-blocking: the open never waits for runc, and a read before runc
   * has opened its end finds nothing rather than waiting. */
  h->read_fd = open(h->fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (h->read_fd < 0)
    return tg_error_set(err, errno, "release %s %s: open %s", c->backend.name, h->verb, h->fifo);
  if (fcntl(h->read_fd, F_SETPIPE_SZ, HOLD_PIPE_SIZE) < 0) {
    /* the default 64 KiB: drained while the run waits all the same */
  }
  return 0;
}

int backend_hold_fd(const struct backend_hold *h) { return h->read_fd; }

void backend_hold_drain(const struct container *c, struct backend_hold *h) {
  if (h->read_fd < 0)
    return;
  cleanup_free char *log = xasprintf("%s/%s", c->dir, CONTAINER_BACKEND_LOG);
  cleanup_close int out = -1;
  char buf[16384];
  for (;;) {
    ssize_t n = read(h->read_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; /* EAGAIN: nothing more now; 0: no writer (yet, or any more) */
    if (out < 0)
      out = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out >= 0 && write_all(out, buf, (size_t)n) < 0) {
      /* the log is for messages only: a full disk loses them, not the run */
    }
  }
}

int backend_hold_finish(const struct container *c, struct backend_hold *h,
                        struct proc_result *res, tg_error **err) {
  if (proc_finish(&h->proc, &h->opts, res, err) < 0)
    return -1;
  h->proc.pid = -1;
  /* runc has exited: what it wrote is all in the FIFO's buffer now. */
  backend_hold_drain(c, h);
  container_take_log(c, h->fifo != NULL ? h->log_from : -1);
  if (h->read_fd >= 0)
    close(h->read_fd);
  h->read_fd = -1;
  if (h->fifo != NULL)
    unlink(h->fifo);
  free(h->fifo);
  h->fifo = NULL;
  return res->status;
}

void backend_hold_free(struct backend_hold *h) {
  if (h->read_fd >= 0)
    close(h->read_fd);
  if (h->fifo != NULL) {
    unlink(h->fifo);
    free(h->fifo);
  }
  for (size_t i = 0; h->argv != NULL && h->argv[i] != NULL; i++)
    free(h->argv[i]);
  free(h->argv);
  free(h->verb);
  memset(h, 0, sizeof *h);
  h->read_fd = -1;
  h->proc.pid = -1;
}

void backend_hold_cancel(struct backend_hold *h) {
  if (h->proc.pid > 0) {
    /* Our unreaped child: the pid is still its own. */
    if (kill(h->proc.pid, SIGKILL) < 0) {
      /* it cannot be gone before it is reaped */
    }
    while (waitpid(h->proc.pid, NULL, 0) < 0 && errno == EINTR)
      ;
    h->proc.pid = -1;
  }
  backend_hold_free(h);
}

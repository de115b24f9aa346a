#include "shim/lifecycle/console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "base/json.h"
#include "base/util.h"

int console_listen(const char *path, tg_error **err) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path)
    return tg_error_set(err, 0,
                        "console socket path %s is too long: use a shorter "
                        "--root",
                        path);
  strcpy(addr.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return tg_error_set(err, errno, "console socket");
  unlink(path);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
      chmod(path, 0600) < 0 || listen(fd, 1) < 0) {
    int e = errno;
    close(fd);
    unlink(path);
    return tg_error_set(err, e, "console socket %s", path);
  }
  return fd;
}

int console_receive(int listen_fd, tg_error **err) {
  cleanup_close int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (conn < 0)
    return tg_error_set(err, errno,
                        "the backend sent no console on its socket");
  char data[256];
  struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  /* The fd is already queued (sent before the backend's create returned). */
  struct pollfd p = {.fd = conn, .events = POLLIN};
  if (poll(&p, 1, 5000) <= 0 || recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) < 0)
    return tg_error_set(err, errno, "receive the console from the backend");
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int)))
    return tg_error_set(err, 0, "the backend's console message holds no fd");
  int master;
  memcpy(&master, CMSG_DATA(c), sizeof master);
  return master;
}

struct console_relay {
  int master;
  int stop[2]; /* a pipe: the main thread asks the relay to finish */
  pthread_t thread;
  bool raw;
  struct termios saved;
};

static void *relay(void *arg) {
  struct console_relay *r = arg;
  bool stdin_open = true, stopping = false;
  char buf[8192];
  for (;;) {
    struct pollfd p[3] = {{.fd = r->master, .events = POLLIN},
                          {.fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN},
                          {.fd = stopping ? -1 : r->stop[0], .events = POLLIN}};
    /* Once asked to stop, only drain what is already there. */
    int n = poll(p, 3, stopping ? 0 : -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (p[2].revents)
      stopping = true;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = read(r->master, buf, sizeof buf);
      if (got <= 0)
        break; /* EIO: every slave end is closed, the container is gone */
      if (write_all(STDOUT_FILENO, buf, (size_t)got) < 0)
        break;
    }
    if (stdin_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
      if (got <= 0)
        stdin_open = false;
      else
        (void)write_all(r->master, buf, (size_t)got);
    }
  }
  return NULL;
}

int console_relay_start(int master, struct console_relay **out,
                        tg_error **err) {
  struct console_relay *r = xcalloc(1, sizeof *r);
  r->master = master;
  if (pipe2(r->stop, O_CLOEXEC) < 0) {
    int e = errno;
    close(master);
    free(r);
    return tg_error_set(err, e, "console relay");
  }
  if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &r->saved) == 0) {
    struct termios raw = r->saved;
    cfmakeraw(&raw);
    if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
      r->raw = true;
    struct winsize ws;
    if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
      ioctl(master, TIOCSWINSZ, &ws);
  }
  int e = pthread_create(&r->thread, NULL, relay, r);
  if (e != 0) {
    if (r->raw)
      tcsetattr(STDIN_FILENO, TCSANOW, &r->saved);
    close(master);
    close(r->stop[0]);
    close(r->stop[1]);
    free(r);
    return tg_error_set(err, e, "console relay thread");
  }
  *out = r;
  return 0;
}

void console_relay_stop(struct console_relay *r) {
  if (r == NULL)
    return;
  (void)write_all(r->stop[1], "x", 1);
  pthread_join(r->thread, NULL);
  if (r->raw)
    tcsetattr(STDIN_FILENO, TCSANOW, &r->saved);
  close(r->master);
  close(r->stop[0]);
  close(r->stop[1]);
  free(r);
}

bool console_bundle_wants_terminal(const char *bundle) {
  cleanup_free char *path = xasprintf("%s/config.json", bundle ? bundle : ".");
  cleanup_free char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file(path, 16u * 1024 * 1024, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return false;
  }
  json_t *c = json_parse(buf, len, NULL, &e);
  tg_error_free(&e);
  bool t = json_is_true(json_get_path(c, "process.terminal"));
  json_free(c);
  return t;
}

/* The control socket; see control.h. */
#include "governance/control.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/util.h"

#define CONTROL_REQUEST_MAX 65536

struct control {
  char *path;
  int fd, stopfd;
  bool has_group;
  gid_t group;
  control_handler handler;
  void *ctx;
  pthread_t thread;
};

/* Root, or a member (primary or supplementary) of the approver group.  The
 * ids come from the kernel (SO_PEERCRED), not from anything the peer says. */
static bool may_decide(const struct control *c, const struct ucred *cred) {
  if (cred->uid == 0)
    return true;
  if (!c->has_group)
    return false;
  if (cred->gid == c->group)
    return true;
  struct passwd pw, *res = NULL;
  char buf[4096];
  if (getpwuid_r(cred->uid, &pw, buf, sizeof buf, &res) != 0 || res == NULL)
    return false;
  gid_t groups[256];
  int n = 256;
  if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
    return false;
  for (int i = 0; i < n; i++)
    if (groups[i] == c->group)
      return true;
  return false;
}

/* Fill sa for path.  A path longer than sun_path (a long --root or
 * container id) is reached through its directory: /proc/self/fd/N/NAME,
 * with *dirfd holding the directory open until the bind or connect is
 * done. */
static int socket_address(const char *path, struct sockaddr_un *sa, int *dirfd, tg_error **err) {
  *dirfd = -1;
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  if (strlen(path) < sizeof sa->sun_path) {
    strcpy(sa->sun_path, path);
    return 0;
  }
  const char *slash = strrchr(path, '/');
  if (slash == NULL || strlen(slash + 1) + 32 >= sizeof sa->sun_path)
    return tg_error_set(err, ENAMETOOLONG, "control socket path %s", path);
  cleanup_free char *dir = slash == path ? xstrdup("/") : xstrndup(path, slash - path);
  *dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (*dirfd < 0)
    return tg_error_set(err, errno, "open %s", dir);
  snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/%s", *dirfd, slash + 1);
  return 0;
}

static void serve_one(struct control *c, int fd) {
  struct ucred cred;
  socklen_t clen = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
    return;
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  char *buf = xmalloc(CONTROL_REQUEST_MAX + 1);
  size_t len = 0;
  while (len < CONTROL_REQUEST_MAX) {
    ssize_t n = recv(fd, buf + len, CONTROL_REQUEST_MAX - len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += n;
    if (memchr(buf + len - n, '\n', n))
      break;
  }
  buf[len] = '\0';
  char *nl = memchr(buf, '\n', len);
  if (nl)
    len = nl - buf;
  json_t *reply;
  cleanup_error tg_error *err = NULL;
  cleanup_json json_t *req = json_parse(buf, len, NULL, &err);
  free(buf);
  if (req == NULL) {
    reply = json_new_object();
    json_object_set(reply, "ok", json_new_bool(false));
    json_object_set(reply, "error", json_new_string("the request is not one JSON line"));
  } else {
    reply = c->handler(c->ctx, req, cred.uid, may_decide(c, &cred));
  }
  size_t rlen = 0;
  char *s = json_dump(reply, false, &rlen);
  json_free(reply);
  s = xrealloc(s, rlen + 1);
  s[rlen++] = '\n';
  write_all(fd, s, rlen);
  free(s);
}

static void *control_main(void *arg) {
  struct control *c = arg;
  for (;;) {
    struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->stopfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents)
      break;
    if (p[0].revents & POLLIN) {
      int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      serve_one(c, fd);
      close(fd);
    }
  }
  return NULL;
}

int control_start(const char *path, const char *approver_group, control_handler handler,
                  void *ctx, struct control **out, tg_error **err) {
  *out = NULL;
  struct sockaddr_un sa;
  cleanup_close int dirfd = -1;
  if (socket_address(path, &sa, &dirfd, err) < 0)
    return -1;
  gid_t gid = 0;
  bool has_group = approver_group && *approver_group;
  if (has_group) {
    struct group gr, *res = NULL;
    char buf[4096];
    if (getgrnam_r(approver_group, &gr, buf, sizeof buf, &res) != 0 || res == NULL)
      return tg_error_set(err, 0, "approver_group \"%s\" does not exist; create it or fix the host config",
                          approver_group);
    gid = gr.gr_gid;
  }
  /* A stale socket from a dead sidecar is replaced; anything else at the
   * path is left alone and reported. */
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return tg_error_set(err, EEXIST, "%s exists and is not a socket; remove it", path);
    unlink(path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return tg_error_set(err, errno, "socket");
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    int e = errno;
    close(fd);
    return tg_error_set(err, e, "bind control socket %s", path);
  }
  /* 0600: only the owner (root) connects.  With an approver group, the
   * group may connect too; SO_PEERCRED still decides who may approve. */
  if ((has_group && (chown(path, (uid_t)-1, gid) < 0 || chmod(path, 0660) < 0)) ||
      (!has_group && chmod(path, 0600) < 0)) {
    int e = errno;
    close(fd);
    unlink(path);
    return tg_error_set(err, e, "set the mode of %s", path);
  }
  if (listen(fd, 16) < 0) {
    int e = errno;
    close(fd);
    unlink(path);
    return tg_error_set(err, e, "listen on %s", path);
  }
  struct control *c = xcalloc(1, sizeof *c);
  c->path = xstrdup(path);
  c->fd = fd;
  c->stopfd = eventfd(0, EFD_CLOEXEC);
  c->has_group = has_group;
  c->group = gid;
  c->handler = handler;
  c->ctx = ctx;
  /* eventfd sets errno; pthread_create returns its error and does not. */
  int e = c->stopfd < 0 ? errno : pthread_create(&c->thread, NULL, control_main, c);
  if (e != 0) {
    if (c->stopfd >= 0)
      close(c->stopfd);
    close(fd);
    unlink(path);
    free(c->path);
    free(c);
    return tg_error_set(err, e, "start the control thread");
  }
  *out = c;
  return 0;
}

void control_stop(struct control *c) {
  if (c == NULL)
    return;
  uint64_t one = 1;
  (void)!write(c->stopfd, &one, sizeof one);
  pthread_join(c->thread, NULL);
  close(c->stopfd);
  close(c->fd);
  unlink(c->path);
  free(c->path);
  free(c);
}

int control_request(const char *path, const json_t *req, int timeout_ms, json_t **reply,
                    tg_error **err) {
  *reply = NULL;
  struct sockaddr_un sa;
  cleanup_close int dirfd = -1;
  if (socket_address(path, &sa, &dirfd, err) < 0)
    return -1;
  cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return tg_error_set(err, errno, "socket");
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
    return tg_error_set(err, errno, "connect to %s (is the container's bridge sidecar running?)",
                        path);
  size_t len = 0;
  cleanup_free char *s = json_dump_checked(req, false, &len, err);
  if (s == NULL) /* an argument that is not UTF-8 (a reason, say) */
    return tg_error_wrap(err, "the request to %s", path);
  s = xrealloc(s, len + 1);
  s[len++] = '\n';
  if (write_all(fd, s, len) < 0)
    return tg_error_set(err, errno, "send to %s", path);
  cleanup_free char *buf = NULL;
  ssize_t n = read_all_bounded(fd, 16 << 20, &buf);
  if (n < 0)
    return tg_error_set(err, errno, "read the reply from %s", path);
  cleanup_error tg_error *perr = NULL;
  *reply = json_parse(buf, (size_t)n, NULL, &perr);
  if (*reply == NULL)
    return tg_error_set(err, 0, "bad reply from %s: %s", path, perr ? perr->msg : "empty");
  return 0;
}

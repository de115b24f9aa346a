/* The socket backend: forward an allowed call to an agent framework that
 * keeps its tools in its own process.
 *
 * Exchange (one connection per call, both lines UTF-8 JSON ending in \n):
 *   tollgate -> server  {"v":1,"call":"<call id>","tool":"<name>","args":{...}}
 *   server -> tollgate  {"ok":true,"result":<any JSON>}
 *                    or {"ok":false,"error":"<message>"}
 * The server has the tool's timeout to answer; a reply larger than 1 MiB,
 * not JSON, or without "ok" is a tool failure. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "governance/gate.h"
#include "governance/tools.h"
#include "base/util.h"

static void fail(struct tool_result *r, const char *code, char *msg) {
  r->code = code;
  r->message = msg;
}

void tool_socket_run(const struct tool *t, const json_t *args, const char *call_id,
                     struct tool_result *r) {
  memset(r, 0, sizeof *r);
  cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return fail(r, GATE_TOOL_FAILED, xasprintf("socket: %s", strerror(errno)));
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", t->backend.path);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS &&
      errno != EAGAIN)
    return fail(r, GATE_TOOL_FAILED,
                xasprintf("connect to the %s tool server at %s: %s (is the agent's tool server running?)",
                          t->name, t->backend.path, strerror(errno)));
  json_t *req = json_new_object();
  json_object_set(req, "v", json_new_integer(1));
  json_object_set(req, "call", json_new_string(call_id ? call_id : ""));
  json_object_set(req, "tool", json_new_string(t->name));
  json_object_set(req, "args", args ? json_copy(args) : json_new_object());
  size_t len = 0;
  char *line = json_dump(req, false, &len);
  json_free(req);
  line = xrealloc(line, len + 2);
  line[len++] = '\n';
  line[len] = '\0';
  unsigned long long deadline = monotonic_ns() + (unsigned long long)t->timeout_ms * 1000000ULL;
  size_t sent = 0, cap = 4096, got = 0;
  cleanup_free char *buf = xmalloc(cap);
  char *nl = NULL;
  while (nl == NULL) {
    unsigned long long now = monotonic_ns();
    if (now >= deadline) {
      free(line);
      return fail(r, GATE_TOOL_TIMEOUT,
                  xasprintf("the %s tool server did not answer within %d ms", t->name, t->timeout_ms));
    }
    struct pollfd p = {.fd = fd, .events = sent < len ? POLLOUT : POLLIN};
    int pr = poll(&p, 1, (int)((deadline - now) / 1000000ULL) + 1);
    if (pr < 0 && errno == EINTR)
      continue;
    if (sent < len) {
      ssize_t n = send(fd, line + sent, len - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        int e = errno;
        free(line);
        return fail(r, GATE_TOOL_FAILED, xasprintf("send to %s: %s", t->backend.path, strerror(e)));
      }
      if (n > 0)
        sent += n;
      continue;
    }
    if (cap - got < 4096) {
      cap *= 2;
      buf = xrealloc(buf, cap);
    }
    ssize_t n = recv(fd, buf + got, cap - got - 1, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n <= 0) {
      free(line);
      return fail(r, GATE_TOOL_FAILED,
                  xasprintf("the %s tool server closed the connection without a reply line", t->name));
    }
    got += n;
    buf[got] = '\0';
    nl = memchr(buf, '\n', got);
    if (nl == NULL && got > TOOL_OUTPUT_MAX) {
      free(line);
      return fail(r, GATE_TOOL_FAILED, xasprintf("the %s tool server's reply exceeds %u bytes",
                                                 t->name, TOOL_OUTPUT_MAX));
    }
  }
  free(line);
  cleanup_error tg_error *perr = NULL;
  cleanup_json json_t *reply = json_parse(buf, nl - buf, NULL, &perr);
  if (reply == NULL)
    return fail(r, GATE_TOOL_FAILED, xasprintf("the %s tool server's reply is not JSON: %s",
                                               t->name, perr->msg));
  const json_t *ok = json_object_get(reply, "ok");
  if (!json_is(ok, JSON_BOOL))
    return fail(r, GATE_TOOL_FAILED,
                xasprintf("the %s tool server's reply has no \"ok\": true/false", t->name));
  if (!ok->u.boolean) {
    const json_t *e = json_object_get(reply, "error");
    const char *msg = json_string_value(e);
    if (msg == NULL)
      msg = json_string_value(json_object_get(e, "message"));
    return fail(r, GATE_TOOL_FAILED, xstrdup(msg ? msg : "the tool server reported an error"));
  }
  const json_t *res = json_object_get(reply, "result");
  r->result = res ? json_copy(res) : json_new_null();
}

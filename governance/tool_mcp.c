/* MCP client over stdio: JSON-RPC 2.0, newline-delimited. */
#include "governance/mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "governance/gate.h"
#include "base/util.h"

#define MCP_PROTOCOL_VERSION "2025-06-18"
#define MCP_LINE_MAX (4u << 20)

struct mcp_client {
  char *name;
  pid_t pid;
  int to, from;
  pthread_mutex_t mu;
  long long next_id;
  char *buf;
  size_t len, cap;
  json_t *tools; /* array of tools/list entries */
  bool dead;
};

static int ms_until(unsigned long long deadline) {
  unsigned long long now = monotonic_ns();
  return now >= deadline ? 0 : (int)((deadline - now) / 1000000ULL) + 1;
}

static int send_msg(struct mcp_client *c, json_t *msg, unsigned long long deadline,
                    tg_error **err) {
  size_t len = 0;
  cleanup_free char *s = json_dump(msg, false, &len);
  s = xrealloc(s, len + 1);
  s[len++] = '\n';
  size_t off = 0;
  struct sigpipe_guard guard;
  sigpipe_block(&guard);
  while (off < len) {
    struct pollfd p = {.fd = c->to, .events = POLLOUT};
    int left = ms_until(deadline);
    if (left == 0) {
      sigpipe_unblock(&guard);
      return tg_error_set(err, ETIMEDOUT, "MCP server %s does not read its stdin", c->name);
    }
    if (poll(&p, 1, left) <= 0)
      continue;
    ssize_t n = write(c->to, s + off, len - off);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      int e = errno;
      sigpipe_unblock(&guard);
      c->dead = true;
      return tg_error_set(err, e, "write to MCP server %s", c->name);
    }
    if (n > 0)
      off += n;
  }
  sigpipe_unblock(&guard);
  return 0;
}

/* Read messages until the response with id arrives; notifications and
 * unrelated (late) responses are skipped, requests from the server are
 * answered "method not found" (tollgate offers it nothing). */
static json_t *await_response(struct mcp_client *c, long long id, unsigned long long deadline,
                              bool *timed_out, tg_error **err) {
  *timed_out = false;
  for (;;) {
    char *nl;
    while (c->len > 0 && (nl = memchr(c->buf, '\n', c->len)) != NULL) {
      size_t linelen = nl - c->buf;
      json_t *msg = linelen ? json_parse(c->buf, linelen, NULL, NULL) : NULL;
      memmove(c->buf, nl + 1, c->len - linelen - 1);
      c->len -= linelen + 1;
      if (msg == NULL)
        continue;
      long long mid;
      bool has_id = json_integer_value(json_object_get(msg, "id"), &mid);
      if (json_object_get(msg, "method") != NULL) {
        if (json_object_get(msg, "id") != NULL) {
          json_t *rep = json_new_object();
          json_object_set(rep, "jsonrpc", json_new_string("2.0"));
          json_object_set(rep, "id", json_copy(json_object_get(msg, "id")));
          json_t *e = json_new_object();
          json_object_set(e, "code", json_new_integer(-32601));
          json_object_set(e, "message", json_new_string("method not found"));
          json_object_set(rep, "error", e);
          send_msg(c, rep, deadline, NULL);
          json_free(rep);
        }
        json_free(msg);
        continue;
      }
      if (has_id && mid == id)
        return msg;
      json_free(msg);
    }
    if (c->len > MCP_LINE_MAX) {
      c->dead = true;
      tg_error_set(err, 0, "MCP server %s sent a line over %u bytes", c->name, MCP_LINE_MAX);
      return NULL;
    }
    int left = ms_until(deadline);
    if (left == 0) {
      *timed_out = true;
      tg_error_set(err, ETIMEDOUT, "MCP server %s did not answer in time", c->name);
      return NULL;
    }
    struct pollfd p = {.fd = c->from, .events = POLLIN};
    int pr = poll(&p, 1, left);
    if (pr <= 0)
      continue;
    if (c->cap - c->len < 65536) {
      c->cap = c->cap ? c->cap * 2 : 131072;
      c->buf = xrealloc(c->buf, c->cap);
    }
    ssize_t n = read(c->from, c->buf + c->len, c->cap - c->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0) {
      c->dead = true;
      tg_error_set(err, 0, "MCP server %s exited (closed its stdout)", c->name);
      return NULL;
    }
    c->len += n;
  }
}

static json_t *request(struct mcp_client *c, const char *method, json_t *params,
                       int timeout_ms, bool *timed_out, tg_error **err) {
  long long id = ++c->next_id;
  json_t *msg = json_new_object();
  json_object_set(msg, "jsonrpc", json_new_string("2.0"));
  json_object_set(msg, "id", json_new_integer(id));
  json_object_set(msg, "method", json_new_string(method));
  json_object_set(msg, "params", params ? params : json_new_object());
  unsigned long long deadline = monotonic_ns() + (unsigned long long)timeout_ms * 1000000ULL;
  int r = send_msg(c, msg, deadline, err);
  json_free(msg);
  *timed_out = false;
  if (r < 0)
    return NULL;
  return await_response(c, id, deadline, timed_out, err);
}

static const char *rpc_error_message(const json_t *resp) {
  const json_t *e = json_object_get(resp, "error");
  const char *m = json_string_value(json_object_get(e, "message"));
  return m ? m : "unknown error";
}

int mcp_start(const struct mcp_server_config *cfg, struct mcp_client **out, tg_error **err) {
  *out = NULL;
  struct mcp_client *c = xcalloc(1, sizeof *c);
  c->name = xstrdup(cfg->name);
  pthread_mutex_init(&c->mu, NULL);
  if (sandbox_spawn(cfg->argv, &c->pid, &c->to, &c->from, err) < 0) {
    free(c->name);
    free(c);
    return tg_error_wrap(err, "start MCP server %s", cfg->name);
  }
  fcntl(c->to, F_SETFL, O_NONBLOCK);
  fcntl(c->from, F_SETFL, O_NONBLOCK);
  *out = c;
  bool to = false;
  json_t *params = json_new_object();
  json_object_set(params, "protocolVersion", json_new_string(MCP_PROTOCOL_VERSION));
  json_object_set(params, "capabilities", json_new_object());
  json_t *info = json_new_object();
  json_object_set(info, "name", json_new_string("tollgate"));
  json_object_set(info, "version", json_new_string("0.1"));
  json_object_set(params, "clientInfo", info);
  cleanup_json json_t *init = request(c, "initialize", params, cfg->timeout_ms, &to, err);
  if (init == NULL) {
    tg_error_wrap(err, "MCP server %s (%s) did not complete initialize; it runs as the tools' uid with "
                       "stdin/stdout for JSON-RPC and stderr discarded: run it by hand that way to see why",
                  cfg->name, cfg->argv[0]);
    goto fail;
  }
  if (json_object_get(init, "result") == NULL) {
    tg_error_set(err, 0, "MCP server %s refused initialize: %s", cfg->name, rpc_error_message(init));
    goto fail;
  }
  {
    json_t *note = json_new_object();
    json_object_set(note, "jsonrpc", json_new_string("2.0"));
    json_object_set(note, "method", json_new_string("notifications/initialized"));
    int r = send_msg(c, note, monotonic_ns() + (unsigned long long)cfg->timeout_ms * 1000000ULL, err);
    json_free(note);
    if (r < 0)
      goto fail;
  }
  c->tools = json_new_array();
  char *cursor = NULL;
  for (int page = 0; page < 100; page++) {
    json_t *lp = json_new_object();
    if (cursor)
      json_object_set(lp, "cursor", json_new_string(cursor));
    free(cursor);
    cursor = NULL;
    cleanup_json json_t *list = request(c, "tools/list", lp, cfg->timeout_ms, &to, err);
    if (list == NULL)
      goto fail;
    const json_t *res = json_object_get(list, "result");
    const json_t *tools = json_object_get(res, "tools");
    if (!json_is(tools, JSON_ARRAY)) {
      tg_error_set(err, 0, "MCP server %s: tools/list gave no tools array%s%s", cfg->name,
                   res ? "" : ": ", res ? "" : rpc_error_message(list));
      goto fail;
    }
    for (size_t i = 0; i < json_array_len(tools); i++)
      if (json_is(json_object_get(json_array_get(tools, i), "name"), JSON_STRING))
        json_array_append(c->tools, json_copy(json_array_get(tools, i)));
    const char *next = json_string_value(json_object_get(res, "nextCursor"));
    if (next == NULL || !*next)
      break;
    cursor = xstrdup(next);
  }
  free(cursor);
  return 0;
fail:
  mcp_stop(c);
  *out = NULL;
  return -1;
}

const json_t *mcp_find_tool(const struct mcp_client *c, const char *name) {
  for (size_t i = 0; i < json_array_len(c->tools); i++) {
    const json_t *t = json_array_get(c->tools, i);
    if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
      return t;
  }
  return NULL;
}

char *mcp_tool_names(const struct mcp_client *c) {
  char *s = xstrdup("");
  for (size_t i = 0; i < json_array_len(c->tools); i++) {
    char *n = xasprintf("%s%s%s", s, i ? ", " : "",
                        json_string_value(json_object_get(json_array_get(c->tools, i), "name")));
    free(s);
    s = n;
  }
  return s;
}

/* The text of every text item of an MCP content array, joined. */
static char *content_text(const json_t *content) {
  char *s = xstrdup("");
  for (size_t i = 0; i < json_array_len(content); i++) {
    const json_t *item = json_array_get(content, i);
    const char *text = json_string_value(json_object_get(item, "text"));
    if (text == NULL)
      continue;
    char *n = xasprintf("%s%s%s", s, *s ? "\n" : "", text);
    free(s);
    s = n;
  }
  return s;
}

void mcp_call(struct mcp_client *c, const char *remote, const json_t *args, int timeout_ms,
              struct tool_result *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_lock(&c->mu);
  if (c->dead) {
    pthread_mutex_unlock(&c->mu);
    r->code = GATE_TOOL_FAILED;
    r->message = xasprintf("MCP server %s is no longer running", c->name);
    return;
  }
  json_t *params = json_new_object();
  json_object_set(params, "name", json_new_string(remote));
  json_object_set(params, "arguments", args ? json_copy(args) : json_new_object());
  bool to = false;
  cleanup_error tg_error *err = NULL;
  cleanup_json json_t *resp = request(c, "tools/call", params, timeout_ms, &to, &err);
  pthread_mutex_unlock(&c->mu);
  if (resp == NULL) {
    r->code = to ? GATE_TOOL_TIMEOUT : GATE_TOOL_FAILED;
    r->message = xstrdup(err ? err->msg : "MCP call failed");
    return;
  }
  const json_t *res = json_object_get(resp, "result");
  if (res == NULL) {
    r->code = GATE_TOOL_FAILED;
    r->message = xasprintf("MCP error: %s", rpc_error_message(resp));
    return;
  }
  const json_t *content = json_object_get(res, "content");
  if (json_is_true(json_object_get(res, "isError"))) {
    r->code = GATE_TOOL_FAILED;
    char *text = content_text(content);
    r->message = *text ? text : (free(text), xstrdup("the MCP tool reported an error"));
    return;
  }
  /* The result the caller sees: structured content when the server gives
   * it, else the text of a single text item, else the content array. */
  const json_t *structured = json_object_get(res, "structuredContent");
  if (structured) {
    r->result = json_copy(structured);
  } else if (json_array_len(content) == 1 &&
             json_string_value(json_object_get(json_array_get(content, 0), "text"))) {
    r->result = json_copy(json_object_get(json_array_get(content, 0), "text"));
  } else {
    r->result = content ? json_copy(content) : json_new_array();
  }
}

void mcp_stop(struct mcp_client *c) {
  if (c == NULL)
    return;
  close(c->to);
  /* Closing stdin is the MCP way to ask a stdio server to exit; give it a
   * short grace period, then kill its whole process group. */
  for (int i = 0; i < 50; i++) {
    if (waitpid(c->pid, NULL, WNOHANG) == c->pid) {
      c->pid = 0;
      break;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  if (c->pid > 0) {
    kill(-c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
  }
  close(c->from);
  json_free(c->tools);
  free(c->buf);
  free(c->name);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

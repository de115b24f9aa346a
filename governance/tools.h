/* Tool backends: builtin, exec, socket, mcp and http, plus the sandboxed child
 * process runner that exec tools, MCP servers and approval hooks share. */
#ifndef TOLLGATE_TOOLS_H
#define TOLLGATE_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <sys/types.h>

#include "governance/policy.h"
#include "governance/tool_identity.h"
#include "base/error.h"
#include "base/json.h"

/* What a backend produced.  code NULL means success and result holds the
 * tool's result; otherwise code is GATE_TOOL_FAILED or GATE_TOOL_TIMEOUT
 * and message says why (with the tail of stderr for exec tools).  Every
 * field is owned; release with tool_result_clear. */
struct tool_result {
  const char *code;
  char *message;
  json_t *result;
  json_t *audit; /* or NULL: fields the outcome's audit record adds (http) */
};
void tool_result_clear(struct tool_result *r);

/* --- the sandboxed runner (tool_exec.c) --------------------------------- */

#define TOOL_OUTPUT_MAX (1u << 20)
#define STDERR_TAIL 2048

/* Told the child's pid once it runs, and 0 just before it is reaped, so
 * that a holder of the pid never signals a recycled one.  Optional. */
struct sandbox_watch {
  void (*pid)(void *ctx, pid_t pid);
  void *ctx;
};

struct sandbox_output {
  char *out; /* stdout, NUL-terminated, owned */
  size_t outlen;
  char *err_tail; /* the last STDERR_TAIL bytes of stderr, owned */
  int status;     /* waitpid status */
  bool timed_out;
  bool too_big;   /* stdout exceeded TOOL_OUTPUT_MAX */
};

/* Run argv (argv[0] an absolute path) as the tools' uid/gid (see
 * sandbox_set_identity), as pid 1 of a user, pid and mount namespace of
 * its own with its own /proc (refused, not run, when they cannot be
 * made), no capabilities,
 * no_new_privs, a scrubbed environment (PATH, LANG, HOME=/ plus extra_env),
 * rlimits, cwd /, and its own process group; feed input on stdin; collect
 * stdout and the tail of stderr; kill the whole group after timeout_ms.
 * Returns 0 when the child ran (whatever its exit status), -1 with *err
 * when it could not be started. */
int sandbox_run(char *const argv[], char *const extra_env[], const char *input,
                size_t inlen, int timeout_ms, const struct sandbox_watch *watch,
                struct sandbox_output *out, tg_error **err);
void sandbox_output_clear(struct sandbox_output *o);

/* Start argv sandboxed as above but long-lived, with pipes for stdin and
 * stdout (stderr goes to /dev/null).  The child is killed if this process
 * dies (PR_SET_PDEATHSIG). */
int sandbox_spawn(char *const argv[], pid_t *pid, int *to_child, int *from_child,
                  tg_error **err);

/* Writing to a child's stdin after it exited raises SIGPIPE, which would
 * kill the whole gate.  Block it on this thread around such writes, then
 * consume a SIGPIPE that arrived, without touching the process's signal
 * dispositions (the bridge owns those). */
struct sigpipe_guard {
  bool blocked_before;
  sigset_t old;
};
void sigpipe_block(struct sigpipe_guard *g);
void sigpipe_unblock(struct sigpipe_guard *g);

/* --- backends ------------------------------------------------------------ */

/* builtin: "echo" returns its args. */
void tool_builtin_run(const struct tool *t, const json_t *args, struct tool_result *r);

/* exec: args JSON on stdin, result JSON on stdout. */
void tool_exec_run(const struct tool *t, const json_t *args, const char *call_id,
                   struct tool_result *r);

/* socket: one JSON line each way over t->backend.path (docs/policy.md). */
void tool_socket_run(const struct tool *t, const json_t *args, const char *call_id,
                     struct tool_result *r);

/* mcp: see mcp.h */

/* http (docs/egress.md).  Before the rules: check the program's request
 * (URL, method, headers, body size, allow list, an address literal's
 * class).  Returns NULL and *view, what the rules, the repeat limit and
 * the approver see (the args plus the URL's parts: scheme, host, port,
 * path, query); or GATE_BAD_REQUEST / GATE_DENIED and *why.  *audit is
 * set either way: the args as the audit log shows them (the query
 * redacted when the backend says so, the body's size only).  All owned. */
const char *tool_http_prepare(const struct tool *t, const json_t *args, json_t **view,
                              json_t **audit, char **why);

/* Make the request the view describes, hop by hop; r->audit gets the
 * record's "http" part (method, URL, status, bytes each way, time). */
void tool_http_run(const struct tool *t, const json_t *view, const char *call_id,
                   struct tool_result *r);

#endif

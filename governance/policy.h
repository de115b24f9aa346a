/* The policy file: tools (backend: builtin, exec, socket, mcp or http; description, args schema, timeout, cost,
 * irreversible, max_calls, rules), budgets, approval and MCP servers.
 * See docs/policy.md for the language. */
#ifndef TOLLGATE_POLICY_H
#define TOLLGATE_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "governance/policy_errors.h"
#include "governance/rules.h"
#include "governance/schema.h"
#include "base/error.h"
#include "base/json.h"

enum backend_type { BACKEND_BUILTIN, BACKEND_EXEC, BACKEND_SOCKET, BACKEND_MCP, BACKEND_HTTP };

struct egress_config; /* governance/egress_config.h */

struct backend {
  enum backend_type type;
  char *name;   /* builtin: the builtin's name */
  char **argv;  /* exec: NULL-terminated, argv[0] resolved to an absolute path */
  char *path;   /* socket: the host Unix socket */
  char *server; /* mcp: the name of an entry in "mcp_servers" */
  char *remote; /* mcp: the server's name for the tool (default: the tool's) */
  struct egress_config *http; /* http: allow list, injected headers, bounds */
};

struct tool {
  char *name;
  char *description;    /* "" when absent */
  json_t *args_source;  /* the schema as written (tools.json), or NULL */
  struct schema *args;  /* compiled, or NULL: any object */
  int timeout_ms;       /* default 30 s */
  double cost;          /* default 0 */
  bool irreversible;
  long long max_calls;  /* -1: no per-tool limit */
  /* An agent-written tool (docs/sdk.md, "Agent-written tools"): the SHA-256
   * of its source, 64 lowercase hex digits, put on the record of every call
   * that runs it; NULL for a tool a person wrote. */
  char *source_sha256;
  struct rule *rules;
  size_t nrules;
  struct backend backend;
  size_t index;         /* position in policy->tools */
};

struct budgets {
  long long max_tool_calls;   /* default 50, every attempt counts */
  double max_cost;            /* < 0: unlimited */
  long long max_irreversible; /* -1: unlimited */
  long long repeat_limit;     /* -1: unlimited */
  long long max_custom_tools; /* -1: unlimited; tools with a source_sha256 */
};

/* Behavioural anomaly limits (docs/policy.md, "Anomaly limits"): what a
 * run may do before the gate flags it, and what it does then. */
enum anomaly_kind {
  ANOMALY_DENIALS_IN_A_ROW,  /* denied, unknown_tool or bad_request calls in a row */
  ANOMALY_CALLS_PER_SECOND,  /* call attempts within any one-second window */
  ANOMALY_FAILURES_IN_A_ROW, /* calls that ran and failed (tool_failed, tool_timeout) in a row */
  ANOMALY_RESULT_BYTES,      /* total bytes of results handed to the program */
  ANOMALY_DENIALS_IN_WINDOW, /* denials among the last N calls that ran or were denied */
  ANOMALY_KINDS
};

enum anomaly_action {
  ANOMALY_STOP, /* refuse every later call and stop the container */
  ANOMALY_PARK, /* later calls wait for approval until one is approved */
  ANOMALY_LOG,  /* record it (and tell the alert hook), nothing more */
};

#define ANOMALY_MAX_CALLS_PER_SECOND 10000 /* the window's memory is one slot per call */
#define ANOMALY_MAX_WINDOW_CALLS 10000      /* denials_in_window: one slot per call too */

struct anomaly_limit {
  long long limit; /* 0: not set; denials_in_window: the count of denials */
  long long calls; /* denials_in_window: among how many calls; else 0 */
  enum anomaly_action action;
};

#define ANOMALY_DEFAULT_STOP_GRACE_MS 2000
#define ANOMALY_MAX_STOP_GRACE_MS 30000

struct anomaly_limits {
  struct anomaly_limit of[ANOMALY_KINDS];
  char **alert_hook; /* NULL-terminated argv, or NULL */
  /* After a "stop": how long the program may go on (its calls refused)
   * before the container is killed; 0 to ANOMALY_MAX_STOP_GRACE_MS. */
  long long stop_grace_ms;
};

/* "denials_in_a_row", ... and "stop", "park", "log": the policy's words. */
const char *anomaly_kind_name(enum anomaly_kind k);
const char *anomaly_action_name(enum anomaly_action a);

struct mcp_server_config {
  char *name;
  char **argv; /* NULL-terminated, argv[0] resolved */
  int timeout_ms; /* startup (initialize, tools/list) timeout */
};

struct policy {
  char *path;
  char *dir; /* the policy file's directory: relative paths resolve here */
  struct tool **tools;
  size_t ntools;
  struct tool **table; /* open-addressing hash by name; size is a power of 2 */
  size_t table_size;
  struct budgets budgets;
  char **approval_hook; /* NULL-terminated argv, or NULL */
  int approval_timeout_ms; /* 0: not set in the policy */
  long long max_pending;   /* default 10 */
  struct anomaly_limits anomalies;
  struct mcp_server_config *mcp;
  size_t nmcp;
};

/* Parse and check the policy at path.  On any problem returns -1 and *err
 * holds every problem, one per line, as "FILE:LINE:COL: FIELD.PATH: what is
 * wrong and how to fix it".  *out is owned by the caller (policy_free). */
int policy_load(const char *path, struct policy **out, tg_error **err);

/* Same, from a buffer (tests); path only names the file in messages and
 * resolves relative paths. */
int policy_parse(const char *path, const char *buf, size_t len,
                 struct policy **out, tg_error **err);

void policy_free(struct policy *p);

/* Find a tool by name in O(1) (hash).  Borrowed, or NULL. */
const struct tool *policy_find(const struct policy *p, const char *name);

/* How many of the policy's tools are agent-written (have a source_sha256). */
size_t policy_custom_tools(const struct policy *p);

/* Agent-written tools added to a live gate (the control socket's add_tool,
 * docs/policy.md "Adding a tool to a running gate").  Validate one tool
 * entry exactly as policy_parse() validates a tool of the policy, and
 * refuse, naming the fix, an entry without source_sha256 (only
 * agent-written tools may be added: a person's tools change by editing
 * the policy), a name the policy already has, an mcp backend (its server's
 * schema is imported only at start) and one past budgets.max_custom_tools
 * (or ceiling_max, when >= 0: the host ceiling's).  Nothing else of p is
 * read or changed.  *out is the parsed tool, not yet part of p (for
 * policy_insert_tool, or policy_tool_free). */
int policy_parse_added_tool(const struct policy *p, const char *name, const json_t *entry,
                            long long ceiling_max, struct tool **out, tg_error **err);

/* Make t (from policy_parse_added_tool on this p) one of p's tools:
 * appended, so every other tool keeps its index (the budget's per-tool
 * counters are indexed by it).  The caller serialises this against every
 * reader of p's tools. */
void policy_insert_tool(struct policy *p, struct tool *t);

void policy_tool_free(struct tool *t);

/* A tool name: [A-Za-z_][A-Za-z0-9_.-]{0,63}, so it is a valid Python
 * identifier after replacing '.' and '-' and never a path. */
bool tool_name_is_valid(const char *name);

#endif

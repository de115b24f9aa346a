/* The governance gate: the one interface the bridge calls.
 *
 * A gate governs one container run.  Every call attempt that reaches the
 * bridge, well-formed or not, goes through the gate, which counts it toward
 * the hard cap, applies the policy (allow / deny / approve), checks the
 * budgets, writes the audit log, runs the tool on the host and returns the
 * response body.  A denial is always an error response, never a result.
 */
#ifndef TOLLGATE_GATE_H
#define TOLLGATE_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/json.h"

/* Error codes in responses ({"v":1,"ok":false,"error":{"code":...}}). */
#define GATE_DENIED "denied"
#define GATE_APPROVAL_TIMEOUT "approval_timeout"
#define GATE_BUDGET_EXHAUSTED "budget_exhausted"
#define GATE_UNKNOWN_TOOL "unknown_tool"
#define GATE_BAD_REQUEST "bad_request"
#define GATE_TOOL_FAILED "tool_failed"
#define GATE_TOOL_TIMEOUT "tool_timeout"
#define GATE_CONTAINER_STOPPED "container_stopped"
#define GATE_AUDIT_UNAVAILABLE "audit_unavailable"
#define GATE_AUDIT_FULL "audit_full" /* this container's audit quota is reached */
#define GATE_ANOMALY "anomaly" /* an anomaly limit stopped the run (docs/policy.md) */

#define GATE_OUTCOME_UNKNOWN "outcome_unknown" /* the sidecar died mid-call */

struct gate;

/* What happened to the gate before this one, when a bridge sidecar died
 * and its supervisor starts another (or stops the container): the first
 * record of the continued log says so, then one record per call whose
 * outcome is unknown (docs/audit.md, "sidecar_died"). */
struct gate_resume {
  const char *reason;             /* "the bridge sidecar (pid N) was killed by signal 9" */
  const char *action;             /* "restart" or "stop" */
  long long dead_pid;
  unsigned restarts;              /* restarts in this run so far, this one included */
  const char *const *unknown_ids; /* calls in flight when it died (valid ids) */
  size_t nunknown;
  unsigned long long unlisted;    /* more of them, past the supervisor's bound */
};

struct gate_config {
  const char *container_id;
  const char *policy_path; /* NULL: no policy, every call is denied */
  const char *audit_dir;   /* the log is <audit_dir>/<container_id>.jsonl */
  const char *audit_key;   /* HMAC key file, or NULL */
  const char *approval_hook;
  int approval_timeout_ms;
  const char *approver_group;
  const char *control_socket; /* where the sidecar serves approve/pending/calls;
                                 NULL: none (unit tests) */
  bool defer_tools; /* leave the MCP servers to gate_start_tools() */
  const char *state_dir;   /* <root>/<id>, unique per --root and id, or NULL:
                              when <id>.jsonl is being written under another
                              root, the log is <id>@<hash of state_dir>.jsonl */
  unsigned long long audit_max_bytes; /* the log's quota; 0: 256 MiB
                                         (AUDIT_DEFAULT_MAX_BYTES) */
  const struct gate_resume *resume;   /* NULL: a new run ("open") */
  const char *policy_ceiling; /* the host config's policy_ceiling, or NULL:
                                 add_tool counts against its
                                 max_custom_tools too */
};

/* Load the policy and open the audit log.  A broken policy fails here with
 * every error and its line, column and field path. */
int gate_open(const struct gate_config *cfg, struct gate **out, tg_error **err);

/* Record a dead sidecar without opening a gate (the supervisor, which
 * stops the container instead of restarting it): the log is continued with
 * cfg->resume's records, then closed.  0 or -1 with *err. */
int gate_record_death(const struct gate_config *cfg, tg_error **err);

/* Start the policy's MCP servers, when gate_open() was told to defer them.
 * They die with the thread that starts them (PR_SET_PDEATHSIG), so a gate
 * opened on a short-lived thread starts them here, from the thread that
 * serves it.  Call before the gate serves any call. */
int gate_start_tools(struct gate *g, tg_error **err);

/* Stop serving the control socket and remove it, before gate_close()
 * (which otherwise does it): for a caller about to remove its directory. */
void gate_stop_control(struct gate *g);

/* Write tools.json (name, description, args schema, timeout of each tool)
 * into dirfd/name for the in-container clients.  The gate keeps a dup of
 * dirfd and the name, and writes the file again when a tool is added
 * (gate_add_tool), so the container's next `from tollgate import` finds it. */
int gate_write_tools_json(struct gate *g, int dirfd, const char *name,
                          tg_error **err);

/* Govern and run one call.  request is the parsed request body (NULL when
 * it could not be parsed: then bad_reason says why, and the attempt is
 * still counted and audited).  Returns the response body, owned by the
 * caller.  Thread-safe; may block while the call waits for approval. */
char *gate_handle(struct gate *g, const char *call_id, const json_t *request,
                  const char *bad_reason, size_t *len);

/* Count and audit an attempt that cannot be answered at all (for example an
 * invalid call id that cannot become a path). */
void gate_record_unanswerable(struct gate *g, const char *what);

/* Why the bridge refused an attempt without handing it to gate_handle. */
enum gate_refusal {
  GATE_REFUSED_BAD_ID,       /* the marker's name is not a valid id */
  GATE_REFUSED_REPLAY,       /* the id was answered already */
  GATE_REFUSED_UNREMEMBERED, /* the bridge's id set is full */
  GATE_REFUSED_WITHDRAWN,    /* the caller removed its request body */
  GATE_REFUSED_JUNK,         /* a file that is no part of the protocol */
  GATE_REFUSED_BACKOFF,      /* the bridge paused reading (what: for how long) */
};

/* Count an attempt the bridge refused (toward the hard cap, except junk
 * and back-off) and audit it: the first of each kind in full, later ones
 * only as counts in "summary" records (governance/refusals.h), so a flood
 * costs the log O(1).  call_id may be NULL; what is the full reason. */
void gate_record_refused(struct gate *g, enum gate_refusal why, const char *call_id,
                         const char *what);

/* Write the summaries of counted refusals whose window has passed: the
 * bridge calls this on its housekeeping tick. */
void gate_flush_refusals(struct gate *g);

/* Attempts refused so far without being run: over the cap, the bridge's
 * refusals, and calls refused audit_full.  Lock-free, for the bridge's
 * per-container back-off. */
unsigned long long gate_refused_count(struct gate *g);

/* The policy's max_tool_calls (every attempt counts toward it). */
long long gate_max_calls(struct gate *g);

/* The most approvals that may wait at once (the policy's max_pending). */
long long gate_max_pending(struct gate *g);

/* The container stopped: parked approvals end, later calls get
 * container_stopped.  Called before gate_close. */
void gate_container_stopped(struct gate *g);

/* fn(ctx) is called on the thread running gate_handle just before the call
 * may block: waiting for an approval, running a tool that is not builtin,
 * syncing an irreversible call's intent record.  The bridge's worker pool
 * uses it to let another worker take the next call.  NULL: none.  Set it
 * only while no gate_handle runs. */
void gate_set_block_hook(struct gate *g, void (*fn)(void *ctx), void *ctx);

/* fn(ctx, true) is called on the thread running gate_handle when its
 * call parks to wait for a person's approval, fn(ctx, false) when the
 * decision (or the timeout) came.  The bridge uses it so parked calls do
 * not count toward its worker pool.  NULL: none.  Set it only while no
 * gate_handle runs. */
void gate_set_park_hook(struct gate *g, void (*fn)(void *ctx, bool parked), void *ctx);

/* fn(ctx) is called, once, when an anomaly whose action is "stop" ends
 * the run (docs/policy.md, "Anomaly limits"), after the policy's
 * anomalies.stop_grace_ms (on a thread of the gate's; not at all when
 * gate_close comes first): it must get the container killed (the sidecar
 * signals the container's init through its pidfd, `tollgate run` kills
 * it as it forwards signals).  Every later call is refused from the stop
 * on, grace or not.  NULL: none (the calls are refused all the same).
 * Set it only while no gate_handle runs. */
void gate_set_stop_hook(struct gate *g, void (*fn)(void *ctx), void *ctx);

/* Did an anomaly stop the run?  true with *why (owned: "3 calls refused in
 * a row (denials_in_a_row: 3, action stop)") and *call_id (owned, or
 * NULL): the call whose "anomaly" record in the audit log says so. */
bool gate_anomaly_stop(struct gate *g, char **why, char **call_id);

/* Write the closing audit records and free everything.  No gate_handle may
 * be running or start once gate_close is called.  0, or -1 when records
 * (the closing ones included) could not be written (audit_close()). */
int gate_close(struct gate *g);

/* --- additions (governance issue) -------------------------------------- */

/* Parse and check a policy file without starting anything: `create` calls
 * this so a broken policy stops it with every error and position. */
int gate_check_policy(const char *policy_path, tg_error **err);

/* The pure policy decision for one call (tool lookup by hash, argument
 * schema, rules), without counting, budgets, approval or audit: for
 * benchmarks and dry runs.  *reason is borrowed.  Thread-safe. */
enum gate_decision {
  GATE_DECISION_DENY,
  GATE_DECISION_ALLOW,
  GATE_DECISION_APPROVE,
  GATE_DECISION_UNKNOWN_TOOL,
  GATE_DECISION_BAD_REQUEST,
};
int gate_decide(struct gate *g, const char *tool, const json_t *args, const char **reason);

/* What the control socket serves, for an in-process caller: the calls so
 * far with the budget ({"calls": [...], "budget": {...}}), and the calls
 * waiting for approval.  Owned by the caller. */
json_t *gate_calls_json(struct gate *g);
json_t *gate_pending_json(struct gate *g);

/* Approve or deny a parked call; who is recorded as the approver. */
int gate_decide_pending(struct gate *g, const char *call_id, bool approve, const char *who,
                        const char *reason, tg_error **err);

/* The effective approval timeout (the policy's, else the host config's,
 * else 60 s).  The clients' own timeout must exceed it, so the bridge
 * should publish this value, not the host config's, in bridge.json. */
int gate_approval_timeout_ms(struct gate *g);

/* Add one agent-written tool to the running gate (the control socket's
 * add_tool verb; docs/policy.md "Adding a tool to a running gate"): entry
 * is the tool's policy entry, which must carry source_sha256 and name no
 * tool the policy has; it is validated as the policy loader validates it
 * and counted against budgets.max_custom_tools (and the host ceiling's).
 * Nothing else changes: budgets, counters and the other tools stay.  A
 * synced "tool_added" audit record (name, digest, entry, who) comes
 * first; a restarted sidecar adds the tool again from it.  0, or -1 with
 * *err naming the problem. */
int gate_add_tool(struct gate *g, const char *name, const json_t *entry, const char *who,
                  tg_error **err);

/* The audit log's path (borrowed). */
const char *gate_audit_path(struct gate *g);

#endif

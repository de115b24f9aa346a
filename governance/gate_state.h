/* The state of one gate, shared by the files that make it up and by no
 * one else (the bridge and the tests use gate.h):
 *   gate.c           open, tools.json, the bridge's refusals, close;
 *   govern.c         one call: decide, budget, run, record;
 *   control_verbs.c  what the control socket answers (pending, calls,
 *                    approve, deny, cancel);
 *   call_list.c      the calls list those answers show;
 *   gate_tools.c     agent-written tools added to the live gate (add_tool)
 *                    and a restarted sidecar's replay of them. */
#ifndef TOLLGATE_GATE_STATE_H
#define TOLLGATE_GATE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"

struct policy;
struct audit;
struct refusals;
struct budget;
struct approvals;
struct mcp_client;
struct control;
struct call_list;
struct anomalies;

struct gate {
  char *container_id;
  struct policy *policy; /* NULL: no policy */
  struct audit *audit;
  struct refusals *refusals; /* over-cap and bridge refusals, counted */
  struct budget *budget;
  struct approvals *approvals;
  char **hook;       /* borrowed from the policy, or host_hook */
  char *host_hook[2];
  int approval_timeout_ms;
  struct mcp_client **mcp; /* parallel to policy->mcp */
  struct control *control;
  pthread_mutex_t mu; /* budget, calls, stopped, cancelled */
  bool stopped;
  bool cancelled; /* by the control socket's cancel verb: stopped for good */
  struct call_list *calls;
  atomic_ullong refused; /* refused without a policy decision; see gate_refused_count */
  void (*block_hook)(void *ctx); /* see gate_set_block_hook */
  void *block_ctx;
  void (*park_hook)(void *ctx, bool parked); /* see gate_set_park_hook */
  void *park_ctx;
  struct anomalies *anomalies; /* the policy's anomaly limits, watched */
  void (*stop_hook)(void *ctx); /* see gate_set_stop_hook */
  void *stop_ctx;
  atomic_bool stop_requested;   /* the stop hook is called once */
  struct stop_grace *grace;     /* a stop's grace, until the hook is called */
  char *stop_why;               /* the anomaly that stopped the run (mu) */
  char *stop_call;              /* the call that reached it (mu) */
  /* Agent-written tools added while the gate runs (gate_tools.c).  The
   * policy's tools array and table change only under tools_lock held for
   * writing (and mu, for the budget's per-tool counters and budget_to_json);
   * every lookup or walk of them while calls are served holds it for
   * reading.  Tools are never removed or freed before gate_close, so a
   * looked-up tool outlives the lock. */
  pthread_rwlock_t tools_lock;
  pthread_mutex_t add_mu;   /* one add_tool at a time: check, record, insert */
  char *policy_ceiling;     /* the host config's ceiling, or NULL */
  int tools_dirfd;          /* where tools.json was written (a dup), or -1 */
  char *tools_name;
};

/* The control socket's handler (control.h's control_handler), ctx being
 * the gate; in control_verbs.c. */
json_t *gate_answer_control(void *ctx, const json_t *req, uid_t uid, bool may_decide);

/* {"verb":"add_tool","name":N,"entry":{...}} from a peer of uid; in
 * gate_tools.c. */
json_t *gate_add_tool_verb(struct gate *g, const json_t *req, uid_t uid);

/* A resumed run: add again the tools its log's current segment records
 * as added ("tool_added"), before its budgets are replayed; gate_tools.c. */
int gate_replay_added_tools(struct gate *g, tg_error **err);

#endif

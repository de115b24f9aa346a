/* A run's spending, read back from its audit log: when a bridge sidecar
 * dies and a new one continues the run (gate_config.resume), the new
 * gate's budgets start from what the log's current segment (from its last
 * "open" record) shows was spent, so a sidecar's death, however caused,
 * never hands the container a fresh budget.
 */
#ifndef TOLLGATE_BUDGET_REPLAY_H
#define TOLLGATE_BUDGET_REPLAY_H

#include "governance/budget.h"
#include "base/error.h"

/* Replay the log at path into b (a new budget of policy p, which may be
 * NULL), exactly as the gates that wrote it counted: one attempt toward
 * max_tool_calls per "call", "intent", "unanswerable" and "withdrawn"
 * record and per counted attempt of a "summary"; an "unknown" record
 * (a call in flight when a sidecar died) only when that sidecar wrote no
 * such record of the same call id, and once per id however often it is
 * named; the calls a death left beyond the ones named one by one.
 * Allowed calls take their cost, irreversible and per-tool share; calls
 * the rules saw (an approver on record) count toward the repeat limit.
 * Only the log's current segment counts: an "open" record starts a new
 * run of a reused id.  What the log cannot show is not counted: the
 * attempts a killed sidecar had counted into a summary not yet written
 * (at most one summary window of refused attempts).  0 or -1 with
 * *err. */
int budget_replay_log(struct budget *b, const struct policy *p, const char *path, tg_error **err);

#endif

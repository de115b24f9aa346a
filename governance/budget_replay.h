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
 * NULL): every attempt counts toward max_tool_calls ("call", "intent",
 * "unanswerable", "withdrawn", "unknown", and the counted attempts of
 * "summary" records), allowed calls take their cost, irreversible and
 * per-tool share, and governed calls count toward the repeat limit.  An
 * "open" record starts the count again (a new run of a reused id).  It
 * errs toward spent: a call answered just before the crash may count
 * twice, never zero times.  0 or -1 with *err. */
int budget_replay_log(struct budget *b, const struct policy *p, const char *path, tg_error **err);

#endif

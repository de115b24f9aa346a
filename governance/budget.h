/* Budgets of one container run: the hard cap on attempts, the cost sum,
 * irreversible calls, per-tool call limits and the repeat limit.
 *
 * Not locked: the gate serializes every call into one budget under its
 * mutex.  A budget check that fails leaves nothing reserved, so a call that
 * would exceed a budget is denied and never runs. */
#ifndef TOLLGATE_BUDGET_H
#define TOLLGATE_BUDGET_H

#include <stdbool.h>

#include "governance/policy.h"
#include "base/json.h"

struct budget;

/* limits may be NULL (no policy): the default cap of 50 applies.  The
 * budget keeps pointers into p, which must outlive it. */
struct budget *budget_new(const struct policy *p);
void budget_free(struct budget *b);

/* Count one attempt toward max_tool_calls.  Every attempt counts, allowed
 * or not.  Returns false (and *why, static) when this attempt is over the
 * cap. */
bool budget_count_attempt(struct budget *b, const char **why);

/* Count the (tool, args) pair toward the repeat limit.  Returns false with
 * an owned *why when the same call has now been made more than
 * repeat_limit times. */
bool budget_count_repeat(struct budget *b, const struct tool *t, const json_t *args,
                         char **why);

/* Would running t now exceed max_cost, max_irreversible or t's max_calls?
 * Returns true when it fits, else false with an owned *why. */
bool budget_fits(const struct budget *b, const struct tool *t, char **why);

/* budget_fits, then take t's share (cost, irreversible, per-tool count). */
bool budget_reserve(struct budget *b, const struct tool *t, char **why);

/* Take t's share whatever the limits say: a call the log shows ran
 * (budget_replay.h) spent its share even past a limit. */
void budget_take(struct budget *b, const struct tool *t);

/* Forget everything spent (a new run of the same log). */
void budget_reset(struct budget *b);

/* The policy gained a tool (policy_insert_tool): its per-tool counter
 * starts at 0; every other counter is left as it is. */
void budget_tool_added(struct budget *b);

/* Give back a reservation for a call that never ran (e.g. its intent
 * record could not be written). */
void budget_release(struct budget *b, const struct tool *t);

/* {"calls": {"used": N, "max": M}, "cost": {...}, "irreversible": {...},
 *  "tools": {"name": {"used": N, "max": M}, ...}} (owned). */
json_t *budget_to_json(const struct budget *b);

/* Canonical JSON (object keys sorted, no spaces): the same arguments in any
 * key order give the same bytes.  Owned. */
char *json_canonical(const json_t *v, size_t *len);

#endif

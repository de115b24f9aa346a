/* The calls of one gate's run, as `tollgate calls` and the cancel record
 * show them: each call's id, tool, decision, status, start time and
 * duration, in the order they came.  The first CALL_LIST_KEPT calls of a
 * run are kept; later ones are not listed (they are still governed and
 * audited).
 *
 * Not thread-safe: the gate holds its lock (the one that also guards its
 * budget) around every function here, so a listing and the budget beside
 * it are read at one moment. */
#ifndef TOLLGATE_CALL_LIST_H
#define TOLLGATE_CALL_LIST_H

#include <stddef.h>

#include "base/json.h"

#define CALL_LIST_KEPT 10000

struct call_list;

struct call_list *call_list_new(void);
void call_list_free(struct call_list *l);

/* A new call, "pending" with no decision yet; tool may be NULL (not read
 * yet).  Returns its index, or -1 when the list is full (then the other
 * functions ignore it). */
long call_list_begin(struct call_list *l, const char *id, const char *tool);

/* Name the call's tool, once the request is read. */
void call_list_set_tool(struct call_list *l, long idx, const char *tool);

/* decision and status are static strings; NULL leaves each as it is, and
 * so does a negative duration_ms. */
void call_list_update(struct call_list *l, long idx, const char *decision, const char *status,
                      long long duration_ms);

/* How many calls are listed. */
size_t call_list_count(const struct call_list *l);

/* Every call listed, for `tollgate calls`: [{"call", "time", "tool",
 * "decision", "status", "duration_ms"}, ...] (owned by the caller). */
json_t *call_list_json(const struct call_list *l);

/* The last max calls, for the cancel record: [{"call", "tool", "status"},
 * ...] (owned by the caller). */
json_t *call_list_tail_json(const struct call_list *l, size_t max);

#endif

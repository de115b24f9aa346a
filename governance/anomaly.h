/* Behavioural anomaly detection of one run (docs/policy.md, "Anomaly
 * limits"): the policy's "anomalies" limits watched over every call the
 * gate governs.
 *
 *   denials_in_a_row   calls refused as denied, unknown_tool or bad_request,
 *                      one after another (a program probing the policy);
 *                      a call that runs starts the count again;
 *   calls_per_second   more than N call attempts within any one second
 *                      (monotonic clock; N slots of memory, whatever the
 *                      number of calls); flagged at most once a second;
 *   failures_in_a_row  calls that ran and failed (tool_failed,
 *                      tool_timeout) one after another; a success resets;
 *   result_bytes       more than N bytes of results handed to the program;
 *   denials_in_window  C denials (as in a row) among the last N calls that
 *                      ran or were denied, whatever is interleaved (a
 *                      program probing between allowed calls); N slots of
 *                      memory.
 *
 * Each limit flags once, then counts again from zero.  Its action takes
 * effect at once, under this module's lock, so concurrent calls agree:
 * "stop" refuses every later call of the run (anomaly_state says
 * ANOMALY_STATE_STOPPED, for good), "park" makes later calls wait for
 * approval until one is approved (anomaly_acknowledge), "log" only
 * records.  The gate writes the "anomaly" audit record of each hit,
 * stops the container and tells the alert hook (govern.c).
 *
 * Thread-safe: its own mutex, held only for counting. */
#ifndef TOLLGATE_ANOMALY_H
#define TOLLGATE_ANOMALY_H

#include <stdbool.h>
#include <stddef.h>

#include "governance/policy.h"
#include "base/error.h"
#include "base/json.h"

/* One limit reached. */
struct anomaly_hit {
  enum anomaly_kind kind;
  enum anomaly_action action;
  long long limit;
  long long observed;  /* in a row, calls in the window, or bytes */
  long long window_ms; /* calls_per_second: how long those calls took; else -1 */
  long long calls;     /* denials_in_window: the window's size in calls; else 0 */
};

enum anomaly_state {
  ANOMALY_STATE_CLEAR,
  ANOMALY_STATE_PARKED,  /* calls wait for approval until one is approved */
  ANOMALY_STATE_STOPPED, /* every call is refused */
};

struct anomalies;

/* limits may be NULL or set nothing: nothing is then ever flagged.  The
 * limits are borrowed and must outlive the detector. */
struct anomalies *anomalies_new(const struct anomaly_limits *limits);
void anomalies_free(struct anomalies *a);

/* Does any limit apply?  (false: every other function is a no-op.) */
bool anomalies_enabled(const struct anomalies *a);

/* Where the run stands, and when it is not clear, *why (owned): the
 * anomaly that stopped or parked it, in words. */
enum anomaly_state anomaly_state(struct anomalies *a, char **why);

/* Count one call attempt at now_ns (monotonic) toward calls_per_second.
 * true with *hit when this attempt is over the limit. */
bool anomaly_count_attempt(struct anomalies *a, const char *call_id, unsigned long long now_ns,
                           struct anomaly_hit *hit);

/* A call's end: outcome is what the program got ("ok" or an error code),
 * ran whether the tool ran, bytes the size of the result handed over.
 * Fills hits and returns how many limits this call reached. */
size_t anomaly_count_outcome(struct anomalies *a, const char *call_id, const char *outcome,
                             bool ran, unsigned long long bytes,
                             struct anomaly_hit hits[ANOMALY_KINDS]);

/* A call parked for an anomaly was approved: later calls run freely. */
void anomaly_acknowledge(struct anomalies *a);

/* "3 denials in a row (denials_in_a_row: 3, action stop)" (owned). */
char *anomaly_describe(const struct anomaly_hit *h);

/* {"kind", "limit", "observed", "window_ms" (calls_per_second), "calls"
 * (denials_in_window), "action"}:
 * the figures of the "anomaly" audit record and of the alert (owned). */
json_t *anomaly_hit_json(const struct anomaly_hit *h);

/* The run's anomalies so far: how many, and the first ANOMALY_LISTED of
 * them as [{"call", "time", "kind", "limit", "observed", "action"}]
 * (owned), for `tollgate calls`. */
unsigned long long anomalies_count(struct anomalies *a);
json_t *anomalies_json(struct anomalies *a);
#define ANOMALY_LISTED 100

/* A sidecar restarted in the middle of a run carries on its anomaly
 * state: read back from the log's current segment (after its last "open"
 * record) the counters in a row, the window of denials, the result bytes (from the call records'
 * "result_bytes"), and the stop or unacknowledged park of its "anomaly"
 * records.  calls_per_second is not replayed: its window is one second of
 * the dead process's clock, and the restart takes longer than that.
 * 0 or -1 with *err. */
int anomaly_replay_log(struct anomalies *a, const char *path, tg_error **err);

#endif

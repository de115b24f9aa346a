/* Counted refusals: the audit cost of a flood is O(1).
 *
 * Attempts the gate refuses without governing them (over the call cap,
 * invalid ids, replays, withdrawn requests, ids the bridge cannot
 * remember, reads paused by the back-off) are not bounded by the policy's
 * cap, so a hostile container could otherwise grow the host's audit log
 * as fast as it can create files.  The first attempt of each kind is
 * written in full; later ones are counted, and at most one "summary"
 * record per kind per window says how many there were since which seq
 * (docs/audit.md, Summaries).  Thread-safe.
 */
#ifndef TOLLGATE_REFUSALS_H
#define TOLLGATE_REFUSALS_H

#include <stdbool.h>

#include "governance/audit.h"

enum refusal_kind {
  REFUSAL_OVER_CAP,     /* past max_tool_calls */
  REFUSAL_BAD_ID,       /* a marker whose name is not a valid id */
  REFUSAL_REPLAY,       /* a marker for an id already answered */
  REFUSAL_UNREMEMBERED, /* the bridge's id set is full */
  REFUSAL_WITHDRAWN,    /* the caller removed its request */
  REFUSAL_JUNK,         /* other files in calls/req */
  REFUSAL_BACKOFF,      /* the bridge paused reading the container */
  REFUSAL_KINDS
};

#define REFUSAL_WINDOW_MS 10000

struct refusals;

/* a is borrowed and must outlive the result.  window_ms 0: the default. */
struct refusals *refusals_new(struct audit *a, unsigned window_ms);

/* One refused attempt of kind k.  rec is its full record: written when it
 * is the first of its kind this run, else only counted (and a summary is
 * written when the kind's window has passed). */
void refusals_record(struct refusals *r, enum refusal_kind k, const struct audit_record *rec);

/* Write the summaries that are due (all: every nonzero count, for the
 * end of a run, before the closing record). */
void refusals_flush(struct refusals *r, bool all);

/* Refused attempts counted so far, every kind (for the bridge's back-off). */
unsigned long long refusals_total(struct refusals *r);

/* The kind's name in summary records ("over_cap", "bad_id", ...). */
const char *refusal_kind_name(enum refusal_kind k);

/* Flushes nothing: call refusals_flush(r, true) first.  NULL is fine. */
void refusals_free(struct refusals *r);

#endif

/* Verification of an audit log (see docs/audit.md).  Detects an edited
 * record (its hash no longer matches), a deleted, inserted or reordered
 * record (prev or seq breaks), truncation (no closing record), and a chain
 * rebuilt without the HMAC key. */
#ifndef TOLLGATE_VERIFY_H
#define TOLLGATE_VERIFY_H

#include <stdbool.h>

#include "base/error.h"
#include "base/json.h"

struct audit_verify_result {
  bool ok;
  long long records;       /* records read */
  long long verified;      /* records that verified, from the first */
  long long bad_line;      /* 1-based line of the first break, 0 if none */
  bool closed;             /* ends with a closed record */
  long long segments;      /* runs in the log: one per open record */
  long long crashed;       /* segments before the last that ended without closed */
  long long lost_intents;  /* intents without an outcome in those segments */
  long long open_intents;  /* ... and in the last segment, when it is not closed */
  char *message;           /* owned: what is wrong (or "ok ...") and where */
};

/* What audit_verify accepts besides a whole, closed log. */
enum {
  /* the last segment without a closing record (a running or crashed gate) */
  AUDIT_VERIFY_OPEN = 1,
  /* an earlier segment without one (a gate that crashed, and a later run
   * of the same id that appended its own segment) */
  AUDIT_VERIFY_CRASHED = 2,
};

/* Verify the log at path.  key_path: the HMAC key file, or NULL.
 *
 * A log is a sequence of segments, one per run of the container id: an
 * open record, the run's records, and (when its gate closed normally) a
 * closed record.  A segment that ends without closed was cut short: its
 * gate crashed or was killed, and an intent in it without an outcome may
 * or may not have happened.  That stays visible after later runs of the
 * same id append their own segments: res counts such segments and their
 * intents without an outcome, and the message names the first.
 *
 * accept: AUDIT_VERIFY_* flags; without AUDIT_VERIFY_OPEN a last segment
 * without closed fails, without AUDIT_VERIFY_CRASHED an earlier one does
 * (everything present must verify either way).  Returns 0 when the file
 * could be read (the verdict is in res), -1 with *err when it could not. */
int audit_verify(const char *path, const char *key_path, unsigned accept,
                 struct audit_verify_result *res, tg_error **err);
void audit_verify_result_clear(struct audit_verify_result *res);

/* Read every record of a log (no verification), in order, as an owned
 * array.  Unparseable lines are skipped.  The array holds the whole log:
 * for a log of any size use audit_each_record. */
int audit_read_records(const char *path, json_t **records, tg_error **err);

/* Call fn(ctx, record) on every record of a log, in order (no
 * verification; unparseable lines are skipped), streaming: memory is
 * bounded by the longest record, whatever the file's size.  fn returns
 * nonzero to stop early.  The record is borrowed for the call only.
 * audit_verify streams the same way. */
int audit_each_record(const char *path, int (*fn)(void *ctx, const json_t *rec), void *ctx,
                      tg_error **err);

#endif

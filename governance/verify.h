/* Verification of an audit log (see docs/audit.md).  Detects an edited
 * record (its hash no longer matches), a deleted, inserted or reordered
 * record (prev or seq breaks), truncation (no closing record), and a chain
 * rebuilt without the HMAC key. */
#ifndef TOLLGATE_VERIFY_H
#define TOLLGATE_VERIFY_H

#include <stdbool.h>

#include "shim/error.h"
#include "shim/json.h"

struct audit_verify_result {
  bool ok;
  long long records;       /* records read */
  long long verified;      /* records that verified, from the first */
  long long bad_line;      /* 1-based line of the first break, 0 if none */
  bool closed;             /* ends with a closed record */
  char *message;           /* owned: what is wrong (or "ok ...") and where */
};

/* Verify the log at path.  key_path: the HMAC key file, or NULL.
 * allow_open: a log without a closing record (a running or crashed gate)
 * passes when everything present verifies.  Returns 0 when the file could
 * be read (the verdict is in res), -1 with *err when it could not. */
int audit_verify(const char *path, const char *key_path, bool allow_open,
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

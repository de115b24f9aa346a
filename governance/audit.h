/* The tamper-evident audit log of one container: JSONL at 0600 in
 * <audit_dir>/<container id>.jsonl (format in docs/audit.md).
 *
 * Each line is one record with seq, time, container, event, call, tool,
 * args, decision, reason, approver, duration_ms, outcome, message, prev and
 * hash, where hash = SHA-256(prev || record-without-hash), or HMAC-SHA-256
 * with the key file when one is configured.  Records are written with one
 * write() each (O_APPEND) and group-committed by a flusher thread; a
 * synchronous record (an irreversible call's intent) is fdatasync'ed before
 * audit_append returns.  Thread-safe.
 */
#ifndef TOLLGATE_AUDIT_H
#define TOLLGATE_AUDIT_H

#include <stdbool.h>

#include "base/error.h"
#include "base/json.h"

#define AUDIT_HASH_HEX 64

struct audit;

struct audit_record {
  const char *event;    /* "open", "call", "intent", "outcome", "unanswerable",
                           "closed" */
  const char *call_id;  /* NULL for run-level events */
  const char *tool;
  const json_t *args;
  const char *decision; /* "allow", "deny", "approve" */
  const char *reason;
  const char *approver; /* "uid:0", "hook:NAME", "timeout", "policy" */
  long long duration_ms; /* < 0: none */
  const char *outcome;  /* "ok" or an error code */
  const char *message;  /* error message for a failed outcome */
  const json_t *extra;  /* event-specific object (open: alg, policy) */
};

/* Open or continue <dir>/<container_id>.jsonl and append an "open" record.
 * key_path: HMAC key file (at least 16 bytes), or NULL. */
int audit_open(const char *dir, const char *container_id, const char *key_path,
               const char *policy_path, struct audit **out, tg_error **err);

/* audit_open with the log named <dir>/<stem>.jsonl; state_dir (or NULL),
 * the container's state directory, is named in the open record.  Only one gate
 * writes a log at a time (an exclusive lock for the log's lifetime): a
 * second one fails with EBUSY. */
int audit_open_named(const char *dir, const char *stem, const char *container_id,
                     const char *key_path, const char *policy_path, const char *state_dir,
                     struct audit **out, tg_error **err);

/* audit_open_named, continuing a run rather than starting one: the first
 * record written is `resume` (its extra gains alg, policy, pid and
 * state_dir, as an open record has them) instead of "open".  A bridge
 * sidecar restarted after a crash opens its log so: the chain and the
 * run's segment go on, and the record says why (docs/audit.md).  An empty
 * (or damaged, moved-aside) log still starts with "open", then resume. */
int audit_open_resumed(const char *dir, const char *stem, const char *container_id,
                       const char *key_path, const char *policy_path, const char *state_dir,
                       const struct audit_record *resume, struct audit **out, tg_error **err);

/* "<id>@<16 hex of SHA-256(state_dir)>": the log's name for a container
 * whose <id>.jsonl is being written under another --root (owned). */
char *audit_log_stem_for_state(const char *container_id, const char *state_dir);

/* The default per-container size quota of a log (host config
 * audit_max_bytes). */
#define AUDIT_DEFAULT_MAX_BYTES (256ull << 20)
/* Room kept below the quota for the one "audit_full" record, summaries
 * and the "closed" record once the quota is reached. */
#define AUDIT_QUOTA_HEADROOM (64u << 10)

/* Limit the log to max_bytes (0: no limit).  Once a record would take the
 * file past max_bytes - AUDIT_QUOTA_HEADROOM, one "audit_full" record is
 * written (in the headroom) and every later append fails with EDQUOT,
 * except the "closed" record and summary records, which use the headroom.
 * Call before the log is shared between threads. */
void audit_set_quota(struct audit *a, unsigned long long max_bytes);

/* true once the quota is reached (it stays reached for this run). */
bool audit_full(struct audit *a);

/* The seq of the last record written. */
long long audit_last_seq(struct audit *a);

/* After a failed append: write one synced "resumed" record and say
 * whether the log is writable again.  Serialised: threads that find the
 * log unhealthy at once write one "resumed" record between them, not one
 * each.  true at once when the log is healthy. */
bool audit_resume(struct audit *a);

/* Append one record; sync forces it to disk before returning.  On failure
 * (disk full, I/O error) nothing partial is left in the file, the log is
 * marked unhealthy and -1 is returned; a later successful append marks it
 * healthy again. */
int audit_append(struct audit *a, const struct audit_record *r, bool sync, tg_error **err);

/* false after a failed append, until an append succeeds again. */
bool audit_healthy(struct audit *a);

/* The log's path (borrowed). */
const char *audit_path(const struct audit *a);

/* Append the "closed" record, sync and free.  NULL is fine (0).  0 when
 * the log is whole: the "closed" record reached the disk and no append
 * before it failed unrecovered; -1 when records were lost (a full or
 * failing audit disk), for the caller to say so. */
int audit_close(struct audit *a);

/* Compute the chain hash of body (the record without its hash field, as
 * bytes) after prev_hex, into out (65 bytes).  key may be NULL. */
void audit_chain_hash(const unsigned char *key, size_t keylen, const char *prev_hex,
                      const char *body, size_t bodylen, char out[AUDIT_HASH_HEX + 1]);

/* Read an HMAC key file (16..4096 bytes).  Owned buffer. */
int audit_read_key(const char *path, unsigned char **key, size_t *len, tg_error **err);

/* <dir>/<id>.jsonl (owned). */
char *audit_log_path(const char *dir, const char *container_id);

#endif

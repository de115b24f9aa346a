/* Approval of calls whose effect is "approve".
 *
 * Who decides, in order: the approval hook when one is configured (stdin:
 * the call as JSON; exit 0 approves, 1 denies, anything else is an error
 * that counts as a deny); otherwise a person through the control socket
 * (approvals_decide); and when nobody has decided by the timeout, the call
 * is denied, always.  At most max_pending calls wait at once; a further
 * call is refused immediately.  Thread-safe. */
#ifndef TOLLGATE_APPROVAL_H
#define TOLLGATE_APPROVAL_H

#include <stdbool.h>

#include "base/error.h"
#include "base/json.h"

enum approval_outcome {
  APPROVAL_APPROVED,
  APPROVAL_DENIED,   /* by the hook, a hook error, or a person */
  APPROVAL_TIMEOUT,  /* nobody decided in time */
  APPROVAL_FULL,     /* too many calls already waiting */
  APPROVAL_STOPPED,  /* the container stopped while the call waited */
};

struct approval_request {
  const char *container_id;
  const char *call_id;
  const char *tool;
  const json_t *args;
  const char *reason;      /* the rule's reason */
  char *const *hook;       /* argv, or NULL: a person decides */
  int timeout_ms;
};

struct approval_decision {
  enum approval_outcome outcome;
  char *approver; /* "uid:N", "hook:NAME", "timeout", "limit", "stopped" (owned) */
  char *reason;   /* the decider's reason, owned, may be NULL */
};

struct approvals;

struct approvals *approvals_new(long long max_pending);
void approvals_free(struct approvals *a);

/* Park the call until it is decided.  Blocks up to req->timeout_ms. */
void approval_request(struct approvals *a, const struct approval_request *req,
                      struct approval_decision *d);
void approval_decision_clear(struct approval_decision *d);

/* A person's decision for a parked call.  who is e.g. "uid:1000".  Fails
 * when no such call is waiting for a person. */
int approvals_decide(struct approvals *a, const char *call_id, bool approve, const char *who,
                     const char *reason, tg_error **err);

/* [{"call", "tool", "args", "reason", "waiting_ms", "timeout_ms",
 *   "decider": "person"|"hook"}] (owned). */
json_t *approvals_pending_json(struct approvals *a);

/* Tell a hook of something without asking it to decide (the anomaly
 * alert hook): what goes to its stdin as JSON, run as the approval hook is
 * run (the sandboxed runner of tools.h, killed after timeout_ms).  Its
 * exit status and output are not read.  Returns 0 when it ran, -1 with
 * *err when it could not be started. */
int approval_notify(char *const *hook, const json_t *what, int timeout_ms, tg_error **err);

/* The container stopped: every waiting call ends with APPROVAL_STOPPED and
 * later requests end the same way at once. */
void approvals_stop(struct approvals *a);

#endif

/* The approval state machine; see approval.h. */
#include "governance/approval.h"

#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "governance/tools.h"
#include "base/util.h"

enum park_state { PARK_WAITING, PARK_APPROVED, PARK_DENIED };

struct parked {
  const struct approval_request *req;
  bool hook_running;
  pid_t hook_pid; /* while the hook runs; guarded by the approvals mutex */
  enum park_state state;
  char *approver, *reason;
  unsigned long long since_ns;
  struct parked *next;
};

struct approvals {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  struct parked *list;
  long long count, max;
  bool stopped;
};

struct approvals *approvals_new(long long max_pending) {
  struct approvals *a = xcalloc(1, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&a->cond, &attr);
  pthread_condattr_destroy(&attr);
  a->max = max_pending > 0 ? max_pending : 10;
  return a;
}

void approvals_free(struct approvals *a) {
  if (a == NULL)
    return;
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cond);
  free(a);
}

void approval_decision_clear(struct approval_decision *d) {
  free(d->approver);
  free(d->reason);
  memset(d, 0, sizeof *d);
}

static void unlink_parked(struct approvals *a, struct parked *p) {
  for (struct parked **pp = &a->list; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      a->count--;
      return;
    }
}

static char *hook_name(char *const *hook) {
  const char *slash = strrchr(hook[0], '/');
  return xasprintf("hook:%s", slash ? slash + 1 : hook[0]);
}

/* The first line of the hook's stdout, if any, becomes the reason. */
static char *first_line(const char *s) {
  if (s == NULL || *s == '\0')
    return NULL;
  size_t n = strcspn(s, "\n");
  if (n > 200)
    n = 200;
  return n ? xstrndup(s, n) : NULL;
}

struct hook_watch {
  struct approvals *a;
  struct parked *p;
};

static void hook_pid(void *ctx, pid_t pid) {
  struct hook_watch *w = ctx;
  pthread_mutex_lock(&w->a->mu);
  w->p->hook_pid = pid;
  /* Stopped before the hook even started: end it now. */
  if (pid > 0 && w->a->stopped)
    kill(-pid, SIGKILL);
  pthread_mutex_unlock(&w->a->mu);
}

static void run_hook(struct approvals *a, struct parked *p, const struct approval_request *req,
                     struct approval_decision *d) {
  json_t *call = json_new_object();
  json_object_set(call, "container", json_new_string(req->container_id ? req->container_id : ""));
  json_object_set(call, "call", json_new_string(req->call_id));
  json_object_set(call, "tool", json_new_string(req->tool));
  json_object_set(call, "args", req->args ? json_copy(req->args) : json_new_object());
  json_object_set(call, "reason", json_new_string(req->reason ? req->reason : ""));
  size_t len = 0;
  cleanup_free char *input = json_dump(call, false, &len);
  json_free(call);
  d->approver = hook_name(req->hook);
  struct sandbox_output o;
  cleanup_error tg_error *err = NULL;
  struct hook_watch hw = {a, p};
  struct sandbox_watch watch = {hook_pid, &hw};
  if (sandbox_run(req->hook, NULL, input, len, req->timeout_ms, &watch, &o, &err) < 0) {
    d->outcome = APPROVAL_DENIED;
    d->reason = xasprintf("approval hook error (counted as a deny): %s", err->msg);
    return;
  }
  if (o.timed_out) {
    d->outcome = APPROVAL_TIMEOUT;
    d->reason = xasprintf("the approval hook did not decide within %d ms", req->timeout_ms);
  } else if (WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) {
    d->outcome = APPROVAL_APPROVED;
    d->reason = first_line(o.out);
  } else if (WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1) {
    d->outcome = APPROVAL_DENIED;
    d->reason = first_line(o.out);
    if (d->reason == NULL)
      d->reason = xstrdup("the approval hook denied the call");
  } else {
    d->outcome = APPROVAL_DENIED;
    char *tail = o.err_tail && *o.err_tail ? o.err_tail : NULL;
    d->reason = WIFEXITED(o.status)
                    ? xasprintf("approval hook error (exit status %d, counted as a deny)%s%s",
                                WEXITSTATUS(o.status), tail ? ": " : "", tail ? tail : "")
                    : xasprintf("approval hook error (killed by signal %d, counted as a deny)",
                                WTERMSIG(o.status));
  }
  sandbox_output_clear(&o);
}

int approval_notify(char *const *hook, const json_t *what, int timeout_ms, tg_error **err) {
  size_t len = 0;
  cleanup_free char *input = json_dump(what, false, &len);
  struct sandbox_output o;
  if (sandbox_run(hook, NULL, input, len, timeout_ms, NULL, &o, err) < 0)
    return -1;
  sandbox_output_clear(&o);
  return 0;
}

void approval_request(struct approvals *a, const struct approval_request *req,
                      struct approval_decision *d) {
  memset(d, 0, sizeof *d);
  struct parked p = {.req = req, .hook_running = req->hook != NULL,
                     .since_ns = monotonic_ns()};
  pthread_mutex_lock(&a->mu);
  if (a->stopped) {
    pthread_mutex_unlock(&a->mu);
    d->outcome = APPROVAL_STOPPED;
    d->approver = xstrdup("stopped");
    return;
  }
  if (a->count >= a->max) {
    pthread_mutex_unlock(&a->mu);
    d->outcome = APPROVAL_FULL;
    d->approver = xstrdup("limit");
    d->reason = xasprintf("%lld calls are already waiting for approval (the limit); try again later",
                          a->max);
    return;
  }
  p.next = a->list;
  a->list = &p;
  a->count++;
  if (req->hook) {
    pthread_mutex_unlock(&a->mu);
    run_hook(a, &p, req, d);
    pthread_mutex_lock(&a->mu);
    unlink_parked(a, &p);
    if (a->stopped && d->outcome != APPROVAL_APPROVED) {
      /* The hook was killed because the container stopped. */
      approval_decision_clear(d);
      d->outcome = APPROVAL_STOPPED;
      d->approver = xstrdup("stopped");
    }
    pthread_mutex_unlock(&a->mu);
    return;
  }
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += req->timeout_ms / 1000;
  deadline.tv_nsec += (long)(req->timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  while (p.state == PARK_WAITING && !a->stopped) {
    int r = pthread_cond_timedwait(&a->cond, &a->mu, &deadline);
    if (r == ETIMEDOUT)
      break;
  }
  unlink_parked(a, &p);
  if (p.state == PARK_APPROVED) {
    d->outcome = APPROVAL_APPROVED;
  } else if (p.state == PARK_DENIED) {
    d->outcome = APPROVAL_DENIED;
  } else if (a->stopped) {
    d->outcome = APPROVAL_STOPPED;
    p.approver = xstrdup("stopped");
  } else {
    /* Nobody answered: the timeout denies, always. */
    d->outcome = APPROVAL_TIMEOUT;
    p.approver = xstrdup("timeout");
    p.reason = xasprintf("nobody approved the call within %d s", (req->timeout_ms + 999) / 1000);
  }
  pthread_mutex_unlock(&a->mu);
  d->approver = p.approver;
  d->reason = p.reason;
}

int approvals_decide(struct approvals *a, const char *call_id, bool approve, const char *who,
                     const char *reason, tg_error **err) {
  pthread_mutex_lock(&a->mu);
  struct parked *p = a->list;
  while (p && strcmp(p->req->call_id, call_id) != 0)
    p = p->next;
  if (p == NULL || p->state != PARK_WAITING) {
    pthread_mutex_unlock(&a->mu);
    return tg_error_set(err, ENOENT, "no call %s is waiting for approval (see `tollgate pending`)",
                        call_id);
  }
  if (p->hook_running) {
    pthread_mutex_unlock(&a->mu);
    return tg_error_set(err, EBUSY, "call %s is being decided by the approval hook", call_id);
  }
  p->state = approve ? PARK_APPROVED : PARK_DENIED;
  p->approver = xstrdup(who);
  p->reason = reason ? xstrdup(reason) : NULL;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->mu);
  return 0;
}

json_t *approvals_pending_json(struct approvals *a) {
  json_t *arr = json_new_array();
  unsigned long long now = monotonic_ns();
  pthread_mutex_lock(&a->mu);
  for (struct parked *p = a->list; p; p = p->next) {
    if (p->state != PARK_WAITING)
      continue;
    json_t *o = json_new_object();
    json_object_set(o, "call", json_new_string(p->req->call_id));
    json_object_set(o, "tool", json_new_string(p->req->tool));
    json_object_set(o, "args", p->req->args ? json_copy(p->req->args) : json_new_object());
    json_object_set(o, "reason", json_new_string(p->req->reason ? p->req->reason : ""));
    json_object_set(o, "waiting_ms", json_new_integer((long long)((now - p->since_ns) / 1000000ULL)));
    json_object_set(o, "timeout_ms", json_new_integer(p->req->timeout_ms));
    json_object_set(o, "decider", json_new_string(p->hook_running ? "hook" : "person"));
    json_array_append(arr, o);
  }
  pthread_mutex_unlock(&a->mu);
  return arr;
}

void approvals_stop(struct approvals *a) {
  pthread_mutex_lock(&a->mu);
  a->stopped = true;
  /* A hook deciding for a container that is gone has nothing to decide:
   * end it (its group, while it is still ours: see sandbox_watch). */
  for (struct parked *p = a->list; p; p = p->next)
    if (p->hook_running && p->hook_pid > 0)
      kill(-p->hook_pid, SIGKILL);
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->mu);
}

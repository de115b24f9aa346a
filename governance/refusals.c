/* Counted refusals; see refusals.h and docs/audit.md. */
#include "governance/refusals.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"

struct kind_state {
  bool first_written;
  unsigned long long count;      /* counted since the last summary */
  long long since_seq;           /* the log's seq when counting began */
  unsigned long long last_emit;  /* monotonic ns of the last record */
};

struct refusals {
  struct audit *audit;
  unsigned long long window_ns;
  pthread_mutex_t mu;
  struct kind_state k[REFUSAL_KINDS];
  atomic_ullong total;
};

static const char *const names[REFUSAL_KINDS] = {
    [REFUSAL_OVER_CAP] = "over_cap",         [REFUSAL_BAD_ID] = "bad_id",
    [REFUSAL_REPLAY] = "replay",             [REFUSAL_UNREMEMBERED] = "unremembered",
    [REFUSAL_WITHDRAWN] = "withdrawn",       [REFUSAL_JUNK] = "junk",
    [REFUSAL_BACKOFF] = "backoff",
};

static const char *const what[REFUSAL_KINDS] = {
    [REFUSAL_OVER_CAP] = "over the call cap (max_tool_calls)",
    [REFUSAL_BAD_ID] = "call markers with an invalid id",
    [REFUSAL_REPLAY] = "replayed call ids",
    [REFUSAL_UNREMEMBERED] = "the bridge could not remember more call ids",
    [REFUSAL_WITHDRAWN] = "requests withdrawn by the caller",
    [REFUSAL_JUNK] = "other files in calls/req",
    [REFUSAL_BACKOFF] = "the bridge paused reading requests (too many refused attempts)",
};

const char *refusal_kind_name(enum refusal_kind k) {
  return k < REFUSAL_KINDS ? names[k] : "unknown";
}

struct refusals *refusals_new(struct audit *a, unsigned window_ms) {
  struct refusals *r = xcalloc(1, sizeof *r);
  r->audit = a;
  r->window_ns = (unsigned long long)(window_ms ? window_ms : REFUSAL_WINDOW_MS) * 1000000ull;
  pthread_mutex_init(&r->mu, NULL);
  atomic_init(&r->total, 0);
  return r;
}

/* With mu held: the summary of kind k, and its count starts again. */
static void emit(struct refusals *r, enum refusal_kind k, unsigned long long now) {
  struct kind_state *s = &r->k[k];
  if (s->count == 0)
    return;
  char reason[200];
  snprintf(reason, sizeof reason, "%llu attempts refused since seq %lld: %s", s->count,
           s->since_seq, what[k]);
  json_t *extra = json_new_object();
  json_object_set(extra, "kind", json_new_string(names[k]));
  json_object_set(extra, "count", json_new_integer((long long)s->count));
  json_object_set(extra, "since_seq", json_new_integer(s->since_seq));
  struct audit_record rec = {.event = "summary", .decision = "deny", .reason = reason,
                             .duration_ms = -1, .outcome = names[k], .extra = extra};
  audit_append(r->audit, &rec, false, NULL);
  json_free(extra);
  s->count = 0;
  s->last_emit = now;
}

void refusals_record(struct refusals *r, enum refusal_kind k, const struct audit_record *rec) {
  atomic_fetch_add(&r->total, 1);
  unsigned long long now = monotonic_ns();
  pthread_mutex_lock(&r->mu);
  struct kind_state *s = &r->k[k];
  if (!s->first_written) {
    s->first_written = true;
    s->last_emit = now;
    pthread_mutex_unlock(&r->mu);
    if (rec)
      audit_append(r->audit, rec, false, NULL);
    return;
  }
  if (s->count++ == 0)
    s->since_seq = audit_last_seq(r->audit);
  if (now - s->last_emit >= r->window_ns)
    emit(r, k, now);
  pthread_mutex_unlock(&r->mu);
}

void refusals_flush(struct refusals *r, bool all) {
  if (r == NULL)
    return;
  unsigned long long now = monotonic_ns();
  pthread_mutex_lock(&r->mu);
  for (int k = 0; k < REFUSAL_KINDS; k++)
    if (all || now - r->k[k].last_emit >= r->window_ns)
      emit(r, (enum refusal_kind)k, now);
  pthread_mutex_unlock(&r->mu);
}

unsigned long long refusals_total(struct refusals *r) { return atomic_load(&r->total); }

void refusals_free(struct refusals *r) {
  if (r == NULL)
    return;
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* Behavioural anomaly detection; see anomaly.h. */
#include "governance/anomaly.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/gate.h"
#include "governance/verify.h"
#include "base/util.h"

#define WINDOW_NS 1000000000ull

struct anomalies {
  const struct anomaly_limits *l; /* NULL: nothing is watched */
  pthread_mutex_t mu;
  long long denials, failures;  /* in a row */
  unsigned long long bytes;     /* results handed over since the last hit */
  /* calls_per_second: the times of the last `limit` attempts, a ring
   * whose oldest slot is `head`; fixed size, whatever the calls. */
  unsigned long long *ring;
  size_t nring, head;
  unsigned long long quiet_until; /* flag the rate at most once a window */
  /* denials_in_window: whether each of the last `calls` calls that ran
   * or was denied was a denial, a ring whose oldest slot is win_head;
   * win_len of them are filled, win_denials of those are denials. */
  unsigned char *win;
  size_t win_len, win_head;
  long long win_denials;
  enum anomaly_state state;
  char *why;                      /* of the stop or park */
  unsigned long long count;
  json_t *list;                   /* the first ANOMALY_LISTED hits */
};

bool anomalies_enabled(const struct anomalies *a) { return a != NULL && a->l != NULL; }

struct anomalies *anomalies_new(const struct anomaly_limits *limits) {
  struct anomalies *a = xcalloc(1, sizeof *a);
  pthread_mutex_init(&a->mu, NULL);
  a->list = json_new_array();
  for (int k = 0; limits && k < ANOMALY_KINDS; k++)
    if (limits->of[k].limit > 0)
      a->l = limits;
  if (a->l && a->l->of[ANOMALY_CALLS_PER_SECOND].limit > 0)
    a->ring = xcalloc((size_t)a->l->of[ANOMALY_CALLS_PER_SECOND].limit, sizeof *a->ring);
  if (a->l && a->l->of[ANOMALY_DENIALS_IN_WINDOW].limit > 0)
    a->win = xcalloc((size_t)a->l->of[ANOMALY_DENIALS_IN_WINDOW].calls, 1);
  return a;
}

void anomalies_free(struct anomalies *a) {
  if (a == NULL)
    return;
  pthread_mutex_destroy(&a->mu);
  free(a->ring);
  free(a->win);
  free(a->why);
  json_free(a->list);
  free(a);
}

char *anomaly_describe(const struct anomaly_hit *h) {
  const char *action = anomaly_action_name(h->action);
  const char *kind = anomaly_kind_name(h->kind);
  switch (h->kind) {
  case ANOMALY_DENIALS_IN_A_ROW:
    return xasprintf("%lld calls refused in a row (%s: %lld, action %s)", h->observed, kind,
                     h->limit, action);
  case ANOMALY_CALLS_PER_SECOND:
    return xasprintf("%lld calls within %lld ms (%s: %lld, action %s)", h->observed, h->window_ms,
                     kind, h->limit, action);
  case ANOMALY_FAILURES_IN_A_ROW:
    return xasprintf("%lld failed calls in a row (%s: %lld, action %s)", h->observed, kind, h->limit,
                     action);
  case ANOMALY_DENIALS_IN_WINDOW:
    return xasprintf("%lld calls refused among the last %lld (%s: %lld of %lld calls, action %s)",
                     h->observed, h->calls, kind, h->limit, h->calls, action);
  case ANOMALY_RESULT_BYTES:
  case ANOMALY_KINDS:
    break;
  }
  return xasprintf("%lld bytes of results handed to the program (%s: %lld, action %s)",
                   h->observed, kind, h->limit, action);
}

json_t *anomaly_hit_json(const struct anomaly_hit *h) {
  json_t *o = json_new_object();
  json_object_set(o, "kind", json_new_string(anomaly_kind_name(h->kind)));
  json_object_set(o, "limit", json_new_integer(h->limit));
  json_object_set(o, "observed", json_new_integer(h->observed));
  if (h->window_ms >= 0)
    json_object_set(o, "window_ms", json_new_integer(h->window_ms));
  if (h->calls > 0)
    json_object_set(o, "calls", json_new_integer(h->calls));
  json_object_set(o, "action", json_new_string(anomaly_action_name(h->action)));
  return o;
}

/* Take a hit's action and list it; a->mu held.  A stop is for good; a
 * park does not undo a stop. */
static void take(struct anomalies *a, const struct anomaly_hit *h, const char *call_id,
                 const char *time) {
  a->count++;
  if (json_array_len(a->list) < ANOMALY_LISTED) {
    json_t *e = anomaly_hit_json(h);
    json_object_set(e, "call", call_id ? json_new_string(call_id) : json_new_null());
    if (time)
      json_object_set(e, "time", json_new_string(time));
    else {
      char now[40];
      rfc3339_now(now, sizeof now);
      json_object_set(e, "time", json_new_string(now));
    }
    json_array_append(a->list, e);
  }
  if (h->action == ANOMALY_LOG || a->state == ANOMALY_STATE_STOPPED)
    return;
  free(a->why);
  a->why = anomaly_describe(h);
  a->state = h->action == ANOMALY_STOP ? ANOMALY_STATE_STOPPED : ANOMALY_STATE_PARKED;
}

enum anomaly_state anomaly_state(struct anomalies *a, char **why) {
  *why = NULL;
  if (!anomalies_enabled(a))
    return ANOMALY_STATE_CLEAR;
  pthread_mutex_lock(&a->mu);
  enum anomaly_state s = a->state;
  if (s != ANOMALY_STATE_CLEAR)
    *why = xstrdup(a->why);
  pthread_mutex_unlock(&a->mu);
  return s;
}

static struct anomaly_hit hit_of(const struct anomalies *a, enum anomaly_kind k,
                                 long long observed) {
  return (struct anomaly_hit){.kind = k, .action = a->l->of[k].action, .limit = a->l->of[k].limit,
                              .observed = observed, .window_ms = -1, .calls = a->l->of[k].calls};
}

bool anomaly_count_attempt(struct anomalies *a, const char *call_id, unsigned long long now_ns,
                           struct anomaly_hit *hit) {
  if (!anomalies_enabled(a) || a->ring == NULL)
    return false;
  size_t n = (size_t)a->l->of[ANOMALY_CALLS_PER_SECOND].limit;
  bool over = false;
  pthread_mutex_lock(&a->mu);
  if (a->nring < n) {
    a->ring[a->nring++] = now_ns;
  } else {
    /* The ring holds the last n attempts: when the oldest of them is
     * less than a second old, this one is the n+1-th within a second. */
    unsigned long long oldest = a->ring[a->head];
    if (now_ns - oldest < WINDOW_NS && now_ns >= a->quiet_until &&
        a->state != ANOMALY_STATE_STOPPED) {
      *hit = hit_of(a, ANOMALY_CALLS_PER_SECOND, (long long)n + 1);
      hit->window_ms = (long long)((now_ns - oldest) / 1000000ull);
      a->quiet_until = now_ns + WINDOW_NS;
      take(a, hit, call_id, NULL);
      over = true;
    }
    a->ring[a->head] = now_ns;
    a->head = (a->head + 1) % n;
  }
  pthread_mutex_unlock(&a->mu);
  return over;
}

static bool is_denial(const char *outcome) {
  return strcmp(outcome, GATE_DENIED) == 0 || strcmp(outcome, GATE_UNKNOWN_TOOL) == 0 ||
         strcmp(outcome, GATE_BAD_REQUEST) == 0;
}

static bool is_failure(const char *outcome) {
  return strcmp(outcome, GATE_TOOL_FAILED) == 0 || strcmp(outcome, GATE_TOOL_TIMEOUT) == 0;
}

/* denials_in_window: one more call that ran (denial false) or was
 * denied; true when the window now holds the limit's count of denials.
 * a->mu held. */
static bool window_push(struct anomalies *a, bool denial) {
  const struct anomaly_limit *l = &a->l->of[ANOMALY_DENIALS_IN_WINDOW];
  if (a->win == NULL)
    return false;
  size_t n = (size_t)l->calls;
  if (a->win_len < n) {
    a->win[(a->win_head + a->win_len++) % n] = denial;
  } else {
    a->win_denials -= a->win[a->win_head]; /* the oldest leaves */
    a->win[a->win_head] = denial;
    a->win_head = (a->win_head + 1) % n;
  }
  a->win_denials += denial;
  return a->win_denials >= l->limit;
}

static void window_clear(struct anomalies *a) {
  a->win_len = a->win_head = 0;
  a->win_denials = 0;
}

/* Count one outcome; a->mu held.  replay: rebuild the counters only (the
 * log's "anomaly" records say what was flagged). */
static size_t count_outcome(struct anomalies *a, const char *call_id, const char *outcome, bool ran,
                            unsigned long long bytes, bool replay,
                            struct anomaly_hit hits[ANOMALY_KINDS]) {
  const struct anomaly_limit *of = a->l->of;
  size_t n = 0;
  /* Stopped is for good: nothing more to flag, or to write. */
  replay |= a->state == ANOMALY_STATE_STOPPED;
  struct anomaly_hit h;
  bool in_window = false;
  if (ran) {
    a->denials = 0;
    in_window = window_push(a, false);
    /* A withheld result ("anomaly") was the tool's success all the same. */
    if (is_failure(outcome)) {
      a->failures++;
    } else {
      a->failures = 0;
      a->bytes += bytes;
    }
  } else if (is_denial(outcome)) {
    a->denials++;
    in_window = window_push(a, true);
  }
  if (of[ANOMALY_DENIALS_IN_A_ROW].limit > 0 && a->denials >= of[ANOMALY_DENIALS_IN_A_ROW].limit) {
    h = hit_of(a, ANOMALY_DENIALS_IN_A_ROW, a->denials);
    a->denials = 0;
    if (!replay)
      hits[n++] = h;
  }
  if (in_window) {
    /* Whatever the program interleaves, its denials fill the window. */
    h = hit_of(a, ANOMALY_DENIALS_IN_WINDOW, a->win_denials);
    window_clear(a);
    if (!replay)
      hits[n++] = h;
  }
  if (of[ANOMALY_FAILURES_IN_A_ROW].limit > 0 &&
      a->failures >= of[ANOMALY_FAILURES_IN_A_ROW].limit) {
    h = hit_of(a, ANOMALY_FAILURES_IN_A_ROW, a->failures);
    a->failures = 0;
    if (!replay)
      hits[n++] = h;
  }
  if (of[ANOMALY_RESULT_BYTES].limit > 0 &&
      a->bytes > (unsigned long long)of[ANOMALY_RESULT_BYTES].limit) {
    h = hit_of(a, ANOMALY_RESULT_BYTES, (long long)a->bytes);
    a->bytes = 0;
    if (!replay)
      hits[n++] = h;
  }
  for (size_t i = 0; i < n; i++)
    take(a, &hits[i], call_id, NULL);
  return n;
}

size_t anomaly_count_outcome(struct anomalies *a, const char *call_id, const char *outcome,
                             bool ran, unsigned long long bytes,
                             struct anomaly_hit hits[ANOMALY_KINDS]) {
  if (!anomalies_enabled(a) || outcome == NULL)
    return 0;
  pthread_mutex_lock(&a->mu);
  size_t n = count_outcome(a, call_id, outcome, ran, bytes, false, hits);
  pthread_mutex_unlock(&a->mu);
  return n;
}

void anomaly_acknowledge(struct anomalies *a) {
  if (!anomalies_enabled(a))
    return;
  pthread_mutex_lock(&a->mu);
  if (a->state == ANOMALY_STATE_PARKED) {
    a->state = ANOMALY_STATE_CLEAR;
    free(a->why);
    a->why = NULL;
  }
  pthread_mutex_unlock(&a->mu);
}

unsigned long long anomalies_count(struct anomalies *a) {
  if (a == NULL)
    return 0;
  pthread_mutex_lock(&a->mu);
  unsigned long long n = a->count;
  pthread_mutex_unlock(&a->mu);
  return n;
}

json_t *anomalies_json(struct anomalies *a) {
  if (a == NULL)
    return json_new_array();
  pthread_mutex_lock(&a->mu);
  json_t *l = json_copy(a->list);
  pthread_mutex_unlock(&a->mu);
  return l;
}

/* --- replay ----------------------------------------------------------------- */

static bool kind_named(const char *name, enum anomaly_kind *k) {
  for (int i = 0; name && i < ANOMALY_KINDS; i++)
    if (strcmp(name, anomaly_kind_name((enum anomaly_kind)i)) == 0) {
      *k = (enum anomaly_kind)i;
      return true;
    }
  return false;
}

static bool action_named(const char *name, enum anomaly_action *act) {
  for (int i = ANOMALY_STOP; name && i <= ANOMALY_LOG; i++)
    if (strcmp(name, anomaly_action_name((enum anomaly_action)i)) == 0) {
      *act = (enum anomaly_action)i;
      return true;
    }
  return false;
}

static void replay_anomaly(struct anomalies *a, const json_t *rec) {
  struct anomaly_hit h = {.window_ms = -1};
  if (!kind_named(json_string_value(json_object_get(rec, "kind")), &h.kind) ||
      !action_named(json_string_value(json_object_get(rec, "action")), &h.action))
    return;
  json_integer_value(json_object_get(rec, "limit"), &h.limit);
  json_integer_value(json_object_get(rec, "observed"), &h.observed);
  json_integer_value(json_object_get(rec, "window_ms"), &h.window_ms);
  json_integer_value(json_object_get(rec, "calls"), &h.calls);
  take(a, &h, json_string_value(json_object_get(rec, "call")),
       json_string_value(json_object_get(rec, "time")));
}

/* One record of the segment; a->mu held by anomaly_replay_log. */
static int replay_record(void *ctx, const json_t *rec) {
  struct anomalies *a = ctx;
  const char *event = json_string_value(json_object_get(rec, "event"));
  if (event == NULL)
    return 0;
  if (strcmp(event, "open") == 0) { /* a new run of the same log */
    a->denials = a->failures = 0;
    a->bytes = a->count = 0;
    window_clear(a);
    a->state = ANOMALY_STATE_CLEAR;
    json_free(a->list);
    a->list = json_new_array();
    return 0;
  }
  if (strcmp(event, "anomaly") == 0) {
    replay_anomaly(a, rec);
    return 0;
  }
  if (strcmp(event, "call") != 0 && strcmp(event, "outcome") != 0)
    return 0; /* an intent's outcome is its own record */
  const char *outcome = json_string_value(json_object_get(rec, "outcome"));
  const char *decision = json_string_value(json_object_get(rec, "decision"));
  if (outcome == NULL)
    return 0;
  bool allowed = decision && strcmp(decision, "allow") == 0;
  /* While parked every allowed call was approved first: the first one
   * after the park acknowledged it. */
  if (allowed && a->state == ANOMALY_STATE_PARKED) {
    a->state = ANOMALY_STATE_CLEAR;
    free(a->why);
    a->why = NULL;
  }
  /* An allowed call's record is the tool's own outcome, whatever its code
   * (an http tool may answer denied or bad_request itself): the live gate
   * counted it as run (govern.c gives a call it did not run "deny"). */
  bool ran = allowed;
  long long bytes = 0;
  json_integer_value(json_object_get(rec, "result_bytes"), &bytes);
  struct anomaly_hit unused[ANOMALY_KINDS];
  count_outcome(a, NULL, outcome, ran, bytes > 0 ? (unsigned long long)bytes : 0, true, unused);
  return 0;
}

int anomaly_replay_log(struct anomalies *a, const char *path, tg_error **err) {
  if (!anomalies_enabled(a))
    return 0;
  pthread_mutex_lock(&a->mu);
  int r = audit_each_record(path, replay_record, a, err);
  pthread_mutex_unlock(&a->mu);
  return r;
}

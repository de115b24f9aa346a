/* Replaying an audit log's segment into a budget; see budget_replay.h.
 *
 * Every record of an attempt counts once: "call", "intent", "unanswerable"
 * and "withdrawn" are each one attempt (a replayed id is a new attempt
 * with an old id, so these are never merged by id).  The one record that
 * can repeat an attempt is "unknown": the supervisor names every call
 * left in calls/req when a sidecar died, including one whose "call" or
 * "intent" that sidecar had already written (it died before removing the
 * request).  So an "unknown" counts only when the sidecar that died (the
 * records since the previous "open" or "sidecar_died") wrote no counted
 * record of that id, and once however often it is named.
 *
 * Two passes keep memory bounded by the unknown records (at most 1,024
 * per death), not by the calls: the first collects the ids each
 * "sidecar_died" names, the second counts. */
#include "governance/budget_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/id_set.h"
#include "governance/verify.h"
#include "base/util.h"

/* One sidecar death of the segment: how many calls it left in flight
 * ("unknown_calls") and how many of them are named by "unknown" records. */
struct death {
  long long unknown_calls, named;
};

struct replay {
  struct budget *b;
  const struct policy *p;
  /* "<death>:<id>" for every unknown record; flagged once that attempt
   * has been counted (by the dead sidecar's record, or an earlier
   * unknown record of the same death). */
  struct id_set *unknown;
  struct death *deaths;
  size_t ndeaths, cap;
  size_t epoch; /* deaths so far in the segment (second pass) */
  size_t nrec, start; /* records read; the index of the segment's "open" */
};

static bool is_event(const char *event, const char *name) { return strcmp(event, name) == 0; }

static char *unknown_key(size_t death, const char *id) { return xasprintf("%zu:%s", death, id); }

/* Summary kinds whose attempts count toward the cap (junk and back-off
 * are no call attempts; governance/refusals.c). */
static bool summary_counts(const char *kind) {
  static const char *const counted[] = {"over_cap", "bad_id", "replay", "unremembered",
                                        "withdrawn"};
  for (size_t i = 0; kind && i < sizeof counted / sizeof counted[0]; i++)
    if (strcmp(kind, counted[i]) == 0)
      return true;
  return false;
}

static void attempts(struct budget *b, long long n) {
  const char *why = NULL;
  for (long long i = 0; i < n; i++)
    budget_count_attempt(b, &why);
}

static void forget_segment(struct replay *r) {
  id_set_free(r->unknown);
  r->unknown = id_set_new();
  r->ndeaths = 0;
  r->epoch = 0;
}

/* First pass: the deaths of the segment and the ids they name. */
static int collect(void *ctx, const json_t *rec) {
  struct replay *r = ctx;
  const char *event = json_string_value(json_object_get(rec, "event"));
  r->nrec++;
  if (event == NULL)
    return 0;
  if (is_event(event, "open")) {
    forget_segment(r);
    r->start = r->nrec - 1;
  } else if (is_event(event, "sidecar_died")) {
    if (r->ndeaths == r->cap) {
      r->cap = r->cap ? r->cap * 2 : 8;
      r->deaths = xrealloc(r->deaths, r->cap * sizeof *r->deaths);
    }
    struct death *d = &r->deaths[r->ndeaths++];
    *d = (struct death){0};
    json_integer_value(json_object_get(rec, "unknown_calls"), &d->unknown_calls);
  } else if (is_event(event, "unknown") && r->ndeaths > 0) {
    const char *id = json_string_value(json_object_get(rec, "call"));
    r->deaths[r->ndeaths - 1].named++;
    if (id != NULL) {
      cleanup_free char *key = unknown_key(r->ndeaths, id);
      id_set_add(r->unknown, key);
    }
  }
  return 0;
}

/* A counted record of id in the current epoch: the next death's unknown
 * record of the same id is this attempt again. */
static void counted_id(struct replay *r, const char *id) {
  if (id == NULL || id_set_len(r->unknown) == 0)
    return;
  cleanup_free char *key = unknown_key(r->epoch + 1, id);
  id_set_mark(r->unknown, key);
}

/* An unknown record: true when it is an attempt not yet counted. */
static bool unknown_is_new(struct replay *r, const char *id) {
  if (id == NULL || r->epoch == 0)
    return true; /* no death to belong to: count it (errs toward spent) */
  cleanup_free char *key = unknown_key(r->epoch, id);
  bool seen = false;
  id_set_has(r->unknown, key, &seen);
  id_set_mark(r->unknown, key); /* a second naming in this death is this one */
  counted_id(r, id);            /* and so is the next death's, should this sidecar fail too */
  return !seen;
}

/* A sidecar_died record: the calls it left in flight beyond the 1,024
 * named ones are counted here (none of them can be told apart). */
static void on_death(struct replay *r) {
  r->epoch++;
  if (r->epoch > r->ndeaths)
    return;
  const struct death *d = &r->deaths[r->epoch - 1];
  if (d->unknown_calls > d->named)
    attempts(r->b, d->unknown_calls - d->named);
}

/* A governed record (call or intent) spends what the live gate spent:
 * its repeat count when the rules saw it (an approver is on record only
 * from the rules on: govern.c), its share when it was allowed (a call the
 * gate let run: one given back is recorded as denied). */
static void spend(struct replay *r, const json_t *rec) {
  const char *tool = json_string_value(json_object_get(rec, "tool"));
  const struct tool *t = tool && r->p ? policy_find(r->p, tool) : NULL;
  if (t == NULL)
    return;
  const json_t *args = json_object_get(rec, "args");
  if (json_is(args, JSON_OBJECT) && json_string_value(json_object_get(rec, "approver")) != NULL) {
    char *why = NULL;
    budget_count_repeat(r->b, t, args, &why);
    free(why);
  }
  const char *decision = json_string_value(json_object_get(rec, "decision"));
  if (decision && strcmp(decision, "allow") == 0) {
    char *why = NULL;
    if (!budget_reserve(r->b, t, &why))
      budget_take(r->b, t); /* spent is spent, over the limit or not */
    free(why);
  }
}

static int replay_record(void *ctx, const json_t *rec) {
  struct replay *r = ctx;
  const char *event = json_string_value(json_object_get(rec, "event"));
  /* Earlier segments are earlier runs: the budget starts at the last. */
  if (r->nrec++ < r->start || event == NULL)
    return 0;
  const char *id = json_string_value(json_object_get(rec, "call"));
  if (is_event(event, "open")) {
    budget_reset(r->b); /* a new run: the segment starts here */
    r->epoch = 0;
  } else if (is_event(event, "sidecar_died")) {
    on_death(r);
  } else if (is_event(event, "summary")) {
    long long n = 0;
    if (summary_counts(json_string_value(json_object_get(rec, "kind"))) &&
        json_integer_value(json_object_get(rec, "count"), &n) && n > 0)
      attempts(r->b, n);
  } else if (is_event(event, "unknown")) {
    if (unknown_is_new(r, id))
      attempts(r->b, 1);
  } else if (is_event(event, "unanswerable") || is_event(event, "withdrawn")) {
    attempts(r->b, 1);
    counted_id(r, id);
  } else if (is_event(event, "call") || is_event(event, "intent")) {
    attempts(r->b, 1);
    counted_id(r, id);
    spend(r, rec);
  }
  /* outcome (its intent counted), anomaly, junk, ...: no attempt */
  return 0;
}

int budget_replay_log(struct budget *b, const struct policy *p, const char *path, tg_error **err) {
  struct replay r = {.b = b, .p = p, .unknown = id_set_new()};
  int ret = audit_each_record(path, collect, &r, err);
  if (ret == 0) {
    r.epoch = 0;
    r.nrec = 0;
    ret = audit_each_record(path, replay_record, &r, err);
  }
  id_set_free(r.unknown);
  free(r.deaths);
  return ret;
}

/* Calls read back from an audit log; see call_replay.h. */
#include "governance/call_replay.h"

#include <stdbool.h>
#include <string.h>

#include "governance/budget.h"
#include "governance/budget_replay.h"
#include "governance/policy.h"
#include "governance/verify.h"
#include "base/util.h"

/* {"used": N, "max": null}: a count with no limit known. */
static json_t *used_no_max(double used) {
  json_t *o = json_new_object();
  json_object_set(o, "used", json_new_number(used));
  json_object_set(o, "max", json_new_null());
  return o;
}

/* The record's string field, or "" (a log's records are verified JSON, but
 * a field may be missing). */
static const char *field(const json_t *r, const char *key) {
  return json_string_value(json_object_get(r, key)) ?: "";
}

/* The row of the record's call, the latest of that id; NULL when the
 * record names no call or none is listed. */
static json_t *row_for(json_t *calls, const json_t *r) {
  const char *cid = json_string_value(json_object_get(r, "call"));
  for (size_t j = json_array_len(calls); cid && j-- > 0;) {
    json_t *c = json_array_get(calls, j);
    if (strcmp(field(c, "call"), cid) == 0)
      return c;
  }
  return NULL;
}

/* An "outcome" record: its call's status and duration. */
static void complete(json_t *calls, const json_t *r) {
  json_t *c = row_for(calls, r);
  if (c == NULL)
    return;
  json_object_set(c, "status", json_copy(json_object_get(r, "outcome")));
  json_object_set(c, "duration_ms", json_copy(json_object_get(r, "duration_ms")));
}

/* An "unknown" record: the sidecar died with this call in flight
 * (docs/audit.md).  When the call is listed already (its intent), its
 * status becomes "outcome_unknown" and true is returned; else it is a
 * call of its own, listed like any attempt. */
static bool mark_unknown(json_t *calls, const json_t *r) {
  json_t *c = row_for(calls, r);
  if (c == NULL)
    return false;
  json_object_set(c, "status", json_new_string("outcome_unknown"));
  return true;
}

/* An "anomaly" record in the live gate's shape (anomaly.h's
 * anomalies_json). */
static json_t *anomaly_of(const json_t *r) {
  static const char *const keys[] = {"call", "time", "kind", "limit", "observed",
                                     "window_ms", "calls", "action"};
  json_t *a = json_new_object();
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
    if (json_object_get(r, keys[k]))
      json_object_set(a, keys[k], json_copy(json_object_get(r, keys[k])));
  return a;
}

/* An attempt's row: call, time, tool, decision, status, duration_ms. */
static json_t *row_of(const json_t *r, bool intent) {
  json_t *c = json_new_object();
  const json_t *cid = json_object_get(r, "call");
  json_object_set(c, "call", json_is(cid, JSON_STRING) ? json_copy(cid) : json_new_string(""));
  json_object_set(c, "time", json_copy(json_object_get(r, "time")));
  const json_t *tool = json_object_get(r, "tool");
  json_object_set(c, "tool", json_is(tool, JSON_STRING) ? json_copy(tool) : json_new_string(""));
  json_object_set(c, "decision", json_copy(json_object_get(r, "decision")));
  json_object_set(c, "status", intent ? json_new_string("no outcome recorded")
                                      : json_copy(json_object_get(r, "outcome")));
  json_object_set(c, "duration_ms", json_copy(json_object_get(r, "duration_ms")));
  return c;
}

static bool is_attempt(const char *ev) {
  return strcmp(ev, "call") == 0 || strcmp(ev, "intent") == 0 || strcmp(ev, "unanswerable") == 0 ||
         strcmp(ev, "withdrawn") == 0 || strcmp(ev, "unknown") == 0;
}

json_t *call_replay_log(const char *path, const char *id, tg_error **err) {
  cleanup_json json_t *recs = NULL;
  if (audit_read_records(path, &recs, err) < 0)
    return NULL;
  size_t start = 0;
  for (size_t i = 0; i < json_array_len(recs); i++)
    if (strcmp(field(json_array_get(recs, i), "event"), "open") == 0)
      start = i;
  json_t *calls = json_new_array();
  json_t *anomalies = json_new_array();
  for (size_t i = start; i < json_array_len(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    const char *ev = field(r, "event");
    if (strcmp(ev, "unknown") == 0 && mark_unknown(calls, r))
      continue;
    if (strcmp(ev, "outcome") == 0)
      complete(calls, r);
    else if (strcmp(ev, "anomaly") == 0)
      json_array_append(anomalies, anomaly_of(r));
    else if (is_attempt(ev))
      json_array_append(calls, row_of(r, strcmp(ev, "intent") == 0));
  }
  /* The spending: the run's policy gives the limits, if it can still be
   * read; the count is the resumed gate's. */
  struct policy *pol = NULL;
  const char *ppath = json_string_value(json_object_get(json_array_get(recs, start), "policy"));
  if (ppath)
    policy_load(ppath, &pol, NULL);
  struct budget *b = budget_new(pol);
  json_t *budget = NULL;
  if (budget_replay_log(b, pol, path, err) == 0) {
    budget = budget_to_json(b);
    if (pol == NULL) { /* budget_new's default cap is not the run's */
      long long used = 0;
      json_integer_value(json_get_path(budget, "calls.used"), &used);
      json_object_set(budget, "calls", used_no_max((double)used));
    }
  }
  budget_free(b);
  policy_free(pol);
  if (budget == NULL) {
    json_free(calls);
    json_free(anomalies);
    return NULL;
  }
  json_object_set(budget, "anomalies", used_no_max((double)json_array_len(anomalies)));
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(true));
  json_object_set(o, "container", json_new_string(id));
  json_object_set(o, "source", json_new_string(path));
  json_object_set(o, "calls", calls);
  json_object_set(o, "anomalies", anomalies);
  json_object_set(o, "budget", budget);
  return o;
}

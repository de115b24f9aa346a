/* tollgate calls ID [--format json]: the calls so far with their decision
 * and status, and the budget remaining.  Asks the live gate over its
 * control socket; once the container is gone, rebuilds the list from the
 * container's audit log (the latest run in it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/audit.h"
#include "governance/control.h"
#include "governance/policy.h"
#include "governance/verify.h"
#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "base/term_escape.h"
#include "base/util.h"

static json_t *used_max(double used, double max) {
  json_t *o = json_new_object();
  json_object_set(o, "used", json_new_number(used));
  json_object_set(o, "max", max >= 0 ? json_new_number(max) : json_new_null());
  if (max >= 0)
    json_object_set(o, "remaining", json_new_number(max - used > 0 ? max - used : 0));
  return o;
}

/* {"calls": [...], "budget": {"calls": {"used": N, "max": null}}} from the
 * records after the last "open" record of the log. */
static json_t *calls_from_log(const char *path, const char *id, tg_error **err) {
  cleanup_json json_t *recs = NULL;
  if (audit_read_records(path, &recs, err) < 0)
    return NULL;
  size_t start = 0;
  for (size_t i = 0; i < json_array_len(recs); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(recs, i), "event")) ?: "", "open") == 0)
      start = i;
  /* The run's policy (named in its open record) gives the limits, if it
   * can still be read. */
  struct policy *pol = NULL;
  const char *ppath = json_string_value(json_object_get(json_array_get(recs, start), "policy"));
  if (ppath)
    policy_load(ppath, &pol, NULL);
  double cost = 0;
  long long irreversible = 0;
  json_t *calls = json_new_array();
  json_t *anomalies = json_new_array();
  long long attempts = 0;
  for (size_t i = start; i < json_array_len(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    const char *ev = json_string_value(json_object_get(r, "event"));
    if (ev == NULL)
      continue;
    if (strcmp(ev, "unknown") == 0) {
      /* The sidecar died with this call in flight (docs/audit.md): it
       * completes an intent of the same call, or is a call of its own,
       * counted like any attempt, whose tool nobody read. */
      const char *cid = json_string_value(json_object_get(r, "call"));
      bool found = false;
      for (size_t j = json_array_len(calls); cid && !found && j-- > 0;) {
        json_t *c = json_array_get(calls, j);
        if (strcmp(json_string_value(json_object_get(c, "call")), cid) == 0) {
          json_object_set(c, "status", json_new_string("outcome_unknown"));
          found = true;
        }
      }
      if (found)
        continue;
    }
    if (strcmp(ev, "outcome") == 0) {
      /* completes the intent record of the same call */
      const char *cid = json_string_value(json_object_get(r, "call"));
      for (size_t j = json_array_len(calls); j-- > 0;) {
        json_t *c = json_array_get(calls, j);
        if (cid && strcmp(json_string_value(json_object_get(c, "call")), cid) == 0) {
          json_object_set(c, "status", json_copy(json_object_get(r, "outcome")));
          json_object_set(c, "duration_ms", json_copy(json_object_get(r, "duration_ms")));
          break;
        }
      }
      continue;
    }
    if (strcmp(ev, "anomaly") == 0) {
      /* the live gate's shape (anomaly.h's anomalies_json) */
      static const char *const keys[] = {"call", "time", "kind", "limit", "observed",
                                         "window_ms", "calls", "action"};
      json_t *a = json_new_object();
      for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (json_object_get(r, keys[k]))
          json_object_set(a, keys[k], json_copy(json_object_get(r, keys[k])));
      json_array_append(anomalies, a);
      continue;
    }
    if (strcmp(ev, "summary") == 0) {
      /* counted refusals: attempts too, except junk files and pauses */
      const char *kind = json_string_value(json_object_get(r, "kind"));
      long long n = 0;
      if (kind && strcmp(kind, "junk") != 0 && strcmp(kind, "backoff") != 0 &&
          json_integer_value(json_object_get(r, "count"), &n))
        attempts += n;
      continue;
    }
    if (strcmp(ev, "call") != 0 && strcmp(ev, "intent") != 0 && strcmp(ev, "unanswerable") != 0 &&
        strcmp(ev, "withdrawn") != 0 && strcmp(ev, "unknown") != 0)
      continue;

    attempts++;
    const struct tool *pt = pol ? policy_find(pol, json_string_value(json_object_get(r, "tool")) ?: "") : NULL;
    if (pt && strcmp(json_string_value(json_object_get(r, "decision")) ?: "", "allow") == 0) {
      cost += pt->cost;
      irreversible += pt->irreversible;
    }
    json_t *c = json_new_object();
    const json_t *cid = json_object_get(r, "call");
    json_object_set(c, "call", json_is(cid, JSON_STRING) ? json_copy(cid) : json_new_string(""));
    json_object_set(c, "time", json_copy(json_object_get(r, "time")));
    const json_t *tool = json_object_get(r, "tool");
    json_object_set(c, "tool", json_is(tool, JSON_STRING) ? json_copy(tool) : json_new_string(""));
    json_object_set(c, "decision", json_copy(json_object_get(r, "decision")));
    if (strcmp(ev, "intent") == 0)
      json_object_set(c, "status", json_new_string("no outcome recorded"));
    else
      json_object_set(c, "status", json_copy(json_object_get(r, "outcome")));
    json_object_set(c, "duration_ms", json_copy(json_object_get(r, "duration_ms")));
    json_array_append(calls, c);
  }
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(true));
  json_object_set(o, "container", json_new_string(id));
  json_object_set(o, "source", json_new_string(path));
  json_object_set(o, "calls", calls);
  json_t *budget = json_new_object();
  json_object_set(budget, "anomalies", used_max((double)json_array_len(anomalies), -1));
  json_object_set(o, "anomalies", anomalies);
  json_object_set(budget, "calls", used_max((double)attempts, pol ? (double)pol->budgets.max_tool_calls : -1));
  if (pol) {
    json_object_set(budget, "cost", used_max(cost, pol->budgets.max_cost));
    json_object_set(budget, "irreversible",
                    used_max((double)irreversible, (double)pol->budgets.max_irreversible));
  }
  json_object_set(o, "budget", budget);
  policy_free(pol);
  return o;
}

static void print_used(const char *name, const json_t *b) {
  if (b == NULL)
    return;
  const json_t *used = json_object_get(b, "used"), *max = json_object_get(b, "max");
  cleanup_free char *u = json_dump(used, false, NULL);
  if (json_is(max, JSON_NUMBER)) {
    cleanup_free char *m = json_dump(max, false, NULL);
    cleanup_free char *r = json_dump(json_object_get(b, "remaining"), false, NULL);
    printf("  %-14s %s of %s used, %s remaining\n", name, u, m, r);
  } else {
    printf("  %-14s %s used (no limit)\n", name, u);
  }
}

int cmd_calls(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *id = NULL;
  bool json = false;
  if (args_parse_id_and_format("calls", argc, argv, &id, &json, err) < 0)
    return -1;
  if (id == NULL)
    return tg_error_set(err, 0, "usage: tollgate calls CONTAINER-ID [--format json]");
  if (!container_id_is_valid(id))
    return tg_error_set(err, 0, "calls: invalid container id \"%s\"", id);
  cleanup_free char *sock = xasprintf("%s/%s/control.sock", cli->root, id);
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string("calls"));
  cleanup_json json_t *reply = NULL;
  cleanup_error tg_error *qerr = NULL;
  if (control_request(sock, req, 5000, &reply, &qerr) < 0) {
    const char *dir = cli->config.audit_dir ? cli->config.audit_dir : "/var/log/tollgate/audit";
    /* <id>@<hash>.jsonl when this root's run of the id found <id>.jsonl
     * being written under another root (audit_open_named) */
    cleanup_free char *state = xasprintf("%s/%s", cli->root, id);
    cleanup_free char *stem = audit_log_stem_for_state(id, state);
    cleanup_free char *log = audit_log_path(dir, stem);
    if (access(log, F_OK) != 0) {
      free(log);
      log = audit_log_path(dir, id);
    }
    cleanup_error tg_error *lerr = NULL;
    reply = calls_from_log(log, id, &lerr);
    if (reply == NULL)
      return tg_error_set(err, 0, "calls %s: no live gate (%s) and no audit log (%s)", id, qerr->msg,
                          lerr->msg);
  }
  if (json) {
    cleanup_free char *s = json_dump(reply, true, NULL);
    cleanup_free char *shown = escape_for_terminal(s, true); /* the same JSON value */
    printf("%s\n", shown);
    return 0;
  }
  const json_t *calls = json_object_get(reply, "calls");
  printf("%-34s %-16s %-8s %-20s %8s  %s\n", "CALL", "TOOL", "DECISION", "STATUS", "MS", "TIME");
  for (size_t i = 0; i < json_array_len(calls); i++) {
    const json_t *c = json_array_get(calls, i);
    long long ms = -1;
    json_integer_value(json_object_get(c, "duration_ms"), &ms);
    char msbuf[24] = "-";
    if (ms >= 0)
      snprintf(msbuf, sizeof msbuf, "%lld", ms);
    const char *dec = json_string_value(json_object_get(c, "decision"));
    /* the tool name and the rest may be the container's: escaped, one row each */
    cleanup_free char *call = escape_for_terminal(json_string_value(json_object_get(c, "call")), false);
    cleanup_free char *tool = escape_for_terminal(json_string_value(json_object_get(c, "tool")), false);
    cleanup_free char *decision = escape_for_terminal(dec && *dec ? dec : "-", false);
    cleanup_free char *status = escape_for_terminal(json_string_value(json_object_get(c, "status")), false);
    cleanup_free char *time = escape_for_terminal(json_string_value(json_object_get(c, "time")), false);
    printf("%-34s %-16s %-8s %-20s %8s  %s\n", call, tool, decision, status, msbuf, time);
  }
  const json_t *anomalies = json_object_get(reply, "anomalies");
  if (json_array_len(anomalies) > 0)
    printf("anomalies:\n");
  for (size_t i = 0; i < json_array_len(anomalies); i++) {
    const json_t *a = json_array_get(anomalies, i);
    long long limit = 0, observed = 0;
    json_integer_value(json_object_get(a, "limit"), &limit);
    json_integer_value(json_object_get(a, "observed"), &observed);
    const char *call = json_string_value(json_object_get(a, "call"));
    cleanup_free char *cid = escape_for_terminal(call ? call : "-", false);
    cleanup_free char *kind = escape_for_terminal(json_string_value(json_object_get(a, "kind")) ?: "", false);
    cleanup_free char *action = escape_for_terminal(json_string_value(json_object_get(a, "action")) ?: "", false);
    long long calls = 0; /* denials_in_window: the window's size */
    json_integer_value(json_object_get(a, "calls"), &calls);
    if (calls > 0)
      printf("  %-34s %-18s %lld (limit %lld of %lld calls)  action %s\n", cid, kind, observed,
             limit, calls, action);
    else
      printf("  %-34s %-18s %lld (limit %lld)  action %s\n", cid, kind, observed, limit, action);
  }
  const json_t *b = json_object_get(reply, "budget");
  printf("budget%s:\n", json_object_get(reply, "source") ? " (from the audit log)" : "");
  print_used("tool calls", json_object_get(b, "calls"));
  print_used("cost", json_object_get(b, "cost"));
  print_used("irreversible", json_object_get(b, "irreversible"));
  /* anomalies count in the budget used; a run without any says nothing */
  const json_t *an = json_object_get(b, "anomalies");
  long long nan = 0;
  if (json_integer_value(json_object_get(an, "used"), &nan) && nan > 0)
    print_used("anomalies", an);
  const json_t *tools = json_object_get(b, "tools");
  for (size_t i = 0; tools && i < tools->u.object.len; i++) {
    cleanup_free char *n = escape_for_terminal(tools->u.object.keys[i], false);
    print_used(n, tools->u.object.values[i]);
  }
  return 0;
}

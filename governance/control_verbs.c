/* What a gate's control socket answers (control.h serves the socket):
 * pending, calls, approve, deny and cancel (add_tool is gate_tools.c's),
 * and the same listings for an in-process caller (gate.h). */
#include "governance/gate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/anomaly.h"
#include "governance/approval.h"
#include "governance/audit.h"
#include "governance/budget.h"
#include "governance/call_list.h"
#include "governance/gate_state.h"
#include "base/util.h"

static json_t *calls_json(struct gate *g) {
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(true));
  json_object_set(o, "container", json_new_string(g->container_id));
  /* the calls and the budget as they stood at one moment */
  pthread_mutex_lock(&g->mu);
  json_object_set(o, "calls", call_list_json(g->calls));
  json_t *budget = budget_to_json(g->budget);
  pthread_mutex_unlock(&g->mu);
  /* Anomalies count in the budget used (docs/policy.md, "Anomaly
   * limits"); the list says which, where and what was done. */
  json_t *n = json_new_object();
  json_object_set(n, "used", json_new_integer((long long)anomalies_count(g->anomalies)));
  json_object_set(n, "max", json_new_null());
  json_object_set(budget, "anomalies", n);
  json_object_set(o, "budget", budget);
  json_object_set(o, "anomalies", anomalies_json(g->anomalies));
  return o;
}

static json_t *reply_error(const char *fmt, const char *arg) {
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(false));
  cleanup_free char *msg = xasprintf(fmt, arg);
  json_object_set(o, "error", json_new_string(msg));
  return o;
}

#define CANCEL_CALLS_RECORDED 100

/* {"verb":"cancel","reason":TEXT}: whoever started the run gave up on it
 * (tollgate mcp on an MCP client's notifications/cancelled).  From here on
 * no call runs: later calls end with container_stopped and parked ones are
 * woken to end the same way, so the calls the log shows before the
 * container is killed are all that ran.  One synced "cancelled" record
 * names who cancelled (from the kernel) and the calls as they stood: each
 * call, tool and status, the last CANCEL_CALLS_RECORDED of them. */
static json_t *cancel_run(struct gate *g, const json_t *req, uid_t uid) {
  const char *reason = json_string_value(json_object_get(req, "reason"));
  cleanup_free char *why = xasprintf("%.500s", reason && *reason ? reason : "cancelled");
  cleanup_free char *who = xasprintf("uid:%u", (unsigned)uid);
  cleanup_json json_t *extra = json_new_object();
  pthread_mutex_lock(&g->mu);
  bool again = g->cancelled;
  g->cancelled = g->stopped = true;
  json_t *calls = call_list_tail_json(g->calls, CANCEL_CALLS_RECORDED);
  json_object_set(extra, "calls_total", json_new_integer((long long)call_list_count(g->calls)));
  pthread_mutex_unlock(&g->mu);
  json_object_set(extra, "calls", calls);
  if (g->approvals)
    approvals_stop(g->approvals);
  if (!again) {
    struct audit_record rec = {.event = "cancelled", .reason = why, .approver = who,
                               .duration_ms = -1, .extra = extra};
    cleanup_error tg_error *err = NULL;
    if (audit_append(g->audit, &rec, true, &err) < 0)
      return reply_error("the run is cancelled but its record could not be written: %s", err->msg);
  }
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(true));
  json_object_set(o, "already", json_new_bool(again));
  json_object_set(o, "calls", json_copy(calls));
  return o;
}

json_t *gate_answer_control(void *ctx, const json_t *req, uid_t uid, bool may_decide) {
  struct gate *g = ctx;
  const char *verb = json_string_value(json_object_get(req, "verb"));
  if (verb == NULL)
    return reply_error("%s", "the request needs \"verb\": pending, calls, approve, deny, cancel or add_tool");
  if (strcmp(verb, "calls") == 0)
    return calls_json(g);
  if (strcmp(verb, "pending") == 0) {
    json_t *o = json_new_object();
    json_object_set(o, "ok", json_new_bool(true));
    json_object_set(o, "container", json_new_string(g->container_id));
    json_object_set(o, "pending", approvals_pending_json(g->approvals));
    return o;
  }
  /* Its own permission check, stricter than may_decide (gate_tools.c). */
  if (strcmp(verb, "add_tool") == 0)
    return gate_add_tool_verb(g, req, uid);
  bool approve = strcmp(verb, "approve") == 0;
  bool cancel = strcmp(verb, "cancel") == 0;
  if (!approve && !cancel && strcmp(verb, "deny") != 0)
    return reply_error("unknown verb \"%s\"; use pending, calls, approve, deny, cancel or add_tool", verb);
  if (!may_decide)
    return reply_error("%s", "permission denied: only root or the approver group may approve, deny or cancel");
  if (cancel)
    return cancel_run(g, req, uid);
  const char *call = json_string_value(json_object_get(req, "call"));
  if (call == NULL)
    return reply_error("%s", "the request needs \"call\": the call id (see `tollgate pending`)");
  const char *reason = json_string_value(json_object_get(req, "reason"));
  cleanup_free char *who = xasprintf("uid:%u", (unsigned)uid);
  cleanup_error tg_error *err = NULL;
  if (approvals_decide(g->approvals, call, approve, who, reason, &err) < 0)
    return reply_error("%s", err->msg);
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(true));
  return o;
}

json_t *gate_calls_json(struct gate *g) { return calls_json(g); }

json_t *gate_pending_json(struct gate *g) { return approvals_pending_json(g->approvals); }

int gate_decide_pending(struct gate *g, const char *call_id, bool approve, const char *who,
                        const char *reason, tg_error **err) {
  return approvals_decide(g->approvals, call_id, approve, who, reason, err);
}

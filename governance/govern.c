/* One call through the gate (gate_handle).  Order of checks (each failure
 * is audited and answered with its own error code):
 *   1. the hard cap (max_tool_calls counts every attempt),
 *   2. container stopped, no policy,
 *   3. request shape (bad_request), unknown tool, argument schema,
 *   4. the repeat limit, the rules (allow / deny / approve),
 *   5. budgets (cost, irreversible, per-tool), checked before asking a
 *      person and reserved after approval,
 *   6. approval (hook, person, timeout),
 *   7. audit health; for an irreversible tool the intent record is synced,
 *   8. the backend runs; the outcome is audited.
 * The anomaly limits (anomaly.h) watch it all: a run they stopped is
 * refused before 2, a parked one turns an allowed call into one that
 * needs approval at 4, and each call's end is counted after its record.
 * In steps: decide (1-4), check_budget, ask_approver, reserve_budget (5-7),
 * run (7-8), record_outcome (8).  A step that ends the call returns its
 * response (audited); NULL carries on to the next. */
#include "governance/gate.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/anomaly.h"
#include "governance/approval.h"
#include "governance/args_canonical.h"
#include "governance/audit.h"
#include "governance/budget.h"
#include "governance/call_list.h"
#include "governance/gate_state.h"
#include "governance/mcp.h"
#include "governance/policy.h"
#include "governance/refusals.h"
#include "governance/stop_grace.h"
#include "governance/tools.h"
#include "base/util.h"

/* What the steps of one call share. */
struct call {
  struct gate *g;
  const char *id;
  const char *tool_name;
  const struct tool *tool;
  const json_t *args;      /* the canonical form, once there is one */
  json_t *empty;           /* owned: the args of a request without any */
  json_t *rewritten;       /* owned: the canonical form, when it differs */
  json_t *view;            /* owned: an http call's args with the URL's parts */
  json_t *audit_args;      /* owned: an http call's args as the log shows them */
  enum effect effect;      /* what the rules said */
  const char *rule_reason; /* borrowed from the policy */
  long idx;                /* in the calls list, or -1 */
  unsigned long long t0;
  const char *decision;
  char *reason;   /* owned */
  char *approver; /* owned */
  char *parked_for; /* owned: the anomaly this call must be approved for */
};

static void may_block(struct gate *g) {
  if (g->block_hook)
    g->block_hook(g->block_ctx);
}

static const char *errcode_or_ok(const char *code) { return code ? code : "ok"; }

/* The answers are written straight into one buffer (json_buf), not built
 * as a tree and dumped: they are made once per call. */
static char *response_error(const char *code, const char *message, size_t *len) {
  struct json_buf b = {0};
  json_buf_lit(&b, "{\"v\":1,\"ok\":false,\"error\":{\"code\":");
  json_buf_cstr(&b, code);
  json_buf_lit(&b, ",\"message\":");
  json_buf_cstr(&b, message);
  json_buf_lit(&b, "}}");
  if (len)
    *len = b.len;
  return b.s;
}

static char *response_ok(const json_t *result, size_t *len) {
  struct json_buf b = {0};
  json_buf_lit(&b, "{\"v\":1,\"ok\":true,\"result\":");
  json_buf_value(&b, result);
  json_buf_lit(&b, "}");
  if (len)
    *len = b.len;
  return b.s;
}

static void call_update(struct gate *g, long idx, const char *decision, const char *status,
                        long long duration_ms) {
  if (idx < 0)
    return;
  pthread_mutex_lock(&g->mu);
  call_list_update(g->calls, idx, decision, status, duration_ms);
  pthread_mutex_unlock(&g->mu);
}

static long long elapsed_ms(const struct call *c) {
  return (long long)((monotonic_ns() - c->t0) / 1000000ULL);
}

/* The code for a failed append: audit_full once this container's quota
 * is reached (only its own calls are refused; other containers' logs are
 * unaffected), else audit_unavailable. */
static const char *audit_error_code(struct gate *g) {
  return audit_full(g->audit) ? GATE_AUDIT_FULL : GATE_AUDIT_UNAVAILABLE;
}

static char *audit_error_response(struct gate *g, const tg_error *err, const char *then,
                                  size_t *len) {
  if (audit_full(g->audit)) {
    atomic_fetch_add(&g->refused, 1);
    return response_error(GATE_AUDIT_FULL,
                          "this container's audit log reached its quota (audit_max_bytes in the "
                          "host config): its calls are refused; start a new run to continue",
                          len);
  }
  cleanup_free char *m = xasprintf("the audit log cannot be written (%s); %s",
                                   err ? err->msg : "unhealthy", then);
  return response_error(GATE_AUDIT_UNAVAILABLE, m, len);
}

/* The args as the audit log shows them (an http call's differ). */
static const json_t *logged_args(const struct call *c) {
  return c->audit_args ? c->audit_args : c->args;
}

/* --- anomalies ---------------------------------------------------------------- */

#define ALERT_TIMEOUT_MS 10000

static const char *anomaly_consequence(enum anomaly_action a) {
  switch (a) {
  case ANOMALY_STOP:
    return "every later call of the run is refused and the container is stopped";
  case ANOMALY_PARK:
    return "later calls wait for approval until one is approved";
  case ANOMALY_LOG:
    break;
  }
  return "recorded only";
}

/* A limit was reached (its action already holds, in anomaly.c): write the
 * "anomaly" record, get the container stopped, tell the alert hook. */
static void on_anomaly(struct call *c, const struct anomaly_hit *h) {
  struct gate *g = c->g;
  cleanup_free char *why = anomaly_describe(h);
  cleanup_json json_t *extra = anomaly_hit_json(h);
  struct audit_record rec = {.event = "anomaly", .call_id = c->id, .tool = c->tool_name,
                             .reason = why, .duration_ms = -1,
                             .message = anomaly_consequence(h->action), .extra = extra};
  /* A stop is on disk before the container is: the log shows why it died. */
  if (h->action == ANOMALY_STOP)
    may_block(g);
  audit_append(g->audit, &rec, h->action == ANOMALY_STOP, NULL);
  if (h->action == ANOMALY_STOP) {
    pthread_mutex_lock(&g->mu);
    g->stopped = true;
    if (g->stop_why == NULL) {
      g->stop_why = xstrdup(why);
      g->stop_call = c->id ? xstrdup(c->id) : NULL;
    }
    pthread_mutex_unlock(&g->mu);
    approvals_stop(g->approvals); /* parked calls end too */
    /* Every later call is refused from now on (anomaly.c); the container
     * dies after the policy's grace, so a program that catches the
     * refusal can still print what it has and exit. */
    if (g->stop_hook && !atomic_exchange(&g->stop_requested, true))
      g->grace = stop_grace_start(g->policy->anomalies.stop_grace_ms, g->stop_hook, g->stop_ctx);
  }
  char **hook = g->policy ? g->policy->anomalies.alert_hook : NULL;
  if (hook == NULL)
    return;
  json_object_set(extra, "container", json_new_string(g->container_id));
  json_object_set(extra, "call", json_new_string(c->id));
  json_object_set(extra, "tool", c->tool_name ? json_new_string(c->tool_name) : json_new_null());
  json_object_set(extra, "reason", json_new_string(why));
  may_block(g); /* a process: up to ALERT_TIMEOUT_MS */
  approval_notify(hook, extra, ALERT_TIMEOUT_MS, NULL);
}

static void act_on(struct call *c, const struct anomaly_hit *hits, size_t nhits) {
  for (size_t i = 0; i < nhits; i++)
    on_anomaly(c, &hits[i]);
}

/* Audit and answer a call that ends without running. */
static char *finish_error(struct call *c, const char *code, const char *message, size_t *len) {
  struct gate *g = c->g;
  long long ms = elapsed_ms(c);
  struct audit_record rec = {.event = "call", .call_id = c->id, .tool = c->tool_name,
                             .args = logged_args(c), .decision = c->decision ? c->decision : "deny",
                             .reason = c->reason, .approver = c->approver, .duration_ms = ms,
                             .outcome = code, .message = message};
  cleanup_error tg_error *err = NULL;
  const char *status = code;
  char *resp;
  if (audit_append(g->audit, &rec, false, &err) < 0) {
    status = audit_error_code(g);
    resp = audit_error_response(g, err, "calls are refused until it can", len);
  } else {
    resp = response_error(code, message, len);
  }
  call_update(g, c->idx, c->decision ? c->decision : "deny", status, ms);
  /* its end counts toward the anomaly limits, after its own record */
  struct anomaly_hit hits[ANOMALY_KINDS];
  act_on(c, hits, anomaly_count_outcome(g->anomalies, c->id, code, false, 0, hits));
  return resp;
}

/* Is the log writable?  After a failure, probe it with a "resumed" record
 * (synced): when that lands the log shows where the gap was and calls may
 * run again; when it does not, the call is refused (fail closed). */
static bool audit_ready(struct gate *g) {
  if (audit_full(g->audit))
    return false;
  if (audit_healthy(g->audit))
    return true;
  may_block(g); /* a synced record */
  return audit_resume(g->audit); /* one "resumed" record per recovery */
}

static void run_backend(struct gate *g, const struct tool *t, const json_t *args,
                        const char *call_id, struct tool_result *r) {
  switch (t->backend.type) {
  case BACKEND_BUILTIN:
    tool_builtin_run(t, args, r);
    return;
  case BACKEND_EXEC:
    tool_exec_run(t, args, call_id, r);
    return;
  case BACKEND_SOCKET:
    tool_socket_run(t, args, call_id, r);
    return;
  case BACKEND_HTTP:
    tool_http_run(t, args, call_id, r);
    return;
  case BACKEND_MCP:
    for (size_t i = 0; i < g->policy->nmcp; i++)
      if (strcmp(g->policy->mcp[i].name, t->backend.server) == 0) {
        mcp_call(g->mcp[i], t->backend.remote, args, t->timeout_ms, r);
        return;
      }
    break;
  }
  memset(r, 0, sizeof *r);
  r->code = GATE_TOOL_FAILED;
  r->message = xstrdup("no backend for this tool");
}

static char *denied_message(const char *reason) {
  return xasprintf("denied: %s", reason && *reason ? reason : "no rule allows this call");
}

/* --- decide: the cap, the request, the rules ------------------------------- */

/* Count the attempt toward the hard cap; refuse it when over, when the
 * container stopped, or without a policy. */
static char *admit(struct call *c, const json_t *request, size_t *len) {
  struct gate *g = c->g;
  const char *why_static = NULL;
  pthread_mutex_lock(&g->mu);
  bool within_cap = budget_count_attempt(g->budget, &why_static);
  bool stopped = g->stopped;
  pthread_mutex_unlock(&g->mu);
  if (!within_cap) {
    /* The caller hears why, but past the cap the log only counts: the
     * first over-cap attempt in full, then summaries (refusals.h), so a
     * container that keeps calling costs the host's disk O(1).  That full
     * record names the tool and arguments asked for, as far as the request
     * says them (unvalidated: the gate refused before reading further). */
    const json_t *asked = json_object_get(request, "args");
    struct audit_record rec = {.event = "call", .call_id = c->id, .decision = "deny",
                               .tool = json_string_value(json_object_get(request, "tool")),
                               .args = json_is(asked, JSON_OBJECT) ? asked : NULL,
                               .reason = why_static, .duration_ms = 0,
                               .outcome = GATE_BUDGET_EXHAUSTED, .message = why_static};
    refusals_record(g->refusals, REFUSAL_OVER_CAP, &rec);
    atomic_fetch_add(&g->refused, 1);
    call_update(g, c->idx, "deny", GATE_BUDGET_EXHAUSTED, 0);
    return response_error(GATE_BUDGET_EXHAUSTED, why_static, len);
  }
  cleanup_free char *anomaly = NULL;
  if (anomaly_state(g->anomalies, &anomaly) == ANOMALY_STATE_STOPPED) {
    c->reason = xasprintf("an anomaly stopped the run: %s", anomaly);
    return finish_error(c, GATE_ANOMALY, c->reason, len);
  }
  struct anomaly_hit rate;
  if (anomaly_count_attempt(g->anomalies, c->id, c->t0, &rate)) {
    on_anomaly(c, &rate);
    if (rate.action == ANOMALY_STOP) {
      cleanup_free char *why = anomaly_describe(&rate);
      c->reason = xasprintf("an anomaly stopped the run: %s", why);
      return finish_error(c, GATE_ANOMALY, c->reason, len);
    }
  }
  if (stopped) {
    pthread_mutex_lock(&g->mu);
    const char *what = g->cancelled ? "the run was cancelled" : "the container stopped";
    pthread_mutex_unlock(&g->mu);
    c->reason = xstrdup(what);
    return finish_error(c, GATE_CONTAINER_STOPPED, what, len);
  }
  pthread_rwlock_rdlock(&g->tools_lock); /* add_tool may grow the tools (gate_state.h) */
  bool none = g->policy == NULL || g->policy->ntools == 0;
  pthread_rwlock_unlock(&g->tools_lock);
  if (none) {
    c->reason = xstrdup("no policy");
    return finish_error(c, GATE_DENIED, "denied: no policy", len);
  }
  return NULL;
}

/* The request's shape, its tool, and its arguments in their one canonical
 * form, checked against the tool's schema. */
static char *read_request(struct call *c, const json_t *request, const char *bad_reason,
                          size_t *len) {
  struct gate *g = c->g;
  if (request == NULL) {
    c->reason = xstrdup(bad_reason ? bad_reason : "unreadable request");
    return finish_error(c, GATE_BAD_REQUEST, c->reason, len);
  }
  const json_t *v = json_object_get(request, "v");
  long long version;
  if (!json_is(request, JSON_OBJECT) || (v && (!json_integer_value(v, &version) || version != 1))) {
    c->reason = xstrdup("the request must be an object with \"v\": 1, \"tool\" and \"args\"");
    return finish_error(c, GATE_BAD_REQUEST, c->reason, len);
  }
  c->tool_name = json_string_value(json_object_get(request, "tool"));
  if (c->tool_name == NULL) {
    c->reason = xstrdup("the request has no \"tool\" string");
    return finish_error(c, GATE_BAD_REQUEST, c->reason, len);
  }
  if (c->idx >= 0) {
    pthread_mutex_lock(&g->mu);
    call_list_set_tool(g->calls, c->idx, c->tool_name);
    pthread_mutex_unlock(&g->mu);
  }
  const json_t *args = json_object_get(request, "args");
  if (args == NULL)
    args = c->empty = json_new_object();
  c->args = args;
  if (!json_is(args, JSON_OBJECT)) {
    c->reason = xstrdup("\"args\" must be an object");
    return finish_error(c, GATE_BAD_REQUEST, c->reason, len);
  }
  pthread_rwlock_rdlock(&g->tools_lock); /* the tool outlives the lock: never freed */
  c->tool = policy_find(g->policy, c->tool_name);
  pthread_rwlock_unlock(&g->tools_lock);
  if (c->tool == NULL) {
    c->reason = xasprintf("no tool named \"%.64s\" (the tools are listed in /run/tollgate/tools.json)",
                          c->tool_name);
    return finish_error(c, GATE_UNKNOWN_TOOL, c->reason, len);
  }
  char *why = NULL;
  /* From here on every reader gets the one canonical form: the schema, the
   * repeat hash, the rules, the approver, the audit record and the tool
   * (args_canonical.h).  A call without one is refused, not guessed at. */
  const json_t *canon = args_canonical_form(args, &c->rewritten, &why);
  if (canon == NULL) {
    c->reason = why;
    return finish_error(c, GATE_BAD_REQUEST, why, len);
  }
  c->args = canon;
  if (!schema_validate(c->tool->args, canon, &why)) {
    c->reason = why;
    return finish_error(c, GATE_BAD_REQUEST, why, len);
  }
  if (c->tool->backend.type == BACKEND_HTTP) {
    /* The backend's own checks come before the rules, which then see
     * the request's parts (docs/egress.md). */
    const char *code = tool_http_prepare(c->tool, canon, &c->view, &c->audit_args, &why);
    if (code != NULL) {
      c->reason = why;
      cleanup_free char *m = strcmp(code, GATE_DENIED) == 0 ? denied_message(why) : xstrdup(why);
      return finish_error(c, code, m, len);
    }
    c->args = c->view;
  }
  return NULL;
}

/* Admit the attempt, read the request, count a repeat, apply the rules: a
 * denial ends the call here; c->effect says allow or approve. */
static char *decide(struct call *c, const json_t *request, const char *bad_reason, size_t *len) {
  struct gate *g = c->g;
  char *resp = admit(c, request, len);
  if (resp == NULL)
    resp = read_request(c, request, bad_reason, len);
  if (resp != NULL)
    return resp;
  const struct tool *t = c->tool;
  const char *rule_reason = NULL;
  char *mistyped = NULL;
  enum effect e = rules_decide(t->rules, t->nrules, c->args, &rule_reason, &mistyped);
  if (mistyped != NULL) {
    c->reason = mistyped;
    return finish_error(c, GATE_BAD_REQUEST, mistyped, len);
  }
  /* From here on the record names an approver: a call with one counted
   * toward the repeat limit, and a restarted sidecar replays exactly
   * those (budget_replay.c). */
  c->approver = xstrdup("policy");
  char *why = NULL;
  /* The args as logged: a restarted sidecar replays the repeat counts
   * from the log, and must count the same thing. */
  pthread_mutex_lock(&g->mu);
  bool fresh = budget_count_repeat(g->budget, t, logged_args(c), &why);
  pthread_mutex_unlock(&g->mu);
  if (!fresh) {
    c->reason = why;
    return finish_error(c, GATE_BUDGET_EXHAUSTED, why, len);
  }
  c->reason = xstrdup(rule_reason);
  if (e == EFFECT_DENY) {
    cleanup_free char *m = denied_message(rule_reason);
    return finish_error(c, GATE_DENIED, m, len);
  }
  c->effect = e;
  c->rule_reason = rule_reason;
  cleanup_free char *anomaly = NULL;
  if (anomaly_state(g->anomalies, &anomaly) == ANOMALY_STATE_PARKED) {
    /* Allowed, but the run is parked for an anomaly: a person (or the
     * approval hook) sees why and decides. */
    c->parked_for = xasprintf("anomaly: %s", anomaly);
    c->rule_reason = c->parked_for;
    free(c->reason);
    c->reason = xstrdup(c->parked_for);
    c->effect = EFFECT_APPROVE;
  }
  return NULL;
}

/* --- budget: checked before a person is asked, reserved after ------------- */

static char *check_budget(struct call *c, size_t *len) {
  struct gate *g = c->g;
  char *why = NULL;
  pthread_mutex_lock(&g->mu);
  bool fits = budget_fits(g->budget, c->tool, &why);
  pthread_mutex_unlock(&g->mu);
  if (!fits) {
    free(c->reason);
    c->reason = why;
    return finish_error(c, GATE_BUDGET_EXHAUSTED, why, len);
  }
  return NULL;
}

/* A rule said approve: park the call until the hook or a person decides,
 * or the approval times out. */
static char *ask_approver(struct call *c, size_t *len) {
  struct gate *g = c->g;
  may_block(g);
  struct approval_request req = {.container_id = g->container_id, .call_id = c->id,
                                 .tool = c->tool->name, .args = c->args, .reason = c->rule_reason,
                                 .hook = g->hook, .timeout_ms = g->approval_timeout_ms};
  struct approval_decision d;
  if (g->park_hook)
    g->park_hook(g->park_ctx, true);
  approval_request(g->approvals, &req, &d);
  if (g->park_hook)
    g->park_hook(g->park_ctx, false);
  free(c->approver);
  c->approver = d.approver;
  d.approver = NULL;
  if (d.reason) {
    free(c->reason);
    c->reason = xasprintf("%s (%s)", c->rule_reason, d.reason);
  }
  enum approval_outcome outcome = d.outcome;
  cleanup_free char *dreason = d.reason;
  switch (outcome) {
  case APPROVAL_APPROVED:
    if (c->parked_for)
      anomaly_acknowledge(g->anomalies);
    break;
  case APPROVAL_TIMEOUT: {
    cleanup_free char *m = xasprintf("approval timed out: %s", dreason ? dreason : "nobody decided");
    return finish_error(c, GATE_APPROVAL_TIMEOUT, m, len);
  }
  case APPROVAL_STOPPED:
    return finish_error(c, GATE_CONTAINER_STOPPED, "the container stopped while the call waited for approval", len);
  case APPROVAL_FULL: {
    cleanup_free char *m = xasprintf("denied: %s", dreason);
    return finish_error(c, GATE_DENIED, m, len);
  }
  case APPROVAL_DENIED: {
    cleanup_free char *m = xasprintf("denied by %s%s%s", c->approver, dreason ? ": " : "",
                                     dreason ? dreason : "");
    return finish_error(c, GATE_DENIED, m, len);
  }
  }
  return NULL;
}

/* Allowed.  Reserve the budget now: between the check above and here a
 * person may have taken time, and other calls may have spent it.  It is
 * given back when the container stopped or the log cannot be written. */
static char *reserve_budget(struct call *c, size_t *len) {
  struct gate *g = c->g;
  const struct tool *t = c->tool;
  char *why = NULL;
  pthread_mutex_lock(&g->mu);
  bool reserved = budget_reserve(g->budget, t, &why);
  bool stopped_now = g->stopped;
  pthread_mutex_unlock(&g->mu);
  if (!reserved) {
    free(c->reason);
    c->reason = why;
    return finish_error(c, GATE_BUDGET_EXHAUSTED, why, len);
  }
  if (stopped_now || !audit_ready(g)) {
    /* Given back: the record says "deny", so a restarted sidecar does
     * not count its share either (budget_replay.c). */
    pthread_mutex_lock(&g->mu);
    budget_release(g->budget, t);
    pthread_mutex_unlock(&g->mu);
    if (stopped_now)
      return finish_error(c, GATE_CONTAINER_STOPPED, "the container stopped", len);
    if (audit_full(g->audit)) {
      call_update(g, c->idx, "deny", GATE_AUDIT_FULL, elapsed_ms(c));
      return audit_error_response(g, NULL, "", len);
    }
    return finish_error(c, GATE_AUDIT_UNAVAILABLE,
                        "the audit log cannot be written; calls are refused until it can", len);
  }
  c->decision = "allow";
  return NULL;
}

/* --- run and record ----------------------------------------------------------- */

/* Run the tool into *r; for an irreversible one the intent is on disk
 * first, and when it cannot be written the tool does not run (the
 * response says so, and *r is left unset). */
static char *run(struct call *c, struct tool_result *r, size_t *len) {
  struct gate *g = c->g;
  const struct tool *t = c->tool;
  if (t->irreversible) {
    /* Write-ahead: the intent is on disk before anything irreversible
     * happens, so a crash leaves an intent without an outcome, never an
     * action without a record. */
    struct audit_record intent = {.event = "intent", .call_id = c->id, .tool = t->name,
                                  .args = logged_args(c), .decision = "allow", .reason = c->reason,
                                  .approver = c->approver, .duration_ms = elapsed_ms(c)};
    cleanup_json json_t *iextra = NULL;
    if (t->source_sha256 != NULL) {
      iextra = json_new_object();
      json_object_set(iextra, "source_sha256", json_new_string(t->source_sha256));
      intent.extra = iextra;
    }
    cleanup_error tg_error *err = NULL;
    may_block(g); /* the intent is synced */
    if (audit_append(g->audit, &intent, true, &err) < 0) {
      pthread_mutex_lock(&g->mu);
      budget_release(g->budget, t);
      pthread_mutex_unlock(&g->mu);
      call_update(g, c->idx, "deny", audit_error_code(g), elapsed_ms(c));
      return audit_error_response(g, err, "the irreversible call did not run", len);
    }
  }
  call_update(g, c->idx, "allow", "running", -1);
  if (t->backend.type != BACKEND_BUILTIN)
    may_block(g); /* a process, a socket or an MCP server: no bound on its time */
  run_backend(g, t, c->args, c->id, r);
  return NULL;
}

/* Count a result toward the anomaly limits; true when it is to be
 * withheld: it took the results past result_bytes, whose action is stop. */
static bool count_result(struct call *c, const struct tool_result *r, size_t bytes,
                         struct anomaly_hit hits[ANOMALY_KINDS], size_t *nhits) {
  *nhits = anomaly_count_outcome(c->g->anomalies, c->id, errcode_or_ok(r->code), true, bytes, hits);
  for (size_t i = 0; i < *nhits; i++)
    if (hits[i].kind == ANOMALY_RESULT_BYTES && hits[i].action == ANOMALY_STOP)
      return true;
  return false;
}

/* Audit what the tool did and answer with it; clears *r. */
static char *record_outcome(struct call *c, struct tool_result *r, size_t *len) {
  struct gate *g = c->g;
  const struct tool *t = c->tool;
  long long ms = elapsed_ms(c);
  /* The answer is made first: its size is what result_bytes counts. */
  size_t ok_len = 0;
  char *ok = r->code ? NULL : response_ok(r->result, &ok_len);
  struct anomaly_hit hits[ANOMALY_KINDS];
  size_t nhits;
  bool withheld = count_result(c, r, ok_len, hits, &nhits);
  cleanup_free char *held = withheld ? xasprintf("the result (%zu bytes) is withheld: it took the "
                                                 "results past the anomaly limit result_bytes",
                                                 ok_len)
                                     : NULL;
  /* The size goes on record when it is counted, so a restarted sidecar
   * counts it again (anomaly_replay_log). */
  cleanup_json json_t *extra = NULL;
  if (ok && g->policy && g->policy->anomalies.of[ANOMALY_RESULT_BYTES].limit > 0) {
    extra = r->audit ? json_copy(r->audit) : json_new_object(); /* beside an http call's */
    json_object_set(extra, "result_bytes", json_new_integer((long long)ok_len));
  }
  if (t->source_sha256 != NULL) {
    /* An agent-written tool: the record says which source ran. */
    if (extra == NULL)
      extra = r->audit ? json_copy(r->audit) : json_new_object();
    json_object_set(extra, "source_sha256", json_new_string(t->source_sha256));
  }
  const char *status = withheld ? GATE_ANOMALY : errcode_or_ok(r->code);
  struct audit_record rec = {.event = t->irreversible ? "outcome" : "call", .call_id = c->id,
                             .tool = t->name, .args = t->irreversible ? NULL : logged_args(c),
                             .decision = "allow", .reason = c->reason, .approver = c->approver,
                             .duration_ms = ms, .outcome = status,
                             .message = withheld ? held : r->message,
                             .extra = extra ? extra : r->audit};
  cleanup_error tg_error *err = NULL;
  char *resp;
  if (audit_append(g->audit, &rec, false, &err) < 0) {
    /* The tool ran but its record could not be written: withhold the
     * result rather than hand out something the log does not show. */
    status = audit_error_code(g);
    resp = audit_error_response(g, err, "the result is withheld", len);
    free(ok);
  } else if (withheld) {
    resp = response_error(GATE_ANOMALY, held, len);
    free(ok);
  } else if (r->code) {
    resp = response_error(r->code, r->message, len);
  } else {
    resp = ok;
    *len = ok_len;
  }
  call_update(g, c->idx, "allow", status, ms);
  tool_result_clear(r);
  act_on(c, hits, nhits);
  return resp;
}

static char *govern(struct call *c, const json_t *request, const char *bad_reason, size_t *len) {
  char *resp = decide(c, request, bad_reason, len);
  if (resp == NULL)
    resp = check_budget(c, len);
  if (resp == NULL && c->effect == EFFECT_APPROVE)
    resp = ask_approver(c, len);
  if (resp == NULL)
    resp = reserve_budget(c, len);
  if (resp != NULL)
    return resp;
  struct tool_result r;
  resp = run(c, &r, len);
  return resp != NULL ? resp : record_outcome(c, &r, len);
}

char *gate_handle(struct gate *g, const char *call_id, const json_t *request,
                  const char *bad_reason, size_t *len) {
  size_t dummy;
  if (len == NULL)
    len = &dummy;
  struct call c = {.g = g, .id = call_id, .t0 = monotonic_ns()};
  pthread_mutex_lock(&g->mu);
  c.idx = call_list_begin(g->calls, call_id, NULL);
  pthread_mutex_unlock(&g->mu);
  char *resp = govern(&c, request, bad_reason, len);
  free(c.reason);
  free(c.approver);
  free(c.parked_for);
  json_free(c.rewritten);
  json_free(c.empty);
  json_free(c.view);
  json_free(c.audit_args);
  return resp;
}

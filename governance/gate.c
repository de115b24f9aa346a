/* The governance gate: every call attempt passes here.  Order of checks
 * (each failure is audited and answered with its own error code):
 *   1. the hard cap (max_tool_calls counts every attempt),
 *   2. container stopped, no policy,
 *   3. request shape (bad_request), unknown tool, argument schema,
 *   4. the repeat limit, the rules (allow / deny / approve),
 *   5. budgets (cost, irreversible, per-tool), checked before asking a
 *      person and reserved after approval,
 *   6. approval (hook, person, timeout),
 *   7. audit health; for an irreversible tool the intent record is synced,
 *   8. the backend runs; the outcome is audited. */
#include "governance/gate.h"

#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/approval.h"
#include "governance/args_canonical.h"
#include "governance/audit.h"
#include "governance/budget.h"
#include "governance/budget_replay.h"
#include "governance/control.h"
#include "governance/gate_log.h"
#include "governance/mcp.h"
#include "governance/policy.h"
#include "governance/refusals.h"
#include "governance/tools.h"
#include "base/util.h"

#define CALLS_KEPT 10000
#define DEFAULT_APPROVAL_TIMEOUT_MS 60000

struct call_entry {
  char *id;
  char *tool;
  const char *decision; /* static */
  const char *status;   /* static: "pending", "running", "ok" or an error code */
  char time[40];
  long long duration_ms;
};

struct gate {
  char *container_id;
  struct policy *policy; /* NULL: no policy */
  struct audit *audit;
  struct refusals *refusals; /* over-cap and bridge refusals, counted */
  struct budget *budget;
  struct approvals *approvals;
  char **hook;       /* borrowed from the policy, or host_hook */
  char *host_hook[2];
  int approval_timeout_ms;
  struct mcp_client **mcp; /* parallel to policy->mcp */
  struct control *control;
  pthread_mutex_t mu; /* budget, calls, stopped */
  bool stopped;
  bool cancelled; /* by the control socket's cancel verb: stopped for good */
  struct call_entry *calls;
  size_t ncalls;
  atomic_ullong refused; /* refused without a policy decision; see gate_refused_count */
  void (*block_hook)(void *ctx); /* see gate_set_block_hook */
  void *block_ctx;
  void (*park_hook)(void *ctx, bool parked); /* see gate_set_park_hook */
  void *park_ctx;
};

void gate_set_block_hook(struct gate *g, void (*fn)(void *ctx), void *ctx) {
  g->block_hook = fn;
  g->block_ctx = ctx;
}

void gate_set_park_hook(struct gate *g, void (*fn)(void *ctx, bool parked), void *ctx) {
  g->park_hook = fn;
  g->park_ctx = ctx;
}

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

/* --- the calls list (for `tollgate calls`) ------------------------------- */

static long call_begin(struct gate *g, const char *id, const char *tool) {
  if (g->ncalls >= CALLS_KEPT)
    return -1;
  struct call_entry *c = &g->calls[g->ncalls];
  c->id = xstrdup(id ? id : "");
  c->tool = xstrdup(tool ? tool : "");
  c->decision = "";
  c->status = "pending";
  c->duration_ms = -1;
  rfc3339_now(c->time, sizeof c->time);
  return (long)g->ncalls++;
}

static void call_update(struct gate *g, long idx, const char *decision, const char *status,
                        long long duration_ms) {
  if (idx < 0)
    return;
  pthread_mutex_lock(&g->mu);
  struct call_entry *c = &g->calls[idx];
  if (decision)
    c->decision = decision;
  if (status)
    c->status = status;
  if (duration_ms >= 0)
    c->duration_ms = duration_ms;
  pthread_mutex_unlock(&g->mu);
}

/* --- control socket handler ---------------------------------------------- */

static json_t *calls_json(struct gate *g) {
  json_t *o = json_new_object();
  json_object_set(o, "ok", json_new_bool(true));
  json_object_set(o, "container", json_new_string(g->container_id));
  json_t *arr = json_new_array();
  pthread_mutex_lock(&g->mu);
  for (size_t i = 0; i < g->ncalls; i++) {
    const struct call_entry *c = &g->calls[i];
    json_t *e = json_new_object();
    json_object_set(e, "call", json_new_string(c->id));
    json_object_set(e, "time", json_new_string(c->time));
    json_object_set(e, "tool", json_new_string(c->tool));
    json_object_set(e, "decision", json_new_string(c->decision));
    json_object_set(e, "status", json_new_string(c->status));
    json_object_set(e, "duration_ms",
                    c->duration_ms >= 0 ? json_new_integer(c->duration_ms) : json_new_null());
    json_array_append(arr, e);
  }
  json_object_set(o, "calls", arr);
  json_object_set(o, "budget", budget_to_json(g->budget));
  pthread_mutex_unlock(&g->mu);
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
  json_t *calls = json_new_array();
  pthread_mutex_lock(&g->mu);
  bool again = g->cancelled;
  g->cancelled = g->stopped = true;
  size_t first = g->ncalls > CANCEL_CALLS_RECORDED ? g->ncalls - CANCEL_CALLS_RECORDED : 0;
  for (size_t i = first; i < g->ncalls; i++) {
    json_t *e = json_new_object();
    json_object_set(e, "call", json_new_string(g->calls[i].id));
    json_object_set(e, "tool", g->calls[i].tool ? json_new_string(g->calls[i].tool) : json_new_null());
    json_object_set(e, "status", json_new_string(g->calls[i].status));
    json_array_append(calls, e);
  }
  json_object_set(extra, "calls_total", json_new_integer((long long)g->ncalls));
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

static json_t *control_handle(void *ctx, const json_t *req, uid_t uid, bool may_decide) {
  struct gate *g = ctx;
  const char *verb = json_string_value(json_object_get(req, "verb"));
  if (verb == NULL)
    return reply_error("%s", "the request needs \"verb\": pending, calls, approve, deny or cancel");
  if (strcmp(verb, "calls") == 0)
    return calls_json(g);
  if (strcmp(verb, "pending") == 0) {
    json_t *o = json_new_object();
    json_object_set(o, "ok", json_new_bool(true));
    json_object_set(o, "container", json_new_string(g->container_id));
    json_object_set(o, "pending", approvals_pending_json(g->approvals));
    return o;
  }
  bool approve = strcmp(verb, "approve") == 0;
  bool cancel = strcmp(verb, "cancel") == 0;
  if (!approve && !cancel && strcmp(verb, "deny") != 0)
    return reply_error("unknown verb \"%s\"; use pending, calls, approve, deny or cancel", verb);
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

/* --- open / tools.json ----------------------------------------------------- */

static int start_mcp(struct gate *g, tg_error **err) {
  struct policy *p = g->policy;
  if (p->nmcp == 0)
    return 0;
  g->mcp = xcalloc(p->nmcp, sizeof *g->mcp);
  for (size_t i = 0; i < p->nmcp; i++)
    if (mcp_start(&p->mcp[i], &g->mcp[i], err) < 0)
      return -1;
  for (size_t i = 0; i < p->ntools; i++) {
    struct tool *t = p->tools[i];
    if (t->backend.type != BACKEND_MCP)
      continue;
    struct mcp_client *c = NULL;
    for (size_t j = 0; j < p->nmcp; j++)
      if (strcmp(p->mcp[j].name, t->backend.server) == 0)
        c = g->mcp[j];
    const json_t *remote = mcp_find_tool(c, t->backend.remote);
    if (remote == NULL) {
      cleanup_free char *names = mcp_tool_names(c);
      return tg_error_set(err, 0, "%s: tools.%s.backend.tool: MCP server %s has no tool \"%s\" (it offers: %s)",
                          p->path, t->name, t->backend.server, t->backend.remote, names);
    }
    /* Import what the policy leaves out: the description and the argument
     * schema come from the server's tools/list. */
    if (t->description[0] == '\0') {
      const char *d = json_string_value(json_object_get(remote, "description"));
      if (d) {
        free(t->description);
        t->description = xstrdup(d);
      }
    }
    const json_t *schema = json_object_get(remote, "inputSchema");
    if (t->args_source == NULL && json_is(schema, JSON_OBJECT)) {
      struct policy_errors errs = {.file = p->path};
      cleanup_free char *path = xasprintf("tools.%s.args (from MCP server %s)", t->name,
                                          t->backend.server);
      t->args = schema_compile(schema, path, true, &errs);
      if (t->args == NULL) {
        cleanup_free char *all = policy_errors_join(&errs);
        policy_errors_free(&errs);
        return tg_error_set(err, 0, "%s", all);
      }
      t->args_source = json_copy(schema);
    }
  }
  return 0;
}

int gate_check_policy(const char *policy_path, tg_error **err) {
  struct policy *p = NULL;
  if (policy_load(policy_path, &p, err) < 0)
    return -1;
  policy_free(p);
  return 0;
}

int gate_open(const struct gate_config *cfg, struct gate **out, tg_error **err) {
  *out = NULL;
  if (cfg->container_id == NULL || !container_id_is_valid(cfg->container_id))
    return tg_error_set(err, 0, "gate: invalid container id");
  if (cfg->audit_dir == NULL)
    return tg_error_set(err, 0, "gate: no audit directory; set audit_dir in the host config");
  struct gate *g = xcalloc(1, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  g->container_id = xstrdup(cfg->container_id);
  g->calls = xcalloc(CALLS_KEPT, sizeof *g->calls);
  if (cfg->policy_path && policy_load(cfg->policy_path, &g->policy, err) < 0)
    goto fail;
  if (g->policy && !cfg->defer_tools && start_mcp(g, err) < 0)
    goto fail;
  g->budget = budget_new(g->policy);
  g->approvals = approvals_new(g->policy ? g->policy->max_pending : 10);
  /* The policy's own hook and timeout win over the host config's. */
  if (g->policy && g->policy->approval_hook) {
    g->hook = g->policy->approval_hook;
  } else if (cfg->approval_hook && *cfg->approval_hook) {
    if (cfg->approval_hook[0] != '/' || access(cfg->approval_hook, X_OK) != 0) {
      tg_error_set(err, 0, "approval_hook %s in the host config must be the absolute path of an executable program",
                   cfg->approval_hook);
      goto fail;
    }
    g->host_hook[0] = xstrdup(cfg->approval_hook);
    g->hook = g->host_hook;
  }
  g->approval_timeout_ms = g->policy && g->policy->approval_timeout_ms > 0
                               ? g->policy->approval_timeout_ms
                           : cfg->approval_timeout_ms > 0 ? cfg->approval_timeout_ms
                                                          : DEFAULT_APPROVAL_TIMEOUT_MS;
  if (gate_log_open(cfg, &g->audit, err) < 0)
    goto fail;
  /* A restarted sidecar carries on the run's budgets, not fresh ones:
   * otherwise every death of a sidecar would refill them. */
  if (cfg->resume != NULL &&
      budget_replay_log(g->budget, g->policy, audit_path(g->audit), err) < 0) {
    tg_error_wrap(err, "read back the budgets of the run from its audit log");
    goto fail;
  }
  audit_set_quota(g->audit, cfg->audit_max_bytes ? cfg->audit_max_bytes : AUDIT_DEFAULT_MAX_BYTES);
  g->refusals = refusals_new(g->audit, 0);
  if (cfg->control_socket &&
      control_start(cfg->control_socket, cfg->approver_group, control_handle, g, &g->control,
                    err) < 0)
    goto fail;
  *out = g;
  return 0;
fail:
  gate_close(g);
  return -1;
}

int gate_start_tools(struct gate *g, tg_error **err) {
  if (g->policy == NULL || g->mcp != NULL)
    return 0;
  return start_mcp(g, err);
}

/* Seconds as a short JSON number ("0.3", not 0.29999999999999999). */
static json_t *seconds_json(int ms) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", ms / 1000.0);
  json_t *v = json_parse(buf, strlen(buf), NULL, NULL);
  return v ? v : json_new_integer(ms / 1000);
}

int gate_write_tools_json(struct gate *g, int dirfd, const char *name, tg_error **err) {
  json_t *o = json_new_object();
  json_object_set(o, "v", json_new_integer(1));
  json_object_set(o, "approval_timeout", seconds_json(g->approval_timeout_ms));
  /* The effective value (the policy may override the host config): the
   * clients size their own timeout from it. */
  json_object_set(o, "approval_timeout_ms", json_new_integer(g->approval_timeout_ms));
  json_t *arr = json_new_array();
  for (size_t i = 0; g->policy && i < g->policy->ntools; i++) {
    const struct tool *t = g->policy->tools[i];
    json_t *e = json_new_object();
    json_object_set(e, "name", json_new_string(t->name));
    json_object_set(e, "description", json_new_string(t->description));
    json_object_set(e, "args", t->args_source ? json_copy(t->args_source) : json_new_object());
    json_object_set(e, "timeout", seconds_json(t->timeout_ms));
    json_object_set(e, "cost", json_new_number(t->cost));
    json_object_set(e, "irreversible", json_new_bool(t->irreversible));
    bool may_need_approval = false;
    for (size_t j = 0; j < t->nrules; j++)
      may_need_approval |= t->rules[j].effect == EFFECT_APPROVE;
    json_object_set(e, "approval", json_new_bool(may_need_approval));
    json_array_append(arr, e);
  }
  json_object_set(o, "tools", arr);
  size_t len = 0;
  cleanup_free char *s = json_dump(o, true, &len);
  json_free(o);
  return write_file_atomic(dirfd, name, s, len, 0644, false, err);
}

/* --- one call ---------------------------------------------------------------- */

struct call {
  struct gate *g;
  const char *id;
  const char *tool_name;
  const struct tool *tool;
  const json_t *args;
  long idx;
  unsigned long long t0;
  const char *decision;
  char *reason;   /* owned */
  char *approver; /* owned */
};

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

/* Audit and answer a call that ends without running. */
static char *finish_error(struct call *c, const char *code, const char *message, size_t *len) {
  struct gate *g = c->g;
  long long ms = elapsed_ms(c);
  struct audit_record rec = {.event = "call", .call_id = c->id, .tool = c->tool_name,
                             .args = c->args, .decision = c->decision ? c->decision : "deny",
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

static char *govern(struct call *c, const json_t *request, const char *bad_reason, size_t *len) {
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
  if (stopped) {
    pthread_mutex_lock(&g->mu);
    const char *what = g->cancelled ? "the run was cancelled" : "the container stopped";
    pthread_mutex_unlock(&g->mu);
    c->reason = xstrdup(what);
    return finish_error(c, GATE_CONTAINER_STOPPED, what, len);
  }
  if (g->policy == NULL || g->policy->ntools == 0) {
    c->reason = xstrdup("no policy");
    return finish_error(c, GATE_DENIED, "denied: no policy", len);
  }
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
    free(g->calls[c->idx].tool);
    g->calls[c->idx].tool = xstrdup(c->tool_name);
    pthread_mutex_unlock(&g->mu);
  }
  const json_t *args = json_object_get(request, "args");
  cleanup_json json_t *empty = NULL;
  if (args == NULL)
    args = empty = json_new_object();
  c->args = args;
  if (!json_is(args, JSON_OBJECT)) {
    c->reason = xstrdup("\"args\" must be an object");
    return finish_error(c, GATE_BAD_REQUEST, c->reason, len);
  }
  c->tool = policy_find(g->policy, c->tool_name);
  if (c->tool == NULL) {
    c->reason = xasprintf("no tool named \"%.64s\" (the tools are listed in /run/tollgate/tools.json)",
                          c->tool_name);
    return finish_error(c, GATE_UNKNOWN_TOOL, c->reason, len);
  }
  const struct tool *t = c->tool;
  char *why = NULL;
  /* From here on every reader gets the one canonical form: the schema, the
   * repeat hash, the rules, the approver, the audit record and the tool
   * (args_canonical.h).  A call without one is refused, not guessed at. */
  cleanup_json json_t *rewritten = NULL;
  const json_t *canon = args_canonical_form(args, &rewritten, &why);
  if (canon == NULL) {
    c->reason = why;
    return finish_error(c, GATE_BAD_REQUEST, why, len);
  }
  args = c->args = canon;
  if (!schema_validate(t->args, args, &why)) {
    c->reason = why;
    return finish_error(c, GATE_BAD_REQUEST, why, len);
  }
  pthread_mutex_lock(&g->mu);
  bool fresh = budget_count_repeat(g->budget, t, args, &why);
  pthread_mutex_unlock(&g->mu);
  if (!fresh) {
    c->reason = why;
    return finish_error(c, GATE_BUDGET_EXHAUSTED, why, len);
  }
  const char *rule_reason = NULL;
  char *mistyped = NULL;
  enum effect e = rules_decide(t->rules, t->nrules, args, &rule_reason, &mistyped);
  if (mistyped != NULL) {
    c->reason = mistyped;
    return finish_error(c, GATE_BAD_REQUEST, mistyped, len);
  }
  c->reason = xstrdup(rule_reason);
  c->approver = xstrdup("policy");
  if (e == EFFECT_DENY) {
    cleanup_free char *m = denied_message(rule_reason);
    return finish_error(c, GATE_DENIED, m, len);
  }
  pthread_mutex_lock(&g->mu);
  bool fits = budget_fits(g->budget, t, &why);
  pthread_mutex_unlock(&g->mu);
  if (!fits) {
    free(c->reason);
    c->reason = why;
    return finish_error(c, GATE_BUDGET_EXHAUSTED, why, len);
  }
  if (e == EFFECT_APPROVE) {
    may_block(g);
    struct approval_request req = {.container_id = g->container_id, .call_id = c->id,
                                   .tool = t->name, .args = args, .reason = rule_reason,
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
      c->reason = xasprintf("%s (%s)", rule_reason, d.reason);
    }
    enum approval_outcome outcome = d.outcome;
    cleanup_free char *dreason = d.reason;
    switch (outcome) {
    case APPROVAL_APPROVED:
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
  }
  /* Allowed.  Reserve the budget now: between the check above and here a
   * person may have taken time, and other calls may have spent it. */
  pthread_mutex_lock(&g->mu);
  bool reserved = budget_reserve(g->budget, t, &why);
  bool stopped_now = g->stopped;
  pthread_mutex_unlock(&g->mu);
  if (!reserved) {
    free(c->reason);
    c->reason = why;
    return finish_error(c, GATE_BUDGET_EXHAUSTED, why, len);
  }
  c->decision = "allow";
  if (stopped_now || !audit_ready(g)) {
    pthread_mutex_lock(&g->mu);
    budget_release(g->budget, t);
    pthread_mutex_unlock(&g->mu);
    if (stopped_now)
      return finish_error(c, GATE_CONTAINER_STOPPED, "the container stopped", len);
    c->decision = "deny";
    if (audit_full(g->audit)) {
      call_update(g, c->idx, "deny", GATE_AUDIT_FULL, elapsed_ms(c));
      return audit_error_response(g, NULL, "", len);
    }
    return finish_error(c, GATE_AUDIT_UNAVAILABLE,
                        "the audit log cannot be written; calls are refused until it can", len);
  }
  cleanup_error tg_error *err = NULL;
  if (t->irreversible) {
    /* Write-ahead: the intent is on disk before anything irreversible
     * happens, so a crash leaves an intent without an outcome, never an
     * action without a record. */
    struct audit_record intent = {.event = "intent", .call_id = c->id, .tool = t->name,
                                  .args = args, .decision = "allow", .reason = c->reason,
                                  .approver = c->approver, .duration_ms = elapsed_ms(c)};
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
  struct tool_result r;
  run_backend(g, t, args, c->id, &r);
  long long ms = elapsed_ms(c);
  struct audit_record rec = {.event = t->irreversible ? "outcome" : "call", .call_id = c->id,
                             .tool = t->name, .args = t->irreversible ? NULL : args,
                             .decision = "allow", .reason = c->reason, .approver = c->approver,
                             .duration_ms = ms, .outcome = errcode_or_ok(r.code),
                             .message = r.message};
  char *resp;
  const char *status = errcode_or_ok(r.code);
  if (audit_append(g->audit, &rec, false, &err) < 0) {
    /* The tool ran but its record could not be written: withhold the
     * result rather than hand out something the log does not show. */
    status = audit_error_code(g);
    resp = audit_error_response(g, err, "the result is withheld", len);
  } else if (r.code) {
    resp = response_error(r.code, r.message, len);
  } else {
    resp = response_ok(r.result, len);
  }
  call_update(g, c->idx, "allow", status, ms);
  tool_result_clear(&r);
  return resp;
}

char *gate_handle(struct gate *g, const char *call_id, const json_t *request,
                  const char *bad_reason, size_t *len) {
  size_t dummy;
  if (len == NULL)
    len = &dummy;
  struct call c = {.g = g, .id = call_id, .t0 = monotonic_ns()};
  pthread_mutex_lock(&g->mu);
  c.idx = call_begin(g, call_id, NULL);
  pthread_mutex_unlock(&g->mu);
  char *resp = govern(&c, request, bad_reason, len);
  free(c.reason);
  free(c.approver);
  return resp;
}

void gate_record_refused(struct gate *g, enum gate_refusal why, const char *call_id,
                         const char *what) {
  static const enum refusal_kind kinds[] = {
      [GATE_REFUSED_BAD_ID] = REFUSAL_BAD_ID,       [GATE_REFUSED_REPLAY] = REFUSAL_REPLAY,
      [GATE_REFUSED_UNREMEMBERED] = REFUSAL_UNREMEMBERED,
      [GATE_REFUSED_WITHDRAWN] = REFUSAL_WITHDRAWN, [GATE_REFUSED_JUNK] = REFUSAL_JUNK,
      [GATE_REFUSED_BACKOFF] = REFUSAL_BACKOFF,
  };
  /* Junk names and the bridge's own pauses are not call attempts. */
  if (why != GATE_REFUSED_JUNK && why != GATE_REFUSED_BACKOFF) {
    const char *unused = NULL;
    pthread_mutex_lock(&g->mu);
    budget_count_attempt(g->budget, &unused);
    pthread_mutex_unlock(&g->mu);
  }
  const char *event = why == GATE_REFUSED_WITHDRAWN ? "withdrawn"
                      : why == GATE_REFUSED_BACKOFF ? "backoff"
                      : why == GATE_REFUSED_JUNK    ? "junk" /* no call attempt */
                                                    : "unanswerable";
  const char *outcome = why == GATE_REFUSED_WITHDRAWN ? "withdrawn"
                        : why == GATE_REFUSED_BACKOFF ? "backoff"
                                                      : GATE_BAD_REQUEST;
  struct audit_record rec = {.event = event, .call_id = call_id, .decision = "deny",
                             .reason = what, .duration_ms = 0, .outcome = outcome};
  if (why != GATE_REFUSED_BACKOFF)
    atomic_fetch_add(&g->refused, 1);
  refusals_record(g->refusals, kinds[why], &rec);
}

void gate_flush_refusals(struct gate *g) { refusals_flush(g->refusals, false); }

unsigned long long gate_refused_count(struct gate *g) { return atomic_load(&g->refused); }

long long gate_max_calls(struct gate *g) { return g->policy ? g->policy->budgets.max_tool_calls : 50; }

long long gate_max_pending(struct gate *g) {
  return g->policy ? g->policy->max_pending : 10;
}

void gate_record_unanswerable(struct gate *g, const char *what) {
  const char *why = NULL;
  pthread_mutex_lock(&g->mu);
  budget_count_attempt(g->budget, &why);
  pthread_mutex_unlock(&g->mu);
  struct audit_record rec = {.event = "unanswerable", .decision = "deny", .reason = what,
                             .duration_ms = 0, .outcome = GATE_BAD_REQUEST};
  audit_append(g->audit, &rec, false, NULL);
}

int gate_decide(struct gate *g, const char *tool, const json_t *args, const char **reason) {
  const struct tool *t = g->policy ? policy_find(g->policy, tool) : NULL;
  if (t == NULL) {
    *reason = g->policy ? "unknown tool" : "no policy";
    return g->policy ? GATE_DECISION_UNKNOWN_TOOL : GATE_DECISION_DENY;
  }
  char *why = NULL;
  cleanup_json json_t *rewritten = NULL;
  const json_t *canon = args_canonical_form(args, &rewritten, &why);
  if (canon == NULL) {
    free(why);
    *reason = "the arguments have no canonical form (invalid UTF-8, an ambiguous dotted name or an out-of-range number)";
    return GATE_DECISION_BAD_REQUEST;
  }
  if (!schema_validate(t->args, canon, &why)) {
    free(why);
    *reason = "arguments do not match the tool's schema";
    return GATE_DECISION_BAD_REQUEST;
  }
  char *mistyped = NULL;
  enum effect e = rules_decide(t->rules, t->nrules, canon, reason, &mistyped);
  if (mistyped != NULL) {
    free(mistyped);
    *reason = "a rule compares an argument of the wrong type";
    return GATE_DECISION_BAD_REQUEST;
  }
  switch (e) {
  case EFFECT_ALLOW: return GATE_DECISION_ALLOW;
  case EFFECT_APPROVE: return GATE_DECISION_APPROVE;
  case EFFECT_DENY: break;
  }
  return GATE_DECISION_DENY;
}

json_t *gate_calls_json(struct gate *g) { return calls_json(g); }

json_t *gate_pending_json(struct gate *g) { return approvals_pending_json(g->approvals); }

int gate_decide_pending(struct gate *g, const char *call_id, bool approve, const char *who,
                        const char *reason, tg_error **err) {
  return approvals_decide(g->approvals, call_id, approve, who, reason, err);
}

int gate_approval_timeout_ms(struct gate *g) { return g->approval_timeout_ms; }

const char *gate_audit_path(struct gate *g) { return g->audit ? audit_path(g->audit) : NULL; }

void gate_container_stopped(struct gate *g) {
  if (g == NULL)
    return;
  pthread_mutex_lock(&g->mu);
  g->stopped = true;
  pthread_mutex_unlock(&g->mu);
  if (g->approvals)
    approvals_stop(g->approvals);
}

void gate_stop_control(struct gate *g) {
  control_stop(g->control);
  g->control = NULL;
}

void gate_close(struct gate *g) {
  if (g == NULL)
    return;
  gate_container_stopped(g);
  gate_stop_control(g);
  if (g->policy)
    for (size_t i = 0; g->mcp && i < g->policy->nmcp; i++)
      mcp_stop(g->mcp[i]);
  free(g->mcp);
  if (g->refusals) /* the counts that are left, before the closing record */
    refusals_flush(g->refusals, true);
  refusals_free(g->refusals);
  audit_close(g->audit);
  budget_free(g->budget);
  approvals_free(g->approvals);
  policy_free(g->policy);
  free(g->host_hook[0]);
  for (size_t i = 0; i < g->ncalls; i++) {
    free(g->calls[i].id);
    free(g->calls[i].tool);
  }
  free(g->calls);
  pthread_mutex_destroy(&g->mu);
  free(g->container_id);
  free(g);
}

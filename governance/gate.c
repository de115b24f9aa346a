/* The governance gate's lifetime: open (the policy, its MCP servers, the
 * audit log, the budgets of a resumed run, the control socket), tools.json,
 * the bridge's refusals, and close.  One call's way through the gate is
 * govern.c; what the control socket answers is control_verbs.c; the
 * state they share is gate_state.h. */
#include "governance/gate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/anomaly.h"
#include "governance/approval.h"
#include "governance/args_canonical.h"
#include "governance/audit.h"
#include "governance/budget.h"
#include "governance/budget_replay.h"
#include "governance/call_list.h"
#include "governance/control.h"
#include "governance/gate_log.h"
#include "governance/gate_state.h"
#include "governance/mcp.h"
#include "governance/policy.h"
#include "governance/refusals.h"
#include "governance/stop_grace.h"
#include "governance/tools.h"
#include "base/util.h"

#define DEFAULT_APPROVAL_TIMEOUT_MS 60000

void gate_set_block_hook(struct gate *g, void (*fn)(void *ctx), void *ctx) {
  g->block_hook = fn;
  g->block_ctx = ctx;
}

void gate_set_park_hook(struct gate *g, void (*fn)(void *ctx, bool parked), void *ctx) {
  g->park_hook = fn;
  g->park_ctx = ctx;
}

void gate_set_stop_hook(struct gate *g, void (*fn)(void *ctx), void *ctx) {
  g->stop_hook = fn;
  g->stop_ctx = ctx;
  /* A sidecar restarted within a stop's grace (its log says stopped):
   * the container still gets killed, after a grace of its own. */
  char *why = NULL;
  if (fn && anomaly_state(g->anomalies, &why) == ANOMALY_STATE_STOPPED &&
      !atomic_exchange(&g->stop_requested, true)) {
    pthread_mutex_lock(&g->mu);
    g->stopped = true;
    if (g->stop_why == NULL) {
      g->stop_why = why;
      why = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    g->grace = stop_grace_start(g->policy->anomalies.stop_grace_ms, fn, ctx);
  }
  free(why);
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
  pthread_mutex_init(&g->add_mu, NULL);
  pthread_rwlock_init(&g->tools_lock, NULL);
  g->tools_dirfd = -1;
  g->policy_ceiling = cfg->policy_ceiling ? xstrdup(cfg->policy_ceiling) : NULL;
  g->container_id = xstrdup(cfg->container_id);
  g->calls = call_list_new();
  if (cfg->policy_path && policy_load(cfg->policy_path, &g->policy, err) < 0)
    goto fail;
  if (g->policy && !cfg->defer_tools && start_mcp(g, err) < 0)
    goto fail;
  g->budget = budget_new(g->policy);
  g->anomalies = anomalies_new(g->policy ? &g->policy->anomalies : NULL);
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
  /* The tools the run added (add_tool) are the run's: a restarted sidecar
   * has them again, before the budgets that their calls spent. */
  if (cfg->resume != NULL && gate_replay_added_tools(g, err) < 0) {
    tg_error_wrap(err, "read back the tools the run added from its audit log");
    goto fail;
  }
  /* A restarted sidecar carries on the run's budgets, not fresh ones:
   * otherwise every death of a sidecar would refill them. */
  if (cfg->resume != NULL &&
      budget_replay_log(g->budget, g->policy, audit_path(g->audit), err) < 0) {
    tg_error_wrap(err, "read back the budgets of the run from its audit log");
    goto fail;
  }
  /* ... and its anomaly state: a sidecar's death must not lift a stop. */
  if (cfg->resume != NULL && anomaly_replay_log(g->anomalies, audit_path(g->audit), err) < 0) {
    tg_error_wrap(err, "read back the anomaly state of the run from its audit log");
    goto fail;
  }
  audit_set_quota(g->audit, cfg->audit_max_bytes ? cfg->audit_max_bytes : AUDIT_DEFAULT_MAX_BYTES);
  g->refusals = refusals_new(g->audit, 0);
  if (cfg->control_socket &&
      control_start(cfg->control_socket, cfg->approver_group, gate_answer_control, g, &g->control,
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
  if (dirfd != g->tools_dirfd) {
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
      return tg_error_set(err, errno, "keep the directory of %s", name);
    if (g->tools_dirfd >= 0)
      close(g->tools_dirfd);
    g->tools_dirfd = fd;
    free(g->tools_name);
    g->tools_name = xstrdup(name);
  }
  json_t *o = json_new_object();
  json_object_set(o, "v", json_new_integer(1));
  json_object_set(o, "approval_timeout", seconds_json(g->approval_timeout_ms));
  /* The effective value (the policy may override the host config): the
   * clients size their own timeout from it. */
  json_object_set(o, "approval_timeout_ms", json_new_integer(g->approval_timeout_ms));
  json_t *arr = json_new_array();
  pthread_rwlock_rdlock(&g->tools_lock);
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
    /* tollgate.http's helpers look for the http tool (docs/egress.md). */
    if (t->backend.type == BACKEND_HTTP)
      json_object_set(e, "backend", json_new_string("http"));
    json_array_append(arr, e);
  }
  pthread_rwlock_unlock(&g->tools_lock);
  json_object_set(o, "tools", arr);
  size_t len = 0;
  cleanup_free char *s = json_dump(o, true, &len);
  json_free(o);
  return write_file_atomic(dirfd, name, s, len, 0644, false, err);
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
  pthread_rwlock_rdlock(&g->tools_lock);
  const struct tool *t = g->policy ? policy_find(g->policy, tool) : NULL;
  pthread_rwlock_unlock(&g->tools_lock);
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

bool gate_anomaly_stop(struct gate *g, char **why, char **call_id) {
  *why = *call_id = NULL;
  if (g == NULL)
    return false;
  pthread_mutex_lock(&g->mu);
  bool stopped = g->stop_why != NULL;
  if (stopped) {
    *why = xstrdup(g->stop_why);
    *call_id = g->stop_call ? xstrdup(g->stop_call) : NULL;
  }
  pthread_mutex_unlock(&g->mu);
  return stopped;
}

int gate_close(struct gate *g) {
  if (g == NULL)
    return 0;
  /* The container is gone (or going): a grace still running has nothing
   * left to stop. */
  stop_grace_free(g->grace);
  gate_container_stopped(g);
  gate_stop_control(g);
  if (g->policy)
    for (size_t i = 0; g->mcp && i < g->policy->nmcp; i++)
      mcp_stop(g->mcp[i]);
  free(g->mcp);
  if (g->refusals) /* the counts that are left, before the closing record */
    refusals_flush(g->refusals, true);
  refusals_free(g->refusals);
  int closed = audit_close(g->audit);
  budget_free(g->budget);
  anomalies_free(g->anomalies);
  approvals_free(g->approvals);
  policy_free(g->policy);
  free(g->host_hook[0]);
  call_list_free(g->calls);
  free(g->stop_why);
  free(g->stop_call);
  free(g->policy_ceiling);
  free(g->tools_name);
  if (g->tools_dirfd >= 0)
    close(g->tools_dirfd);
  pthread_rwlock_destroy(&g->tools_lock);
  pthread_mutex_destroy(&g->add_mu);
  pthread_mutex_destroy(&g->mu);
  free(g->container_id);
  free(g);
  return closed;
}

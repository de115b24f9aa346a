/* Policy ceilings: budgets, caps and tools compared here; calls in
 * ceiling_calls.c, backends and MCP servers in ceiling_backend.c
 * (ceiling.h). */
#include "governance/ceiling.h"
#include "governance/policy.h"
#include "governance/ceiling_cases.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

int ceiling_rank(enum effect e) {
  switch (e) {
  case EFFECT_ALLOW: return 2;
  case EFFECT_APPROVE: return 1;
  case EFFECT_DENY: break;
  }
  return 0;
}

static char *vformat(const char *fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  char *s = xmalloc((size_t)(n < 0 ? 0 : n) + 1);
  vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
  return s;
}

void ceiling_add_witness(struct ceiling_result *r, const char *tool, const json_t *args,
                         enum effect pe, enum effect ce, const char *fmt, ...) {
  r->witnesses = xrealloc(r->witnesses, (r->nwitnesses + 1) * sizeof *r->witnesses);
  struct ceiling_witness *w = &r->witnesses[r->nwitnesses++];
  va_list ap;
  va_start(ap, fmt);
  w->what = vformat(fmt, ap);
  va_end(ap);
  w->tool = tool ? xstrdup(tool) : NULL;
  w->args = args ? json_copy(args) : NULL;
  w->policy_effect = pe;
  w->ceiling_effect = ce;
}

void ceiling_add_undecided(struct ceiling_result *r, const char *fmt, ...) {
  r->undecided = xrealloc(r->undecided, (r->nundecided + 1) * sizeof *r->undecided);
  va_list ap;
  va_start(ap, fmt);
  r->undecided[r->nundecided++] = vformat(fmt, ap);
  va_end(ap);
}

/* A limit where -1 means none: is p at most c? */
static bool limit_within(long long p, long long c) {
  return c < 0 || (p >= 0 && p <= c);
}

void ceiling_limit(struct ceiling_result *r, const char *tool, const char *field, long long p,
                   long long c) {
  if (limit_within(p, c))
    return;
  cleanup_free char *pv = p < 0 ? xstrdup("unlimited") : xasprintf("%lld", p);
  ceiling_add_witness(r, tool, NULL, EFFECT_DENY, EFFECT_DENY,
                      "%s: %s in the policy, at most %lld in the ceiling", field, pv, c);
}

/* Agent-written tools (a source_sha256: code a model wrote at run time)
 * are counted, not the policy's own max_custom_tools: what the ceiling
 * bounds is how many such tools the policy holds, so a policy that leaves
 * its figure out is not refused for that alone.  0 forbids them. */
static void custom_tools(const struct policy *p, const struct policy *c, struct ceiling_result *r) {
  long long cmax = c->budgets.max_custom_tools;
  size_t n = policy_custom_tools(p);
  if (cmax < 0 || n <= (size_t)cmax)
    return;
  char names[256] = "";
  size_t used = 0;
  for (size_t i = 0; i < p->ntools && used + 1 < sizeof names; i++) {
    if (p->tools[i]->source_sha256 == NULL)
      continue;
    int k = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", p->tools[i]->name);
    used = k < 0 ? sizeof names : used + (size_t)k;
  }
  if (cmax == 0)
    ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                        "budgets.max_custom_tools: the policy has %zu agent-written tool%s (%s), "
                        "the ceiling forbids agent-written tools (max_custom_tools 0)",
                        n, n == 1 ? "" : "s", names);
  else
    ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                        "budgets.max_custom_tools: the policy has %zu agent-written tools (%s), "
                        "at most %lld in the ceiling",
                        n, names, cmax);
}

static void budgets(const struct policy *p, const struct policy *c, struct ceiling_result *r) {
  const struct budgets *pb = &p->budgets, *cb = &c->budgets;
  ceiling_limit(r, NULL, "budgets.max_tool_calls", pb->max_tool_calls, cb->max_tool_calls);
  ceiling_limit(r, NULL, "budgets.max_irreversible", pb->max_irreversible, cb->max_irreversible);
  ceiling_limit(r, NULL, "budgets.repeat_limit", pb->repeat_limit, cb->repeat_limit);
  ceiling_limit(r, NULL, "approval.max_pending", p->max_pending, c->max_pending);
  custom_tools(p, c, r);
  if (cb->max_cost >= 0 && !(pb->max_cost >= 0 && pb->max_cost <= cb->max_cost)) {
    cleanup_free char *pv = pb->max_cost < 0 ? xstrdup("unlimited") : xasprintf("%g", pb->max_cost);
    ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                        "budgets.max_cost: %s in the policy, at most %g in the ceiling", pv,
                        cb->max_cost);
  }
}

/* An approval hook decides every approve-effect call: a policy's own hook
 * (one that approves everything, say) would turn the ceiling's "a person
 * approves" into "allow".  Only the ceiling's hook, or none (the host's
 * approvers), keeps approve what the ceiling means by it. */
static void approval(const struct policy *p, const struct policy *c, struct ceiling_result *r) {
  if (p->approval_hook == NULL || ceiling_same_argv(p->approval_hook, c->approval_hook))
    return;
  ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                      "approval.hook: the policy names its own approval hook (%s), which would "
                      "decide the calls the ceiling leaves to %s: leave it out or use the "
                      "ceiling's",
                      p->approval_hook[0], c->approval_hook ? c->approval_hook[0] : "the host's approvers");
}

/* Each anomaly limit the ceiling sets is set in the policy too, no higher
 * (for every kind a lower figure flags sooner) and with an action at least
 * as strict (stop, then park, then log): a policy that drops or loosens it
 * lets a probing or bursting program run on where the ceiling stops it. */
static void anomalies(const struct policy *p, const struct policy *c, struct ceiling_result *r) {
  for (int k = 0; k < ANOMALY_KINDS; k++) {
    const struct anomaly_limit *pl = &p->anomalies.of[k], *cl = &c->anomalies.of[k];
    if (cl->limit == 0)
      continue;
    const char *kind = anomaly_kind_name((enum anomaly_kind)k);
    if (k == ANOMALY_DENIALS_IN_WINDOW &&
        (pl->limit == 0 || pl->limit > cl->limit || pl->calls < cl->calls)) {
      /* No more denials among no fewer calls: whenever the ceiling's
       * window holds its count since its last flag, the policy's (as long
       * or longer) holds as many, so the policy flags at or before each
       * flag of the ceiling's.  Fewer calls would let a prober spread its
       * denials past the policy's window. */
      cleanup_free char *pv = pl->limit == 0 ? xstrdup("not set")
                                             : xasprintf("%lld of %lld calls", pl->limit, pl->calls);
      ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                          "anomalies.%s: %s in the policy, at most %lld denials among at least "
                          "%lld calls in the ceiling",
                          kind, pv, cl->limit, cl->calls);
    } else if (k != ANOMALY_DENIALS_IN_WINDOW && (pl->limit == 0 || pl->limit > cl->limit)) {
      cleanup_free char *pv = pl->limit == 0 ? xstrdup("not set") : xasprintf("%lld", pl->limit);
      ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                          "anomalies.%s: %s in the policy, at most %lld in the ceiling", kind, pv,
                          cl->limit);
    } else if (pl->action > cl->action) { /* enum order: stop < park < log */
      ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                          "anomalies.%s: action %s in the policy, %s or stricter in the ceiling",
                          kind, anomaly_action_name(pl->action), anomaly_action_name(cl->action));
    }
  }
  /* A stop's grace is time the program runs on after its run was stopped:
   * no longer than the ceiling's (each side's default when unset), when
   * the policy stops at all. */
  bool stops = false;
  for (int k = 0; k < ANOMALY_KINDS; k++)
    stops |= p->anomalies.of[k].limit > 0 && p->anomalies.of[k].action == ANOMALY_STOP;
  if (stops && p->anomalies.stop_grace_ms > c->anomalies.stop_grace_ms)
    ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                        "anomalies.stop_grace_ms: %lld in the policy, at most %lld in the ceiling",
                        p->anomalies.stop_grace_ms, c->anomalies.stop_grace_ms);
  /* The alert hook is a program run on the host: only the ceiling's, or none. */
  char **ph = p->anomalies.alert_hook, **ch = c->anomalies.alert_hook;
  if (ph != NULL && !ceiling_same_argv(ph, ch))
    ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                        "anomalies.alert_hook: the policy names its own alert hook (%s): leave it "
                        "out or use the ceiling's",
                        ph[0]);
}

static void tool_caps(const struct tool *t, const struct tool *c, struct ceiling_result *r) {
  cleanup_free char *f = xasprintf("tools.%s.max_calls", t->name);
  ceiling_limit(r, t->name, f, t->max_calls, c->max_calls);
  /* A lower cost lets more calls fit under budgets.max_cost. */
  if (t->cost < c->cost)
    ceiling_add_witness(r, t->name, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.cost: %g in the policy, at least %g in the ceiling", t->name,
                        t->cost, c->cost);
  if (c->irreversible && !t->irreversible)
    ceiling_add_witness(r, t->name, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.irreversible: false in the policy, true in the ceiling "
                        "(its calls would escape budgets.max_irreversible)",
                        t->name);
  if (t->timeout_ms > c->timeout_ms)
    ceiling_add_witness(r, t->name, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.timeout: %g s in the policy, at most %g s in the ceiling",
                        t->name, t->timeout_ms / 1000.0, c->timeout_ms / 1000.0);
}

void ceiling_check(const struct policy *p, const struct policy *c, struct ceiling_result *out) {
  memset(out, 0, sizeof *out);
  budgets(p, c, out);
  approval(p, c, out);
  anomalies(p, c, out);
  ceiling_check_servers(p, c, out);
  for (size_t i = 0; i < p->ntools; i++) {
    const struct tool *t = p->tools[i];
    const struct tool *ct = policy_find(c, t->name);
    if (ct == NULL) {
      ceiling_add_witness(out, t->name, NULL, EFFECT_DENY, EFFECT_DENY,
                          "tools.%s: in the policy, not in the ceiling (a tool the ceiling "
                          "does not name is never allowed)",
                          t->name);
      continue;
    }
    tool_caps(t, ct, out);
    ceiling_check_backend(t, ct, out);
    ceiling_check_calls(t, ct, out);
  }
  out->verdict = out->nwitnesses > 0   ? CEILING_NOT_WITHIN
                 : out->nundecided > 0 ? CEILING_UNDECIDED
                                       : CEILING_WITHIN;
}

void ceiling_result_free(struct ceiling_result *r) {
  for (size_t i = 0; i < r->nwitnesses; i++) {
    free(r->witnesses[i].what);
    free(r->witnesses[i].tool);
    json_free(r->witnesses[i].args);
  }
  free(r->witnesses);
  for (size_t i = 0; i < r->nundecided; i++)
    free(r->undecided[i]);
  free(r->undecided);
  memset(r, 0, sizeof *r);
}

enum effect ceiling_decide(const struct tool *t, const json_t *args, char **reason) {
  char *why = NULL;
  if (!schema_validate(t->args, args, &why)) {
    *reason = xasprintf("bad_request: %s", why);
    free(why);
    return EFFECT_DENY;
  }
  const char *rs = NULL;
  char *mistyped = NULL;
  enum effect e = rules_decide(t->rules, t->nrules, args, &rs, &mistyped);
  *reason = xstrdup(rs);
  free(mistyped);
  return e;
}

char *ceiling_result_text(const struct ceiling_result *r, const char *policy_path,
                          const char *ceiling_path) {
  struct json_buf b = {0};
  for (size_t i = 0; i < r->nwitnesses; i++) {
    cleanup_free char *line = xasprintf("%s: not within %s: %s\n", policy_path, ceiling_path,
                                        r->witnesses[i].what);
    json_buf_raw(&b, line, strlen(line));
  }
  for (size_t i = 0; i < r->nundecided; i++) {
    cleanup_free char *line = xasprintf("%s: not proved within %s: %s\n", policy_path,
                                        ceiling_path, r->undecided[i]);
    json_buf_raw(&b, line, strlen(line));
  }
  if (r->verdict == CEILING_WITHIN) {
    cleanup_free char *line = xasprintf("%s: within %s (%llu calls decided)\n", policy_path,
                                        ceiling_path, r->cases);
    json_buf_raw(&b, line, strlen(line));
  }
  if (b.len > 0)
    b.s[--b.len] = '\0'; /* no final newline */
  return b.s;
}

/* The witnesses on one line ("; " between them): the runtime log keeps a
 * create error on one line, and containerd shows the last one. */
static char *one_line(const struct ceiling_result *r) {
  struct json_buf b = {0};
  for (size_t i = 0; i < r->nwitnesses + r->nundecided; i++) {
    const char *s = i < r->nwitnesses ? r->witnesses[i].what : r->undecided[i - r->nwitnesses];
    if (b.len)
      json_buf_lit(&b, "; ");
    json_buf_raw(&b, s, strlen(s));
  }
  return b.s ? b.s : xstrdup("");
}

static int check_one(const struct policy *p, const char *policy_path, const char *ceiling_path,
                     const char *key, tg_error **err) {
  struct policy *c = NULL;
  if (policy_load(ceiling_path, &c, err) < 0)
    return tg_error_wrap(err, "the host config's %s %s is not a valid policy (run `tollgate policy "
                         "check %s`)", key, ceiling_path, ceiling_path);
  struct ceiling_result r;
  ceiling_check(p, c, &r);
  policy_free(c);
  int ret = 0;
  if (r.verdict != CEILING_WITHIN) {
    cleanup_free char *why = one_line(&r);
    ret = tg_error_set(err, 0,
                       "policy %s is %s the ceiling %s (the host config's %s): %s; use a policy "
                       "within the ceiling (check it with `tollgate policy check --within %s "
                       "POLICY`)",
                       policy_path, r.verdict == CEILING_NOT_WITHIN ? "not within" : "not proved within",
                       ceiling_path, key, why, ceiling_path);
  }
  ceiling_result_free(&r);
  return ret;
}

int ceiling_enforce(const char *policy_path, const char *const *ceilings,
                    const char *const *keys, size_t n, tg_error **err) {
  if (n == 0 || policy_path == NULL)
    return 0;
  struct policy *p = NULL;
  if (policy_load(policy_path, &p, err) < 0)
    return tg_error_wrap(err, "policy %s must load to be checked against its ceiling", policy_path);
  int ret = 0;
  for (size_t i = 0; i < n && ret == 0; i++)
    ret = check_one(p, policy_path, ceilings[i], keys[i], err);
  policy_free(p);
  return ret;
}

/* Budgets through the gate: the cap counts denials, failures, malformed and
 * unknown calls; max_cost, max_irreversible, per-tool max_calls and the
 * repeat limit deny with budget_exhausted and never run the tool. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "governance/budget.h"
#include "governance/gate.h"
#include "base/util.h"

static char dir[] = "/tmp/tg-budget-XXXXXX";
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(budget, .init = setup, .fini = teardown);

static struct gate *open_gate(const char *policy) {
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(policy, f);
  fclose(f);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "b1", .policy_path = pp, .audit_dir = audit};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

static int n_calls;
/* The error code of the response, or "ok". */
static char *code_of(struct gate *g, const char *req) {
  cleanup_json json_t *r = req ? json_parse(req, strlen(req), NULL, NULL) : NULL;
  cleanup_free char *id = xasprintf("call%d", n_calls++);
  cleanup_free char *resp = gate_handle(g, id, r, "garbage", NULL);
  cleanup_json json_t *v = json_parse(resp, strlen(resp), NULL, NULL);
  if (json_is_true(json_object_get(v, "ok")))
    return xstrdup("ok");
  return xstrdup(json_string_value(json_get_path(v, "error.code")));
}

#define EXPECT(g, req, want)                                         \
  do {                                                               \
    cleanup_free char *got_ = code_of(g, req);                       \
    cr_assert_str_eq(got_, want, "%s -> %s, want %s", req ? req : "(malformed)", got_, want); \
  } while (0)

static const char *TOOLS =
    "\"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]},"
    "\"no\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"deny\"}]},"
    "\"fail\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"/bin/false\"]}, \"rules\": [{\"effect\": \"allow\"}]},"
    "\"paid\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"cost\": 4, \"rules\": [{\"effect\": \"allow\"}]},"
    "\"wipe\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"irreversible\": true, \"rules\": [{\"effect\": \"allow\"}]},"
    "\"thrice\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"max_calls\": 3, \"rules\": [{\"effect\": \"allow\"}]}";

Test(budget, the_cap_counts_every_attempt) {
  cleanup_free char *pol = xasprintf("{\"version\": 1, \"tools\": {%s}, \"budgets\": {\"max_tool_calls\": 5}}", TOOLS);
  struct gate *g = open_gate(pol);
  EXPECT(g, "{\"v\":1,\"tool\":\"no\",\"args\":{}}", "denied");
  EXPECT(g, "{\"v\":1,\"tool\":\"fail\",\"args\":{}}", "tool_failed");
  EXPECT(g, NULL, "bad_request");
  EXPECT(g, "{\"v\":1,\"tool\":\"ghost\",\"args\":{}}", "unknown_tool");
  gate_record_unanswerable(g, "bad id");
  /* five attempts are used up, though none succeeded */
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", "budget_exhausted");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", "budget_exhausted");
  cleanup_json json_t *calls = gate_calls_json(g);
  long long used = 0;
  cr_assert(json_integer_value(json_get_path(calls, "budget.calls.used"), &used));
  cr_assert_eq(used, 7);
  gate_close(g);
}

Test(budget, cost_irreversible_and_per_tool_limits) {
  cleanup_free char *pol = xasprintf(
      "{\"version\": 1, \"tools\": {%s}, \"budgets\": {\"max_cost\": 10, \"max_irreversible\": 1}}", TOOLS);
  struct gate *g = open_gate(pol);
  EXPECT(g, "{\"v\":1,\"tool\":\"paid\",\"args\":{\"n\":1}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"paid\",\"args\":{\"n\":2}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"paid\",\"args\":{\"n\":3}}", "budget_exhausted"); /* 12 > 10 */
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", "ok");                  /* free tools still run */
  EXPECT(g, "{\"v\":1,\"tool\":\"wipe\",\"args\":{}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"wipe\",\"args\":{\"again\":true}}", "budget_exhausted");
  EXPECT(g, "{\"v\":1,\"tool\":\"thrice\",\"args\":{\"i\":1}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"thrice\",\"args\":{\"i\":2}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"thrice\",\"args\":{\"i\":3}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"thrice\",\"args\":{\"i\":4}}", "budget_exhausted");
  cleanup_json json_t *calls = gate_calls_json(g);
  long long cost = 0, irr = 0;
  cr_assert(json_integer_value(json_get_path(calls, "budget.cost.used"), &cost));
  cr_assert_eq(cost, 8);
  cr_assert(json_integer_value(json_get_path(calls, "budget.irreversible.used"), &irr));
  cr_assert_eq(irr, 1);
  gate_close(g);
}

Test(budget, repeat_limit_ignores_key_order) {
  cleanup_free char *pol = xasprintf("{\"version\": 1, \"tools\": {%s}, \"budgets\": {\"repeat_limit\": 2}}", TOOLS);
  struct gate *g = open_gate(pol);
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"a\":1,\"b\":{\"x\":1,\"y\":2}}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"b\":{\"y\":2,\"x\":1},\"a\":1}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"a\":1,\"b\":{\"x\":1,\"y\":2}}}", "budget_exhausted");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"a\":2,\"b\":{\"x\":1,\"y\":2}}}", "ok");
  gate_close(g);
}

/* Issue 16: one number in any spelling is one call for repeat_limit. */
Test(budget, repeat_limit_sees_one_number_in_any_spelling) {
  cleanup_free char *pol = xasprintf("{\"version\": 1, \"tools\": {%s}, \"budgets\": {\"repeat_limit\": 1}}", TOOLS);
  struct gate *g = open_gate(pol);
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"amount\":640}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"amount\":640.0}}", "budget_exhausted");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"amount\":6.4e2}}", "budget_exhausted");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"amount\":6400e-1}}", "budget_exhausted");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":[{\"amount\":0.5}]}}", "ok");
  EXPECT(g, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":[{\"amount\":5e-1}]}}", "budget_exhausted");
  gate_close(g);
}

Test(budget, canonical_json_sorts_keys) {
  const char *a = "{\"b\":1,\"a\":{\"d\":[{\"z\":1,\"y\":2}],\"c\":null}}";
  cleanup_json json_t *v = json_parse(a, strlen(a), NULL, NULL);
  cleanup_free char *s = json_canonical(v, NULL);
  cr_assert_str_eq(s, "{\"a\":{\"c\":null,\"d\":[{\"y\":2,\"z\":1}]},\"b\":1}");
}

/* Many threads at once (the bridge's worker pool): the cap admits exactly
 * max_tool_calls calls, never one more. */
struct hammer {
  struct gate *g;
  int ok, exhausted;
};

static void *hammer_main(void *arg) {
  struct hammer *h = arg;
  const char *req = "{\"v\":1,\"tool\":\"echo\",\"args\":{}}";
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  for (int i = 0; i < 200; i++) {
    cleanup_free char *resp = gate_handle(h->g, "t", r, NULL, NULL);
    if (strstr(resp, "\"ok\":true"))
      h->ok++;
    else if (strstr(resp, "budget_exhausted"))
      h->exhausted++;
  }
  return NULL;
}

Test(budget, the_cap_holds_under_concurrency) {
  cleanup_free char *pol = xasprintf("{\"version\": 1, \"tools\": {%s}, \"budgets\": {\"max_tool_calls\": 1000}}", TOOLS);
  struct gate *g = open_gate(pol);
  struct hammer h[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    h[i] = (struct hammer){.g = g};
    pthread_create(&t[i], NULL, hammer_main, &h[i]);
  }
  int ok = 0, exhausted = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    ok += h[i].ok;
    exhausted += h[i].exhausted;
  }
  cr_assert_eq(ok, 1000);
  cr_assert_eq(exhausted, 600);
  gate_close(g);
}

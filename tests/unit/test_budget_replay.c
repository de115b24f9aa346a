/* Budgets read back from an audit log (budget_replay.h): every record
 * order a killed sidecar can leave counts each attempt exactly once, and
 * a gate's own log replays to the budget that gate had. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "governance/budget.h"
#include "governance/budget_replay.h"
#include "governance/gate.h"
#include "governance/policy.h"
#include "base/util.h"
#include "file_util.h"

static char dir[] = "/tmp/tg-breplay-XXXXXX";
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(budget_replay, .init = setup, .fini = teardown);

#define TOOLS                                                                                    \
  "\"tools\": {"                                                                                 \
  "\"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"                         \
  "  \"args\": {\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"string\"}}},"          \
  "  \"rules\": [{\"if\": {\"arg\": \"x\", \"op\": \"==\", \"value\": \"no\"}, \"effect\": \"deny\"}," \
  "            {\"if\": {\"arg\": \"n\", \"op\": \">\", \"value\": 1}, \"effect\": \"deny\"},"   \
  "            {\"effect\": \"allow\"}]},"                                                       \
  "\"paid\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"cost\": 4, \"max_calls\": 9," \
  "  \"rules\": [{\"effect\": \"allow\"}]},"                                                     \
  "\"wipe\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"irreversible\": true," \
  "  \"rules\": [{\"effect\": \"allow\"}]}}"

static const char *POLICY =
    "{\"version\": 1, " TOOLS ", \"budgets\": {\"max_tool_calls\": 100, \"max_cost\": 40, "
    "\"max_irreversible\": 5, \"repeat_limit\": 1}}";

static struct policy *load(void) {
  write_text_in(dir, "policy.json", POLICY, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_load(pp, &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

/* Record lines, without chain members: replay reads, it does not verify. */
#define OPEN "{\"seq\":1,\"event\":\"open\",\"call\":null}\n"
#define DIED(n) "{\"event\":\"sidecar_died\",\"call\":null,\"outcome\":\"restart\",\"unknown_calls\":" #n "}\n"
#define UNKNOWN(id) "{\"event\":\"unknown\",\"call\":\"" id "\",\"outcome\":\"outcome_unknown\"}\n"
#define CALL(id, tool, decision, outcome)                                                       \
  "{\"event\":\"call\",\"call\":\"" id "\",\"tool\":\"" tool "\",\"args\":{},\"decision\":\"" \
  decision "\",\"approver\":\"policy\",\"outcome\":\"" outcome "\"}\n"
#define INTENT(id)                                                                               \
  "{\"event\":\"intent\",\"call\":\"" id "\",\"tool\":\"wipe\",\"args\":{},\"decision\":\"allow\"," \
  "\"approver\":\"policy\"}\n"
#define OUTCOME(id)                                                                              \
  "{\"event\":\"outcome\",\"call\":\"" id "\",\"tool\":\"wipe\",\"args\":null,\"decision\":\"allow\"," \
  "\"approver\":\"policy\",\"outcome\":\"ok\"}\n"

struct spent {
  long long calls, irreversible, paid_calls;
  double cost;
};

static struct spent replay(const char *log) {
  write_text_in(dir, "log.jsonl", log, 0600);
  cleanup_free char *path = xasprintf("%s/log.jsonl", dir);
  struct policy *p = load();
  struct budget *b = budget_new(p);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(budget_replay_log(b, p, path, &err), 0, "%s", err ? err->msg : "");
  cleanup_json json_t *j = budget_to_json(b);
  struct spent s = {0};
  json_integer_value(json_get_path(j, "calls.used"), &s.calls);
  json_integer_value(json_get_path(j, "irreversible.used"), &s.irreversible);
  json_integer_value(json_get_path(j, "tools.paid.used"), &s.paid_calls);
  long long cost = 0;
  json_integer_value(json_get_path(j, "cost.used"), &cost);
  s.cost = (double)cost;
  budget_free(b);
  policy_free(p);
  return s;
}

#define EXPECT_SPENT(log, c, irr, paid)                                                          \
  do {                                                                                           \
    struct spent s_ = replay(log);                                                               \
    cr_assert_eq(s_.calls, c, "calls: %lld, want %d", s_.calls, c);                              \
    cr_assert_eq(s_.irreversible, irr, "irreversible: %lld, want %d", s_.irreversible, irr);    \
    cr_assert_eq(s_.paid_calls, paid, "paid calls: %lld, want %d", s_.paid_calls, paid);        \
    cr_assert_float_eq(s_.cost, 4.0 * (paid), 1e-9, "cost: %g, want %d", s_.cost, 4 * (paid));  \
  } while (0)

Test(budget_replay, intent_only) {
  EXPECT_SPENT(OPEN INTENT("a"), 1, 1, 0);
  EXPECT_SPENT(OPEN INTENT("a") OUTCOME("a"), 1, 1, 0);
}

Test(budget_replay, intent_then_unknown_is_one_call) {
  EXPECT_SPENT(OPEN INTENT("a") DIED(1) UNKNOWN("a"), 1, 1, 0);
  EXPECT_SPENT(OPEN INTENT("a") OUTCOME("a") DIED(1) UNKNOWN("a"), 1, 1, 0);
}

Test(budget_replay, call_then_unknown_is_one_call) {
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok") DIED(1) UNKNOWN("a"), 1, 0, 1);
  EXPECT_SPENT(OPEN CALL("a", "echo", "deny", "denied") DIED(1) UNKNOWN("a"), 1, 0, 0);
}

Test(budget_replay, unknown_only_counts) {
  /* in flight, never recorded: an attempt all the same */
  EXPECT_SPENT(OPEN DIED(1) UNKNOWN("a"), 1, 0, 0);
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok") DIED(2) UNKNOWN("a") UNKNOWN("b"), 2, 0, 1);
}

Test(budget_replay, duplicates_count_once) {
  /* named twice by one death */
  EXPECT_SPENT(OPEN INTENT("a") DIED(2) UNKNOWN("a") UNKNOWN("a"), 1, 1, 0);
  EXPECT_SPENT(OPEN DIED(2) UNKNOWN("a") UNKNOWN("a"), 1, 0, 0);
  /* a restarted sidecar that died at once: the next death names the
   * same calls again */
  EXPECT_SPENT(OPEN INTENT("a") DIED(1) UNKNOWN("a") DIED(2) UNKNOWN("a") UNKNOWN("b"), 2, 1, 0);
}

Test(budget_replay, a_reused_id_is_another_attempt) {
  /* a replayed id is refused, and counted: two attempts */
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok")
               "{\"event\":\"unanswerable\",\"call\":\"a\",\"outcome\":\"bad_request\"}\n",
               2, 0, 1);
  /* the id served again by the next sidecar (its seen set is new), then
   * in flight at its death: the first sidecar's record is not this one */
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok") DIED(0) DIED(1) UNKNOWN("a"), 2, 0, 1);
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok") DIED(0) CALL("a", "paid", "allow", "ok")
               DIED(1) UNKNOWN("a"), 2, 0, 2);
}

Test(budget_replay, calls_beyond_the_named_count) {
  /* 1500 in flight, 2 named (the rest beyond the supervisor's list) */
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok") DIED(1500) UNKNOWN("a") UNKNOWN("b"), 1500, 0, 1);
}

Test(budget_replay, only_the_last_segment) {
  /* the first run's calls are not this run's; its ids mark nothing */
  EXPECT_SPENT(OPEN CALL("a", "paid", "allow", "ok") INTENT("b") OPEN DIED(1) UNKNOWN("a"), 1, 0, 0);
}

Test(budget_replay, shares_of_what_ran) {
  /* a call given back (the container stopped first) is on record as
   * denied and spent nothing; an http tool's own "denied" answer ran */
  EXPECT_SPENT(OPEN CALL("a", "paid", "deny", "container_stopped") CALL("b", "paid", "allow", "denied"),
               2, 0, 1);
}

/* The repeat limit counts what the rules saw (an approver on record). */
Test(budget_replay, repeat_counts_what_the_rules_saw) {
  write_text_in(dir, "log.jsonl",
                OPEN "{\"event\":\"call\",\"call\":\"a\",\"tool\":\"echo\",\"args\":{\"x\":1},"
                     "\"decision\":\"deny\",\"approver\":null,\"outcome\":\"bad_request\"}\n"
                     "{\"event\":\"call\",\"call\":\"b\",\"tool\":\"echo\",\"args\":{\"x\":\"y\"},"
                     "\"decision\":\"allow\",\"approver\":\"policy\",\"outcome\":\"ok\"}\n",
                0600);
  cleanup_free char *path = xasprintf("%s/log.jsonl", dir);
  struct policy *p = load();
  struct budget *b = budget_new(p);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(budget_replay_log(b, p, path, &err), 0);
  const struct tool *echo = policy_find(p, "echo");
  cleanup_json json_t *x1 = json_parse("{\"x\":1}", 7, NULL, NULL);
  cleanup_json json_t *xy = json_parse("{\"x\":\"y\"}", 9, NULL, NULL);
  char *why = NULL;
  cr_assert(budget_count_repeat(b, echo, x1, &why), "a refused shape is not a repeat");
  cr_assert_not(budget_count_repeat(b, echo, xy, &why), "an allowed call is");
  free(why);
  budget_free(b);
  policy_free(p);
}

/* --- a gate's own log ----------------------------------------------------------- */

static struct gate *open_gate(const struct gate_resume *r) {
  write_text_in(dir, "policy.json", POLICY, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "br1", .policy_path = pp, .audit_dir = audit,
                            .resume = r};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

static json_t *budget_of(struct gate *g) {
  cleanup_json json_t *calls = gate_calls_json(g);
  return json_copy(json_object_get(calls, "budget"));
}

/* The call's error code, or "ok" (owned). */
static char *code_of(struct gate *g, const char *id, const char *req) {
  cleanup_json json_t *r = req ? json_parse(req, strlen(req), NULL, NULL) : NULL;
  cleanup_free char *resp = gate_handle(g, id, r, "garbage", NULL);
  cleanup_json json_t *v = json_parse(resp, strlen(resp), NULL, NULL);
  const char *code = json_string_value(json_get_path(v, "error.code"));
  return xstrdup(code ? code : "ok");
}

static void call(struct gate *g, const char *id, const char *req) { free(code_of(g, id, req)); }

/* Every kind of ending the gate gives a call, then a death with calls in
 * flight (one already recorded, one not, one named twice): the next
 * gate's budget is the first's plus the calls it never recorded. */
Test(budget_replay, a_gate_replays_to_its_own_budget) {
  struct gate *g = open_gate(NULL);
  call(g, "c1", "{\"tool\": \"echo\", \"args\": {\"x\": \"yes\"}}");
  call(g, "c2", "{\"tool\": \"echo\", \"args\": {\"x\": \"yes\"}}");   /* repeat */
  call(g, "c3", "{\"tool\": \"echo\", \"args\": {\"x\": \"no\"}}");    /* denied */
  call(g, "c4", "{\"tool\": \"echo\", \"args\": {\"x\": 7}}");         /* schema */
  call(g, "c5", "{\"tool\": \"echo\", \"args\": {\"n\": \"str\"}}");   /* mistyped */
  call(g, "c6", "{\"tool\": \"echo\", \"args\": {\"n\": \"str\"}}");   /* again */
  call(g, "c7", "{\"tool\": \"nope\", \"args\": {}}");                 /* unknown tool */
  call(g, "c8", NULL);                                                 /* malformed */
  call(g, "c9", "{\"tool\": \"paid\", \"args\": {\"i\": 1}}");
  call(g, "c10", "{\"tool\": \"paid\", \"args\": {\"i\": 2}}");
  call(g, "c11", "{\"tool\": \"wipe\", \"args\": {}}");
  gate_record_refused(g, GATE_REFUSED_REPLAY, "c1", "replayed call id c1");
  gate_record_refused(g, GATE_REFUSED_WITHDRAWN, "c12", "withdrawn");
  cleanup_json json_t *before = budget_of(g);
  gate_close(g);
  const char *ids[] = {"c11", "c13", "c13"};
  struct gate_resume r = {.reason = "the bridge sidecar (pid 1) was killed by signal 9",
                          .action = "restart", .dead_pid = 1, .restarts = 1,
                          .unknown_ids = ids, .nunknown = 3};
  g = open_gate(&r);
  cleanup_json json_t *after = budget_of(g);
  gate_close(g);
  long long used_before = 0, used_after = 0;
  json_integer_value(json_get_path(before, "calls.used"), &used_before);
  json_integer_value(json_get_path(after, "calls.used"), &used_after);
  cr_assert_eq(used_before, 13);
  cr_assert_eq(used_after, used_before + 1, "only c13 was never recorded: %lld", used_after);
  /* everything else the same: cost, irreversible, per tool */
  json_object_set(after, "calls", json_copy(json_object_get(before, "calls")));
  cleanup_free char *a = json_dump(before, false, NULL), *b2 = json_dump(after, false, NULL);
  cr_assert_str_eq(b2, a);
  /* and the repeat counts: c1's args were used (twice) */
  g = open_gate(&r);
  char *code = code_of(g, "d1", "{\"tool\": \"echo\", \"args\": {\"x\": \"yes\"}}");
  cr_assert_str_eq(code, "budget_exhausted");
  free(code);
  code = code_of(g, "d2", "{\"tool\": \"echo\", \"args\": {\"x\": \"fresh\"}}");
  cr_assert_str_eq(code, "ok");
  free(code);
  gate_close(g);
}

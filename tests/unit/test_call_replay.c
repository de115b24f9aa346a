/* `tollgate calls` read back from an audit log (call_replay.h): the list
 * of the run's calls, and a budget that is the resumed gate's count
 * (budget_replay.h), whatever a sidecar's death left in the log. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "governance/call_replay.h"
#include "base/util.h"
#include "file_util.h"

static char dir[] = "/tmp/tg-creplay-XXXXXX";
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(call_replay, .init = setup, .fini = teardown);

static const char *POLICY =
    "{\"version\": 1, \"tools\": {"
    "\"paid\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"cost\": 4, \"max_calls\": 9,"
    "  \"rules\": [{\"effect\": \"allow\"}]}},"
    " \"budgets\": {\"max_tool_calls\": 2000, \"max_cost\": 40}}";

#define DIED(n) "{\"event\":\"sidecar_died\",\"call\":null,\"outcome\":\"restart\",\"unknown_calls\":" #n "}\n"
#define UNKNOWN(id) "{\"event\":\"unknown\",\"call\":\"" id "\",\"outcome\":\"outcome_unknown\"}\n"
#define CALL(id)                                                                                 \
  "{\"event\":\"call\",\"call\":\"" id "\",\"tool\":\"paid\",\"args\":{},\"decision\":\"allow\","  \
  "\"approver\":\"policy\",\"outcome\":\"ok\",\"duration_ms\":3}\n"

/* The reply for a log of records after an "open" naming the policy (or
 * no policy: with_policy false). */
static json_t *replay(const char *records, bool with_policy) {
  write_text_in(dir, "policy.json", POLICY, 0644);
  cleanup_free char *open = with_policy
      ? xasprintf("{\"seq\":1,\"event\":\"open\",\"call\":null,\"policy\":\"%s/policy.json\"}\n", dir)
      : xstrdup("{\"seq\":1,\"event\":\"open\",\"call\":null}\n");
  cleanup_free char *log = xasprintf("%s%s", open, records);
  write_text_in(dir, "log.jsonl", log, 0600);
  cleanup_free char *path = xasprintf("%s/log.jsonl", dir);
  cleanup_error tg_error *err = NULL;
  json_t *r = call_replay_log(path, "c1", &err);
  cr_assert_not_null(r, "%s", err ? err->msg : "");
  return r;
}

static long long number(const json_t *r, const char *path) {
  long long n = -1;
  json_integer_value(json_get_path(r, path), &n);
  return n;
}

Test(call_replay, calls_in_flight_at_a_death_count_as_the_gate_counts) {
  /* 1500 in flight, 2 named: the resumed gate counts 1500; the list
   * shows the two it can name, the first one's outcome unknown */
  cleanup_json json_t *r = replay(CALL("a") DIED(1500) UNKNOWN("a") UNKNOWN("b"), true);
  cr_assert_eq(number(r, "budget.calls.used"), 1500);
  cr_assert_eq(number(r, "budget.calls.max"), 2000);
  cr_assert_eq(number(r, "budget.cost.used"), 4);
  cr_assert_eq(number(r, "budget.tools.paid.used"), 1);
  const json_t *calls = json_object_get(r, "calls");
  cr_assert_eq(json_array_len(calls), 2);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(calls, 0), "status")), "outcome_unknown");
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(calls, 1), "call")), "b");
}

Test(call_replay, a_call_named_twice_is_one_attempt) {
  cleanup_json json_t *r = replay(DIED(2) UNKNOWN("a") UNKNOWN("a"), true);
  cr_assert_eq(number(r, "budget.calls.used"), 1);
  cr_assert_eq(json_array_len(json_object_get(r, "calls")), 1);
}

Test(call_replay, the_source_and_the_live_shape) {
  cleanup_json json_t *r = replay(CALL("a"), true);
  cr_assert(json_is_true(json_object_get(r, "ok")));
  cr_assert_str_eq(json_string_value(json_object_get(r, "container")), "c1");
  cr_assert_not_null(json_string_value(json_object_get(r, "source")));
  cr_assert_eq(number(r, "budget.anomalies.used"), 0);
  cr_assert_eq(number(r, "budget.calls.remaining"), 1999);
}

Test(call_replay, no_policy_no_limits_shown) {
  /* the run's policy is gone: its cap is unknown, not budget_new's default */
  cleanup_json json_t *r = replay(CALL("a") CALL("b"), false);
  cr_assert_eq(number(r, "budget.calls.used"), 2);
  cr_assert(json_is(json_get_path(r, "budget.calls.max"), JSON_NULL));
  cr_assert_null(json_get_path(r, "budget.calls.remaining"));
}

Test(call_replay, an_unreadable_log_is_an_error) {
  cleanup_free char *path = xasprintf("%s/none.jsonl", dir);
  cleanup_error tg_error *err = NULL;
  cr_assert_null(call_replay_log(path, "c1", &err));
  cr_assert_not_null(err);
}

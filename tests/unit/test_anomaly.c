/* The anomaly limits (governance/anomaly.h): each limit and each action,
 * the detector alone (with a clock the test sets) and through the gate
 * (gate_handle, the audit log, calls, the stop hook, the alert hook),
 * under concurrency, with bounded memory, and replayed by a restarted
 * sidecar's gate. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/anomaly.h"
#include "governance/gate.h"
#include "governance/policy.h"
#include "governance/verify.h"
#include "base/util.h"
#include "tests/unit/file_util.h"

static char dir[] = "/tmp/tg-anomaly-XXXXXX";

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755); /* exec tools and hooks run as the tools' uid */
  write_text_in(dir, "fail.sh", "#!/bin/sh\necho broken >&2\nexit 3\n", 0755);
}
static void teardown(void) { remove_tree(dir, NULL); }

TestSuite(anomaly, .init = setup, .fini = teardown);

#define TOOLS                                                                                     \
  "\"tools\": {"                                                                                  \
  " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"                         \
  "   \"rules\": [{\"if\": {\"arg\": \"x\", \"op\": \"==\", \"value\": \"no\"}, \"effect\": \"deny\"," \
  "               \"reason\": \"not that\"}, {\"effect\": \"allow\"}]},"                          \
  " \"fail\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"fail.sh\"]}, \"rules\": [{\"effect\": \"allow\"}]}" \
  "}, \"budgets\": {\"max_tool_calls\": 100000}"

static struct policy *parse(const char *anomalies) {
  cleanup_free char *text = xasprintf("{\"version\": 1, " TOOLS ", \"anomalies\": %s}", anomalies);
  cleanup_free char *path = xasprintf("%s/p.json", dir);
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_parse(path, text, strlen(text), &p, &err), 0, "%s", err ? err->msg : "");
  return p;
}

static char *parse_error(const char *anomalies) {
  cleanup_free char *text = xasprintf("{\"version\": 1, " TOOLS ", \"anomalies\": %s}", anomalies);
  struct policy *p = NULL;
  tg_error *err = NULL;
  cr_assert_lt(policy_parse("p.json", text, strlen(text), &p, &err), 0, "%s accepted", anomalies);
  char *msg = xstrdup(err->msg);
  tg_error_free(&err);
  return msg;
}

/* --- the policy -------------------------------------------------------------- */

Test(anomaly, policy_forms) {
  struct policy *p = parse("{\"denials_in_a_row\": 3, \"action\": \"stop\"}");
  cr_assert_eq(p->anomalies.of[ANOMALY_DENIALS_IN_A_ROW].limit, 3);
  cr_assert_eq(p->anomalies.of[ANOMALY_DENIALS_IN_A_ROW].action, ANOMALY_STOP);
  cr_assert_eq(p->anomalies.of[ANOMALY_CALLS_PER_SECOND].limit, 0);
  policy_free(p);
  p = parse("{\"denials_in_a_row\": {\"limit\": 2, \"action\": \"park\"}, \"calls_per_second\": 50,"
            " \"failures_in_a_row\": {\"limit\": 4}, \"result_bytes\": 1000, \"action\": \"log\"}");
  cr_assert_eq(p->anomalies.of[ANOMALY_DENIALS_IN_A_ROW].action, ANOMALY_PARK);
  cr_assert_eq(p->anomalies.of[ANOMALY_CALLS_PER_SECOND].action, ANOMALY_LOG);
  cr_assert_eq(p->anomalies.of[ANOMALY_FAILURES_IN_A_ROW].limit, 4);
  cr_assert_eq(p->anomalies.of[ANOMALY_FAILURES_IN_A_ROW].action, ANOMALY_LOG);
  cr_assert_eq(p->anomalies.of[ANOMALY_RESULT_BYTES].limit, 1000);
  policy_free(p);
  p = parse("{\"failures_in_a_row\": 2}"); /* no action named: stop */
  cr_assert_eq(p->anomalies.of[ANOMALY_FAILURES_IN_A_ROW].action, ANOMALY_STOP);
  policy_free(p);
}

Test(anomaly, policy_errors_name_the_field_and_the_fix) {
  struct {
    const char *anomalies, *want;
  } cases[] = {
      {"3", "anomalies: must be an object"},
      {"{}", "anomalies: sets no limit: add denials_in_a_row"},
      {"{\"denials_in_a_row\": 0}", "anomalies.denials_in_a_row: must be a whole number, 1 or more"},
      {"{\"denials_in_a_row\": 2.5}", "anomalies.denials_in_a_row: must be a whole number"},
      {"{\"calls_per_second\": 10001}", "anomalies.calls_per_second: must be a whole number from 1 to 10000"},
      {"{\"result_bytes\": \"1k\"}", "anomalies.result_bytes: must be a whole number"},
      {"{\"denials_in_a_row\": 3, \"action\": \"halt\"}", "anomalies.action: must be \"stop\""},
      {"{\"denials_in_a_row\": {\"limit\": 3, \"action\": 1}}", "anomalies.denials_in_a_row.action: must be"},
      {"{\"denials_in_a_row\": {\"action\": \"log\"}}", "anomalies.denials_in_a_row.limit: missing"},
      {"{\"denials_in_a_row\": {\"limit\": 3, \"when\": 1}}", "anomalies.denials_in_a_row.when: unknown key"},
      {"{\"denials\": 3}", "anomalies.denials: unknown key \"denials\"; allowed here: denials_in_a_row"},
      {"{\"denials_in_a_row\": 3, \"alert_hook\": \"/no/such/hook\"}", "anomalies.alert_hook: /no/such/hook is not an executable"},
      {"{\"denials_in_window\": 3}", "anomalies.denials_in_window: must be an object: {\"count\": C, \"calls\": N}"},
      {"{\"denials_in_window\": {\"count\": 3}}", "anomalies.denials_in_window.calls: missing: add \"calls\": N"},
      {"{\"denials_in_window\": {\"calls\": 10}}", "anomalies.denials_in_window.count: missing: add \"count\": C"},
      {"{\"denials_in_window\": {\"count\": 0, \"calls\": 10}}", "anomalies.denials_in_window.count: must be a whole number, 1 or more"},
      {"{\"denials_in_window\": {\"count\": 11, \"calls\": 10}}", "anomalies.denials_in_window.count: 11 denials cannot fit among 10 calls: count must be at most calls"},
      {"{\"denials_in_window\": {\"count\": 3, \"calls\": 10001}}", "anomalies.denials_in_window.calls: must be a whole number from 1 to 10000"},
      {"{\"denials_in_window\": {\"count\": 3, \"calls\": 10, \"limit\": 3}}", "anomalies.denials_in_window.limit: unknown key"},
      {"{\"denials_in_window\": {\"count\": 3, \"calls\": 10, \"action\": \"halt\"}}", "anomalies.denials_in_window.action: must be \"stop\""},
      {"{\"denials_in_a_row\": 3, \"stop_grace_ms\": 30001}", "anomalies.stop_grace_ms: must be a whole number of milliseconds from 0 to 30000"},
      {"{\"denials_in_a_row\": 3, \"stop_grace_ms\": -1}", "anomalies.stop_grace_ms: must be"},
      {"{\"stop_grace_ms\": 100}", "anomalies: sets no limit"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cleanup_free char *msg = parse_error(cases[i].anomalies);
    cr_expect_not_null(strstr(msg, cases[i].want), "%s: %s", cases[i].anomalies, msg);
    cr_expect_not_null(strstr(msg, "p.json:"), "positioned: %s", msg);
  }
}

/* --- the detector ------------------------------------------------------------- */

static const unsigned long long MS = 1000000ull;

Test(anomaly, denials_in_a_row_counts_refusals_and_a_run_call_resets) {
  struct policy *p = parse("{\"denials_in_a_row\": 3, \"action\": \"stop\"}");
  struct anomalies *a = anomalies_new(&p->anomalies);
  struct anomaly_hit h[ANOMALY_KINDS];
  cr_assert_eq(anomaly_count_outcome(a, "c1", GATE_DENIED, false, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c2", GATE_UNKNOWN_TOOL, false, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c3", "ok", true, 10, h), 0); /* ran: starts again */
  cr_assert_eq(anomaly_count_outcome(a, "c4", GATE_DENIED, false, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c5", GATE_BUDGET_EXHAUSTED, false, 0, h), 0); /* neither */
  cr_assert_eq(anomaly_count_outcome(a, "c6", GATE_BAD_REQUEST, false, 0, h), 0);
  char *why = NULL;
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_CLEAR);
  cr_assert_eq(anomaly_count_outcome(a, "c7", GATE_DENIED, false, 0, h), 1);
  cr_assert_eq(h[0].kind, ANOMALY_DENIALS_IN_A_ROW);
  cr_assert_eq(h[0].observed, 3);
  cr_assert_eq(h[0].limit, 3);
  cr_assert_eq(h[0].action, ANOMALY_STOP);
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_STOPPED);
  cr_assert_not_null(strstr(why, "3 calls refused in a row (denials_in_a_row: 3, action stop)"), "%s", why);
  free(why);
  /* Stopped is for good: nothing more is flagged. */
  for (int i = 0; i < 6; i++)
    cr_assert_eq(anomaly_count_outcome(a, "c8", GATE_DENIED, false, 0, h), 0);
  cr_assert_eq(anomalies_count(a), 1);
  anomaly_acknowledge(a); /* acknowledges a park, never a stop */
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_STOPPED);
  free(why);
  cleanup_json json_t *list = anomalies_json(a);
  cr_assert_eq(json_array_len(list), 1);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "call")), "c7");
  anomalies_free(a);
  policy_free(p);
}

/* The probe loop: one allowed call after every 4 denied ones
 * never makes 5 in a row, but 5 denials among the last 10 calls flag it. */
Test(anomaly, denials_in_window_bounds_interleaved_probing) {
  struct policy *p = parse("{\"denials_in_a_row\": 5, \"denials_in_window\": {\"count\": 5, \"calls\": 10}, "
                           "\"action\": \"log\"}");
  cr_assert_eq(p->anomalies.of[ANOMALY_DENIALS_IN_WINDOW].limit, 5);
  cr_assert_eq(p->anomalies.of[ANOMALY_DENIALS_IN_WINDOW].calls, 10);
  struct anomalies *a = anomalies_new(&p->anomalies);
  struct anomaly_hit h[ANOMALY_KINDS];
  int flagged = 0, first = -1;
  for (int i = 1; i <= 240; i++) {
    bool allowed = i % 5 == 0;
    size_t n = anomaly_count_outcome(a, "c", allowed ? "ok" : GATE_DENIED, allowed, 0, h);
    for (size_t k = 0; k < n; k++) {
      cr_assert_eq(h[k].kind, ANOMALY_DENIALS_IN_WINDOW, "only the window flags");
      cr_assert_eq(h[k].observed, 5);
      cr_assert_eq(h[k].calls, 10);
      if (first < 0)
        first = i;
      flagged++;
    }
  }
  /* 4 denials, 1 allowed, 1 denial: the 5th denial within 6 calls; then
   * the window starts again from zero */
  cr_assert_eq(first, 6, "first flag at call %d", first);
  cr_assert_eq(flagged, 192 / 5, "%d flags for 192 denials", flagged);
  cleanup_json json_t *list = anomalies_json(a);
  long long win = 0;
  json_integer_value(json_object_get(json_array_get(list, 0), "calls"), &win);
  cr_assert_eq(win, 10);
  struct anomaly_hit one = {.kind = ANOMALY_DENIALS_IN_WINDOW, .action = ANOMALY_STOP, .limit = 5,
                            .observed = 5, .calls = 10, .window_ms = -1};
  cleanup_free char *d = anomaly_describe(&one);
  cr_assert_str_eq(d, "5 calls refused among the last 10 (denials_in_window: 5 of 10 calls, action stop)");
  anomalies_free(a);
  policy_free(p);
  /* other outcomes neither enter the window nor push denials out */
  p = parse("{\"denials_in_window\": {\"count\": 2, \"calls\": 2}}");
  a = anomalies_new(&p->anomalies);
  cr_assert_eq(anomaly_count_outcome(a, "c1", GATE_DENIED, false, 0, h), 0);
  for (int i = 0; i < 5; i++)
    cr_assert_eq(anomaly_count_outcome(a, "c", GATE_BUDGET_EXHAUSTED, false, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c2", GATE_BAD_REQUEST, false, 0, h), 1);
  char *why = NULL;
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_STOPPED);
  free(why);
  anomalies_free(a);
  policy_free(p);
}

/* The ceiling's rule for the window (governance/ceiling.c): a policy with
 * no more denials among no fewer calls flags at or before each flag of
 * the ceiling's, after the one before, on any sequence. */
Test(anomaly, a_window_within_the_ceiling_flags_no_later) {
  unsigned seed = 38;
  for (int round = 0; round < 300; round++) {
    long long cn = 1 + rand_r(&seed) % 12, cc = 1 + rand_r(&seed) % cn;
    long long pn = cn + rand_r(&seed) % 6, pc = 1 + rand_r(&seed) % cc;
    cleanup_free char *ct = xasprintf("{\"denials_in_window\": {\"count\": %lld, \"calls\": %lld}, \"action\": \"log\"}", cc, cn);
    cleanup_free char *pt = xasprintf("{\"denials_in_window\": {\"count\": %lld, \"calls\": %lld}, \"action\": \"log\"}", pc, pn);
    struct policy *cp = parse(ct), *pp = parse(pt);
    struct anomalies *ca = anomalies_new(&cp->anomalies), *pa = anomalies_new(&pp->anomalies);
    struct anomaly_hit h[ANOMALY_KINDS];
    int last_ceiling = 0, last_policy = 0;
    unsigned pdenial = 20 + rand_r(&seed) % 70;
    for (int i = 1; i <= 400; i++) {
      bool denial = (unsigned)rand_r(&seed) % 100 < pdenial;
      const char *o = denial ? GATE_DENIED : "ok";
      if (anomaly_count_outcome(pa, "c", o, !denial, 0, h) > 0)
        last_policy = i;
      if (anomaly_count_outcome(ca, "c", o, !denial, 0, h) > 0) {
        cr_assert_gt(last_policy, last_ceiling,
                     "ceiling %lld of %lld flagged at call %d, policy %lld of %lld not since call %d",
                     cc, cn, i, pc, pn, last_ceiling);
        last_ceiling = i;
      }
    }
    anomalies_free(ca);
    anomalies_free(pa);
    policy_free(cp);
    policy_free(pp);
  }
}

Test(anomaly, failures_in_a_row_park_then_acknowledge) {
  struct policy *p = parse("{\"failures_in_a_row\": {\"limit\": 2, \"action\": \"park\"}}");
  struct anomalies *a = anomalies_new(&p->anomalies);
  struct anomaly_hit h[ANOMALY_KINDS];
  cr_assert_eq(anomaly_count_outcome(a, "c1", GATE_TOOL_FAILED, true, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c2", "ok", true, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c3", GATE_TOOL_TIMEOUT, true, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c4", GATE_DENIED, false, 0, h), 0); /* not a failure */
  cr_assert_eq(anomaly_count_outcome(a, "c5", GATE_TOOL_FAILED, true, 0, h), 1);
  cr_assert_eq(h[0].kind, ANOMALY_FAILURES_IN_A_ROW);
  cr_assert_eq(h[0].action, ANOMALY_PARK);
  char *why = NULL;
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_PARKED);
  free(why);
  anomaly_acknowledge(a);
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_CLEAR);
  cr_assert_null(why);
  /* It counts again from zero. */
  cr_assert_eq(anomaly_count_outcome(a, "c6", GATE_TOOL_FAILED, true, 0, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c7", GATE_TOOL_FAILED, true, 0, h), 1);
  cr_assert_eq(anomalies_count(a), 2);
  anomalies_free(a);
  policy_free(p);
}

Test(anomaly, result_bytes_log) {
  struct policy *p = parse("{\"result_bytes\": 1000, \"action\": \"log\"}");
  struct anomalies *a = anomalies_new(&p->anomalies);
  struct anomaly_hit h[ANOMALY_KINDS];
  cr_assert_eq(anomaly_count_outcome(a, "c1", "ok", true, 600, h), 0);
  cr_assert_eq(anomaly_count_outcome(a, "c2", GATE_DENIED, false, 5000, h), 0); /* no result */
  cr_assert_eq(anomaly_count_outcome(a, "c3", "ok", true, 400, h), 0);          /* 1000: at it */
  cr_assert_eq(anomaly_count_outcome(a, "c4", "ok", true, 1, h), 1);
  cr_assert_eq(h[0].kind, ANOMALY_RESULT_BYTES);
  cr_assert_eq(h[0].observed, 1001);
  char *why = NULL;
  cr_assert_eq(anomaly_state(a, &why), ANOMALY_STATE_CLEAR); /* log: only recorded */
  cleanup_free char *d = anomaly_describe(&h[0]);
  cr_assert_str_eq(d, "1001 bytes of results handed to the program (result_bytes: 1000, action log)");
  anomalies_free(a);
  policy_free(p);
}

Test(anomaly, calls_per_second_sliding_window) {
  struct policy *p = parse("{\"calls_per_second\": {\"limit\": 5, \"action\": \"log\"}}");
  struct anomalies *a = anomalies_new(&p->anomalies);
  struct anomaly_hit h;
  unsigned long long t = 1000 * MS;
  /* 5 a second, evenly: never over, however long it goes on. */
  for (int i = 0; i < 100; i++, t += 200 * MS)
    cr_assert_not(anomaly_count_attempt(a, "c", t, &h), "call %d", i);
  /* 6 within 500 ms: the 6th is over. */
  t += 10000 * MS;
  for (int i = 0; i < 5; i++, t += 100 * MS)
    cr_assert_not(anomaly_count_attempt(a, "c", t, &h));
  cr_assert(anomaly_count_attempt(a, "burst", t, &h));
  cr_assert_eq(h.kind, ANOMALY_CALLS_PER_SECOND);
  cr_assert_eq(h.observed, 6);
  cr_assert_eq(h.window_ms, 500);
  /* Flagged at most once a second, however hard the burst. */
  int hits = 0;
  for (int i = 0; i < 1000; i++, t += MS / 2)
    hits += anomaly_count_attempt(a, "c", t, &h);
  cr_assert_eq(hits, 0, "within the second after the hit: %d", hits);
  t += 500 * MS;
  cr_assert(anomaly_count_attempt(a, "c", t, &h));
  anomalies_free(a);
  policy_free(p);
}

/* A million calls keep the detector's memory where it started: one slot
 * per allowed call per second, and a list of at most ANOMALY_LISTED. */
Test(anomaly, a_million_calls_in_bounded_memory) {
  struct policy *p = parse("{\"calls_per_second\": 100, \"denials_in_a_row\": 2, \"action\": \"log\"}");
  struct anomalies *a = anomalies_new(&p->anomalies);
  struct anomaly_hit h, hs[ANOMALY_KINDS];
  unsigned long long t = MS, hits = 0;
  for (long i = 0; i < 1000000; i++, t += MS / 10) { /* 10000 calls a second */
    hits += anomaly_count_attempt(a, "c", t, &h);
    hits += anomaly_count_outcome(a, "c", GATE_DENIED, false, 0, hs);
  }
  /* 100 s of calls: one rate hit a second, one denial hit every 2 calls */
  cr_assert_eq(anomalies_count(a), hits);
  cr_assert_geq(hits, 500000 + 99);
  cr_assert_leq(hits, 500000 + 101);
  cleanup_json json_t *list = anomalies_json(a);
  cr_assert_eq(json_array_len(list), ANOMALY_LISTED);
  anomalies_free(a);
  policy_free(p);
}

struct hammer {
  struct anomalies *a;
  int n;
  atomic_int *hits;
};

static void *hammer_main(void *arg) {
  struct hammer *h = arg;
  struct anomaly_hit hs[ANOMALY_KINDS];
  for (int i = 0; i < h->n; i++)
    atomic_fetch_add(h->hits, (int)anomaly_count_outcome(h->a, "c", GATE_DENIED, false, 0, hs));
  return NULL;
}

/* 8 callers at once: every third denial is flagged, exactly. */
Test(anomaly, denials_counted_exactly_under_concurrency) {
  struct policy *p = parse("{\"denials_in_a_row\": 3, \"action\": \"log\"}");
  struct anomalies *a = anomalies_new(&p->anomalies);
  atomic_int hits = 0;
  pthread_t t[8];
  struct hammer h = {.a = a, .n = 3000, .hits = &hits};
  for (int i = 0; i < 8; i++)
    pthread_create(&t[i], NULL, hammer_main, &h);
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  cr_assert_eq(atomic_load(&hits), 8 * 3000 / 3);
  cr_assert_eq(anomalies_count(a), 8 * 3000 / 3);
  anomalies_free(a);
  policy_free(p);
}

Test(anomaly, no_limits_no_detector) {
  struct anomalies *a = anomalies_new(NULL);
  struct anomaly_hit h[ANOMALY_KINDS];
  cr_assert_not(anomalies_enabled(a));
  cr_assert_eq(anomaly_count_outcome(a, "c", GATE_DENIED, false, 0, h), 0);
  cr_assert_not(anomaly_count_attempt(a, "c", 1, h));
  anomalies_free(a);
}

/* --- through the gate ------------------------------------------------------------ */

static atomic_int stops;
static void count_stop(void *ctx) {
  (void)ctx;
  atomic_fetch_add(&stops, 1);
}

static struct gate *open_gate(const char *anomalies, const char *id, const struct gate_resume *r) {
  /* The stop hook at once (no grace) unless the test names a grace. */
  cleanup_free char *text =
      strstr(anomalies, "stop_grace_ms")
          ? xasprintf("{\"version\": 1, " TOOLS ", \"anomalies\": %s}", anomalies)
          : xasprintf("{\"version\": 1, " TOOLS ", \"anomalies\": {\"stop_grace_ms\": 0, %s}",
                      anomalies + 1);
  write_text_in(dir, "policy.json", text, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = id, .policy_path = pp, .audit_dir = audit,
                            .approval_timeout_ms = 5000, .resume = r};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  atomic_store(&stops, 0);
  gate_set_stop_hook(g, count_stop, NULL);
  return g;
}

static const char *code_of(const char *resp, char *buf, size_t n) {
  cleanup_json json_t *r = json_parse(resp, strlen(resp), NULL, NULL);
  const char *c = json_string_value(json_get_path(r, "error.code"));
  snprintf(buf, n, "%s", c ? c : "ok");
  return buf;
}

/* The code of one call's answer ("ok" or the error code). */
static char *call(struct gate *g, const char *id, const char *tool, const char *x) {
  cleanup_free char *req = xasprintf("{\"v\":1,\"tool\":\"%s\",\"args\":{\"x\":\"%s\"}}", tool, x);
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  cleanup_free char *resp = gate_handle(g, id, r, NULL, NULL);
  char buf[64];
  return xstrdup(code_of(resp, buf, sizeof buf));
}

static void expect_call(struct gate *g, const char *id, const char *tool, const char *x,
                        const char *want) {
  cleanup_free char *got = call(g, id, tool, x);
  cr_expect_str_eq(got, want, "%s %s(%s)", id, tool, x);
}

static json_t *records(const char *id) {
  cleanup_free char *path = xasprintf("%s/audit/%s.jsonl", dir, id);
  json_t *recs = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_read_records(path, &recs, &err), 0, "%s", err ? err->msg : "");
  return recs;
}

static size_t count_events(const json_t *recs, const char *event) {
  size_t n = 0;
  for (size_t i = 0; i < json_array_len(recs); i++)
    n += strcmp(json_string_value(json_object_get(json_array_get(recs, i), "event")), event) == 0;
  return n;
}

static const json_t *find_event(const json_t *recs, const char *event) {
  for (size_t i = 0; i < json_array_len(recs); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(recs, i), "event")), event) == 0)
      return json_array_get(recs, i);
  return NULL;
}

static void expect_verifies(const char *id) {
  cleanup_free char *path = xasprintf("%s/audit/%s.jsonl", dir, id);
  struct audit_verify_result res;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_verify(path, NULL, AUDIT_VERIFY_CRASHED, &res, &err), 0, "%s",
               err ? err->msg : "");
  cr_expect(res.ok, "%s", res.message);
  audit_verify_result_clear(&res);
}

/* The shape: an allowed call, three denied, then allowed calls
 * that are refused; the stop hook runs once; the log verifies. */
Test(anomaly, gate_denials_stop) {
  struct gate *g = open_gate("{\"denials_in_a_row\": 3, \"action\": \"stop\"}", "stop1", NULL);
  expect_call(g, "c1", "echo", "yes", "ok");
  expect_call(g, "c2", "echo", "no", GATE_DENIED);
  expect_call(g, "c3", "nope", "no", GATE_UNKNOWN_TOOL);
  cr_assert_eq(atomic_load(&stops), 0);
  expect_call(g, "c4", "echo", "no", GATE_DENIED);
  cr_assert_eq(atomic_load(&stops), 1);
  expect_call(g, "c5", "echo", "yes", GATE_ANOMALY);
  expect_call(g, "c6", "echo", "yes", GATE_ANOMALY);
  cr_assert_eq(atomic_load(&stops), 1, "the stop hook runs once");
  cleanup_json json_t *calls = gate_calls_json(g);
  cr_assert_eq(json_array_len(json_object_get(calls, "anomalies")), 1);
  long long used = 0;
  json_integer_value(json_get_path(calls, "budget.anomalies.used"), &used);
  cr_assert_eq(used, 1);
  gate_close(g);
  cleanup_json json_t *recs = records("stop1");
  cr_assert_eq(count_events(recs, "anomaly"), 1);
  const json_t *a = find_event(recs, "anomaly");
  cr_assert_str_eq(json_string_value(json_object_get(a, "kind")), "denials_in_a_row");
  cr_assert_str_eq(json_string_value(json_object_get(a, "action")), "stop");
  cr_assert_str_eq(json_string_value(json_object_get(a, "call")), "c4");
  long long observed = 0;
  json_integer_value(json_object_get(a, "observed"), &observed);
  cr_assert_eq(observed, 3);
  /* c5's record says why it was refused */
  const json_t *last = json_array_get(recs, json_array_len(recs) - 2);
  cr_assert_str_eq(json_string_value(json_object_get(last, "outcome")), GATE_ANOMALY);
  cr_assert_not_null(strstr(json_string_value(json_object_get(last, "message")), "an anomaly stopped the run: 3 calls refused in a row"));
  expect_verifies("stop1");
}

struct approver {
  struct gate *g;
  int approved;
};

/* Approve whatever parks, until told to stop (approved == -1). */
static void *approver_main(void *arg) {
  struct approver *ap = arg;
  for (int i = 0; i < 5000 && ap->approved < 1; i++) {
    cleanup_json json_t *pending = gate_pending_json(ap->g);
    for (size_t j = 0; j < json_array_len(pending); j++) {
      const json_t *p = json_array_get(pending, j);
      const char *reason = json_string_value(json_object_get(p, "reason"));
      cr_expect_not_null(strstr(reason, "anomaly: "), "%s", reason);
      cr_expect_not_null(strstr(reason, "calls refused in a row"), "%s", reason);
      if (gate_decide_pending(ap->g, json_string_value(json_object_get(p, "call")), true, "uid:0",
                              "seen", NULL) == 0)
        ap->approved++;
    }
    usleep(1000);
  }
  return NULL;
}

/* park: the next allowed call waits for a person; once one is approved,
 * calls run freely again. */
Test(anomaly, gate_denials_park) {
  struct gate *g = open_gate("{\"denials_in_a_row\": {\"limit\": 2, \"action\": \"park\"}}", "park1", NULL);
  expect_call(g, "c1", "echo", "no", GATE_DENIED);
  expect_call(g, "c2", "echo", "no", GATE_DENIED);
  struct approver ap = {.g = g};
  pthread_t t;
  pthread_create(&t, NULL, approver_main, &ap);
  expect_call(g, "c3", "echo", "yes", "ok"); /* parked until approved */
  pthread_join(t, NULL);
  cr_assert_eq(ap.approved, 1);
  expect_call(g, "c4", "echo", "yes", "ok"); /* no approval needed */
  cr_assert_eq(atomic_load(&stops), 0);
  gate_close(g);
  cleanup_json json_t *recs = records("park1");
  cr_assert_eq(count_events(recs, "anomaly"), 1);
  bool approved_by_person = false;
  for (size_t i = 0; i < json_array_len(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    const char *cid = json_string_value(json_object_get(r, "call"));
    if (cid && strcmp(cid, "c3") == 0 && strcmp(json_string_value(json_object_get(r, "event")), "call") == 0)
      approved_by_person = strcmp(json_string_value(json_object_get(r, "approver")), "uid:0") == 0;
  }
  cr_assert(approved_by_person);
  expect_verifies("park1");
}

/* log, failures_in_a_row with a real failing tool, and the alert hook. */
Test(anomaly, gate_failures_log_and_alert_hook) {
  cleanup_free char *out = xasprintf("%s/alerts", dir);
  int fd = open(out, O_CREAT | O_WRONLY, 0666);
  cr_assert_geq(fd, 0);
  close(fd);
  chmod(out, 0666); /* the hook runs as the tools' uid */
  cleanup_free char *hook = xasprintf("#!/bin/sh\ncat >> %s\necho >> %s\n", out, out);
  write_text_in(dir, "alert.sh", hook, 0755);
  cleanup_free char *pol = xasprintf("{\"failures_in_a_row\": 2, \"action\": \"log\", "
                                     "\"alert_hook\": \"%s/alert.sh\"}", dir);
  struct gate *g = open_gate(pol, "fail1", NULL);
  expect_call(g, "c1", "fail", "a", GATE_TOOL_FAILED);
  expect_call(g, "c2", "fail", "b", GATE_TOOL_FAILED);
  expect_call(g, "c3", "echo", "yes", "ok"); /* log: calls go on */
  gate_close(g);
  cleanup_json json_t *recs = records("fail1");
  const json_t *a = find_event(recs, "anomaly");
  cr_assert_not_null(a);
  cr_assert_str_eq(json_string_value(json_object_get(a, "kind")), "failures_in_a_row");
  cr_assert_str_eq(json_string_value(json_object_get(a, "action")), "log");
  cleanup_free char *text = NULL;
  size_t len = 0;
  cr_assert_eq(read_file(out, 1 << 20, &text, &len, NULL), 0);
  cleanup_json json_t *alert = json_parse(text, strlen(text), NULL, NULL);
  cr_assert_not_null(alert, "%s", text);
  cr_assert_str_eq(json_string_value(json_object_get(alert, "kind")), "failures_in_a_row");
  cr_assert_str_eq(json_string_value(json_object_get(alert, "container")), "fail1");
  cr_assert_str_eq(json_string_value(json_object_get(alert, "call")), "c2");
  cr_assert_str_eq(json_string_value(json_object_get(alert, "action")), "log");
  expect_verifies("fail1");
}

/* result_bytes with stop: the result that takes the total over is
 * withheld, and so is every later call. */
Test(anomaly, gate_result_bytes_stop_withholds) {
  struct gate *g = open_gate("{\"result_bytes\": 100, \"action\": \"stop\"}", "bytes1", NULL);
  expect_call(g, "c1", "echo", "aaaaaaaaaaaaaaaaaaaa", "ok"); /* about 50 bytes */
  expect_call(g, "c2", "echo", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
              GATE_ANOMALY);
  expect_call(g, "c3", "echo", "c", GATE_ANOMALY);
  cr_assert_eq(atomic_load(&stops), 1);
  gate_close(g);
  cleanup_json json_t *recs = records("bytes1");
  const json_t *a = find_event(recs, "anomaly");
  cr_assert_str_eq(json_string_value(json_object_get(a, "kind")), "result_bytes");
  long long bytes = 0;
  cr_assert(json_integer_value(json_object_get(json_array_get(recs, 1), "result_bytes"), &bytes));
  cr_assert_gt(bytes, 40);
  expect_verifies("bytes1");
}

/* calls_per_second through the gate: a burst of builtin calls (microseconds
 * each) is far over 5 a second; log lets them all run. */
Test(anomaly, gate_calls_per_second_log) {
  struct gate *g = open_gate("{\"calls_per_second\": {\"limit\": 5, \"action\": \"log\"}}", "rate1", NULL);
  for (int i = 0; i < 20; i++) {
    cleanup_free char *id = xasprintf("c%d", i);
    expect_call(g, id, "echo", "yes", "ok");
  }
  gate_close(g);
  cleanup_json json_t *recs = records("rate1");
  const json_t *a = find_event(recs, "anomaly");
  cr_assert_not_null(a);
  cr_assert_str_eq(json_string_value(json_object_get(a, "kind")), "calls_per_second");
  cr_assert_not_null(json_object_get(a, "window_ms"));
  expect_verifies("rate1");
}

/* calls_per_second with stop: the call over the limit is refused itself. */
Test(anomaly, gate_calls_per_second_stop) {
  struct gate *g = open_gate("{\"calls_per_second\": 3, \"action\": \"stop\"}", "rate2", NULL);
  int refused = 0;
  for (int i = 0; i < 10; i++) {
    cleanup_free char *id = xasprintf("c%d", i);
    cleanup_free char *code = call(g, id, "echo", "yes");
    refused += strcmp(code, GATE_ANOMALY) == 0;
  }
  cr_assert_geq(refused, 1);
  cr_assert_eq(atomic_load(&stops), 1);
  gate_close(g);
  expect_verifies("rate2");
}

struct caller {
  struct gate *g;
  int n, base;
};

static void *caller_main(void *arg) {
  struct caller *c = arg;
  for (int i = 0; i < c->n; i++) {
    cleanup_free char *id = xasprintf("t%d-%d", c->base, i);
    free(call(c->g, id, "echo", "no"));
  }
  return NULL;
}

/* 8 callers at once through the gate: exactly one anomaly record per 3
 * denials, and the log verifies. */
Test(anomaly, gate_concurrent_denials) {
  struct gate *g = open_gate("{\"denials_in_a_row\": 3, \"action\": \"log\"}", "conc1", NULL);
  pthread_t t[8];
  struct caller cs[8];
  for (int i = 0; i < 8; i++) {
    cs[i] = (struct caller){.g = g, .n = 30, .base = i};
    pthread_create(&t[i], NULL, caller_main, &cs[i]);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  cleanup_json json_t *calls = gate_calls_json(g);
  long long used = 0;
  json_integer_value(json_get_path(calls, "budget.anomalies.used"), &used);
  cr_assert_eq(used, 80);
  gate_close(g);
  cleanup_json json_t *recs = records("conc1");
  cr_assert_eq(count_events(recs, "anomaly"), 80);
  expect_verifies("conc1");
}

/* A restarted sidecar's gate carries on: a stop stays a stop, and the
 * counters go on from where the log left them. */
Test(anomaly, replay_after_restart) {
  struct gate_resume r = {.reason = "the bridge sidecar (pid 1) was killed by signal 9",
                          .action = "restart", .dead_pid = 1, .restarts = 1};
  /* two denials, then the sidecar "dies": the third after it is the hit */
  struct gate *g = open_gate("{\"denials_in_a_row\": 3, \"action\": \"stop\"}", "rep1", NULL);
  expect_call(g, "c1", "echo", "no", GATE_DENIED);
  expect_call(g, "c2", "echo", "no", GATE_DENIED);
  gate_close(g);
  g = open_gate("{\"denials_in_a_row\": 3, \"action\": \"stop\"}", "rep1", &r);
  expect_call(g, "c3", "echo", "no", GATE_DENIED);
  cr_assert_eq(atomic_load(&stops), 1);
  gate_close(g);
  /* and the stop holds across another restart */
  g = open_gate("{\"denials_in_a_row\": 3, \"action\": \"stop\"}", "rep1", &r);
  expect_call(g, "c4", "echo", "yes", GATE_ANOMALY);
  cleanup_json json_t *calls = gate_calls_json(g);
  cr_assert_eq(json_array_len(json_object_get(calls, "anomalies")), 1);
  gate_close(g);
  /* a new run of the same id starts clear */
  g = open_gate("{\"denials_in_a_row\": 3, \"action\": \"stop\"}", "rep1", NULL);
  expect_call(g, "c5", "echo", "yes", "ok");
  gate_close(g);

  /* result bytes and an unacknowledged park carry on too */
  g = open_gate("{\"result_bytes\": 120, \"denials_in_a_row\": {\"limit\": 1, \"action\": \"park\"}}",
                "rep2", NULL);
  expect_call(g, "d1", "echo", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "ok");
  expect_call(g, "d2", "echo", "no", GATE_DENIED); /* parks the run */
  gate_close(g);
  g = open_gate("{\"result_bytes\": 120, \"denials_in_a_row\": {\"limit\": 1, \"action\": \"park\"}}",
                "rep2", &r);
  struct approver ap = {.g = g};
  pthread_t t;
  pthread_create(&t, NULL, approver_main, &ap);
  /* parked, approved, run: its result takes the bytes (both runs') over */
  expect_call(g, "d3", "echo", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", GATE_ANOMALY);
  pthread_join(t, NULL);
  cr_assert_eq(ap.approved, 1, "the park outlived the restart");
  gate_close(g);
  cleanup_json json_t *recs = records("rep2");
  size_t bytes_hits = 0;
  for (size_t i = 0; i < json_array_len(recs); i++) {
    const char *k = json_string_value(json_object_get(json_array_get(recs, i), "kind"));
    bytes_hits += k && strcmp(k, "result_bytes") == 0;
  }
  cr_assert_eq(bytes_hits, 1, "the bytes before the restart counted");
}

/* The window of denials is replayed too: what the dead sidecar's gate
 * saw still counts, interleaved allowed calls and all. */
Test(anomaly, window_replay_after_restart) {
  struct gate_resume r = {.reason = "the bridge sidecar (pid 1) was killed by signal 9",
                          .action = "restart", .dead_pid = 1, .restarts = 1};
  const char *lim = "{\"denials_in_window\": {\"count\": 3, \"calls\": 10}}";
  struct gate *g = open_gate(lim, "win1", NULL);
  expect_call(g, "w1", "echo", "no", GATE_DENIED);
  expect_call(g, "w2", "echo", "yes", "ok");
  expect_call(g, "w3", "echo", "no", GATE_DENIED);
  expect_call(g, "w4", "echo", "yes", "ok");
  gate_close(g);
  g = open_gate(lim, "win1", &r);
  expect_call(g, "w5", "echo", "yes", "ok");
  expect_call(g, "w6", "echo", "no", GATE_DENIED); /* the third among the last 6 */
  cr_assert_eq(atomic_load(&stops), 1);
  expect_call(g, "w7", "echo", "yes", GATE_ANOMALY);
  cleanup_json json_t *calls = gate_calls_json(g);
  const json_t *an = json_array_get(json_object_get(calls, "anomalies"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(an, "kind")), "denials_in_window");
  long long win = 0;
  json_integer_value(json_object_get(an, "calls"), &win);
  cr_assert_eq(win, 10);
  gate_close(g);
}

static bool stopped_within(int ms) {
  for (int i = 0; i < ms / 10 && atomic_load(&stops) == 0; i++)
    usleep(10000);
  return atomic_load(&stops) == 1;
}

/* A stop refuses every later call at once; the container is killed only
 * after stop_grace_ms (the hook), and not at all when the run ends first. */
Test(anomaly, stop_grace) {
  const char *lim = "{\"denials_in_a_row\": 2, \"stop_grace_ms\": 300}";
  struct gate *g = open_gate(lim, "grace1", NULL);
  expect_call(g, "g1", "echo", "no", GATE_DENIED);
  expect_call(g, "g2", "echo", "no", GATE_DENIED);
  expect_call(g, "g3", "echo", "yes", GATE_ANOMALY); /* refused at once */
  char *why = NULL, *call = NULL;
  cr_assert(gate_anomaly_stop(g, &why, &call));
  cr_assert_str_eq(why, "2 calls refused in a row (denials_in_a_row: 2, action stop)");
  cr_assert_str_eq(call, "g2");
  free(why);
  free(call);
  cr_assert(stopped_within(10000), "the hook ran after the grace");
  gate_close(g);
  /* the run ends within the grace: nothing is left to kill */
  g = open_gate("{\"denials_in_a_row\": 1, \"stop_grace_ms\": 30000}", "grace2", NULL);
  expect_call(g, "h1", "echo", "no", GATE_DENIED);
  cr_assert_eq(atomic_load(&stops), 0);
  gate_close(g); /* does not wait out the 30 s */
  cr_assert_eq(atomic_load(&stops), 0);
  /* a sidecar restarted within the grace kills the container all the same */
  struct gate_resume r = {.reason = "the bridge sidecar (pid 1) was killed by signal 9",
                          .action = "restart", .dead_pid = 1, .restarts = 1};
  g = open_gate("{\"denials_in_a_row\": 1, \"stop_grace_ms\": 100}", "grace2", &r);
  expect_call(g, "h2", "echo", "yes", GATE_ANOMALY);
  cr_assert(stopped_within(10000), "the restarted gate stops the container too");
  gate_close(g);
  /* no gate without a stop starts one */
  g = open_gate("{\"denials_in_a_row\": 1, \"stop_grace_ms\": 0}", "grace3", NULL);
  cr_assert(gate_anomaly_stop(g, &why, &call) == false && why == NULL);
  expect_call(g, "k1", "echo", "no", GATE_DENIED);
  cr_assert_eq(atomic_load(&stops), 1, "grace 0: at once");
  gate_close(g);
}

/* The bridge under a hostile container's floods (issue 13), on the host
 * with a real tmpfs bridge area and the real gate: the seen-id set stays
 * bounded whatever the container writes, refusals cost the log O(1) (the
 * first of each kind in full, then counted summaries), withdrawn requests
 * are audited as such and get no response, and parked approvals do not
 * hold the worker pool.  The in-container flood is
 * tests/integration/test_bridge_flood.sh. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bridge/area.h"
#include "bridge/bridge.h"
#include "bridge/server.h"
#include "governance/verify.h"
#include "base/util.h"

static char state[] = "/tmp/tg-flood-XXXXXX";
static struct gate *gate;
static struct bridge_service *svc;
static int afd = -1, rfd = -1, qfd = -1;
static char *audit_log;

static void make_area(void) {
  cr_assert_not_null(mkdtemp(state));
  tg_error *err = NULL;
  char *py = bridge_client_path(NULL, "tollgate.py", &err);
  cr_assert_not_null(py, "%s", err ? err->msg : "");
  struct bridge_area_params p = {.uid = 0, .gid = 0, .approval_timeout_ms = 2000,
                                 .python_client = py};
  cr_assert_eq(bridge_area_create(state, &p, &err), 0, "%s", err ? err->msg : "");
  free(py);
  cr_assert_eq(bridge_area_open(state, &afd, &rfd, &qfd, &err), 0);
}

/* Start the service with this policy text; seen_max 0: the default. */
static void start(const char *policy, unsigned seen_max) {
  make_area();
  tg_error *err = NULL;
  char *audit = xasprintf("%s/audit", state);
  mkdir(audit, 0700);
  char *pp = xasprintf("%s/policy.json", state);
  FILE *f = fopen(pp, "w");
  fputs(policy, f);
  fclose(f);
  struct gate_config gc = {.container_id = "flood", .audit_dir = audit, .policy_path = pp};
  cr_assert_eq(gate_open(&gc, &gate, &err), 0, "%s", err ? err->msg : "");
  audit_log = xstrdup(gate_audit_path(gate));
  struct bridge_service_options o = {.area_fd = afd, .req_fd = rfd, .resp_fd = qfd,
                                     .gate = gate, .stop_fd = -1, .stop_fd2 = -1,
                                     .seccomp = true, .seen_max = seen_max,
                                     /* these tests flood on purpose */
                                     .refused_per_second = 1000000};
  cr_assert_eq(bridge_service_start(&o, &svc, &err), 0, "%s", err ? err->msg : "");
  free(audit);
  free(pp);
}

/* Stop the service and close the gate: the log is then complete. */
static void stop(void) {
  if (svc)
    bridge_service_stop(svc);
  svc = NULL;
  if (gate)
    gate_close(gate);
  gate = NULL;
}

static void teardown(void) {
  stop();
  close(afd);
  close(rfd);
  close(qfd);
  bridge_teardown(state, NULL);
  remove_tree(state, NULL);
  free(audit_log);
  audit_log = NULL;
}

static void put_request(const char *id, const char *body, bool marker) {
  char name[128];
  if (body) {
    snprintf(name, sizeof name, "%s.json", id);
    int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write_all(fd, body, strlen(body)), 0);
    close(fd);
  }
  if (marker) {
    snprintf(name, sizeof name, "%s.done", id);
    int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
  }
}

/* The response body for id, or NULL after wait_ms without one.  Consumes it. */
static char *get_response(const char *id, int wait_ms) {
  char marker[128], name[128];
  snprintf(marker, sizeof marker, "%s.done", id);
  snprintf(name, sizeof name, "%s.json", id);
  struct stat st;
  for (int i = 0; i < wait_ms * 10; i++) {
    if (fstatat(qfd, marker, &st, 0) == 0) {
      char *buf = NULL;
      cr_assert_eq(read_file_untrusted(qfd, name, 1 << 20, &buf, NULL, NULL), 0);
      unlinkat(qfd, marker, 0);
      unlinkat(qfd, name, 0);
      return buf;
    }
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static struct bridge_service_stats stats(void) {
  struct bridge_service_stats s;
  bridge_service_get_stats(svc, &s);
  return s;
}

/* Records of the log with this event (and this outcome, unless NULL). */
static size_t count_records(const char *event, const char *outcome) {
  json_t *recs = NULL;
  cr_assert_eq(audit_read_records(audit_log, &recs, NULL), 0);
  size_t n = 0;
  for (size_t i = 0; i < json_array_len(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    const char *e = json_string_value(json_object_get(r, "event"));
    const char *o = json_string_value(json_object_get(r, "outcome"));
    n += e && strcmp(e, event) == 0 && (outcome == NULL || (o && strcmp(o, outcome) == 0));
  }
  json_free(recs);
  return n;
}

/* The count summed over the summary records of one kind. */
static long long summarised(const char *kind) {
  json_t *recs = NULL;
  cr_assert_eq(audit_read_records(audit_log, &recs, NULL), 0);
  long long n = 0;
  for (size_t i = 0; i < json_array_len(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    const char *e = json_string_value(json_object_get(r, "event"));
    const char *k = json_string_value(json_object_get(r, "kind"));
    long long c = 0;
    if (e && strcmp(e, "summary") == 0 && k && strcmp(k, kind) == 0 &&
        json_integer_value(json_object_get(r, "count"), &c))
      n += c;
  }
  json_free(recs);
  return n;
}

static void assert_log_verifies(void) {
  struct audit_verify_result v;
  cr_assert_eq(audit_verify(audit_log, NULL, false, &v, NULL), 0);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
}

#define ECHO "\"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}"
#define CALL "{\"v\":1,\"tool\":\"echo\",\"args\":{}}"

TestSuite(flood, .fini = teardown, .timeout = 120);

/* Past the cap every attempt is answered (budget_exhausted) but neither
 * remembered nor audited one by one: the set holds at most the cap. */
Test(flood, over_the_cap_the_set_stays_at_the_cap_and_the_log_counts) {
  start("{\"version\": 1, \"tools\": {" ECHO "}, \"budgets\": {\"max_tool_calls\": 10}}", 0);
  for (int i = 0; i < 300; i++) {
    char id[32];
    snprintf(id, sizeof id, "c%d", i);
    put_request(id, CALL, true);
    char *r = get_response(id, 5000);
    cr_assert_not_null(r, "no response for %s", id);
    if (i >= 10)
      cr_assert(strstr(r, "\"budget_exhausted\""), "%s", r);
    free(r);
  }
  cr_assert_leq(stats().seen_ids, 10, "%llu ids remembered", stats().seen_ids);
  stop();
  /* 10 calls, the first over-cap attempt in full, the other 289 counted */
  cr_assert_eq(count_records("call", "ok"), 10);
  cr_assert_eq(count_records("call", "budget_exhausted"), 1);
  cr_assert_eq(summarised("over_cap"), 289);
  /* That one full record names the tool and the arguments asked for (the
   * first over-cap body is read; the later ones are not). */
  json_t *recs = NULL;
  cr_assert_eq(audit_read_records(audit_log, &recs, NULL), 0);
  bool named = false;
  for (size_t i = 0; i < json_array_len(recs); i++) {
    const json_t *r = json_array_get(recs, i);
    const char *o = json_string_value(json_object_get(r, "outcome"));
    const char *t = json_string_value(json_object_get(r, "tool"));
    if (o && strcmp(o, "budget_exhausted") == 0)
      named = t && strcmp(t, "echo") == 0 && json_is(json_object_get(r, "args"), JSON_OBJECT);
  }
  json_free(recs);
  cr_assert(named, "the cap-hit record has no tool or args");
  assert_log_verifies();
}

/* Steady calls whose responses are collected, past the set's size: the
 * set never holds more than seen_max ids (it forgets collected ones), and
 * every call is answered (issue 20: ~55 bytes a call without bound). */
Test(flood, steady_calls_keep_the_set_bounded) {
  start("{\"version\": 1, \"tools\": {" ECHO "}, \"budgets\": {\"max_tool_calls\": 5000}}", 64);
  unsigned long long most = 0;
  for (int i = 0; i < 1000; i++) {
    char id[32];
    snprintf(id, sizeof id, "s%d", i);
    put_request(id, CALL, true);
    char *r = get_response(id, 5000);
    cr_assert_not_null(r, "no response for %s", id);
    cr_assert(strstr(r, "\"ok\":true"), "call %d: %s", i, r);
    free(r);
    if (stats().seen_ids > most)
      most = stats().seen_ids;
  }
  cr_assert_leq(most, 64, "the set held %llu ids", most);
  stop();
  cr_assert_eq(count_records("call", "ok"), 1000);
  cr_assert_eq(count_records("unanswerable", NULL), 0);
  assert_log_verifies();
}

/* A container that never collects its answers fills the set: then new
 * ids are refused with an error that says why (bridge_full), still
 * bounded, still counted. */
Test(flood, uncollected_answers_fill_the_set_and_then_refuse) {
  start("{\"version\": 1, \"tools\": {" ECHO "}, \"budgets\": {\"max_tool_calls\": 5000}}", 32);
  for (int i = 0; i < 100; i++) {
    char id[32];
    snprintf(id, sizeof id, "u%d", i);
    put_request(id, CALL, true);
  }
  /* which 32 are remembered depends on the order the watcher saw them
   * (inotify, or its first rescan); the counts do not */
  for (int k = 0; k < 10000 && stats().answered < 100; k++)
    usleep(1000);
  cr_assert_leq(stats().seen_ids, 32);
  int ok = 0, full = 0;
  for (int i = 0; i < 100; i++) {
    char id[32];
    snprintf(id, sizeof id, "u%d", i);
    char *r = get_response(id, 1000);
    cr_assert_not_null(r, "no answer for %s", id);
    ok += strstr(r, "\"ok\":true") != NULL;
    full += strstr(r, "\"bridge_full\"") && strstr(r, "collect responses");
    free(r);
  }
  cr_assert_eq(ok, 32);
  cr_assert_eq(full, 68);
  stop();
  cr_assert_eq(count_records("call", "ok"), 32);
  cr_assert_eq(count_records("unanswerable", NULL), 1);
  cr_assert_eq(summarised("unremembered"), 67);
  assert_log_verifies();
}

/* Invalid ids, junk and replays: one record of each kind in full, the rest
 * counted; a replay is never answered twice. */
Test(flood, refusals_are_counted_not_written_each) {
  start("{\"version\": 1, \"tools\": {" ECHO "}, \"budgets\": {\"max_tool_calls\": 100000}}", 0);
  put_request("once", CALL, true);
  char *r = get_response("once", 5000);
  cr_assert_not_null(r);
  free(r);
  for (int i = 0; i < 500; i++) {
    char name[64];
    snprintf(name, sizeof name, "bad..%d.done", i);
    int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    close(fd);
    snprintf(name, sizeof name, "junk%d", i);
    fd = openat(rfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    close(fd);
  }
  for (int i = 0; i < 200; i++) {
    put_request("once", NULL, true);
    for (int k = 0; k < 1000; k++) { /* one at a time: each its own replay */
      struct stat st;
      if (fstatat(rfd, "once.done", &st, 0) != 0)
        break;
      usleep(100);
    }
  }
  for (int k = 0; k < 5000 && (stats().bad_ids < 500 || stats().junk < 500); k++)
    usleep(1000);
  cr_assert_eq(stats().bad_ids, 500);
  cr_assert_eq(stats().replays, 200);
  cr_assert_null(get_response("once", 200), "a replay was answered");
  stop();
  cr_assert_eq(count_records("unanswerable", NULL), 2); /* bad id, replay: one each */
  cr_assert_eq(count_records("junk", NULL), 1);
  cr_assert_eq(summarised("bad_id"), 499);
  cr_assert_eq(summarised("junk"), 499);
  cr_assert_eq(summarised("replay"), 199);
  assert_log_verifies();
}

/* A marker whose body the caller removed: audited withdrawn, not
 * bad_request, and no response is left for nobody to collect. */
Test(flood, a_withdrawn_request_is_audited_as_withdrawn) {
  start("{\"version\": 1, \"tools\": {" ECHO "}}", 0);
  put_request("gone", NULL, true);
  cr_assert_null(get_response("gone", 500));
  for (int k = 0; k < 5000 && stats().withdrawn < 1; k++)
    usleep(1000);
  cr_assert_eq(stats().withdrawn, 1);
  struct stat st;
  cr_assert_neq(fstatat(rfd, "gone.done", &st, 0), 0, "the marker was left");
  stop();
  cr_assert_eq(count_records("withdrawn", "withdrawn"), 1);
  cr_assert_eq(count_records("call", "bad_request"), 0);
  assert_log_verifies();
}

/* 14 calls parked for approval with max_pending 16: all 14 wait at once
 * (more than the pool's 8 workers), and an allowed call made meanwhile is
 * answered at once. */
Test(flood, parked_approvals_hold_no_worker) {
  start("{\"version\": 1, \"tools\": {" ECHO ","
        "\"ask\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
        "          \"rules\": [{\"effect\": \"approve\", \"reason\": \"a person decides\"}]}},"
        " \"approval\": {\"max_pending\": 16, \"timeout\": 60}}",
        0);
  for (int i = 0; i < 14; i++) {
    char id[32];
    snprintf(id, sizeof id, "ask%d", i);
    put_request(id, "{\"v\":1,\"tool\":\"ask\",\"args\":{}}", true);
  }
  size_t parked = 0;
  for (int k = 0; k < 10000 && parked < 14; k++) {
    json_t *p = gate_pending_json(gate);
    parked = json_array_len(p);
    json_free(p);
    if (parked < 14)
      usleep(1000);
  }
  cr_assert_eq(parked, 14, "only %zu calls parked at once", parked);
  unsigned long long t0 = monotonic_ns();
  put_request("allowed", CALL, true);
  char *r = get_response("allowed", 10000);
  unsigned long long ms = (monotonic_ns() - t0) / 1000000ull;
  cr_assert_not_null(r, "the allowed call waited behind the parked ones");
  cr_assert(strstr(r, "\"ok\":true"), "%s", r);
  free(r);
  cr_log_info("the allowed call was answered in %llu ms with 14 approvals parked", ms);
  for (int i = 0; i < 14; i++) {
    char id[32];
    snprintf(id, sizeof id, "ask%d", i);
    cr_assert_eq(gate_decide_pending(gate, id, i % 2 == 0, "uid:0", NULL, NULL), 0);
  }
  for (int i = 0; i < 14; i++) {
    char id[32];
    snprintf(id, sizeof id, "ask%d", i);
    r = get_response(id, 10000);
    cr_assert_not_null(r, "no answer for %s", id);
    cr_assert(strstr(r, i % 2 == 0 ? "\"ok\":true" : "\"denied\""), "%s: %s", id, r);
    free(r);
  }
}

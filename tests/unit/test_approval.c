/* The approval state machine through the gate: a person approves or denies
 * over the control socket while the call waits, the timeout denies, the
 * hook approves / denies / errs (counted as deny), the parking limit. */
#include <criterion/criterion.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "governance/control.h"
#include "governance/gate.h"
#include "governance/verify.h"
#include "base/util.h"

static char dir[] = "/tmp/tg-appr-XXXXXX";
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(approval, .init = setup, .fini = teardown);

static void write_file(const char *name, const char *text, mode_t mode) {
  cleanup_free char *p = xasprintf("%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
  chmod(p, mode);
}

static char *sock_path(void) { return xasprintf("%s/control.sock", dir); }

static const char *approver_group;

static struct gate *open_gate(const char *approval, int timeout_ms) {
  cleanup_free char *pol = xasprintf(
      "{\"version\": 1, \"tools\": {\"refund\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
      " \"rules\": [{\"if\": {\"arg\": \"amount\", \"op\": \"<=\", \"value\": 50}, \"effect\": \"allow\"},"
      "            {\"effect\": \"approve\", \"reason\": \"refunds over 50 need a human\"}]}}%s%s}",
      approval ? ", \"approval\": " : "", approval ? approval : "");
  write_file("policy.json", pol, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  cleanup_free char *sock = sock_path();
  struct gate_config cfg = {.container_id = "ap", .policy_path = pp, .audit_dir = audit,
                            .approval_timeout_ms = timeout_ms, .control_socket = sock,
                            .approver_group = approver_group};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

struct waiter {
  struct gate *g;
  const char *id;
  const char *req;
  char *resp;
};

static void *wait_call(void *arg) {
  struct waiter *w = arg;
  cleanup_json json_t *r = json_parse(w->req, strlen(w->req), NULL, NULL);
  w->resp = gate_handle(w->g, w->id, r, NULL, NULL);
  return NULL;
}

static json_t *control(const char *verb, const char *call, const char *reason) {
  cleanup_free char *sock = sock_path();
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string(verb));
  if (call)
    json_object_set(req, "call", json_new_string(call));
  if (reason)
    json_object_set(req, "reason", json_new_string(reason));
  json_t *reply = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(control_request(sock, req, 5000, &reply, &err), 0, "%s", err ? err->msg : "");
  return reply;
}

/* Poll `pending` until the call shows up (no timed assertion: just wait). */
static void wait_pending(const char *call) {
  for (;;) {
    cleanup_json json_t *r = control("pending", NULL, NULL);
    const json_t *list = json_object_get(r, "pending");
    for (size_t i = 0; i < json_array_len(list); i++)
      if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "call")), call) == 0)
        return;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
}

static const char *BIG = "{\"v\":1,\"tool\":\"refund\",\"args\":{\"amount\":80}}";

Test(approval, small_refund_runs_without_asking) {
  struct gate *g = open_gate(NULL, 60000);
  struct waiter w = {g, "s1", "{\"v\":1,\"tool\":\"refund\",\"args\":{\"amount\":20}}", NULL};
  wait_call(&w);
  cr_assert(strstr(w.resp, "\"ok\":true"), "%s", w.resp);
  free(w.resp);
  gate_close(g);
}

Test(approval, a_person_approves_over_the_control_socket) {
  struct gate *g = open_gate(NULL, 60000);
  struct waiter w = {g, "big1", BIG, NULL};
  pthread_t t;
  pthread_create(&t, NULL, wait_call, &w);
  wait_pending("big1");
  cleanup_json json_t *r = control("approve", "big1", "checked the order");
  cr_assert(json_is_true(json_object_get(r, "ok")));
  pthread_join(t, NULL);
  cr_assert(strstr(w.resp, "\"ok\":true") && strstr(w.resp, "\"amount\":80"), "%s", w.resp);
  free(w.resp);
  cleanup_json json_t *again = control("approve", "big1", NULL);
  cr_assert_not(json_is_true(json_object_get(again, "ok")), "a decided call cannot be decided twice");
  cleanup_free char *log = xstrdup(gate_audit_path(g));
  gate_close(g);
  cleanup_free char *text = NULL;
  read_file(log, 1 << 20, &text, NULL, NULL);
  cr_assert(strstr(text, "\"approver\":\"uid:0\"") || getuid() != 0, "%s", text);
  cr_assert(strstr(text, "checked the order"), "%s", text);
}

Test(approval, a_person_denies) {
  struct gate *g = open_gate(NULL, 60000);
  struct waiter w = {g, "big2", BIG, NULL};
  pthread_t t;
  pthread_create(&t, NULL, wait_call, &w);
  wait_pending("big2");
  cleanup_json json_t *r = control("deny", "big2", "looks like fraud");
  cr_assert(json_is_true(json_object_get(r, "ok")));
  pthread_join(t, NULL);
  cr_assert(strstr(w.resp, "\"code\":\"denied\"") && strstr(w.resp, "looks like fraud"), "%s", w.resp);
  free(w.resp);
  gate_close(g);
}

Test(approval, nobody_answers_and_the_timeout_denies) {
  struct gate *g = open_gate(NULL, 300);
  struct waiter w = {g, "big3", BIG, NULL};
  wait_call(&w);
  cr_assert(strstr(w.resp, "\"code\":\"approval_timeout\""), "%s", w.resp);
  free(w.resp);
  gate_close(g);
}

Test(approval, hook_approves_denies_and_errors_count_as_deny) {
  write_file("yes.sh", "#!/bin/sh\ncat >/dev/null\necho 'ticket 42'\nexit 0\n", 0755);
  write_file("no.sh", "#!/bin/sh\ncat >/dev/null\necho 'over the daily limit'\nexit 1\n", 0755);
  write_file("broken.sh", "#!/bin/sh\necho 'hook crashed' >&2\nexit 7\n", 0755);
  const char *cases[][2] = {{"yes.sh", "\"ok\":true"}, {"no.sh", "over the daily limit"},
                            {"broken.sh", "counted as a deny"}};
  for (int i = 0; i < 3; i++) {
    cleanup_free char *appr = xasprintf("{\"hook\": \"%s\"}", cases[i][0]);
    struct gate *g = open_gate(appr, 5000);
    struct waiter w = {g, "h", BIG, NULL};
    wait_call(&w);
    cr_assert(strstr(w.resp, cases[i][1]), "%s: %s", cases[i][0], w.resp);
    if (i > 0)
      cr_assert(strstr(w.resp, "\"code\":\"denied\""), "%s", w.resp);
    free(w.resp);
    cleanup_free char *log = xstrdup(gate_audit_path(g));
    gate_close(g);
    cleanup_free char *text = NULL;
    read_file(log, 1 << 20, &text, NULL, NULL);
    cleanup_free char *who = xasprintf("\"approver\":\"hook:%s\"", cases[i][0]);
    cr_assert(strstr(text, who), "%s", text);
    cleanup_free char *aside = xasprintf("%s/audit/ap.jsonl", dir);
    unlink(aside);
  }
}

Test(approval, the_parking_limit_denies_further_calls) {
  struct gate *g = open_gate("{\"max_pending\": 1}", 60000);
  struct waiter w = {g, "p1", BIG, NULL};
  pthread_t t;
  pthread_create(&t, NULL, wait_call, &w);
  wait_pending("p1");
  struct waiter w2 = {g, "p2", "{\"v\":1,\"tool\":\"refund\",\"args\":{\"amount\":90}}", NULL};
  wait_call(&w2);
  cr_assert(strstr(w2.resp, "\"code\":\"denied\"") && strstr(w2.resp, "waiting for approval"), "%s", w2.resp);
  free(w2.resp);
  /* stopping the container releases the parked call */
  gate_container_stopped(g);
  pthread_join(t, NULL);
  cr_assert(strstr(w.resp, "\"code\":\"container_stopped\""), "%s", w.resp);
  free(w.resp);
  gate_close(g);
}

Test(approval, only_root_or_the_group_may_decide) {
  struct gate *g = open_gate(NULL, 60000);
  cleanup_free char *sock = sock_path();
  struct stat st;
  cr_assert_eq(stat(sock, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  if (getuid() == 0) {
    /* The socket file is 0600, so an unprivileged process cannot even
     * connect; a test that skips that check would prove nothing. */
    pid_t pid = fork();
    if (pid == 0) {
      if (setgid(65534) < 0 || setuid(65534) < 0)
        _exit(2);
      cleanup_json json_t *req = json_new_object();
      json_object_set(req, "verb", json_new_string("approve"));
      json_object_set(req, "call", json_new_string("x"));
      json_t *reply = NULL;
      _exit(control_request(sock, req, 2000, &reply, NULL) < 0 ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "uid 65534 reached the control socket");
  }
  gate_close(g);
}

/* A member of the approver group may decide; SO_PEERCRED tells who it was. */
static int decide_as(uid_t uid, gid_t gid, const char *verb, const char *call) {
  cleanup_free char *sock = sock_path();
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
      _exit(3);
    cleanup_json json_t *req = json_new_object();
    json_object_set(req, "verb", json_new_string(verb));
    json_object_set(req, "call", json_new_string(call));
    json_t *reply = NULL;
    if (control_request(sock, req, 2000, &reply, NULL) < 0)
      _exit(2); /* could not connect */
    _exit(json_is_true(json_object_get(reply, "ok")) ? 0 : 1);
  }
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(approval, the_approver_group_may_decide_others_may_not) {
  if (getuid() != 0 || getgrnam("nogroup") == NULL)
    cr_skip_test("needs root and the nogroup group");
  approver_group = "nogroup";
  struct gate *g = open_gate(NULL, 60000);
  approver_group = NULL;
  cleanup_free char *sock = sock_path();
  struct stat st;
  cr_assert_eq(stat(sock, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0660);
  cr_assert_eq(st.st_gid, getgrnam("nogroup")->gr_gid);
  struct waiter w = {g, "grp", BIG, NULL};
  pthread_t t;
  pthread_create(&t, NULL, wait_call, &w);
  wait_pending("grp");
  /* uid 1 (daemon) in group 1: the socket's mode keeps it out entirely */
  cr_assert_eq(decide_as(1, 1, "approve", "grp"), 2);
  /* uid 65534 in nogroup: connects and decides */
  cr_assert_eq(decide_as(65534, getgrnam("nogroup")->gr_gid, "approve", "grp"), 0);
  pthread_join(t, NULL);
  cr_assert(strstr(w.resp, "\"ok\":true"), "%s", w.resp);
  free(w.resp);
  cleanup_free char *log = xstrdup(gate_audit_path(g));
  gate_close(g);
  cleanup_free char *text = NULL;
  read_file(log, 1 << 20, &text, NULL, NULL);
  cr_assert(strstr(text, "\"approver\":\"uid:65534\""), "%s", text);
}

/* A container id of 128 characters under a long root makes the socket path
 * longer than sun_path; it is bound and reached through its directory. */
Test(approval, a_socket_path_longer_than_sun_path_works) {
  cleanup_free char *deep = xasprintf("%s/%0100d", dir, 0);
  cr_assert_eq(mkdir_p(deep, 0700, NULL), 0);
  cleanup_free char *sock = xasprintf("%s/control.sock", deep);
  cr_assert_gt(strlen(sock), 108);
  write_file("policy.json", "{\"version\": 1, \"tools\": {}}", 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "long", .policy_path = pp, .audit_dir = audit,
                            .control_socket = sock};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string("calls"));
  cleanup_json json_t *reply = NULL;
  cr_assert_eq(control_request(sock, req, 2000, &reply, &err), 0, "%s", err ? err->msg : "");
  cr_assert(json_is_true(json_object_get(reply, "ok")));
  gate_close(g);
}

/* The container stops while the hook is still thinking: the hook is
 * killed and the call ends container_stopped, long before the timeout. */
Test(approval, stopping_the_container_ends_a_running_hook) {
  write_file("slow.sh", "#!/bin/sh\nsleep 120\nexit 0\n", 0755);
  struct gate *g = open_gate("{\"hook\": \"slow.sh\"}", 200000);
  struct waiter w = {g, "slowhook", BIG, NULL};
  pthread_t t;
  pthread_create(&t, NULL, wait_call, &w);
  for (;;) { /* until the hook is running */
    cleanup_json json_t *r = control("pending", NULL, NULL);
    const json_t *first = json_array_get(json_object_get(r, "pending"), 0);
    if (first && strcmp(json_string_value(json_object_get(first, "decider")), "hook") == 0)
      break;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  gate_container_stopped(g);
  pthread_join(t, NULL);
  cr_assert(strstr(w.resp, "\"code\":\"container_stopped\""), "%s", w.resp);
  free(w.resp);
  gate_close(g);
}

/* The cancel verb (tollgate mcp on notifications/cancelled): a parked call
 * ends, every later call is refused without running, one "cancelled"
 * record names who asked and the calls as they stood; a second cancel
 * writes no second record.  The log still verifies. */
Test(approval, cancel_refuses_later_calls_and_is_recorded) {
  struct gate *g = open_gate(NULL, 60000);
  struct waiter small = {g, "c1", "{\"v\":1,\"tool\":\"refund\",\"args\":{\"amount\":20}}", NULL};
  wait_call(&small);
  cr_assert(strstr(small.resp, "\"ok\":true"), "%s", small.resp);
  free(small.resp);
  struct waiter w = {g, "c2", BIG, NULL};
  pthread_t t;
  pthread_create(&t, NULL, wait_call, &w);
  wait_pending("c2");
  cleanup_json json_t *r = control("cancel", NULL, "the client gave up");
  cr_assert(json_is_true(json_object_get(r, "ok")));
  const json_t *calls = json_object_get(r, "calls");
  cr_assert_eq(json_array_len(calls), 2);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(calls, 0), "status")), "ok");
  pthread_join(t, NULL);
  cr_assert(strstr(w.resp, "container_stopped"), "the parked call ends: %s", w.resp);
  free(w.resp);
  struct waiter later = {g, "c3", "{\"v\":1,\"tool\":\"refund\",\"args\":{\"amount\":1}}", NULL};
  wait_call(&later);
  cr_assert(strstr(later.resp, "container_stopped") && strstr(later.resp, "the run was cancelled"), "%s",
            later.resp);
  free(later.resp);
  cleanup_json json_t *again = control("cancel", NULL, "twice");
  cr_assert(json_is_true(json_object_get(again, "already")));
  cleanup_free char *log = xstrdup(gate_audit_path(g));
  gate_close(g);
  cleanup_free char *text = NULL;
  read_file(log, 1 << 20, &text, NULL, NULL);
  const char *rec = strstr(text, "\"event\":\"cancelled\"");
  cr_assert(rec, "%s", text);
  cr_assert_null(strstr(rec + 1, "\"event\":\"cancelled\""), "one record: %s", text);
  cr_assert(strstr(text, "\"reason\":\"the client gave up\""), "%s", text);
  cr_assert(strstr(text, "\"calls\":[{\"call\":\"c1\",\"tool\":\"refund\",\"status\":\"ok\"}"), "%s", text);
  cr_assert(strstr(text, "\"approver\":\"uid:0\"") || getuid() != 0, "%s", text);
  cr_assert_null(strstr(text, "\"call\":\"c3\",\"tool\":\"refund\",\"args\":{\"amount\":1},\"decision\":\"allow\""),
                 "the later call never ran: %s", text);
  struct audit_verify_result vr = {0};
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_verify(log, NULL, false, &vr, &err), 0, "%s", err ? err->msg : "");
  cr_assert(vr.ok && vr.closed, "%s", vr.message);
  audit_verify_result_clear(&vr);
}

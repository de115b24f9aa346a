/* add_tool: one agent-written tool joins a running gate (docs/policy.md
 * "Adding a tool to a running gate").  The entry is validated as the
 * policy loader validates it; only a new name with source_sha256 is
 * taken, within max_custom_tools; the budgets and the other tools are
 * untouched; the addition is on the audit log (which verifies) and a
 * resumed gate has the tool again. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/control.h"
#include "governance/gate.h"
#include "governance/gate_state.h"
#include "governance/policy.h"
#include "governance/verify.h"
#include "base/util.h"
#include "tests/unit/file_util.h"

static char dir[] = "/tmp/tg-addtool-XXXXXX";

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) { remove_tree(dir, NULL); }

TestSuite(add_tool, .init = setup, .fini = teardown);

#define SHA "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

static const char *POLICY =
    "{\"version\": 1, \"tools\": {"
    " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"max_calls\": 2,"
    "   \"rules\": [{\"effect\": \"allow\"}]},"
    " \"add\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"" SHA "\","
    "   \"rules\": [{\"effect\": \"allow\"}]}"
    "}, \"budgets\": {\"max_tool_calls\": 6, \"max_custom_tools\": 2}}";

static json_t *parse(const char *s) {
  json_t *v = json_parse(s, strlen(s), NULL, NULL);
  cr_assert_not_null(v, "test JSON: %s", s);
  return v;
}

static struct policy *load(void) {
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_parse("/tmp/p.json", POLICY, strlen(POLICY), &p, &err), 0, "%s",
               err ? err->msg : "");
  return p;
}

/* The error policy_parse_added_tool gives entry (owned), or NULL when it
 * takes it. */
static char *refusal(struct policy *p, const char *name, const char *entry, long long ceiling) {
  cleanup_json json_t *e = entry ? parse(entry) : NULL;
  struct tool *t = NULL;
  tg_error *err = NULL;
  if (policy_parse_added_tool(p, name, e, ceiling, &t, &err) == 0) {
    cr_assert_not_null(t);
    policy_tool_free(t);
    return NULL;
  }
  cr_assert_null(t);
  char *msg = xstrdup(err->msg);
  tg_error_free(&err);
  return msg;
}

#define GOOD "{\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"" SHA "\", \"rules\": [{\"effect\": \"allow\"}]}"

static void expect_refused(struct policy *p, const char *name, const char *entry, long long ceiling,
                           const char *want) {
  cleanup_free char *msg = refusal(p, name, entry, ceiling);
  cr_assert_not_null(msg, "%s was taken", entry ? entry : "(none)");
  cr_assert(strstr(msg, want), "expected \"%s\" in: %s", want, msg);
}

Test(add_tool, the_entry_is_checked_as_the_loader_checks_it) {
  struct policy *p = load();
  cr_assert_null(refusal(p, "mul", GOOD, -1), "a new agent-written tool is taken");
  expect_refused(p, "mul",
                 "{\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}",
                 -1, "tools.mul: has no source_sha256: only agent-written tools may be added");
  expect_refused(p, "echo", GOOD, -1, "tools.echo: the policy has a tool of that name already");
  expect_refused(p, "add", GOOD, -1, "tools.add: the policy has a tool of that name already");
  expect_refused(p, "mul",
                 "{\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"ABC\", \"rules\": []}",
                 -1, "tools.mul.source_sha256: must be the SHA-256 of the tool's source");
  expect_refused(p, "mul",
                 "{\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"" SHA "\", \"rules\": [], \"budget\": 1}",
                 -1, "tools.mul.budget: unknown key \"budget\"");
  expect_refused(p, "mul", "{\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"" SHA "\"}",
                 -1, "tools.mul.rules: missing");
  expect_refused(p, "mul",
                 "{\"backend\": {\"type\": \"exec\", \"argv\": [\"/nonexistent/tool\"]}, \"source_sha256\": \"" SHA "\", \"rules\": []}",
                 -1, "/nonexistent/tool is not an executable file");
  expect_refused(p, "mul",
                 "{\"backend\": {\"type\": \"mcp\", \"server\": \"x\"}, \"source_sha256\": \"" SHA "\", \"rules\": []}",
                 -1, "an added tool cannot use an mcp backend");
  expect_refused(p, "1bad", GOOD, -1, "invalid tool name \"1bad\"");
  expect_refused(p, "mul", "[1]", -1, "a tool must be an object");
  expect_refused(p, "mul", NULL, -1, "add_tool needs \"name\"");
  expect_refused(p, NULL, GOOD, -1, "add_tool needs \"name\"");
  expect_refused(p, "mul", GOOD, 1, "the host's policy ceiling allows 1");
  cr_assert_null(refusal(p, "mul", GOOD, 2), "the ceiling's 2 admits a second");
  /* one more fills max_custom_tools 2; a third is over it */
  struct tool *t = NULL;
  cleanup_json json_t *e = parse(GOOD);
  cr_assert_eq(policy_parse_added_tool(p, "mul", e, -1, &t, NULL), 0);
  const struct tool *echo = policy_find(p, "echo");
  policy_insert_tool(p, t);
  cr_assert_eq(p->ntools, 3);
  cr_assert_eq(policy_find(p, "mul"), t);
  cr_assert_eq(t->index, 2, "appended: the others keep their index");
  cr_assert_eq(policy_find(p, "echo"), echo);
  cr_assert_eq(echo->index, 0);
  cr_assert_eq(p->budgets.max_tool_calls, 6, "budgets untouched");
  expect_refused(p, "div", GOOD, -1, "the run has 2 agent-written tools, its max_custom_tools is 2");
  policy_free(p);
}

/* --- on a gate ---------------------------------------------------------------- */

static struct gate *open_gate(const struct gate_resume *r) {
  write_text_in(dir, "policy.json", POLICY, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "at1", .policy_path = pp, .audit_dir = audit,
                            .resume = r};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

static char *code_of(struct gate *g, const char *id, const char *req) {
  cleanup_json json_t *r = parse(req);
  cleanup_free char *resp = gate_handle(g, id, r, NULL, NULL);
  cleanup_json json_t *v = parse(resp);
  const char *code = json_string_value(json_get_path(v, "error.code"));
  return xstrdup(code ? code : "ok");
}

static void expect_code(struct gate *g, const char *id, const char *req, const char *want) {
  cleanup_free char *code = code_of(g, id, req);
  cr_assert_str_eq(code, want, "%s: %s", id, req);
}

/* The control verb's reply (owned) for body, from a peer of uid. */
static json_t *control(struct gate *g, const char *body, uid_t uid) {
  cleanup_json json_t *req = parse(body);
  return gate_answer_control(g, req, uid, true);
}

static long long used_calls(struct gate *g) {
  cleanup_json json_t *c = gate_calls_json(g);
  long long n = -1;
  json_integer_value(json_get_path(c, "budget.calls.used"), &n);
  return n;
}

#define ADD_MUL "{\"verb\": \"add_tool\", \"name\": \"mul\", \"entry\": " GOOD "}"

Test(add_tool, a_live_gate_takes_one_tool_and_keeps_its_budgets) {
  struct gate *g = open_gate(NULL);
  int afd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(afd, 0);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_write_tools_json(g, afd, "tools.json", &err), 0);
  close(afd); /* the gate keeps its own */
  expect_code(g, "c1", "{\"tool\": \"echo\", \"args\": {}}", "ok");
  expect_code(g, "c2", "{\"tool\": \"echo\", \"args\": {}}", "ok");
  expect_code(g, "c3", "{\"tool\": \"mul\", \"args\": {}}", "unknown_tool");
  cr_assert_eq(used_calls(g), 3);

  /* An approver (any uid but root and the gate's own) may not add. */
  uid_t other = geteuid() == 4242 ? 4243 : 4242;
  cleanup_json json_t *denied = control(g, ADD_MUL, other);
  cr_assert(json_is(json_object_get(denied, "ok"), JSON_BOOL) &&
            !json_object_get(denied, "ok")->u.boolean);
  cr_assert(strstr(json_string_value(json_object_get(denied, "error")), "permission denied"));

  cleanup_json json_t *ok = control(g, ADD_MUL, 0);
  cr_assert(json_object_get(ok, "ok")->u.boolean, "%s",
            json_string_value(json_object_get(ok, "error")));
  cleanup_json json_t *again = control(g, ADD_MUL, 0);
  cr_assert_not(json_object_get(again, "ok")->u.boolean);
  cr_assert(strstr(json_string_value(json_object_get(again, "error")), "a tool of that name already"));
  cleanup_json json_t *plain = control(
      g, "{\"verb\": \"add_tool\", \"name\": \"plain\", \"entry\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}}",
      0);
  cr_assert_not(json_object_get(plain, "ok")->u.boolean);
  cr_assert(strstr(json_string_value(json_object_get(plain, "error")), "has no source_sha256"));

  /* Budgets unchanged: the calls so far still count, echo's max_calls
   * (2, both used) still holds, and the new tool is callable. */
  cr_assert_eq(used_calls(g), 3);
  expect_code(g, "c4", "{\"tool\": \"mul\", \"args\": {\"a\": 2}}", "ok");
  expect_code(g, "c5", "{\"tool\": \"echo\", \"args\": {}}", "budget_exhausted");
  cr_assert_eq(used_calls(g), 5);
  /* tools.json lists it for the container's next import */
  cleanup_free char *tj = NULL;
  cleanup_free char *tjp = xasprintf("%s/tools.json", dir);
  cr_assert_eq(read_file(tjp, 1 << 20, &tj, NULL, NULL), 0);
  cr_assert(strstr(tj, "\"name\":\"mul\"") || strstr(tj, "\"name\": \"mul\""), "%s", tj);
  cleanup_free char *audit = xstrdup(gate_audit_path(g));
  cr_assert_eq(gate_close(g), 0);

  /* the log verifies and names the addition */
  struct audit_verify_result res = {0};
  cr_assert_eq(audit_verify(audit, NULL, 0, &res, &err), 0, "%s", err ? err->msg : "");
  cr_assert(res.ok, "%s", res.message);
  audit_verify_result_clear(&res);
  cleanup_free char *log = NULL;
  cr_assert_eq(read_file(audit, 1 << 20, &log, NULL, NULL), 0);
  cr_assert(strstr(log, "\"event\":\"tool_added\"") && strstr(log, "\"source_sha256\":\"" SHA "\""),
            "%s", log);

  /* A restarted sidecar (a resumed gate) has the tool again, and its
   * budget is the run's: five calls used of six. */
  struct gate_resume r = {.reason = "the bridge sidecar (pid 1) was killed by signal 9",
                          .action = "restart", .dead_pid = 1, .restarts = 1};
  g = open_gate(&r);
  cr_assert_eq(used_calls(g), 5);
  expect_code(g, "d1", "{\"tool\": \"mul\", \"args\": {}}", "ok");
  expect_code(g, "d2", "{\"tool\": \"mul\", \"args\": {}}", "budget_exhausted");
  /* A max_custom_tools of 2 is reached: add and mul. */
  cleanup_json json_t *third = control(
      g, "{\"verb\": \"add_tool\", \"name\": \"div\", \"entry\": " GOOD "}", 0);
  cr_assert_not(json_object_get(third, "ok")->u.boolean);
  cr_assert(strstr(json_string_value(json_object_get(third, "error")), "max_custom_tools is 2"),
            "%s", json_string_value(json_object_get(third, "error")));
  cr_assert_eq(gate_close(g), 0);

  /* A new run of the id (open, not resume) starts without it. */
  g = open_gate(NULL);
  expect_code(g, "e1", "{\"tool\": \"mul\", \"args\": {}}", "unknown_tool");
  gate_close(g);
}

/* Over the socket itself, as `tollgate tool add` asks: the peer's uid
 * comes from the kernel (the test's own, which the gate takes as its
 * owner's), and the gate's reason comes back. */
Test(add_tool, over_the_control_socket) {
  write_text_in(dir, "policy.json", POLICY, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  cleanup_free char *sock = xasprintf("%s/control.sock", dir);
  struct gate_config cfg = {.container_id = "at2", .policy_path = pp, .audit_dir = audit,
                            .control_socket = sock};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  cleanup_json json_t *req = parse(ADD_MUL);
  cleanup_json json_t *reply = NULL;
  cr_assert_eq(control_request(sock, req, 5000, &reply, &err), 0, "%s", err ? err->msg : "");
  cr_assert(json_is_true(json_object_get(reply, "ok")), "%s",
            json_string_value(json_object_get(reply, "error")));
  cleanup_json json_t *again = NULL;
  cr_assert_eq(control_request(sock, req, 5000, &again, &err), 0);
  cr_assert_not(json_is_true(json_object_get(again, "ok")));
  cr_assert(strstr(json_string_value(json_object_get(again, "error")), "already"));
  expect_code(g, "s1", "{\"tool\": \"mul\", \"args\": {}}", "ok");
  cr_assert_eq(gate_close(g), 0);
}

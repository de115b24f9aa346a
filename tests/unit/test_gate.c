/* The gate end to end without a container: echo and exec backends, rules,
 * the hard cap counting every attempt, no policy, and the audit records. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/gate.h"
#include "base/util.h"
#include "tests/unit/file_util.h"

static char dir[] = "/tmp/tg-gate-XXXXXX";

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755); /* exec tools run as the tools' uid and must reach their program */
}
static void teardown(void) { remove_tree(dir, NULL); }

TestSuite(gate, .init = setup, .fini = teardown);

static struct gate *open_gate(const char *policy_text, const char *id) {
  cleanup_free char *pp = NULL;
  if (policy_text) {
    write_text_in(dir, "policy.json", policy_text, 0644);
    pp = xasprintf("%s/policy.json", dir);
  }
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = id, .policy_path = pp, .audit_dir = audit,
                            .approval_timeout_ms = 200};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

static char *call(struct gate *g, const char *id, const char *req) {
  cleanup_json json_t *r = req ? json_parse(req, strlen(req), NULL, NULL) : NULL;
  return gate_handle(g, id, r, req ? NULL : "not JSON", NULL);
}

static const char *POLICY =
    "{\"version\": 1, \"tools\": {"
    " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
    "   \"args\": {\"type\": \"object\", \"properties\": {\"msg\": {\"type\": \"string\"}}},"
    "   \"rules\": [{\"if\": {\"arg\": \"msg\", \"op\": \"==\", \"value\": \"secret\"}, \"effect\": \"deny\", \"reason\": \"no secrets\"},"
    "             {\"effect\": \"allow\"}]},"
    " \"upper\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"upper.sh\"]}, \"timeout\": 5,"
    "   \"rules\": [{\"effect\": \"allow\"}]},"
    " \"fail\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"fail.sh\"]}, \"rules\": [{\"effect\": \"allow\"}]},"
    " \"slow\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"slow.sh\"]}, \"timeout\": 0.3, \"rules\": [{\"effect\": \"allow\"}]},"
    " \"whoami\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"whoami.sh\"]}, \"rules\": [{\"effect\": \"allow\"}]},"
    " \"never\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"deny\", \"reason\": \"off limits\"}]}"
    "}, \"budgets\": {\"max_tool_calls\": 12}}";

static void write_tools(void) {
  write_text_in(dir, "upper.sh", "#!/bin/sh\ntr a-z A-Z\n", 0755);
  write_text_in(dir, "fail.sh", "#!/bin/sh\necho 'something broke' >&2\nexit 3\n", 0755);
  write_text_in(dir, "slow.sh", "#!/bin/sh\nsleep 5\necho '{}'\n", 0755);
  write_text_in(dir, "whoami.sh",
             "#!/bin/sh\nprintf '{\"uid\":%s,\"caps\":\"%s\",\"path\":\"%s\",\"secret\":\"%s\"}' "
             "\"$(id -u)\" \"$(grep CapEff /proc/self/status | cut -f2)\" \"$PATH\" \"${SECRET:-}\"\n",
             0755);
}

Test(gate, echo_exec_deny_and_errors) {
  write_tools();
  setenv("SECRET", "leak", 1);
  struct gate *g = open_gate(POLICY, "c1");
  cleanup_free char *r1 = call(g, "a1", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"msg\":\"hi\"}}");
  cr_assert_str_eq(r1, "{\"v\":1,\"ok\":true,\"result\":{\"msg\":\"hi\"}}");
  cleanup_free char *r2 = call(g, "a2", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"msg\":\"secret\"}}");
  cr_assert(strstr(r2, "\"code\":\"denied\"") && strstr(r2, "denied: no secrets"), "%s", r2);
  cleanup_free char *r3 = call(g, "a3", "{\"v\":1,\"tool\":\"upper\",\"args\":{\"s\":\"abc\"}}");
  cr_assert_str_eq(r3, "{\"v\":1,\"ok\":true,\"result\":{\"S\":\"ABC\"}}");
  cleanup_free char *r4 = call(g, "a4", "{\"v\":1,\"tool\":\"fail\",\"args\":{}}");
  cr_assert(strstr(r4, "\"tool_failed\"") && strstr(r4, "something broke") &&
            strstr(r4, "status 3"), "%s", r4);
  cleanup_free char *r5 = call(g, "a5", "{\"v\":1,\"tool\":\"slow\",\"args\":{}}");
  cr_assert(strstr(r5, "\"tool_timeout\""), "%s", r5);
  cleanup_free char *r6 = call(g, "a6", "{\"v\":1,\"tool\":\"nope\",\"args\":{}}");
  cr_assert(strstr(r6, "\"unknown_tool\""), "%s", r6);
  cleanup_free char *r7 = call(g, "a7", NULL);
  cr_assert(strstr(r7, "\"bad_request\""), "%s", r7);
  cleanup_free char *r8 = call(g, "a8", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"msg\":5}}");
  cr_assert(strstr(r8, "\"bad_request\"") && strstr(r8, "args.msg"), "%s", r8);
  cleanup_free char *r9 = call(g, "a9", "{\"v\":1,\"tool\":\"whoami\",\"args\":{}}");
  if (geteuid() == 0)
    cr_assert(strstr(r9, "\"uid\":65533") && strstr(r9, "\"caps\":\"0000000000000000\""), "%s", r9);
  cr_assert(strstr(r9, "\"secret\":\"\"") && strstr(r9, "/usr/local/bin:/usr/bin:/bin"), "%s", r9);
  cleanup_free char *r10 = call(g, "a10", "{\"v\":1,\"tool\":\"never\",\"args\":{}}");
  cr_assert(strstr(r10, "denied: off limits"), "%s", r10);
  /* 10 attempts so far of a cap of 12: two more pass, then budget_exhausted */
  cleanup_free char *r11 = call(g, "a11", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}");
  cleanup_free char *r12 = call(g, "a12", "{\"v\":1,\"tool\":\"nope\",\"args\":{}}");
  cleanup_free char *r13 = call(g, "a13", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"msg\":\"over\"}}");
  cr_assert(strstr(r11, "\"ok\":true"), "%s", r11);
  cr_assert(strstr(r13, "\"budget_exhausted\"") && strstr(r13, "max_tool_calls"), "%s", r13);
  cleanup_free char *logpath = xstrdup(gate_audit_path(g));
  gate_close(g);
  struct stat st;
  cr_assert_eq(stat(logpath, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  cleanup_free char *log = NULL;
  size_t len = 0;
  cr_assert_eq(read_file(logpath, 1 << 20, &log, &len, NULL), 0);
  int lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += log[i] == '\n';
  cr_assert_eq(lines, 15, "open + 13 calls + closed, got %d:\n%s", lines, log);
  cr_assert(strstr(log, "\"event\":\"closed\""));
  cr_assert(strstr(log, "\"call\":\"a5\"") && strstr(log, "\"outcome\":\"tool_timeout\""));
  /* The cap-hit record names the tool and the arguments asked for. */
  const char *capped = strstr(log, "\"call\":\"a13\"");
  cr_assert_not_null(capped, "%s", log);
  const char *eol = strchr(capped, '\n');
  cleanup_free char *rec = xstrndup(capped, eol ? (size_t)(eol - capped) : strlen(capped));
  cr_assert(strstr(rec, "\"tool\":\"echo\"") && strstr(rec, "\"args\":{\"msg\":\"over\"}") &&
            strstr(rec, "\"outcome\":\"budget_exhausted\""), "%s", rec);
}

/* An agent-written tool's source digest is on the record of each call
 * that runs it (an irreversible one's intent too), so the log says which
 * code ran; a person's tool's records have none. */
static const char *line_of(const char *log, const char *call_id, const char *event) {
  cleanup_free char *key = xasprintf("\"event\":\"%s\",\"call\":\"%s\"", event, call_id);
  return strstr(log, key);
}

Test(gate, an_agent_written_tools_records_carry_its_source_digest) {
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  struct gate *g = open_gate(
      "{\"version\": 1, \"tools\": {"
      " \"add\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"" SHA "\","
      "   \"rules\": [{\"effect\": \"allow\"}]},"
      " \"pay\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"" SHA "\","
      "   \"irreversible\": true, \"rules\": [{\"effect\": \"allow\"}]},"
      " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}}}",
      "c-custom");
  cleanup_free char *r1 = call(g, "b1", "{\"v\":1,\"tool\":\"add\",\"args\":{\"a\":1}}");
  cleanup_free char *r2 = call(g, "b2", "{\"v\":1,\"tool\":\"pay\",\"args\":{}}");
  cleanup_free char *r3 = call(g, "b3", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}");
  cr_assert(strstr(r1, "\"ok\":true") && strstr(r2, "\"ok\":true") && strstr(r3, "\"ok\":true"));
  cleanup_free char *logpath = xstrdup(gate_audit_path(g));
  gate_close(g);
  cleanup_free char *log = NULL;
  size_t len = 0;
  cr_assert_eq(read_file(logpath, 1 << 20, &log, &len, NULL), 0);
  static const struct {
    const char *call, *event;
    bool digest;
  } want[] = {{"b1", "call", true}, {"b2", "intent", true}, {"b2", "outcome", true}, {"b3", "call", false}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const char *at = line_of(log, want[i].call, want[i].event);
    cr_assert_not_null(at, "no %s record of %s:\n%s", want[i].event, want[i].call, log);
    const char *eol = strchr(at, '\n');
    cleanup_free char *rec = xstrndup(at, eol ? (size_t)(eol - at) : strlen(at));
    bool has = strstr(rec, "\"source_sha256\":\"" SHA "\"") != NULL;
    cr_assert_eq(has, want[i].digest, "%s", rec);
  }
#undef SHA
}

Test(gate, no_policy_denies_everything_and_still_caps) {
  struct gate *g = open_gate(NULL, "c2");
  for (int i = 0; i < 50; i++) {
    cleanup_free char *id = xasprintf("n%d", i);
    cleanup_free char *r = call(g, id, "{\"v\":1,\"tool\":\"echo\",\"args\":{}}");
    cr_assert(strstr(r, "denied: no policy"), "%s", r);
  }
  cleanup_free char *r = call(g, "n50", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}");
  cr_assert(strstr(r, "\"budget_exhausted\""), "%s", r);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert_eq(gate_write_tools_json(g, dfd, "tools.json", NULL), 0);
  cleanup_free char *tj = NULL;
  cr_assert_eq(read_file_untrusted(dfd, "tools.json", 4096, &tj, NULL, NULL), 0);
  cleanup_json json_t *v = json_parse(tj, strlen(tj), NULL, NULL);
  cr_assert_eq(json_array_len(json_object_get(v, "tools")), 0, "%s", tj);
  cr_assert(strstr(tj, "\"approval_timeout\": 0.2"), "%s", tj);
  close(dfd);
  gate_close(g);
}

Test(gate, tools_json_lists_tools_with_schema) {
  write_tools();
  struct gate *g = open_gate(POLICY, "c3");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert_eq(gate_write_tools_json(g, dfd, "tools.json", NULL), 0);
  cleanup_free char *tj = NULL;
  cr_assert_eq(read_file_untrusted(dfd, "tools.json", 65536, &tj, NULL, NULL), 0);
  close(dfd);
  cleanup_json json_t *v = json_parse(tj, strlen(tj), NULL, NULL);
  cr_assert_not_null(v);
  const json_t *tools = json_object_get(v, "tools");
  cr_assert_eq(json_array_len(tools), 6);
  const json_t *echo = json_array_get(tools, 0);
  cr_assert_str_eq(json_string_value(json_object_get(echo, "name")), "echo");
  cr_assert_not_null(json_get_path(echo, "args.properties.msg"));
  gate_close(g);
}

/* A tool that exits without reading its (larger than a pipe) input must not
 * take the gate down with SIGPIPE. */
Test(gate, a_tool_that_ignores_its_stdin_does_not_kill_the_gate) {
  write_text_in(dir, "quick.sh", "#!/bin/sh\necho '{\"quick\":true}'\n", 0755);
  struct gate *g = open_gate(
      "{\"version\": 1, \"tools\": {\"quick\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"quick.sh\"]},"
      " \"rules\": [{\"effect\": \"allow\"}]}}}", "c4");
  size_t n = 300000;
  char *req = xmalloc(n + 64);
  int len = sprintf(req, "{\"v\":1,\"tool\":\"quick\",\"args\":{\"pad\":\"");
  memset(req + len, 'x', n);
  strcpy(req + len + n, "\"}}");
  for (int i = 0; i < 3; i++) {
    cleanup_free char *r = call(g, "q", req);
    cr_assert(strstr(r, "\"quick\":true"), "%.200s", r);
  }
  free(req);
  gate_close(g);
}

/* The answers are written directly (json_buf), not dumped from a tree: they
 * must be exactly what json_dump writes for them, hostile strings
 * included, and valid JSON even when a tool's stderr is not UTF-8. */
Test(gate, answers_are_exact_json_even_for_hostile_text) {
  write_text_in(dir, "bad.sh", "#!/bin/sh\nprintf '\\377\\376 \"quoted\" back\\\\slash \\001\\n' >&2\nexit 3\n", 0755);
  const char *policy =
      "{\"version\": 1, \"tools\": {"
      " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]},"
      " \"bad\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"bad.sh\"]}, \"rules\": [{\"effect\": \"allow\"}]},"
      " \"no\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
      "        \"rules\": [{\"effect\": \"deny\", \"reason\": \"not \\\"this\\\"\\n\\u00e9\"}]}}}";
  struct gate *g = open_gate(policy, "hostile");
  const char *reqs[] = {
      "{\"v\":1,\"tool\":\"echo\",\"args\":{\"s\":\"\\u0000\\u001f\\\"\\\\/\\ud83d\\ude00\",\"n\":[1.50,-0,{}]}}",
      "{\"v\":1,\"tool\":\"no\",\"args\":{}}",
      "{\"v\":1,\"tool\":\"nope\\\"\\n\",\"args\":{}}",
  };
  for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++) {
    size_t len = 0;
    cleanup_json json_t *req = json_parse(reqs[i], strlen(reqs[i]), NULL, NULL);
    cr_assert_not_null(req);
    cleanup_free char *id = xasprintf("h%zu", i);
    cleanup_free char *resp = gate_handle(g, id, req, NULL, &len);
    cr_assert_eq(len, strlen(resp));
    cleanup_json json_t *back = json_parse(resp, len, NULL, NULL);
    cr_assert_not_null(back, "%s", resp);
    cleanup_free char *dumped = json_dump(back, false, NULL);
    cr_assert_str_eq(resp, dumped);
  }
  size_t len = 0;
  cleanup_json json_t *req = json_parse("{\"v\":1,\"tool\":\"bad\",\"args\":{}}", 30, NULL, NULL);
  cleanup_free char *resp = gate_handle(g, "h9", req, NULL, &len);
  cleanup_json json_t *back = json_parse(resp, len, NULL, NULL);
  cr_assert_not_null(back, "not JSON: %s", resp);
  const char *msg = json_string_value(json_get_path(back, "error.message"));
  cr_assert_not_null(msg, "%s", resp);
  cr_assert_not_null(strstr(msg, "\xef\xbf\xbd\xef\xbf\xbd \"quoted\" back\\slash \x01"), "%s", resp);
  gate_close(g);
}

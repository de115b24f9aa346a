/* Policy parsing: every bad fixture fails with its expected positioned
 * messages; good policies load with their defaults; lookup is by hash. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/policy.h"
#include "governance/policy_lint.h"
#include "base/util.h"

#define BAD "tests/fixtures/policies/bad"

Test(policy, every_bad_fixture_fails_with_its_positioned_messages) {
  DIR *d = opendir(BAD);
  cr_assert_not_null(d, "run from the repository root");
  struct dirent *de;
  int checked = 0;
  while ((de = readdir(d)) != NULL) {
    size_t n = strlen(de->d_name);
    if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
      continue;
    cleanup_free char *path = xasprintf("%s/%s", BAD, de->d_name);
    cleanup_free char *expect_path = xasprintf("%s/%.*s.expect", BAD, (int)(n - 5), de->d_name);
    cleanup_free char *expect = NULL;
    cr_assert_eq(read_file(expect_path, 65536, &expect, NULL, NULL), 0, "no %s", expect_path);
    struct policy *p = NULL;
    cleanup_error tg_error *err = NULL;
    cr_assert_eq(policy_load(path, &p, &err), -1, "%s loaded but should fail", path);
    cr_assert_null(p);
    /* Every expected line appears, positioned after the file name. */
    char *save = NULL;
    for (char *line = strtok_r(expect, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      cr_assert(strstr(err->msg, line), "%s: expected\n  %s\nin\n%s", path, line, err->msg);
    }
    cr_assert(strncmp(err->msg, path, strlen(path)) == 0 && err->msg[strlen(path)] == ':',
              "%s: message does not start with FILE:LINE:COL: %s", path, err->msg);
    checked++;
  }
  closedir(d);
  cr_assert_geq(checked, 20, "only %d bad fixtures", checked);
}

static struct policy *parse(const char *text) {
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  int r = policy_parse("/tmp/test-policy.json", text, strlen(text), &p, &err);
  cr_assert_eq(r, 0, "%s", err ? err->msg : "");
  return p;
}

Test(policy, defaults_and_fields) {
  struct policy *p = parse(
      "{\"version\": 1, \"tools\": {"
      " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]},"
      " \"refund\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"/bin/cat\", \"-\"]}, \"irreversible\": true,"
      "   \"cost\": 1.5, \"timeout\": 2.5, \"max_calls\": 3, \"description\": \"Refund an order\","
      "   \"rules\": [{\"if\": {\"arg\": \"amount\", \"op\": \"<=\", \"value\": 50}, \"effect\": \"allow\", \"reason\": \"small\"},"
      "             {\"effect\": \"approve\", \"reason\": \"big\"}]},"
      " \"agent\": {\"backend\": {\"type\": \"socket\", \"path\": \"/run/agent.sock\"}, \"rules\": [{\"effect\": \"deny\"}]}},"
      " \"approval\": {\"timeout\": 5, \"hook\": [\"/bin/true\"]}}");
  cr_assert_eq(p->ntools, 3);
  cr_assert_eq(p->budgets.max_tool_calls, 50);
  cr_assert(p->budgets.max_cost < 0);
  cr_assert_eq(p->budgets.max_irreversible, -1);
  cr_assert_eq(p->budgets.repeat_limit, -1);
  cr_assert_eq(p->max_pending, 10);
  cr_assert_eq(p->approval_timeout_ms, 5000);
  cr_assert_str_eq(p->approval_hook[0], "/bin/true");
  const struct tool *t = policy_find(p, "refund");
  cr_assert_not_null(t);
  cr_assert(t->irreversible);
  cr_assert_eq(t->timeout_ms, 2500);
  cr_assert_eq(t->max_calls, 3);
  cr_assert_float_eq(t->cost, 1.5, 1e-9);
  cr_assert_str_eq(t->backend.argv[0], "/bin/cat");
  cr_assert_str_eq(t->backend.argv[1], "-");
  cr_assert_null(t->backend.argv[2]);
  cr_assert_eq(t->nrules, 2);
  cr_assert_eq(t->rules[1].effect, EFFECT_APPROVE);
  cr_assert_str_eq(policy_find(p, "echo")->description, "");
  cr_assert_eq(policy_find(p, "echo")->timeout_ms, 30000);
  cr_assert_str_eq(policy_find(p, "agent")->backend.path, "/run/agent.sock");
  cr_assert_null(policy_find(p, "nope"));
  policy_free(p);
}

/* An agent-written tool's source_sha256 (64 lowercase hex digits) is kept
 * for the audit records; budgets.max_custom_tools caps how many a policy
 * holds, and both refuse a bad value with its position. */
Test(policy, source_sha256_and_max_custom_tools) {
  static const char *const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  cleanup_free char *good = xasprintf(
      "{\"version\": 1, \"budgets\": {\"max_custom_tools\": %s}, \"tools\": {"
      " \"add\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"%s\","
      "  \"rules\": [{\"effect\": \"allow\"}]},"
      " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}}}",
      "1", sha);
  struct policy *p = parse(good);
  cr_assert_str_eq(policy_find(p, "add")->source_sha256, sha);
  cr_assert_null(policy_find(p, "echo")->source_sha256);
  cr_assert_eq(p->budgets.max_custom_tools, 1);
  cr_assert_eq(policy_custom_tools(p), 1);
  policy_free(p);

  struct policy *none = parse("{\"version\": 1, \"tools\": {}}");
  cr_assert_eq(none->budgets.max_custom_tools, -1, "absent: no limit");
  policy_free(none);

  static const struct {
    const char *max, *sha, *want;
  } bad[] = {
      {"0", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
       "budgets.max_custom_tools: 1 tools are agent-written (have a source_sha256), more than 0"},
      {"1", "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
       "tools.add.source_sha256: must be the SHA-256 of the tool's source"},
      {"1", "abc", "tools.add.source_sha256: must be the SHA-256"},
      {"-1", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "budgets.max_custom_tools:"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cleanup_free char *text = xasprintf(
        "{\"version\": 1, \"budgets\": {\"max_custom_tools\": %s}, \"tools\": {"
        " \"add\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"source_sha256\": \"%s\","
        "  \"rules\": [{\"effect\": \"allow\"}]}}}",
        bad[i].max, bad[i].sha);
    struct policy *q = NULL;
    cleanup_error tg_error *err = NULL;
    cr_assert_eq(policy_parse("/tmp/test-policy.json", text, strlen(text), &q, &err), -1, "%s", text);
    cr_assert(strstr(err->msg, bad[i].want) != NULL, "want \"%s\" in: %s", bad[i].want, err->msg);
    cr_assert(strstr(err->msg, "/tmp/test-policy.json:1:") != NULL, "positioned: %s", err->msg);
  }
}

Test(policy, relative_exec_path_resolves_against_the_policy_directory) {
  char dir[] = "/tmp/tg-pol-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cleanup_free char *tools = xasprintf("%s/tools", dir);
  cr_assert_eq(mkdir_p(tools, 0755, NULL), 0);
  cleanup_free char *prog = xasprintf("%s/tools/t.sh", dir);
  cleanup_free char *pol = xasprintf("%s/p.json", dir);
  FILE *f = fopen(prog, "w");
  fputs("#!/bin/sh\necho '{}'\n", f);
  fclose(f);
  chmod(prog, 0755);
  f = fopen(pol, "w");
  fputs("{\"version\": 1, \"tools\": {\"t\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"tools/t.sh\"]}, \"rules\": [{\"effect\": \"allow\"}]}}}", f);
  fclose(f);
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  if (geteuid() == 0) {
    /* mkdtemp made the directory 0700: the tools' uid, which runs the tool,
     * could not reach it, and the check says so with the fix. */
    cr_assert_eq(policy_load(pol, &p, &err), -1);
    cr_assert(strstr(err->msg, "1:80: tools.t.backend.argv[0]: ") &&
              strstr(err->msg, "not searchable by the tools' uid") && strstr(err->msg, "chmod o+x"),
              "%s", err->msg);
    tg_error_free(&err);
  }
  chmod(dir, 0755);
  cr_assert_eq(policy_load(pol, &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(policy_find(p, "t")->backend.argv[0], prog);
  policy_free(p);
  remove_tree(dir, NULL);
}

Test(policy, a_thousand_tools_are_all_found_by_hash) {
  size_t cap = 1 << 20, len = 0;
  char *buf = xmalloc(cap);
  len += snprintf(buf + len, cap - len, "{\"version\": 1, \"tools\": {");
  for (int i = 0; i < 1000; i++)
    len += snprintf(buf + len, cap - len,
                    "%s\"tool_%d\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}",
                    i ? "," : "", i);
  len += snprintf(buf + len, cap - len, "}}");
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_parse("/tmp/big.json", buf, len, &p, &err), 0, "%s", err ? err->msg : "");
  free(buf);
  cr_assert_eq(p->ntools, 1000);
  for (int i = 0; i < 1000; i++) {
    char name[32];
    snprintf(name, sizeof name, "tool_%d", i);
    const struct tool *t = policy_find(p, name);
    cr_assert_not_null(t, "%s", name);
    cr_assert_str_eq(t->name, name);
  }
  cr_assert_null(policy_find(p, "tool_1000"));
  policy_free(p);
}

Test(policy, tool_names) {
  cr_assert(tool_name_is_valid("get_order"));
  cr_assert(tool_name_is_valid("files.read-v2"));
  cr_assert_not(tool_name_is_valid(""));
  cr_assert_not(tool_name_is_valid("1abc"));
  cr_assert_not(tool_name_is_valid("../x"));
  cr_assert_not(tool_name_is_valid("a b"));
}

/* policy check warnings (issue 16): each risky rule shape is named with its
 * position and fix; the same rules under a schema that pins types and
 * closes objects draw none. */
static char *lint(const char *text, size_t *n) {
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_parse("/tmp/lint.json", text, strlen(text), &p, &err), 0, "%s",
               err ? err->msg : "");
  struct policy_errors w = {.file = "/tmp/lint.json"};
  *n = policy_lint(p, &w);
  cr_assert_eq(*n, w.len);
  char *all = policy_errors_join(&w);
  policy_errors_free(&w);
  policy_free(p);
  return all ? all : xstrdup("");
}

Test(policy, check_warns_about_rules_a_call_can_slip_past) {
  static const char *const open_rules =
      "{\"version\": 1, \"tools\": {\"pay\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},\n"
      " \"rules\": [{\"if\": {\"arg\": \"amount\", \"op\": \">\", \"value\": 50}, \"effect\": \"deny\"},\n"
      "  {\"if\": {\"arg\": \"account.id\", \"op\": \"==\", \"value\": \"ACC-666\"}, \"effect\": \"deny\"},\n"
      "  {\"if\": {\"arg\": \"path\", \"op\": \"prefix\", \"value\": \"/data/\"}, \"effect\": \"allow\"}]}}}";
  size_t n;
  cleanup_free char *w = lint(open_rules, &n);
  cr_assert_eq(n, 4, "%s", w);
  cr_assert(strstr(w, "lint.json:2:19: tools.pay.rules[0].if: warning: \"amount\" is compared with \">\"") &&
            strstr(w, "\"type\": \"number\""), "%s", w);
  cr_assert(strstr(w, "tools.pay.rules[1].if: warning: \"account.id\" can name a literal key"), "%s", w);
  cr_assert(strstr(w, "tools.pay.rules[1].if: warning: a deny rule matching \"account.id\""), "%s", w);
  cr_assert(strstr(w, "tools.pay.rules[2].if: warning: \"prefix\" /data/ also matches \"/data/../etc/passwd\""), "%s", w);
  static const char *const typed =
      "{\"version\": 1, \"tools\": {\"pay\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},\n"
      " \"args\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {\n"
      "   \"amount\": {\"type\": \"integer\"},\n"
      "   \"account\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {\"id\": {\"type\": \"string\"}}}}},\n"
      " \"rules\": [{\"if\": {\"arg\": \"amount\", \"op\": \">\", \"value\": 50}, \"effect\": \"deny\"},\n"
      "  {\"if\": {\"any\": [{\"arg\": \"account.id\", \"op\": \"in\", \"value\": [\"ACC-666\"]}]}, \"effect\": \"deny\"},\n"
      "  {\"effect\": \"allow\"}]}}}";
  cleanup_free char *w2 = lint(typed, &n);
  cr_assert_eq(n, 0, "%s", w2);
  /* a schema declaring both "a.b" and a -> b is the ambiguity, declared */
  static const char *const both =
      "{\"version\": 1, \"tools\": {\"t\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},\n"
      " \"args\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {\n"
      "   \"a.b\": {\"type\": \"string\"},\n"
      "   \"a\": {\"type\": \"object\", \"properties\": {\"b\": {\"type\": \"string\"}}}}},\n"
      " \"rules\": [{\"if\": {\"arg\": \"a.b\", \"op\": \"==\", \"value\": \"x\"}, \"effect\": \"allow\"}]}}}";
  cleanup_free char *w3 = lint(both, &n);
  cr_assert_eq(n, 1, "%s", w3);
  cr_assert(strstr(w3, "can name a literal key \"a.b\""), "%s", w3);
}

/* Rule matching tables: every operator, all/any, missing arguments, and
 * first match wins with default deny. */
#include <criterion/criterion.h>
#include <string.h>

#include "governance/args_canonical.h"
#include "governance/rules.h"
#include "base/util.h"

static struct rule *parse(const char *text, size_t *n) {
  struct json_parse_options o = {.track_positions = true};
  cleanup_json json_t *src = json_parse(text, strlen(text), &o, NULL);
  cr_assert_not_null(src, "%s", text);
  struct policy_errors errs = {.file = "t"};
  struct rule *r = NULL;
  int problems = rules_parse(src, "rules", &r, n, &errs);
  cr_assert_eq(problems, 0, "%s: %s", text, errs.len ? errs.msgs[0] : "");
  policy_errors_free(&errs);
  return r;
}

static bool holds(const char *cond, const char *args) {
  cleanup_free char *rules = xasprintf("[{\"if\": %s, \"effect\": \"allow\"}]", cond);
  size_t n;
  struct rule *r = parse(rules, &n);
  cleanup_json json_t *raw = json_parse(args, strlen(args), NULL, NULL);
  cr_assert_not_null(raw);
  char *why = NULL;
  cleanup_json json_t *a = args_canonicalize(raw, &why);
  cr_assert_not_null(a, "%s", why);
  const char *reason;
  cleanup_free char *mistyped = NULL;
  bool ok = rules_decide(r, n, a, &reason, &mistyped) == EFFECT_ALLOW;
  rules_free(r, n);
  return ok;
}

Test(rules, operator_table) {
  static const struct {
    const char *cond, *args;
    bool want;
  } table[] = {
      {"{\"arg\": \"a\", \"op\": \"==\", \"value\": 1}", "{\"a\": 1}", true},
      {"{\"arg\": \"a\", \"op\": \"==\", \"value\": 1}", "{\"a\": 1.0}", true},
      {"{\"arg\": \"a\", \"op\": \"==\", \"value\": 1}", "{\"a\": \"1\"}", false},
      {"{\"arg\": \"a\", \"op\": \"==\", \"value\": {\"x\": [1]}}", "{\"a\": {\"x\": [1]}}", true},
      {"{\"arg\": \"a\", \"op\": \"!=\", \"value\": \"x\"}", "{\"a\": \"y\"}", true},
      {"{\"arg\": \"a\", \"op\": \"!=\", \"value\": \"x\"}", "{\"a\": \"x\"}", false},
      {"{\"arg\": \"a\", \"op\": \"!=\", \"value\": \"x\"}", "{}", false},
      {"{\"arg\": \"a\", \"op\": \"<\", \"value\": 50}", "{\"a\": 49.9}", true},
      {"{\"arg\": \"a\", \"op\": \"<\", \"value\": 50}", "{\"a\": 50}", false},
      {"{\"arg\": \"a\", \"op\": \"<=\", \"value\": 50}", "{\"a\": 50}", true},
      {"{\"arg\": \"a\", \"op\": \"<=\", \"value\": 50}", "{\"a\": 50.01}", false},
      {"{\"arg\": \"a\", \"op\": \"<=\", \"value\": 50}", "{\"a\": \"10\"}", false},
      {"{\"arg\": \"a\", \"op\": \">\", \"value\": 0}", "{\"a\": 1}", true},
      {"{\"arg\": \"a\", \"op\": \">\", \"value\": 0}", "{\"a\": -1}", false},
      {"{\"arg\": \"a\", \"op\": \">=\", \"value\": 0}", "{\"a\": 0}", true},
      {"{\"arg\": \"a\", \"op\": \"in\", \"value\": [\"eu\", \"us\"]}", "{\"a\": \"us\"}", true},
      {"{\"arg\": \"a\", \"op\": \"in\", \"value\": [\"eu\", \"us\"]}", "{\"a\": \"asia\"}", false},
      {"{\"arg\": \"a\", \"op\": \"prefix\", \"value\": \"/data/\"}", "{\"a\": \"/data/x\"}", true},
      {"{\"arg\": \"a\", \"op\": \"prefix\", \"value\": \"/data/\"}", "{\"a\": \"/etc/x\"}", false},
      {"{\"arg\": \"a\", \"op\": \"prefix\", \"value\": \"/data/\"}", "{\"a\": 5}", false},
      {"{\"arg\": \"a\", \"op\": \"exists\"}", "{\"a\": null}", true},
      {"{\"arg\": \"a\", \"op\": \"exists\"}", "{}", false},
      {"{\"arg\": \"a\", \"op\": \"exists\", \"value\": false}", "{}", true},
      {"{\"arg\": \"c.id\", \"op\": \"==\", \"value\": 7}", "{\"c\": {\"id\": 7}}", true},
      {"{\"all\": [{\"arg\": \"a\", \"op\": \">\", \"value\": 1}, {\"arg\": \"a\", \"op\": \"<\", \"value\": 3}]}",
       "{\"a\": 2}", true},
      {"{\"all\": [{\"arg\": \"a\", \"op\": \">\", \"value\": 1}, {\"arg\": \"a\", \"op\": \"<\", \"value\": 3}]}",
       "{\"a\": 3}", false},
      {"{\"any\": [{\"arg\": \"a\", \"op\": \"==\", \"value\": 1}, {\"arg\": \"b\", \"op\": \"exists\"}]}",
       "{\"b\": 0}", true},
      {"{\"any\": [{\"arg\": \"a\", \"op\": \"==\", \"value\": 1}, {\"arg\": \"b\", \"op\": \"exists\"}]}",
       "{\"a\": 2}", false},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    cr_assert_eq(holds(table[i].cond, table[i].args), table[i].want, "row %zu: %s with %s", i,
                 table[i].cond, table[i].args);
}

Test(rules, first_match_wins_and_default_is_deny) {
  size_t n;
  struct rule *r = parse("[{\"if\": {\"arg\": \"amount\", \"op\": \"<=\", \"value\": 50}, \"effect\": \"allow\", \"reason\": \"small refund\"},"
                         " {\"if\": {\"arg\": \"amount\", \"op\": \"<=\", \"value\": 1000}, \"effect\": \"approve\", \"reason\": \"needs a human\"}]",
                         &n);
  const char *reason;
  char *mistyped = NULL;
  cleanup_json json_t *a = json_parse("{\"amount\": 20}", 14, NULL, NULL);
  cr_assert_eq(rules_decide(r, n, a, &reason, &mistyped), EFFECT_ALLOW);
  cr_assert_str_eq(reason, "small refund");
  cleanup_json json_t *b = json_parse("{\"amount\": 200}", 15, NULL, NULL);
  cr_assert_eq(rules_decide(r, n, b, &reason, &mistyped), EFFECT_APPROVE);
  cr_assert_str_eq(reason, "needs a human");
  cleanup_json json_t *c = json_parse("{\"amount\": 5000}", 16, NULL, NULL);
  cr_assert_eq(rules_decide(r, n, c, &reason, &mistyped), EFFECT_DENY);
  cr_assert(strstr(reason, "default is deny"));
  rules_free(r, n);
  struct rule *none = parse("[]", &n);
  cr_assert_eq(rules_decide(none, n, a, &reason, &mistyped), EFFECT_DENY);
  rules_free(none, n);
}

/* Issue 16 at the rule level: exact numbers, one reading of a dotted name,
 * and a mistyped comparison refusing the call instead of not matching. */
static enum effect decide(const char *rules, const char *args, char **mistyped) {
  size_t n;
  struct rule *r = parse(rules, &n);
  cleanup_json json_t *raw = json_parse(args, strlen(args), NULL, NULL);
  cr_assert_not_null(raw);
  char *why = NULL;
  cleanup_json json_t *a = args_canonicalize(raw, &why);
  cr_assert_not_null(a, "%s", why);
  const char *reason;
  enum effect e = rules_decide(r, n, a, &reason, mistyped);
  rules_free(r, n);
  return e;
}

Test(rules, issue16_shapes) {
  char *m = NULL;
  const char *in_list = "[{\"if\": {\"arg\": \"id\", \"op\": \"in\", \"value\": [1234567890123456789]}, \"effect\": \"allow\"}]";
  cr_assert_eq(decide(in_list, "{\"id\": 1234567890123456790}", &m), EFFECT_DENY);
  cr_assert_null(m);
  cr_assert_eq(decide(in_list, "{\"id\": 12345678901234567890e-1}", &m), EFFECT_ALLOW);
  const char *deny_big = "[{\"if\": {\"arg\": \"amount\", \"op\": \">\", \"value\": 50}, \"effect\": \"deny\"}, {\"effect\": \"allow\"}]";
  cr_assert_eq(decide(deny_big, "{\"amount\": \"640\"}", &m), EFFECT_DENY);
  cr_assert_not_null(m);
  cr_assert(strstr(m, "args.amount: rule 0 compares it with \">\"") && strstr(m, "string"), "%s", m);
  free(m);
  cr_assert_eq(decide(deny_big, "{\"amount\": 6.4e2}", &m), EFFECT_DENY);
  cr_assert_null(m);
  cr_assert_eq(decide(deny_big, "{\"amount\": 5e1}", &m), EFFECT_ALLOW);
  /* an earlier rule that decides first: the later mistyped one is never reached */
  const char *first = "[{\"if\": {\"arg\": \"kind\", \"op\": \"==\", \"value\": \"ro\"}, \"effect\": \"allow\"},"
                      " {\"if\": {\"arg\": \"amount\", \"op\": \">\", \"value\": 50}, \"effect\": \"deny\"}]";
  cr_assert_eq(decide(first, "{\"kind\": \"ro\", \"amount\": \"x\"}", &m), EFFECT_ALLOW);
  cr_assert_null(m);
  /* a mistyped child of any/all refuses too */
  const char *any = "[{\"if\": {\"any\": [{\"arg\": \"a\", \"op\": \"==\", \"value\": 1}, {\"arg\": \"p\", \"op\": \"prefix\", \"value\": \"/x\"}]}, \"effect\": \"deny\"}, {\"effect\": \"allow\"}]";
  cr_assert_eq(decide(any, "{\"p\": [\"/x\"]}", &m), EFFECT_DENY);
  cr_assert_not_null(m);
  free(m);
  /* dotted: each reading alone reaches the value */
  const char *dot = "[{\"if\": {\"arg\": \"account.id\", \"op\": \"==\", \"value\": \"ACC-1\"}, \"effect\": \"allow\"}]";
  cr_assert_eq(decide(dot, "{\"account\": {\"id\": \"ACC-1\"}}", &m), EFFECT_ALLOW);
  cr_assert_eq(decide(dot, "{\"account.id\": \"ACC-1\"}", &m), EFFECT_ALLOW);
  cr_assert_eq(decide(dot, "{\"account\": {\"id\": \"ACC-666\"}}", &m), EFFECT_DENY);
  /* a policy operand is canonical too: 6.4e2 in a rule equals 640 in a call */
  const char *eq = "[{\"if\": {\"arg\": \"n\", \"op\": \"==\", \"value\": 6.4e2}, \"effect\": \"allow\"}]";
  cr_assert_eq(decide(eq, "{\"n\": 640}", &m), EFFECT_ALLOW);
  /* a long key name is as reachable as a short one */
  char key[301];
  memset(key, 'k', 300);
  key[300] = '\0';
  cleanup_free char *lr = xasprintf("[{\"if\": {\"arg\": \"a.%s\", \"op\": \"exists\"}, \"effect\": \"deny\"}, {\"effect\": \"allow\"}]", key);
  cleanup_free char *la = xasprintf("{\"a\": {\"%s\": 1}}", key);
  cr_assert_eq(decide(lr, la, &m), EFFECT_DENY);
}

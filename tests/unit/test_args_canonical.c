/* One reading of a call's arguments: each attack shape of issue 16 through
 * the real gate to an exec tool that records the bytes it received (the
 * call is refused, or the rule and the tool see the same value), the
 * canonical number table, and a property test over random arguments and
 * random rules. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/args_canonical.h"
#include "governance/gate.h"
#include "governance/rules.h"
#include "base/util.h"
#include "tests/unit/file_util.h"

static char dir[] = "/tmp/tg-args-XXXXXX";

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755); /* exec tools run as uid 65534 */
}
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(args, .init = setup, .fini = teardown);

/* A policy with one exec tool "rec" (its rules given) that appends the
 * exact bytes of its stdin to DIR/rx/received and answers {}. */
static struct gate *open_gate(const char *rules, const char *budgets) {
  cleanup_free char *rx = xasprintf("%s/rx", dir);
  mkdir(rx, 0777);
  chmod(rx, 0777);
  cleanup_free char *script =
      xasprintf("#!/bin/sh\ncat > %s/rx/received\necho '{}'\n", dir);
  write_text_in(dir, "rec.sh", script, 0755);
  cleanup_free char *pol = xasprintf(
      "{\"version\": 1, \"tools\": {\"rec\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"%s/rec.sh\"]},"
      " \"timeout\": 10, \"rules\": %s}}%s%s}",
      dir, rules, budgets ? ", \"budgets\": " : "", budgets ? budgets : "");
  write_text_in(dir, "policy.json", pol, 0644);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "args1", .policy_path = pp, .audit_dir = audit};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

static int seq;

/* Send the request text (raw bytes: it may hold invalid UTF-8) and return
 * the whole response; *received gets what the tool read (NULL: it did not
 * run). */
static char *call(struct gate *g, const char *req, size_t len, char **received) {
  cleanup_free char *rxp = xasprintf("%s/rx/received", dir);
  unlink(rxp);
  cleanup_json json_t *r = json_parse(req, len, NULL, NULL);
  cr_assert_not_null(r, "the request itself must parse: %s", req);
  cleanup_free char *id = xasprintf("c%d", seq++);
  char *resp = gate_handle(g, id, r, NULL, NULL);
  *received = NULL;
  size_t n = 0;
  if (read_file(rxp, 1 << 20, received, &n, NULL) < 0)
    *received = NULL;
  return resp;
}

#define CALL(g, lit, rx) call((g), "" lit, sizeof(lit) - 1, (rx))

static bool is(const char *resp, const char *code) {
  if (strcmp(code, "ok") == 0)
    return strstr(resp, "\"ok\":true") != NULL;
  cleanup_free char *want = xasprintf("\"code\":\"%s\"", code);
  return strstr(resp, want) != NULL;
}

/* The audit log, whole; every line must be strict JSON and valid UTF-8. */
static char *audit_log(struct gate *g) {
  cleanup_free char *p = xstrdup(gate_audit_path(g));
  char *log = NULL;
  size_t len = 0;
  cr_assert_eq(read_file(p, 1 << 22, &log, &len, NULL), 0);
  cr_assert_eq(json_utf8_check(log, len), len, "the audit log holds invalid UTF-8");
  for (char *line = log, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
    cleanup_json json_t *v = json_parse(line, (size_t)(nl - line), NULL, NULL);
    cr_assert_not_null(v, "an audit line is not JSON: %.*s", (int)(nl - line), line);
  }
  return log;
}

/* ---- shape 1: a literal key "a.b" next to an object at "a" ---- */

Test(args, dotted_name_with_two_readings_is_bad_request) {
  struct gate *g = open_gate(
      "[{\"if\": {\"arg\": \"account.id\", \"op\": \"==\", \"value\": \"ACC-1\"}, \"effect\": \"allow\"}]",
      NULL);
  char *rx = NULL;
  cleanup_free char *r1 =
      CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"account.id\":\"ACC-1\",\"account\":{\"id\":\"ACC-666\"}}}", &rx);
  cr_assert(is(r1, "bad_request") && strstr(r1, "account.id") && strstr(r1, "could mean either"),
            "%s", r1);
  cr_assert_null(rx, "the tool ran: %s", rx);
  /* the same pair one level down */
  cleanup_free char *r2 =
      CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"x\":{\"account.id\":\"ACC-1\",\"account\":{\"id\":\"ACC-666\"}}}}", &rx);
  cr_assert(is(r2, "bad_request") && strstr(r2, "args.x"), "%s", r2);
  cr_assert_null(rx);
  /* each reading alone is unambiguous, and decided on the value the tool gets */
  cleanup_free char *r3 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"account\":{\"id\":\"ACC-666\"}}}", &rx);
  cr_assert(is(r3, "denied"), "%s", r3);
  cr_assert_null(rx);
  cleanup_free char *r4 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"account\":{\"id\":\"ACC-1\"}}}", &rx);
  cr_assert(is(r4, "ok"), "%s", r4);
  cr_assert_str_eq(rx, "{\"account\":{\"id\":\"ACC-1\"}}");
  free(rx);
  cleanup_free char *r5 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"account.id\":\"ACC-1\",\"account\":\"x\"}}", &rx);
  cr_assert(is(r5, "ok"), "a non-object at \"account\" leaves one reading: %s", r5);
  cr_assert_str_eq(rx, "{\"account.id\":\"ACC-1\",\"account\":\"x\"}");
  free(rx);
  cleanup_free char *log = audit_log(g);
  gate_close(g);
}

/* ---- shape 2: integers beyond 2^53 ---- */

Test(args, large_integers_compare_exactly) {
  struct gate *g = open_gate(
      "[{\"if\": {\"arg\": \"id\", \"op\": \"in\", \"value\": [1234567890123456789]}, \"effect\": \"allow\"},"
      " {\"if\": {\"arg\": \"n\", \"op\": \">\", \"value\": 9007199254740992}, \"effect\": \"deny\", \"reason\": \"big\"},"
      " {\"if\": {\"arg\": \"n\", \"op\": \"exists\"}, \"effect\": \"allow\"}]",
      NULL);
  char *rx = NULL;
  cleanup_free char *r1 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"id\":1234567890123456790}}", &rx);
  cr_assert(is(r1, "denied"), "a double would have rounded it into the list: %s", r1);
  cr_assert_null(rx);
  cleanup_free char *r2 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"id\":1234567890123456789}}", &rx);
  cr_assert(is(r2, "ok"), "%s", r2);
  cr_assert_str_eq(rx, "{\"id\":1234567890123456789}");
  free(rx);
  cleanup_free char *r3 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"id\":1.234567890123456789e18}}", &rx);
  cr_assert(is(r3, "ok"), "%s", r3);
  cr_assert_str_eq(rx, "{\"id\":1234567890123456789}", "the tool gets the canonical text");
  free(rx);
  cleanup_free char *r4 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"n\":9007199254740993}}", &rx);
  cr_assert(is(r4, "denied") && strstr(r4, "big"), "2^53+1 > 2^53: %s", r4);
  cr_assert_null(rx);
  cleanup_free char *r5 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"n\":9007199254740992}}", &rx);
  cr_assert(is(r5, "ok"), "%s", r5);
  free(rx);
  cleanup_free char *log = audit_log(g);
  cr_assert(strstr(log, "\"id\":1234567890123456789}") != NULL);
  gate_close(g);
}

/* ---- shape 3: invalid UTF-8 ---- */

Test(args, invalid_utf8_is_bad_request_and_the_log_stays_strict) {
  struct gate *g = open_gate("[{\"effect\": \"allow\"}]", NULL);
  char *rx = NULL;
  static const char *const bad[] = {
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"p\":\"..\xc0\xaf" "etc\"}}",  /* overlong '/' */
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"p\":\"x\\udc00y\"}}",           /* lone low surrogate */
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"p\":\"\xed\xa0\x80\"}}",       /* a surrogate as UTF-8 */
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"p\":\"\xf4\x90\x80\x80\"}}",   /* past U+10FFFF */
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"k\xc0\xaf\":1}}",              /* in a key */
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"a\":[{\"b\":\"\xe0\x80\xaf\"}]}}", /* deep */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cleanup_free char *r = call(g, bad[i], strlen(bad[i]), &rx);
    cr_assert(is(r, "bad_request") && strstr(r, "not valid UTF-8"), "case %zu: %s", i, r);
    cr_assert_null(rx, "case %zu: the tool ran", i);
  }
  cleanup_free char *r = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"p\":\"caf\xc3\xa9 \\ud83d\\ude00\"}}", &rx);
  cr_assert(is(r, "ok"), "%s", r);
  cr_assert_str_eq(rx, "{\"p\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}");
  free(rx);
  cleanup_free char *log = audit_log(g); /* strict: asserts inside */
  cr_assert(strstr(log, "a[0].b") != NULL, "the refusal names where: %s", log);
  gate_close(g);
}

/* ---- shape 4: repeat_limit and the spelling of a number ---- */

Test(args, repeat_limit_sees_one_number_in_any_spelling) {
  struct gate *g = open_gate("[{\"effect\": \"allow\"}]", "{\"repeat_limit\": 1}");
  char *rx = NULL;
  cleanup_free char *r0 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":640}}", &rx);
  cr_assert(is(r0, "ok"), "%s", r0);
  cr_assert_str_eq(rx, "{\"amount\":640}");
  free(rx);
  static const char *const spellings[] = {"640.0", "6.4e2", "6400e-1", "6.40E+2", "0.064e4", "640.000"};
  for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
    cleanup_free char *req = xasprintf("{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":%s}}", spellings[i]);
    cleanup_free char *r = call(g, req, strlen(req), &rx);
    cr_assert(is(r, "budget_exhausted") && strstr(r, "repeat"), "%s: %s", spellings[i], r);
    cr_assert_null(rx);
  }
  cleanup_free char *r1 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":6.41e2}}", &rx);
  cr_assert(is(r1, "ok"), "%s", r1);
  cr_assert_str_eq(rx, "{\"amount\":641}");
  free(rx);
  cleanup_free char *log = audit_log(g);
  gate_close(g);
}

/* ---- shape 5: a string where a number rule applies ---- */

Test(args, a_string_against_a_number_rule_is_bad_request) {
  struct gate *g = open_gate(
      "[{\"if\": {\"arg\": \"amount\", \"op\": \">\", \"value\": 50}, \"effect\": \"deny\", \"reason\": \"too much\"},"
      " {\"if\": {\"arg\": \"path\", \"op\": \"prefix\", \"value\": \"/etc/\"}, \"effect\": \"deny\"},"
      " {\"effect\": \"allow\"}]",
      NULL);
  char *rx = NULL;
  static const char *const bad[] = {
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":\"640\"}}",
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":[640]}}",
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":{\"v\":640}}}",
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":true}}",
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":null}}",
      "{\"v\":1,\"tool\":\"rec\",\"args\":{\"path\":[\"/etc/shadow\"]}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cleanup_free char *r = call(g, bad[i], strlen(bad[i]), &rx);
    cr_assert(is(r, "bad_request") && strstr(r, "rule"), "case %zu: %s", i, r);
    cr_assert_null(rx, "case %zu: the tool ran", i);
  }
  cleanup_free char *r1 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":640}}", &rx);
  cr_assert(is(r1, "denied") && strstr(r1, "too much"), "%s", r1);
  cleanup_free char *r2 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{\"amount\":20}}", &rx);
  cr_assert(is(r2, "ok"), "%s", r2);
  cr_assert_str_eq(rx, "{\"amount\":20}");
  free(rx);
  cleanup_free char *r3 = CALL(g, "{\"v\":1,\"tool\":\"rec\",\"args\":{}}", &rx);
  cr_assert(is(r3, "ok"), "an absent argument is no mismatch: %s", r3);
  free(rx);
  cleanup_free char *log = audit_log(g);
  gate_close(g);
}

/* ---- the canonical number text ---- */

Test(args, canonical_number_table) {
  static const struct {
    const char *in, *out;
  } table[] = {
      {"640", "640"},          {"640.0", "640"},      {"6.4e2", "640"},
      {"6400e-1", "640"},      {"0.064E+4", "640"},   {"-0", "0"},
      {"0.000", "0"},          {"-0e5", "0"},         {"12.2500", "12.25"},
      {"0.0125", "0.0125"},    {"-12e-1", "-1.2"},    {"1e39", "1000000000000000000000000000000000000000"},
      {"1e40", "1e40"},        {"1.5e-30", "0.0000000000000000000000000000015"}, {"1.5e-40", "1.5e-40"}, {"123456789012345678901234567890", "123456789012345678901234567890"},
      {"1e-40", "0.0000000000000000000000000000000000000001"}, {"1e-41", "1e-41"},
      {"1e400", "1e400"},      {"-2.50e-400", "-2.5e-400"}, {"007", "7"},
  };
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    cleanup_free char *c = number_canonical(table[i].in, strlen(table[i].in));
    cr_assert_not_null(c, "%s", table[i].in);
    cr_assert_str_eq(c, table[i].out, "%s", table[i].in);
    cleanup_free char *again = number_canonical(c, strlen(c));
    cr_assert_str_eq(again, c, "canonical text is a fixed point");
  }
  cr_assert_null(number_canonical("1e100001", 8));
  /* beyond the limit once normalised, though the written exponent is not */
  cr_assert_null(number_canonical("29e100000", 9));
  cr_assert_null(number_canonical("0.01e-100000", 12));
  cleanup_free char *edge = number_canonical("9e100000", 8);
  cr_assert_str_eq(edge, "9e100000");
  cr_assert_null(number_canonical("1e", 2));
  cr_assert_null(number_canonical("abc", 3));
  cr_assert(number_compare("1234567890123456789", "1234567890123456790") < 0);
  cr_assert(number_compare("-1e400", "-1e399") < 0);
  cr_assert(number_compare("0.1", "0.09999999999999999999") > 0);
  cr_assert(number_compare("-0", "0") == 0);
  cr_assert(number_compare("-1", "0") < 0);
  cr_assert(number_is_integer("6.4e2") && !number_is_integer("6.41e1") && number_is_integer("1e400"));
}

/* ---- property: what the rule evaluated is what the tool received ---- */

static unsigned rng_state = 20261203;
static unsigned rnd(unsigned n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 8) % n;
}

static const char *const KEYS[] = {"a", "b", "a.b", "c", "b.c", "a.b.c", "id"};
#define NKEYS (sizeof KEYS / sizeof *KEYS)

static void random_number(struct json_buf *b) {
  static const char *const nums[] = {"640", "640.0", "6.4e2", "6400e-1", "-0", "0.5", "5e-1",
                                     "1234567890123456789", "1234567890123456790",
                                     "9007199254740993", "1e400", "-3", "50", "50.000001"};
  const char *n = nums[rnd(sizeof nums / sizeof *nums)];
  json_buf_raw(b, n, strlen(n));
}

static void random_value(struct json_buf *b, int depth) {
  switch (rnd(depth > 2 ? 4 : 6)) {
  case 0: random_number(b); break;
  case 1: {
    static const char *const strs[] = {"\"640\"", "\"ACC-1\"", "\"/data/x\"", "\"caf\xc3\xa9\"",
                                       "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "\"a\\u0000b\""};
    const char *s = strs[rnd(sizeof strs / sizeof *strs)];
    json_buf_raw(b, s, strlen(s));
    break;
  }
  case 2: json_buf_lit(b, "true"); break;
  case 3: json_buf_lit(b, "null"); break;
  case 4:
    json_buf_lit(b, "[");
    for (unsigned i = 0, n = rnd(3); i < n; i++) {
      if (i)
        json_buf_lit(b, ",");
      random_value(b, depth + 1);
    }
    json_buf_lit(b, "]");
    break;
  default: {
    bool used[NKEYS] = {false};
    json_buf_lit(b, "{");
    for (unsigned i = 0, n = rnd(4), first = 1; i < n; i++) {
      unsigned k = rnd(NKEYS);
      if (used[k])
        continue;
      used[k] = true;
      if (!first)
        json_buf_lit(b, ",");
      first = 0;
      json_buf_cstr(b, KEYS[k]);
      json_buf_lit(b, ":");
      random_value(b, depth + 1);
    }
    json_buf_lit(b, "}");
  }
  }
}

/* What a tool would do with the bytes it got: walk a dotted name the
 * obvious ways (a literal key, or a path through objects) and collect
 * every value it could mean. */
static size_t tool_readings(const json_t *obj, const char *name, const json_t **out, size_t n) {
  if (!json_is(obj, JSON_OBJECT))
    return n;
  const json_t *v = json_object_get(obj, name);
  if (v)
    out[n++] = v;
  for (const char *dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
    cleanup_free char *prefix = xstrndup(name, (size_t)(dot - name));
    n = tool_readings(json_object_get(obj, prefix), dot + 1, out, n);
  }
  return n;
}

Test(args, property_the_rule_and_the_tool_see_the_same_bytes) {
  static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">=", "in", "prefix", "exists"};
  int accepted = 0, refused = 0;
  for (int round = 0; round < 3000; round++) {
    struct json_buf b = {0};
    json_buf_lit(&b, "{");
    bool used[NKEYS] = {false};
    for (unsigned i = 0, n = 1 + rnd(4), first = 1; i < n; i++) {
      unsigned k = rnd(NKEYS);
      if (used[k])
        continue;
      used[k] = true;
      if (!first)
        json_buf_lit(&b, ",");
      first = 0;
      json_buf_cstr(&b, KEYS[k]);
      json_buf_lit(&b, ":");
      random_value(&b, 1);
    }
    json_buf_lit(&b, "}");
    cleanup_json json_t *raw = json_parse(b.s, b.len, NULL, NULL);
    cr_assert_not_null(raw, "%s", b.s);
    char *why = NULL;
    cleanup_json json_t *canon = args_canonicalize(raw, &why);
    if (canon == NULL) {
      cr_assert(strstr(why, "could mean either"), "%s: %s", b.s, why);
      json_t *owned = NULL;
      char *why3 = NULL;
      cr_assert_null(args_canonical_form(raw, &owned, &why3), "the variants disagree on %s", b.s);
      cr_assert_str_eq(why3, why);
      free(why3);
      free(why);
      free(b.s);
      refused++;
      continue;
    }
    accepted++;
    /* The gate's copy-free variant gives the same form, byte for byte. */
    json_t *owned = NULL;
    char *why3 = NULL;
    const json_t *view = args_canonical_form(raw, &owned, &why3);
    cr_assert_not_null(view, "%s", why3);
    cleanup_free char *d1 = json_dump(view, false, NULL);
    cleanup_free char *d2 = json_dump(canon, false, NULL);
    cr_assert_str_eq(d1, d2);
    json_free(owned);
    /* The bytes the tool receives (tool_exec writes json_dump's text). */
    size_t tl = 0;
    cleanup_free char *sent = json_dump(canon, false, &tl);
    cleanup_json json_t *tool_view = json_parse(sent, tl, NULL, NULL);
    cr_assert_not_null(tool_view, "%s", sent);
    /* A random rule on a random name. */
    const char *name = KEYS[rnd(NKEYS)];
    const char *op = ops[rnd(sizeof ops / sizeof *ops)];
    struct json_buf val = {0};
    if (strcmp(op, "in") == 0) {
      json_buf_lit(&val, "[");
      random_value(&val, 3);
      json_buf_lit(&val, "]");
    } else if (strcmp(op, "prefix") == 0) {
      json_buf_lit(&val, "\"/da\"");
    } else if (strcmp(op, "exists") == 0) {
      json_buf_lit(&val, "true");
    } else if (op[0] == '<' || op[0] == '>') {
      random_number(&val);
    } else {
      random_value(&val, 3);
    }
    cleanup_free char *rules = xasprintf("[{\"if\": {\"arg\": \"%s\", \"op\": \"%s\", \"value\": %s}, "
                                         "\"effect\": \"allow\"}]",
                                         name, op, val.s);
    free(val.s);
    cleanup_json json_t *rsrc = json_parse(rules, strlen(rules), NULL, NULL);
    struct policy_errors errs = {.file = "t"};
    struct rule *r = NULL;
    size_t nr = 0;
    cr_assert_eq(rules_parse(rsrc, "rules", &r, &nr, &errs), 0, "%s", rules);
    policy_errors_free(&errs);
    /* The value the rule engine evaluated ... */
    const json_t *evaluated = args_lookup(canon, name);
    /* ... is the only value the tool can read under that name, byte for byte. */
    const json_t *readings[16];
    size_t nread = tool_readings(tool_view, name, readings, 0);
    cr_assert_leq(nread, 1, "%s: %zu readings of %s in what the tool got: %s", b.s, nread, name, sent);
    cr_assert_eq(nread, evaluated != NULL, "%s: %s", b.s, name);
    if (evaluated) {
      cleanup_free char *e = json_dump(evaluated, false, NULL);
      cleanup_free char *t = json_dump(readings[0], false, NULL);
      cr_assert_str_eq(e, t, "%s: the rule saw %s, the tool %s", b.s, e, t);
    }
    /* and deciding on the tool's bytes gives the same answer. */
    const char *reason;
    cleanup_free char *m1 = NULL, *m2 = NULL;
    enum effect e1 = rules_decide(r, nr, canon, &reason, &m1);
    char *why2 = NULL;
    cleanup_json json_t *recanon = args_canonicalize(tool_view, &why2);
    cr_assert_not_null(recanon, "%s", why2);
    cr_assert(json_equal(recanon, canon));
    enum effect e2 = rules_decide(r, nr, recanon, &reason, &m2);
    cr_assert_eq(e1, e2, "%s with %s", b.s, rules);
    cr_assert_eq(m1 == NULL, m2 == NULL);
    rules_free(r, nr);
    free(b.s);
  }
  cr_assert_gt(accepted, 1000);
  cr_assert_gt(refused, 10);
}

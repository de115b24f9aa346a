/* Rules: parsing with positioned errors, and first-match evaluation. */
#include "governance/rules.h"

#include <stdlib.h>
#include <string.h>

#include "governance/args_canonical.h"
#include "base/util.h"

static const char *const op_names[] = {
    [OP_EQ] = "==", [OP_NE] = "!=", [OP_LT] = "<",         [OP_LE] = "<=",
    [OP_GT] = ">",  [OP_GE] = ">=", [OP_IN] = "in",        [OP_PREFIX] = "prefix",
    [OP_EXISTS] = "exists",
};

const char *op_name(enum cond_op op) {
  return op == OP_ALL ? "all" : op == OP_ANY ? "any" : op_names[op];
}

const char *effect_name(enum effect e) {
  switch (e) {
  case EFFECT_ALLOW: return "allow";
  case EFFECT_APPROVE: return "approve";
  case EFFECT_DENY: break;
  }
  return "deny";
}

static void condition_free(struct condition *c) {
  free(c->arg);
  json_free(c->value);
  for (size_t i = 0; i < c->nchildren; i++)
    condition_free(&c->children[i]);
  free(c->children);
}

/* Parse one condition object at src into c.  Returns the problem count. */
static int condition_parse(const json_t *src, const char *path,
                           struct condition *c, struct policy_errors *errs,
                           unsigned depth) {
  memset(c, 0, sizeof *c);
  if (src != NULL) {
    c->line = src->line;
    c->col = src->col;
  }
  if (!json_is(src, JSON_OBJECT)) {
    policy_error_add(errs, src, path,
                     "a condition must be an object: {\"arg\": NAME, \"op\": OP, \"value\": V}, {\"all\": [...]} or {\"any\": [...]}");
    return 1;
  }
  if (depth > 16) {
    policy_error_add(errs, src, path, "conditions nest deeper than 16 levels; flatten them");
    return 1;
  }
  const json_t *all = json_object_get(src, "all"), *any = json_object_get(src, "any");
  if (all || any) {
    int n = 0;
    if (src->u.object.len != 1) {
      policy_error_add(errs, src, path, "\"all\"/\"any\" must be the only key of its condition");
      return 1;
    }
    const json_t *list = all ? all : any;
    c->op = all ? OP_ALL : OP_ANY;
    cleanup_free char *lp = xasprintf("%s.%s", path, all ? "all" : "any");
    if (!json_is(list, JSON_ARRAY) || json_array_len(list) == 0) {
      policy_error_add(errs, list, lp, "must be a non-empty array of conditions");
      return 1;
    }
    c->children = xcalloc(json_array_len(list), sizeof *c->children);
    for (size_t i = 0; i < json_array_len(list); i++) {
      cleanup_free char *ip = xasprintf("%s[%zu]", lp, i);
      n += condition_parse(json_array_get(list, i), ip, &c->children[c->nchildren++], errs,
                           depth + 1);
    }
    return n;
  }
  int n = 0;
  const json_t *arg = NULL, *op = NULL, *value = NULL;
  for (size_t i = 0; i < src->u.object.len; i++) {
    const char *k = src->u.object.keys[i];
    const json_t *v = src->u.object.values[i];
    if (strcmp(k, "arg") == 0)
      arg = v;
    else if (strcmp(k, "op") == 0)
      op = v;
    else if (strcmp(k, "value") == 0)
      value = v;
    else {
      cleanup_free char *kp = xasprintf("%s.%s", path, k);
      policy_error_add(errs, v, kp, "unknown key \"%s\" in a condition; use arg, op and value (or all / any)", k);
      n++;
    }
  }
  cleanup_free char *argp = xasprintf("%s.arg", path);
  cleanup_free char *opp = xasprintf("%s.op", path);
  cleanup_free char *valp = xasprintf("%s.value", path);
  if (arg == NULL) {
    policy_error_add(errs, src, argp, "missing: name the argument the condition tests");
    n++;
  } else if (!json_is(arg, JSON_STRING) || json_string_value(arg)[0] == '\0') {
    policy_error_add(errs, arg, argp, "must be a non-empty argument name (dots reach into objects)");
    n++;
  } else {
    c->arg = xstrdup(json_string_value(arg));
  }
  c->op = OP_EQ;
  if (op == NULL) {
    policy_error_add(errs, src, opp, "missing: one of ==, !=, <, <=, >, >=, in, prefix, exists");
    return n + 1;
  }
  const char *ops = json_string_value(op);
  size_t i;
  for (i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
    if (ops && strcmp(ops, op_names[i]) == 0)
      break;
  if (i == sizeof op_names / sizeof op_names[0]) {
    policy_error_add(errs, op, opp, "unknown operator %s%s%s; use one of ==, !=, <, <=, >, >=, in, prefix, exists",
                     ops ? "\"" : "", ops ? ops : "(not a string)", ops ? "\"" : "");
    return n + 1;
  }
  c->op = (enum cond_op)i;
  if (c->op == OP_EXISTS) {
    if (value != NULL && !json_is(value, JSON_BOOL)) {
      policy_error_add(errs, value, valp, "for \"exists\" the value must be true or false (or left out: true)");
      return n + 1;
    }
    c->value = value ? json_copy(value) : json_new_bool(true);
    return n;
  }
  if (value == NULL) {
    policy_error_add(errs, src, valp, "missing: the operator \"%s\" needs a value", ops);
    return n + 1;
  }
  switch (c->op) {
  case OP_LT: case OP_LE: case OP_GT: case OP_GE:
    if (!json_is(value, JSON_NUMBER)) {
      policy_error_add(errs, value, valp, "the operator \"%s\" compares numbers: the value must be a number", ops);
      return n + 1;
    }
    break;
  case OP_IN:
    if (!json_is(value, JSON_ARRAY)) {
      policy_error_add(errs, value, valp, "for \"in\" the value must be an array of allowed values");
      return n + 1;
    }
    break;
  case OP_PREFIX:
    if (!json_is(value, JSON_STRING)) {
      policy_error_add(errs, value, valp, "for \"prefix\" the value must be a string");
      return n + 1;
    }
    break;
  default:
    break;
  }
  /* The operand in the form the call's arguments will have, so that 6.4e2
   * in a policy equals 640 in a call and strings compare as bytes. */
  char *why = NULL;
  c->value = args_canonicalize(value, &why);
  if (c->value == NULL) {
    policy_error_add(errs, value, valp, "%s", why);
    free(why);
    return n + 1;
  }
  return n;
}

static int parse_effect(const json_t *v, const char *path, enum effect *e,
                        struct policy_errors *errs) {
  const char *s = json_string_value(v);
  if (s && strcmp(s, "allow") == 0)
    *e = EFFECT_ALLOW;
  else if (s && strcmp(s, "deny") == 0)
    *e = EFFECT_DENY;
  else if (s && strcmp(s, "approve") == 0)
    *e = EFFECT_APPROVE;
  else {
    policy_error_add(errs, v, path, "%s%s%s is not an effect; use \"allow\", \"deny\" or \"approve\"",
                     s ? "\"" : "", s ? s : "a non-string", s ? "\"" : "");
    return 1;
  }
  return 0;
}

int rules_parse(const json_t *src, const char *path, struct rule **rules,
                size_t *n, struct policy_errors *errs) {
  *rules = NULL;
  *n = 0;
  if (!json_is(src, JSON_ARRAY)) {
    policy_error_add(errs, src, path, "must be an array of rules, e.g. [{\"effect\": \"allow\"}]");
    return 1;
  }
  int problems = 0;
  struct rule *r = xcalloc(json_array_len(src), sizeof *r);
  size_t count = 0;
  for (size_t i = 0; i < json_array_len(src); i++) {
    const json_t *rs = json_array_get(src, i);
    cleanup_free char *rp = xasprintf("%s[%zu]", path, i);
    struct rule *cur = &r[count++];
    if (!json_is(rs, JSON_OBJECT)) {
      policy_error_add(errs, rs, rp, "a rule must be an object with \"effect\" and optional \"if\" and \"reason\"");
      problems++;
      cur->reason = xstrdup("");
      continue;
    }
    const json_t *effect = NULL;
    for (size_t j = 0; j < rs->u.object.len; j++) {
      const char *k = rs->u.object.keys[j];
      const json_t *v = rs->u.object.values[j];
      cleanup_free char *kp = xasprintf("%s.%s", rp, k);
      if (strcmp(k, "effect") == 0) {
        effect = v;
        problems += parse_effect(v, kp, &cur->effect, errs);
      } else if (strcmp(k, "if") == 0) {
        cur->has_condition = true;
        problems += condition_parse(v, kp, &cur->condition, errs, 0);
      } else if (strcmp(k, "reason") == 0) {
        if (!json_is(v, JSON_STRING)) {
          policy_error_add(errs, v, kp, "must be a string (the caller sees it)");
          problems++;
        } else {
          cur->reason = xstrdup(json_string_value(v));
        }
      } else {
        policy_error_add(errs, v, kp, "unknown key \"%s\" in a rule; use if, effect and reason", k);
        problems++;
      }
    }
    if (effect == NULL) {
      cleanup_free char *ep = xasprintf("%s.effect", rp);
      policy_error_add(errs, rs, ep, "missing: every rule needs \"effect\": \"allow\", \"deny\" or \"approve\"");
      problems++;
    }
    if (cur->reason == NULL)
      cur->reason = xasprintf("rule %zu: %s", i, effect_name(cur->effect));
  }
  *rules = r;
  *n = count;
  return problems;
}

void rules_free(struct rule *rules, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (rules[i].has_condition)
      condition_free(&rules[i].condition);
    free(rules[i].reason);
  }
  free(rules);
}

/* Three outcomes: a condition holds, does not, or cannot be judged because
 * an argument has the wrong type for its operator ("640" against > 50).
 * The last refuses the call: were it "does not hold", a deny rule of the
 * form amount > 50 would be bypassed by sending the amount as a string. */
enum verdict { HOLDS, FAILS, MISTYPED };

static enum verdict verdict_of(bool b) { return b ? HOLDS : FAILS; }

static enum verdict evaluate(const struct condition *c, const json_t *args,
                             const struct condition **mistyped) {
  switch (c->op) {
  case OP_ALL:
  case OP_ANY: {
    bool any = c->op == OP_ANY;
    for (size_t i = 0; i < c->nchildren; i++) {
      enum verdict v = evaluate(&c->children[i], args, mistyped);
      if (v == MISTYPED)
        return MISTYPED;
      if (v == (any ? HOLDS : FAILS))
        return v;
    }
    return any ? FAILS : HOLDS;
  }
  default:
    break;
  }
  /* args is canonical (args_canonicalize): the name has one reading. */
  const json_t *a = args_lookup(args, c->arg);
  if (c->op == OP_EXISTS)
    return verdict_of((a != NULL) == json_is_true(c->value));
  if (a == NULL)
    return FAILS; /* a missing argument satisfies no comparison, not even != */
  switch (c->op) {
  case OP_EQ: return verdict_of(args_equal(a, c->value));
  case OP_NE: return verdict_of(!args_equal(a, c->value));
  case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
    if (!json_is(a, JSON_NUMBER)) {
      *mistyped = c;
      return MISTYPED;
    }
    /* Exact decimal comparison: never through a double, so that
     * 1234567890123456790 is not 1234567890123456789. */
    int r = number_compare(a->u.number.text, c->value->u.number.text);
    return verdict_of(c->op == OP_LT ? r < 0 : c->op == OP_LE ? r <= 0
                      : c->op == OP_GT ? r > 0 : r >= 0);
  }
  case OP_IN:
    for (size_t i = 0; i < json_array_len(c->value); i++)
      if (args_equal(a, json_array_get(c->value, i)))
        return HOLDS;
    return FAILS;
  case OP_PREFIX: {
    if (!json_is(a, JSON_STRING)) {
      *mistyped = c;
      return MISTYPED;
    }
    size_t n = c->value->u.string.len;
    return verdict_of(a->u.string.len >= n && memcmp(a->u.string.s, c->value->u.string.s, n) == 0);
  }
  default:
    return FAILS;
  }
}

bool condition_holds(const struct condition *c, const json_t *args) {
  const struct condition *mistyped = NULL;
  return evaluate(c, args, &mistyped) == HOLDS;
}

enum effect rules_decide(const struct rule *rules, size_t n, const json_t *args,
                         const char **reason, char **mistyped) {
  *mistyped = NULL;
  for (size_t i = 0; i < n; i++) {
    if (!rules[i].has_condition) {
      *reason = rules[i].reason;
      return rules[i].effect;
    }
    const struct condition *bad = NULL;
    switch (evaluate(&rules[i].condition, args, &bad)) {
    case HOLDS:
      *reason = rules[i].reason;
      return rules[i].effect;
    case FAILS:
      continue;
    case MISTYPED: {
      const json_t *a = args_lookup(args, bad->arg);
      *mistyped = xasprintf("args.%s: rule %zu compares it with \"%s\", which needs %s, but it is %s; "
                            "send %s",
                            bad->arg, i, op_names[bad->op],
                            bad->op == OP_PREFIX ? "a string" : "a number",
                            json_type_name(a->type),
                            bad->op == OP_PREFIX ? "a string" : "a JSON number (e.g. 640, not \"640\")");
      *reason = *mistyped;
      return EFFECT_DENY;
    }
    }
  }
  *reason = "no rule allows this call (the default is deny)";
  return EFFECT_DENY;
}

/* Per-tool rules: an ordered list of (condition, effect, reason).  The first
 * rule whose condition holds decides; no match means deny. */
#ifndef TOLLGATE_RULES_H
#define TOLLGATE_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "governance/policy_errors.h"
#include "base/json.h"

enum effect { EFFECT_DENY, EFFECT_ALLOW, EFFECT_APPROVE };

enum cond_op {
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_PREFIX, OP_EXISTS,
  OP_ALL, OP_ANY
};

struct condition {
  enum cond_op op;
  char *arg;     /* dotted path into the call's args (leaf ops) */
  json_t *value; /* owned copy of the operand (leaf ops) */
  struct condition *children; /* for all and any */
  size_t nchildren;
  unsigned line, col; /* where it was written (policy check warnings) */
};

struct rule {
  bool has_condition; /* false: always matches */
  struct condition condition;
  enum effect effect;
  char *reason; /* owned; never NULL after parsing */
};

/* Parse the "rules" array of a tool (src) into *rules and *n.  Every problem
 * goes to errs with path (e.g. "tools.refund.rules").  Returns the number of
 * problems found (0 = ok).  The rules are owned by the caller (rules_free). */
int rules_parse(const json_t *src, const char *path, struct rule **rules,
                size_t *n, struct policy_errors *errs);
void rules_free(struct rule *rules, size_t n);

/* Evaluate canonical args (args_canonicalize): the first matching rule
 * decides.  *reason is borrowed from the rule (or a static default string
 * for no match).  When a rule reached in order compares an argument of the
 * wrong type (a string against "<", a number against "prefix") the call is
 * refused: the result is EFFECT_DENY and *mistyped an owned message for a
 * bad_request naming the argument and the fix (*reason points to it);
 * otherwise *mistyped is NULL.  Thread-safe. */
enum effect rules_decide(const struct rule *rules, size_t n, const json_t *args,
                         const char **reason, char **mistyped);

/* True when c holds for canonical args (a mistyped comparison does not). */
bool condition_holds(const struct condition *c, const json_t *args);

const char *effect_name(enum effect e);

/* The operator as a policy writes it ("==", "prefix"; "all", "any"). */
const char *op_name(enum cond_op op);

#endif

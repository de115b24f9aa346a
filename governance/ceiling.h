/* Policy ceilings: does a policy allow nothing that a ceiling does not?
 *
 * A platform team writes one ceiling policy; every tenant policy is checked
 * against it (`tollgate policy check --within`, and create with the host
 * config's policy_ceiling).  The answer is decided, not sampled: for each
 * tool the comparison thresholds of both policies' rules and schemas cut
 * every argument into finitely many regions in which both decisions are
 * constant, and one concrete call per region is decided by the real gate
 * code (canonical form, schema, first-match rules).  Each tool's backend
 * and every MCP server are the ceiling's (an http allow list within its
 * own, ceiling_backend.c).  docs/policy.md "Policy ceilings" gives the
 * procedure and its limits.
 */
#ifndef TOLLGATE_CEILING_H
#define TOLLGATE_CEILING_H

#include <stddef.h>

#include "governance/rules.h"
#include "base/error.h"
#include "base/json.h"

/* governance/policy.h; only pointers here, so that a file that cannot
 * include policy.h (create's steps: their struct backend) can enforce. */
struct policy;
struct tool;

enum ceiling_verdict {
  CEILING_WITHIN,     /* proved: nothing is more permissive */
  CEILING_NOT_WITHIN, /* at least one witness below */
  CEILING_UNDECIDED,  /* no witness, but not proved either (see why) */
};

/* One way the policy is more permissive than the ceiling. */
struct ceiling_witness {
  char *what;   /* one line for a person, e.g. "tools.refund: {"amount":51}:
                   the policy allows (rule 0: ...), the ceiling asks for
                   approval (...)" or "budgets.max_tool_calls: 100 in the
                   policy, at most 50 in the ceiling" */
  char *tool;   /* the tool, or NULL for a policy-wide limit */
  json_t *args; /* a call's canonical arguments, or NULL when the witness is
                   not a call (a budget, a cap, a missing tool) */
  enum effect policy_effect, ceiling_effect; /* for a call: the decisions
                                                (a refusal by the schema, a
                                                mistyped comparison: deny);
                                                the policy's is the more
                                                permissive.  Both deny: a
                                                schema witness (args the
                                                policy's schema accepts
                                                and the ceiling's refuses)
                                                or not a call */
};

struct ceiling_result {
  enum ceiling_verdict verdict;
  struct ceiling_witness *witnesses; /* owned; NOT_WITHIN: at least one */
  size_t nwitnesses;
  char **undecided; /* owned: why a tool could not be proved (UNDECIDED, or
                       beside witnesses), one line each */
  size_t nundecided;
  unsigned long long cases; /* concrete calls decided, for the report */
};

/* Compare policy with ceiling.  Never fails: every outcome is a verdict.
 * *out is owned by the caller (ceiling_result_free). */
void ceiling_check(const struct policy *policy, const struct policy *ceiling,
                   struct ceiling_result *out);
void ceiling_result_free(struct ceiling_result *r);

/* The decision the gate makes for canonical args of t: the schema first
 * (a refusal is a bad_request, i.e. deny), then the rules (a mistyped
 * comparison is deny).  *reason is owned by the caller. */
enum effect ceiling_decide(const struct tool *t, const json_t *args, char **reason);

/* How permissive an effect is: deny 0 < approve 1 < allow 2. */
int ceiling_rank(enum effect e);

/* The whole result as text, one line per witness or undecided tool, each
 * starting with the policy's path (owned). */
char *ceiling_result_text(const struct ceiling_result *r, const char *policy_path,
                          const char *ceiling_path);

/* Load the policy file and check it against each ceiling file (keys[i]
 * names where ceilings[i] was configured, e.g. "policy_ceiling", for the
 * message).  0 when within all; else -1 with *err naming the policy, the
 * ceiling and every witness on one line (a create error). */
int ceiling_enforce(const char *policy_path, const char *const *ceilings,
                    const char *const *keys, size_t n, tg_error **err);

#endif

/* The policy loader's parser of one tool, shared by the loader
 * (policy.c) and the check of a tool added to a running gate
 * (policy_add.c), so both take exactly the same entries.  Internal to
 * those two files. */
#ifndef TOLLGATE_POLICY_PARSE_H
#define TOLLGATE_POLICY_PARSE_H

#include "governance/policy.h"
#include "governance/policy_errors.h"

struct policy_ctx {
  struct policy *p; /* the policy being built (its dir resolves relative programs) */
  struct policy_errors errs;
};

/* Parse tools.NAME: every problem goes to c->errs; NULL when v is not an
 * object.  The tool is owned by the caller (not yet one of c->p's). */
struct tool *policy_parse_tool(struct policy_ctx *c, const char *name, const json_t *v);

#endif

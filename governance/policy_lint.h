/* policy check warnings: rules that are valid but can be read two ways or
 * bypassed by the shape of an argument.  Loading never fails on these;
 * `tollgate policy check` prints them so a person fixes the policy. */
#ifndef TOLLGATE_POLICY_LINT_H
#define TOLLGATE_POLICY_LINT_H

#include "governance/policy.h"
#include "governance/policy_errors.h"

/* Add one positioned message per finding to out ("FILE:LINE:COL: PATH:
 * warning: ..."), each with the fix.  Returns the number added. */
size_t policy_lint(const struct policy *p, struct policy_errors *out);

/* The policy's anomaly limits in words, for `tollgate policy check`:
 * "denials_in_a_row 3 (stop), calls_per_second 50 (log); alert hook
 * /path", or NULL when it sets none.  Owned. */
char *policy_describe_anomalies(const struct policy *p);

#endif

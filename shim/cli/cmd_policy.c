/* tollgate policy check FILE...: report every problem of each policy with
 * its line, column and field path; exit 1 when any file has a problem. */
#include <stdio.h>
#include <string.h>

#include "governance/policy.h"
#include "governance/policy_lint.h"
#include "shim/cli/commands.h"

int cmd_policy(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)cli;
  if (argc < 3 || strcmp(argv[1], "check") != 0)
    return tg_error_set(err, 0, "usage: tollgate policy check FILE...");
  int status = 0;
  for (int i = 2; i < argc; i++) {
    struct policy *p = NULL;
    cleanup_error tg_error *perr = NULL;
    if (policy_load(argv[i], &p, &perr) < 0) {
      fprintf(stderr, "%s\n", perr->msg);
      status = 1;
      continue;
    }
    /* Warnings do not fail the check: the policy is valid, but a rule
     * in it can be read two ways or slipped past. */
    struct policy_errors warnings = {.file = argv[i]};
    size_t nwarn = policy_lint(p, &warnings);
    for (size_t w = 0; w < warnings.len; w++)
      printf("%s\n", warnings.msgs[w]);
    policy_errors_free(&warnings);
    size_t approve = 0;
    for (size_t t = 0; t < p->ntools; t++)
      for (size_t r = 0; r < p->tools[t]->nrules; r++)
        if (p->tools[t]->rules[r].effect == EFFECT_APPROVE) {
          approve++;
          break;
        }
    printf("%s: ok (%zu tool%s, %zu may need approval, max_tool_calls %lld%s%zu warning%s)\n",
           argv[i], p->ntools, p->ntools == 1 ? "" : "s", approve, p->budgets.max_tool_calls,
           ", ", nwarn, nwarn == 1 ? "" : "s");
    policy_free(p);
  }
  return status;
}

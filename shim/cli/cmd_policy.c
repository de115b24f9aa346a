/* tollgate policy check FILE...: report every problem of each policy with
 * its line, column and field path; exit 1 when any file has a problem.
 * tollgate policy check --within CEILING POLICY: is POLICY within the
 * ceiling (governance/ceiling.h)?  0 within, 1 not (with witnesses), 2 a
 * usage or file error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/ceiling.h"
#include "governance/policy.h"
#include "governance/policy_lint.h"
#include "shim/cli/commands.h"

static int check_within(const char *ceiling_path, const char *policy_path) {
  struct policy *c = NULL, *p = NULL;
  cleanup_error tg_error *perr = NULL;
  if (policy_load(ceiling_path, &c, &perr) < 0) {
    fprintf(stderr, "the ceiling %s is not a valid policy:\n%s\n", ceiling_path, perr->msg);
    return 2;
  }
  if (policy_load(policy_path, &p, &perr) < 0) {
    fprintf(stderr, "%s\n", perr->msg);
    policy_free(c);
    return 2;
  }
  struct ceiling_result r;
  ceiling_check(p, c, &r);
  char *text = ceiling_result_text(&r, policy_path, ceiling_path);
  printf("%s\n", text);
  free(text);
  int status = r.verdict == CEILING_WITHIN ? 0 : 1;
  ceiling_result_free(&r);
  policy_free(p);
  policy_free(c);
  return status;
}

int cmd_policy(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)cli;
  if (argc >= 2 && strcmp(argv[1], "check") == 0 && argc >= 3 &&
      strcmp(argv[2], "--within") == 0) {
    if (argc != 5) {
      fprintf(stderr, "usage: tollgate policy check --within CEILING POLICY\n");
      return 2;
    }
    return check_within(argv[3], argv[4]);
  }
  if (argc < 3 || strcmp(argv[1], "check") != 0)
    return tg_error_set(err, 0, "usage: tollgate policy check FILE... | policy check --within CEILING POLICY");
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
    char *anomalies = policy_describe_anomalies(p);
    if (anomalies)
      printf("%s: anomaly limits: %s\n", argv[i], anomalies);
    free(anomalies);
    policy_free(p);
  }
  return status;
}

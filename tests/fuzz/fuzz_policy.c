/* libFuzzer target: the policy parser and checker.  Policies are trusted
 * host files, but the checker must never crash on a broken one: whatever
 * the bytes, it either loads a policy or reports problems with positions.
 *
 * FUZZ_SOURCES: governance/policy.c governance/egress_config.c governance/egress_check.c governance/policy_errors.c governance/rules.c governance/schema.c governance/args_canonical.c governance/arg_path.c governance/tool_identity.c base/digest.c base/json.c base/json_parse.c base/json_write.c base/utf8.c base/util.c base/error.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "governance/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct policy *p = NULL;
  tg_error *err = NULL;
  int r = policy_parse("/fuzz/p.json", (const char *)data, size, &p, &err);
  if (r == 0) {
    if (p == NULL || err != NULL)
      abort();
    for (size_t i = 0; i < p->ntools; i++)
      if (policy_find(p, p->tools[i]->name) != p->tools[i])
        abort(); /* every tool is found by hash */
    policy_free(p);
  } else {
    if (p != NULL || err == NULL || strncmp(err->msg, "/fuzz/p.json", 12) != 0)
      abort(); /* every problem names the file */
    tg_error_free(&err);
  }
  return 0;
}

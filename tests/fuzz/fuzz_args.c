/* libFuzzer target: what the gate does with container-controlled
 * arguments before any tool runs -- schema validation (types, enum,
 * bounds, maxLength, pattern, nested properties and items) and rule
 * evaluation (every operator, all/any, dotted names), plus the canonical
 * form the repeat limit hashes.
 *
 * FUZZ_SOURCES: governance/policy.c governance/egress_config.c governance/egress_check.c governance/policy_errors.c governance/rules.c governance/schema.c governance/args_canonical.c governance/arg_path.c governance/tool_identity.c base/digest.c base/json.c base/json_parse.c base/json_write.c base/utf8.c base/util.c base/error.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "governance/args_canonical.h"
#include "governance/policy.h"

static const char POLICY[] =
    "{\"version\": 1, \"tools\": {"
    " \"refund\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
    "   \"args\": {\"type\": \"object\", \"required\": [\"amount\"], \"additionalProperties\": false,"
    "     \"properties\": {\"amount\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1e6},"
    "       \"order\": {\"type\": \"string\", \"pattern\": \"^[A-Z]-[0-9]{1,8}$\", \"maxLength\": 12},"
    "       \"region\": {\"enum\": [\"eu\", \"us\", null, 1, {\"x\": [1]}]},"
    "       \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"maxLength\": 4}},"
    "       \"customer\": {\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\"}}}}},"
    "   \"rules\": ["
    "     {\"if\": {\"all\": [{\"arg\": \"amount\", \"op\": \"<=\", \"value\": 50}, {\"arg\": \"region\", \"op\": \"in\", \"value\": [\"eu\", \"us\"]}]}, \"effect\": \"allow\"},"
    "     {\"if\": {\"any\": [{\"arg\": \"customer.id\", \"op\": \"==\", \"value\": 7}, {\"arg\": \"order\", \"op\": \"prefix\", \"value\": \"Z-\"}]}, \"effect\": \"deny\"},"
    "     {\"if\": {\"arg\": \"tags\", \"op\": \"exists\", \"value\": false}, \"effect\": \"approve\"},"
    "     {\"if\": {\"arg\": \"amount\", \"op\": \"!=\", \"value\": 3}, \"effect\": \"approve\"},"
    "     {\"if\": {\"arg\": \"amount\", \"op\": \">\", \"value\": 1}, \"effect\": \"deny\"}]},"
    " \"any\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]}}}";

static struct policy *policy;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (policy == NULL && policy_parse("/fuzz/policy.json", POLICY, sizeof POLICY - 1, &policy, NULL) < 0)
    abort();
  struct json_parse_options opts = {.max_depth = 64};
  json_t *args = json_parse((const char *)data, size, &opts, NULL);
  if (args == NULL)
    return 0;
  for (size_t i = 0; i < policy->ntools; i++) {
    const struct tool *t = policy->tools[i];
    char *why = NULL;
    /* What the gate does: the canonical form first, or bad_request. */
    json_t *canon = args_canonicalize(args, &why);
    if (canon == NULL) {
      if (why == NULL)
        abort();
      free(why);
      continue;
    }
    /* Canonical is a fixed point: a second pass changes nothing. */
    json_t *again = args_canonicalize(canon, &why);
    if (again == NULL || !json_equal(again, canon))
      abort();
    json_free(again);
    bool valid = schema_validate(t->args, canon, &why);
    if (valid != (why == NULL))
      abort(); /* a refusal always says why, an acceptance never does */
    if (valid && t->args && !json_is(args, JSON_OBJECT))
      abort(); /* the schema's top level is an object */
    free(why);
    if (json_is(canon, JSON_OBJECT)) {
      const char *reason = NULL;
      char *mistyped = NULL;
      enum effect e = rules_decide(t->rules, t->nrules, canon, &reason, &mistyped);
      if (mistyped != NULL && e != EFFECT_DENY)
        abort(); /* a mistyped comparison always refuses */
      free(mistyped);
      if (reason == NULL || (e != EFFECT_ALLOW && e != EFFECT_DENY && e != EFFECT_APPROVE))
        abort();
    }
    json_free(canon);
  }
  json_free(args);
  return 0;
}

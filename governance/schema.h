/* A JSON Schema subset for tool arguments.
 *
 * Supported keywords: type (one name or an array of names), properties,
 * required, additionalProperties (boolean), items, enum, minimum, maximum,
 * maxLength (Unicode code points), pattern (POSIX extended regex, searched
 * like JSON Schema's ECMA regex, i.e. unanchored), plus the annotations
 * title, description, default and examples, which are ignored.
 *
 * A policy's own schema must use only these keywords, so that nobody
 * believes a keyword is enforced when it is not.  Schemas imported from an
 * MCP server are compiled leniently: unknown keywords are skipped (the
 * server validates its own arguments as well).
 */
#ifndef TOLLGATE_SCHEMA_H
#define TOLLGATE_SCHEMA_H

#include <stdbool.h>

#include "governance/policy_errors.h"
#include "base/json.h"

struct schema;

/* Compile src.  Problems are added to errs, each with src's positions and
 * the field path `path` (e.g. "tools.refund.args").  Returns NULL when
 * there was any error.  The result is owned by the caller (schema_free). */
struct schema *schema_compile(const json_t *src, const char *path, bool lenient,
                              struct policy_errors *errs);
void schema_free(struct schema *s);

/* Validate v against s.  Returns true, or false with *why set to an owned
 * message naming the field and the rule it broke, e.g.
 * "args.amount: 75 is greater than the maximum 50".  Thread-safe. */
bool schema_validate(const struct schema *s, const json_t *v, char **why);

/* What s declares for an argument a rule names with a dotted path. */
struct schema_arg {
  bool only_numbers; /* every reading is declared "number" and/or "integer" */
  bool only_strings; /* every reading is declared "string" */
  bool patterned;    /* every reading has a "pattern" */
  /* How many readings of the name s admits: a declared literal key "a.b",
   * a declared path a -> b, and, through an object open to undeclared keys
   * (no "additionalProperties": false, or no schema), the undeclared literal
   * key and the undeclared path.  0: no call can carry it. */
  int readings;
};
/* Describe name (e.g. "account.id") under s (NULL: no schema). */
void schema_describe_arg(const struct schema *s, const char *name, struct schema_arg *out);

#endif

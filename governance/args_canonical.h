/* The one canonical form of a call's arguments.
 *
 * A rule is only as good as its agreement with what the tool receives.  So
 * the gate makes this form once per call, and the schema, the rules, the
 * repeat_limit hash, the approval request, the audit record and the tool
 * all get the same tree:
 *   - numbers carry canonical decimal text (640, 640.0, 6.4e2 and 6400e-1
 *     are all "640") and are compared exactly, digit by digit, never
 *     through a double;
 *   - strings and keys are valid UTF-8 (RFC 3629: no overlong forms, no
 *     surrogates, nothing past U+10FFFF), or the call is bad_request;
 *   - a dotted name denotes at most one value: a call having both a
 *     literal key "a.b" and an object at "a" is bad_request.
 * Object keys are already unique (json_parse rejects duplicates).
 */
#ifndef TOLLGATE_ARGS_CANONICAL_H
#define TOLLGATE_ARGS_CANONICAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/json.h"

/* Make the canonical form of v (the call's "args", or a policy operand).
 * Returns an owned tree, or NULL with *why set to an owned message naming
 * the argument and the fix, e.g. "args.note: not valid UTF-8 (byte 2 ...)". */
json_t *args_canonicalize(const json_t *v, char **why);

/* The same form without a copy when v already has it (the bridge's hot
 * path: most calls have nothing to rewrite).  Returns v itself, or a new
 * tree that is also stored in *owned (the caller frees *owned; NULL when
 * nothing was made), or NULL with *why set as args_canonicalize does. */
const json_t *args_canonical_form(const json_t *v, json_t **owned, char **why);

/* The canonical text of the JSON number text s[0..len), owned; NULL when
 * s is not a JSON number or its exponent is beyond +-100000. */
char *number_canonical(const char *s, size_t len);

/* Exact comparison of two JSON number texts (any spelling): <0, 0, >0. */
int number_compare(const char *a, const char *b);

/* True when the JSON number text has an integral value (6.4e2 does). */
bool number_is_integer(const char *s);

/* Equality on canonical trees: numbers by exact value, strings by bytes,
 * objects ignoring key order. */
bool args_equal(const json_t *a, const json_t *b);

/* The value a dotted name denotes in canonical args: "a.b" reaches a
 * literal key "a.b" or the key "b" of the object at "a" (at most one of
 * them exists in a canonical tree).  Borrowed; NULL when absent. */
const json_t *args_lookup(const json_t *args, const char *name);

#endif

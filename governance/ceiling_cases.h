/* Internal to the ceiling module (ceiling.c, ceiling_calls.c,
 * ceiling_values.c, ceiling_schema.c, ceiling_backend.c): the finite set of argument values
 * that stands for every value an argument can have. */
#ifndef TOLLGATE_CEILING_CASES_H
#define TOLLGATE_CEILING_CASES_H

#include <stdbool.h>
#include <stddef.h>

#include "governance/policy.h"
#include "base/json.h"

/* Where the constants compared with one argument come from. */
struct value_sources {
  const struct tool *tools[2];  /* the policy's and the ceiling's */
  const json_t *schemas[2];     /* their args schemas as written, or NULL */
};

/* Representatives of every region of the argument name under the rules
 * and schemas of both tools: one value per class that any comparison,
 * "in", "prefix", enum, minimum, maximum or maxLength can tell apart
 * (numbers: each threshold, and an integer and a non-integer in each gap
 * between them and beyond both ends; strings: each constant, each prefix,
 * and its shortest extension that gains no other prefix; every JSON type).
 * The first entry is NULL: the argument absent.  *exact becomes false when
 * some class could not be represented (a number beyond the exact range). */
json_t **ceiling_values(const struct value_sources *src, const char *name, size_t *n,
                        bool *exact, char **why);
void ceiling_values_free(json_t **v, size_t n);

/* The same for the value of one schema node alone (its enum, bounds and
 * maxLength), without the absent entry: the candidates for an example. */
json_t **ceiling_node_values(const json_t *node, size_t *n);

/* The schema nodes that the dotted name can reach in schema (the literal
 * key, or a split at any dot through declared properties); *n of them,
 * borrowed, in an owned array. */
const json_t **ceiling_schema_nodes(const json_t *schema, const char *name, size_t *n);

/* A value the schema node accepts (owned), or NULL when none of the
 * representatives of its own constants does. */
json_t *ceiling_schema_example(const json_t *node);

/* True when node accepts v (node NULL: anything).  v is canonical. */
bool ceiling_schema_accepts(const json_t *node, const json_t *v);

/* Structurally: does every value the policy's schema node accepts satisfy
 * the ceiling's node?  True is a proof; false means "not shown". */
bool ceiling_schema_within(const json_t *policy, const json_t *ceiling);

/* True when the node (recursively) uses "pattern" or "items": the
 * representatives then need not include an accepted value of a class. */
bool ceiling_schema_opaque(const json_t *node);

/* Compare one tool of the policy with the ceiling's tool of the same name
 * call by call (ceiling_calls.c), adding witnesses and undecided lines. */
struct ceiling_result;
void ceiling_check_calls(const struct tool *policy, const struct tool *ceiling,
                         struct ceiling_result *r);

/* Compare the policy tool's backend with the ceiling tool's, and every
 * MCP server the policy lists with the ceiling's of that name
 * (ceiling_backend.c). */
void ceiling_check_backend(const struct tool *policy, const struct tool *ceiling,
                           struct ceiling_result *r);
void ceiling_check_servers(const struct policy *policy, const struct policy *ceiling,
                           struct ceiling_result *r);

/* Two NULL-terminated argv (or NULL) equal, string by string. */
bool ceiling_same_argv(char **a, char **b);

/* A limit where -1 means none: a witness "FIELD: P in the policy, at most
 * C in the ceiling" unless p is at most c (ceiling.c). */
void ceiling_limit(struct ceiling_result *r, const char *tool, const char *field, long long p,
                   long long c);

/* Add a witness (args copied, may be NULL) or an undecided line to r
 * (ceiling.c). */
void ceiling_add_witness(struct ceiling_result *r, const char *tool, const json_t *args,
                         enum effect pe, enum effect ce, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
void ceiling_add_undecided(struct ceiling_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif

/* A list of policy problems, each with its line, column and field path.
 * Policy loading collects every problem instead of stopping at the first,
 * so `tollgate policy check` can report them all at once. */
#ifndef TOLLGATE_POLICY_ERRORS_H
#define TOLLGATE_POLICY_ERRORS_H

#include <stddef.h>

#include "base/json.h"

struct policy_errors {
  const char *file; /* borrowed: the policy path, for the messages */
  char **msgs;      /* owned: "FILE:LINE:COL: PATH: problem" */
  size_t len, cap;
};

/* Add "FILE:LINE:COL: PATH: <fmt>", positioned at v (NULL or a value built
 * in code: no position). */
void policy_error_add(struct policy_errors *e, const json_t *at,
                      const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* All messages joined with newlines (owned), or NULL when there are none. */
char *policy_errors_join(const struct policy_errors *e);
void policy_errors_free(struct policy_errors *e);

#endif

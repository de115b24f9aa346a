/* Where in a tool call's arguments a value is, for error messages. */
#ifndef TOLLGATE_GOVERNANCE_ARG_PATH_H
#define TOLLGATE_GOVERNANCE_ARG_PATH_H

#include <stddef.h>

/* One step from the arguments' root, kept on the walker's stack: a
 * member (key) or an array element (key NULL, index).  Rendered only
 * when a check fails, so a valid walk allocates nothing. */
struct arg_path {
  const struct arg_path *up; /* NULL: the arguments object itself */
  const char *key;
  size_t index;
};

/* "args", "args.a.b[2]", ...: a new string the caller frees. */
char *arg_path_render(const struct arg_path *at);

#endif

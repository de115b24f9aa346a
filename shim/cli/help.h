/* The verb table: name, function, usage, one-line summary.  main()
 * dispatches through it and `tollgate help [VERB]` prints from it, so the
 * help can never list a verb that does not exist. */
#ifndef TOLLGATE_HELP_H
#define TOLLGATE_HELP_H

#include <stdbool.h>
#include <stdio.h>

#include "shim/cli/commands.h"

struct verb {
  const char *name;
  cmd_fn fn;         /* NULL for help itself */
  bool needs_config; /* a broken host config stops this verb */
  const char *usage;
  const char *summary;
};

/* The entry for name, or NULL. */
const struct verb *help_find_verb(const char *name);

/* The whole help (verb NULL) or one verb's usage. */
void help_print(FILE *out, const char *verb);

#endif

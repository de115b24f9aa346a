/* Flag parsing with runc's (urfave/cli's) rules, so every argv that
 * containerd or a person gives runc means the same to tollgate:
 *   --name VALUE, --name=VALUE, -name VALUE, -n VALUE, -nVALUE are equal;
 *   booleans take no value (--name=true/false is accepted);
 *   parsing stops at the first argument that is not a flag, or after "--",
 *   so `exec ID sh -c ...` and `ps ID -ef` keep their trailing flags.
 */
#ifndef TOLLGATE_ARGS_H
#define TOLLGATE_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

enum opt_kind {
  OPT_BOOL,   /* target: bool * */
  OPT_STRING, /* target: const char ** (points into argv) */
  OPT_INT,    /* target: long *, a non-negative decimal */
  OPT_LIST,   /* target: struct strlist *, every occurrence appended */
  OPT_IGNORE, /* takes a value that tollgate accepts and drops */
  OPT_IGNORE_BOOL, /* a boolean tollgate accepts and drops */
};

/* A growable list of borrowed strings (the items point into argv). */
struct strlist {
  const char **items;
  size_t len;
};
void strlist_free(struct strlist *l); /* frees the array, not the strings */

struct opt {
  const char *name; /* long name without dashes: "bundle" */
  char short_name;  /* 'b', or 0 */
  enum opt_kind kind;
  void *target;
};

/* Parse argv[start..argc) against opts (terminated by a zeroed entry).
 * On success returns the index of the first positional argument.  An
 * unknown flag or a missing/invalid value is an error naming the flag and
 * `what` (the verb, or "tollgate" for global flags). */
int args_parse(const char *what, int argc, char **argv, int start,
               const struct opt *opts, tg_error **err);

/* The form of the read-only governance verbs (`calls ID`, `pending [ID]`):
 * at most one positional id and --format table|json, flags before or after
 * the id.  *id is NULL when none was given; *json is true for json.  The
 * id is only checked for presence here, not validated. */
int args_parse_id_and_format(const char *what, int argc, char **argv,
                             const char **id, bool *json, tg_error **err);

/* Parse a signal given by name ("KILL", "SIGKILL", "sigterm") or number.
 * Returns the number, or -1 with *err. */
int args_parse_signal(const char *s, tg_error **err);

#endif

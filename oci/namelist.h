/* A growable list of owned strings, the shape most profile fields take. */
#ifndef TOLLGATE_OCI_NAMELIST_H
#define TOLLGATE_OCI_NAMELIST_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/json.h"

struct namelist {
  char **v;
  size_t n;
};

/* Append a copy of s. */
void namelist_add(struct namelist *l, const char *s);
bool namelist_has(const struct namelist *l, const char *s);
/* true when every string of a is in b. */
bool namelist_subset(const struct namelist *a, const struct namelist *b);
void namelist_free(struct namelist *l);

/* Fill l from a JSON array of strings; what names the field in errors. */
int namelist_from_json(const json_t *arr, struct namelist *l, const char *what,
                      tg_error **err);

/* A JSON array of copies of l's strings, owned by the caller. */
json_t *namelist_to_json(const struct namelist *l);

/* true when the JSON array arr holds the string s. */
bool json_array_has_string(const json_t *arr, const char *s);

#endif

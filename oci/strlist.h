/* A growable list of owned strings, the shape most profile fields take. */
#ifndef TOLLGATE_OCI_STRLIST_H
#define TOLLGATE_OCI_STRLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "shim/error.h"
#include "shim/json.h"

struct strlist {
  char **v;
  size_t n;
};

/* Append a copy of s. */
void strlist_add(struct strlist *l, const char *s);
bool strlist_has(const struct strlist *l, const char *s);
/* true when every string of a is in b. */
bool strlist_subset(const struct strlist *a, const struct strlist *b);
void strlist_free(struct strlist *l);

/* Fill l from a JSON array of strings; what names the field in errors. */
int strlist_from_json(const json_t *arr, struct strlist *l, const char *what,
                      tg_error **err);

/* A JSON array of copies of l's strings, owned by the caller. */
json_t *strlist_to_json(const struct strlist *l);

/* true when the JSON array arr holds the string s. */
bool json_array_has_string(const json_t *arr, const char *s);

#endif

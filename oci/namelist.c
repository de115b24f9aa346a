#include "oci/namelist.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void namelist_add(struct namelist *l, const char *s) {
  l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
  l->v[l->n++] = xstrdup(s);
}

bool namelist_has(const struct namelist *l, const char *s) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0)
      return true;
  return false;
}

bool namelist_subset(const struct namelist *a, const struct namelist *b) {
  for (size_t i = 0; i < a->n; i++)
    if (!namelist_has(b, a->v[i]))
      return false;
  return true;
}

void namelist_free(struct namelist *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

int namelist_from_json(const json_t *arr, struct namelist *l, const char *what,
                      tg_error **err) {
  if (!json_is(arr, JSON_ARRAY))
    return tg_error_set(err, 0, "%s must be an array of strings", what);
  for (size_t i = 0; i < json_array_len(arr); i++) {
    const char *s = json_string_value(json_array_get(arr, i));
    if (s == NULL)
      return tg_error_set(err, 0, "%s[%zu] must be a string", what, i);
    if (!namelist_has(l, s))
      namelist_add(l, s);
  }
  return 0;
}

json_t *namelist_to_json(const struct namelist *l) {
  json_t *arr = json_new_array();
  for (size_t i = 0; i < l->n; i++)
    json_array_append(arr, json_new_string(l->v[i]));
  return arr;
}

bool json_array_has_string(const json_t *arr, const char *s) {
  for (size_t i = 0; i < json_array_len(arr); i++) {
    const char *v = json_string_value(json_array_get(arr, i));
    if (v && strcmp(v, s) == 0)
      return true;
  }
  return false;
}

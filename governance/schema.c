/* JSON Schema subset: compile once at policy load, validate per call. */
#include "governance/schema.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/arg_path.h"
#include "governance/args_canonical.h"
#include "base/util.h"

enum {
  T_NULL = 1 << 0,
  T_BOOLEAN = 1 << 1,
  T_INTEGER = 1 << 2,
  T_NUMBER = 1 << 3,
  T_STRING = 1 << 4,
  T_ARRAY = 1 << 5,
  T_OBJECT = 1 << 6,
};

struct property {
  char *name;
  struct schema *schema;
};

struct schema {
  unsigned types; /* 0: any type */
  struct property *props;
  size_t nprops;
  char **required;
  size_t nrequired;
  bool no_additional;
  struct schema *items;
  json_t *enum_values; /* owned copy, or NULL */
  char *min, *max; /* canonical number texts, or NULL: compared exactly */
  long long max_length; /* -1: none */
  regex_t *pattern;
  char *pattern_src;
};

static const struct {
  const char *name;
  unsigned bit;
} type_names[] = {
    {"null", T_NULL},     {"boolean", T_BOOLEAN}, {"integer", T_INTEGER},
    {"number", T_NUMBER}, {"string", T_STRING},   {"array", T_ARRAY},
    {"object", T_OBJECT},
};

static unsigned type_bit(const char *name) {
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
    if (strcmp(type_names[i].name, name) == 0)
      return type_names[i].bit;
  return 0;
}

static char *subpath(const char *path, const char *key) {
  return xasprintf("%s.%s", path, key);
}

static void parse_types(struct schema *s, const json_t *v, const char *path,
                        struct policy_errors *errs, int *nerr) {
  cleanup_free char *p = subpath(path, "type");
  if (json_is(v, JSON_STRING)) {
    unsigned b = type_bit(json_string_value(v));
    if (b == 0) {
      policy_error_add(errs, v, p,
                       "unknown type \"%s\"; use one of null, boolean, integer, number, string, array, object",
                       json_string_value(v));
      (*nerr)++;
    }
    s->types |= b;
    return;
  }
  if (json_is(v, JSON_ARRAY) && json_array_len(v) > 0) {
    for (size_t i = 0; i < json_array_len(v); i++) {
      const json_t *t = json_array_get(v, i);
      unsigned b = json_is(t, JSON_STRING) ? type_bit(json_string_value(t)) : 0;
      if (b == 0) {
        policy_error_add(errs, t, p, "item %zu is not a type name; use null, boolean, integer, number, string, array or object", i);
        (*nerr)++;
      }
      s->types |= b;
    }
    return;
  }
  policy_error_add(errs, v, p, "must be a type name or a non-empty array of type names");
  (*nerr)++;
}

static struct schema *compile(const json_t *src, const char *path, bool lenient,
                              struct policy_errors *errs, int *nerr) {
  if (!json_is(src, JSON_OBJECT)) {
    policy_error_add(errs, src, path, "a schema must be a JSON object");
    (*nerr)++;
    return NULL;
  }
  struct schema *s = xcalloc(1, sizeof *s);
  s->max_length = -1;
  for (size_t i = 0; i < src->u.object.len; i++) {
    const char *k = src->u.object.keys[i];
    const json_t *v = src->u.object.values[i];
    cleanup_free char *p = subpath(path, k);
    if (strcmp(k, "type") == 0) {
      parse_types(s, v, path, errs, nerr);
    } else if (strcmp(k, "properties") == 0) {
      if (!json_is(v, JSON_OBJECT)) {
        policy_error_add(errs, v, p, "must be an object mapping property names to schemas");
        (*nerr)++;
        continue;
      }
      s->props = xcalloc(v->u.object.len, sizeof *s->props);
      for (size_t j = 0; j < v->u.object.len; j++) {
        cleanup_free char *pp = subpath(p, v->u.object.keys[j]);
        struct schema *c = compile(v->u.object.values[j], pp, lenient, errs, nerr);
        if (c == NULL)
          continue;
        s->props[s->nprops].name = xstrdup(v->u.object.keys[j]);
        s->props[s->nprops++].schema = c;
      }
    } else if (strcmp(k, "required") == 0) {
      if (!json_is(v, JSON_ARRAY)) {
        policy_error_add(errs, v, p, "must be an array of property names");
        (*nerr)++;
        continue;
      }
      s->required = xcalloc(json_array_len(v), sizeof *s->required);
      for (size_t j = 0; j < json_array_len(v); j++) {
        const json_t *r = json_array_get(v, j);
        if (!json_is(r, JSON_STRING)) {
          policy_error_add(errs, r, p, "item %zu must be a property name (a string)", j);
          (*nerr)++;
          continue;
        }
        s->required[s->nrequired++] = xstrdup(json_string_value(r));
      }
    } else if (strcmp(k, "additionalProperties") == 0) {
      if (json_is(v, JSON_BOOL))
        s->no_additional = !v->u.boolean;
      else if (!lenient) {
        policy_error_add(errs, v, p, "must be true or false (schemas here are not supported)");
        (*nerr)++;
      }
    } else if (strcmp(k, "items") == 0) {
      s->items = compile(v, p, lenient, errs, nerr);
    } else if (strcmp(k, "enum") == 0) {
      if (!json_is(v, JSON_ARRAY) || json_array_len(v) == 0) {
        policy_error_add(errs, v, p, "must be a non-empty array of allowed values");
        (*nerr)++;
        continue;
      }
      /* Canonical, as the arguments will be: exact numbers, UTF-8. */
      char *why = NULL;
      s->enum_values = args_canonicalize(v, &why);
      if (s->enum_values == NULL) {
        policy_error_add(errs, v, p, "%s", why);
        free(why);
        (*nerr)++;
      }
    } else if (strcmp(k, "minimum") == 0 || strcmp(k, "maximum") == 0) {
      if (!json_is(v, JSON_NUMBER)) {
        policy_error_add(errs, v, p, "must be a number");
        (*nerr)++;
        continue;
      }
      char **bound = k[1] == 'i' ? &s->min : &s->max;
      free(*bound);
      *bound = number_canonical(v->u.number.text, strlen(v->u.number.text));
      if (*bound == NULL) {
        policy_error_add(errs, v, p, "the number is out of range");
        (*nerr)++;
      }
    } else if (strcmp(k, "maxLength") == 0) {
      long long n;
      if (!json_integer_value(v, &n) || n < 0) {
        policy_error_add(errs, v, p, "must be a non-negative integer");
        (*nerr)++;
        continue;
      }
      s->max_length = n;
    } else if (strcmp(k, "pattern") == 0) {
      if (!json_is(v, JSON_STRING)) {
        policy_error_add(errs, v, p, "must be a string holding a POSIX extended regular expression");
        (*nerr)++;
        continue;
      }
      regex_t *re = xmalloc(sizeof *re);
      int rc = regcomp(re, json_string_value(v), REG_EXTENDED | REG_NOSUB);
      if (rc != 0) {
        char buf[256];
        regerror(rc, re, buf, sizeof buf);
        free(re);
        if (!lenient) {
          policy_error_add(errs, v, p, "invalid POSIX extended regular expression: %s", buf);
          (*nerr)++;
        }
        continue;
      }
      s->pattern = re;
      s->pattern_src = xstrdup(json_string_value(v));
    } else if (strcmp(k, "title") == 0 || strcmp(k, "description") == 0 ||
               strcmp(k, "default") == 0 || strcmp(k, "examples") == 0 ||
               strcmp(k, "$schema") == 0) {
      /* annotations: no effect on validation */
    } else if (!lenient) {
      policy_error_add(errs, v, p,
                       "unsupported schema keyword \"%s\"; supported: type, properties, required, additionalProperties, items, enum, minimum, maximum, maxLength, pattern",
                       k);
      (*nerr)++;
    }
  }
  return s;
}

struct schema *schema_compile(const json_t *src, const char *path, bool lenient,
                              struct policy_errors *errs) {
  int nerr = 0;
  struct schema *s = compile(src, path, lenient, errs, &nerr);
  if (nerr > 0) {
    schema_free(s);
    return NULL;
  }
  return s;
}

void schema_free(struct schema *s) {
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->nprops; i++) {
    free(s->props[i].name);
    schema_free(s->props[i].schema);
  }
  free(s->props);
  for (size_t i = 0; i < s->nrequired; i++)
    free(s->required[i]);
  free(s->required);
  schema_free(s->items);
  json_free(s->enum_values);
  free(s->min);
  free(s->max);
  if (s->pattern) {
    regfree(s->pattern);
    free(s->pattern);
  }
  free(s->pattern_src);
  free(s);
}

static size_t utf8_length(const char *s, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80)
      n++;
  return n;
}

static bool matches_type(unsigned types, const json_t *v) {
  if (types == 0)
    return true;
  switch (v->type) {
  case JSON_NULL: return types & T_NULL;
  case JSON_BOOL: return types & T_BOOLEAN;
  case JSON_NUMBER: {
    if (types & T_NUMBER)
      return true;
    return (types & T_INTEGER) && number_is_integer(v->u.number.text);
  }
  case JSON_STRING: return types & T_STRING;
  case JSON_ARRAY: return types & T_ARRAY;
  case JSON_OBJECT: return types & T_OBJECT;
  }
  return false;
}

static char *type_list(unsigned types) {
  char buf[128] = "";
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
    if (types & type_names[i].bit) {
      if (buf[0])
        strcat(buf, " or ");
      strcat(buf, type_names[i].name);
    }
  return xstrdup(buf);
}

static bool validate(const struct schema *s, const json_t *v, const struct arg_path *at,
                     char **why) {
  if (!matches_type(s->types, v)) {
    cleanup_free char *want = type_list(s->types);
    cleanup_free char *path = arg_path_render(at);
    *why = xasprintf("%s: must be %s, not %s", path, want,
                     v->type != JSON_NUMBER ? json_type_name(v->type)
                     : matches_type(T_INTEGER, v) ? "an integer" : "a non-integer number");
    return false;
  }
  if (s->enum_values) {
    bool found = false;
    for (size_t i = 0; i < json_array_len(s->enum_values) && !found; i++)
      found = args_equal(json_array_get(s->enum_values, i), v);
    if (!found) {
      cleanup_free char *allowed = json_dump(s->enum_values, false, NULL);
      cleanup_free char *path = arg_path_render(at);
      *why = xasprintf("%s: must be one of %s", path, allowed);
      return false;
    }
  }
  if (v->type == JSON_NUMBER) {
    if (s->min && number_compare(v->u.number.text, s->min) < 0) {
      cleanup_free char *path = arg_path_render(at);
      *why = xasprintf("%s: %s is less than the minimum %s", path, v->u.number.text, s->min);
      return false;
    }
    if (s->max && number_compare(v->u.number.text, s->max) > 0) {
      cleanup_free char *path = arg_path_render(at);
      *why = xasprintf("%s: %s is greater than the maximum %s", path, v->u.number.text, s->max);
      return false;
    }
  }
  if (v->type == JSON_STRING) {
    if (s->max_length >= 0 &&
        utf8_length(v->u.string.s, v->u.string.len) > (size_t)s->max_length) {
      cleanup_free char *path = arg_path_render(at);
      *why = xasprintf("%s: longer than maxLength %lld", path, s->max_length);
      return false;
    }
    if (s->pattern) {
      /* A string with an embedded NUL cannot be matched honestly by
       * regexec, so it never matches a pattern. */
      if (strlen(v->u.string.s) != v->u.string.len ||
          regexec(s->pattern, v->u.string.s, 0, NULL, 0) != 0) {
        cleanup_free char *path = arg_path_render(at);
        *why = xasprintf("%s: does not match the pattern %s", path, s->pattern_src);
        return false;
      }
    }
  }
  if (v->type == JSON_OBJECT) {
    for (size_t i = 0; i < s->nrequired; i++)
      if (json_object_get(v, s->required[i]) == NULL) {
        cleanup_free char *path = arg_path_render(at);
        *why = xasprintf("%s: missing required property \"%s\"", path, s->required[i]);
        return false;
      }
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      const struct schema *ps = NULL;
      for (size_t j = 0; j < s->nprops; j++)
        if (strcmp(s->props[j].name, k) == 0) {
          ps = s->props[j].schema;
          break;
        }
      if (ps == NULL) {
        if (s->no_additional) {
          cleanup_free char *path = arg_path_render(at);
          *why = xasprintf("%s: unexpected property \"%s\"", path, k);
          return false;
        }
        continue;
      }
      struct arg_path here = {.up = at, .key = k};
      if (!validate(ps, v->u.object.values[i], &here, why))
        return false;
    }
  }
  if (v->type == JSON_ARRAY && s->items) {
    for (size_t i = 0; i < v->u.array.len; i++) {
      struct arg_path here = {.up = at, .index = i};
      if (!validate(s->items, v->u.array.items[i], &here, why))
        return false;
    }
  }
  return true;
}

bool schema_validate(const struct schema *s, const json_t *v, char **why) {
  *why = NULL;
  if (s == NULL)
    return true;
  return validate(s, v, NULL, why);
}

/* ---- what a schema says about a rule's argument (policy check) ---- */

static void describe(const struct schema *s, const char *name, size_t len,
                     struct schema_arg *out) {
  if (s != NULL && s->types != 0 && !(s->types & T_OBJECT))
    return; /* not an object: nothing inside it */
  bool open = s == NULL || !s->no_additional;
  bool declared_literal = false;
  for (size_t i = 0; s && i < s->nprops; i++) {
    const struct property *p = &s->props[i];
    size_t pl = strlen(p->name);
    if (pl == len && memcmp(p->name, name, len) == 0) {
      declared_literal = true;
      unsigned t = p->schema ? p->schema->types : 0;
      out->readings++;
      out->only_numbers &= t != 0 && (t & ~(unsigned)(T_NUMBER | T_INTEGER)) == 0;
      out->only_strings &= t == T_STRING;
      out->patterned &= p->schema != NULL && p->schema->pattern != NULL;
    } else if (pl < len && name[pl] == '.' && memcmp(p->name, name, pl) == 0) {
      describe(p->schema, name + pl + 1, len - pl - 1, out);
    }
  }
  if (open) {
    /* Undeclared keys are any type: the literal one, and a path through an
     * undeclared object when the name has a dot. */
    if (!declared_literal) {
      out->readings++;
      out->only_numbers = out->only_strings = out->patterned = false;
    }
    for (size_t d = 0; d < len; d++) {
      if (name[d] != '.')
        continue;
      bool declared = false;
      for (size_t i = 0; s && i < s->nprops && !declared; i++)
        declared = strlen(s->props[i].name) == d && memcmp(s->props[i].name, name, d) == 0;
      if (!declared) {
        out->readings++;
        out->only_numbers = out->only_strings = out->patterned = false;
        break;
      }
    }
  }
}

void schema_describe_arg(const struct schema *s, const char *name, struct schema_arg *out) {
  out->only_numbers = out->only_strings = out->patterned = true;
  out->readings = 0;
  describe(s, name, strlen(name), out);
  if (out->readings == 0)
    out->only_numbers = out->only_strings = out->patterned = false;
}

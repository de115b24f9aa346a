/* Schemas under a ceiling: which nodes an argument reaches, an accepted
 * example, and a structural proof that one schema is at least as strict as
 * another (ceiling_cases.h).  Schemas are read as written (the policy's
 * args_source); validation goes through schema.c itself. */
#include "governance/ceiling_cases.h"

#include <stdlib.h>
#include <string.h>

#include "governance/args_canonical.h"
#include "governance/schema.h"
#include "base/util.h"

static void nodes_at(const json_t *node, const char *name, size_t len, const json_t ***out,
                     size_t *n) {
  const json_t *props = json_object_get(node, "properties");
  if (!json_is(props, JSON_OBJECT))
    return;
  for (size_t i = 0; i < props->u.object.len; i++) {
    const char *k = props->u.object.keys[i];
    size_t kl = strlen(k);
    const json_t *sub = props->u.object.values[i];
    if (kl == len && memcmp(k, name, len) == 0) {
      *out = xrealloc(*out, (*n + 1) * sizeof **out);
      (*out)[(*n)++] = sub;
    } else if (kl < len && name[kl] == '.' && memcmp(k, name, kl) == 0) {
      nodes_at(sub, name + kl + 1, len - kl - 1, out, n);
    }
  }
}

const json_t **ceiling_schema_nodes(const json_t *schema, const char *name, size_t *n) {
  const json_t **out = NULL;
  *n = 0;
  if (schema != NULL)
    nodes_at(schema, name, strlen(name), &out, n);
  return out;
}

static struct schema *compiled(const json_t *node) {
  struct policy_errors errs = {.file = "ceiling"};
  struct schema *s = schema_compile(node, "args", false, &errs);
  policy_errors_free(&errs);
  return s;
}

/* s NULL: node did not compile (not reached for a policy's own, checked,
 * schema), which accepts nothing here. */
static bool accepts(const struct schema *s, const json_t *v) {
  if (s == NULL)
    return false;
  char *why = NULL;
  bool ok = schema_validate(s, v, &why);
  free(why);
  return ok;
}

bool ceiling_schema_accepts(const json_t *node, const json_t *v) {
  if (node == NULL)
    return true;
  struct schema *s = compiled(node);
  bool ok = accepts(s, v);
  schema_free(s);
  return ok;
}

/* An object for node with its required members filled by examples. */
static json_t *filled_object(const json_t *node, unsigned depth) {
  json_t *o = json_new_object();
  const json_t *req = json_object_get(node, "required");
  const json_t *props = json_object_get(node, "properties");
  for (size_t i = 0; i < json_array_len(req); i++) {
    const char *k = json_string_value(json_array_get(req, i));
    if (k == NULL || json_object_get(o, k) != NULL)
      continue;
    const json_t *sub = json_object_get(props, k);
    json_t *ex = NULL;
    if (sub != NULL && depth < 32) {
      ex = ceiling_schema_example(sub);
    }
    json_object_set(o, k, ex ? ex : json_new_null());
  }
  return o;
}

static json_t *example(const json_t *node, unsigned depth) {
  if (node == NULL)
    return json_new_null();
  size_t n = 0;
  json_t **vals = ceiling_node_values(node, &n);
  struct schema *s = compiled(node);
  json_t *found = NULL;
  for (size_t i = 0; i < n && found == NULL; i++) {
    if (vals[i] == NULL)
      continue;
    cleanup_json json_t *candidate =
        json_is(vals[i], JSON_OBJECT) ? filled_object(node, depth + 1) : json_copy(vals[i]);
    if (accepts(s, candidate))
      found = json_copy(candidate);
  }
  schema_free(s);
  ceiling_values_free(vals, n);
  return found;
}

json_t *ceiling_schema_example(const json_t *node) { return example(node, 0); }

bool ceiling_schema_opaque(const json_t *node) {
  if (json_is(node, JSON_ARRAY)) {
    for (size_t i = 0; i < json_array_len(node); i++)
      if (ceiling_schema_opaque(json_array_get(node, i)))
        return true;
    return false;
  }
  if (!json_is(node, JSON_OBJECT))
    return false;
  for (size_t i = 0; i < node->u.object.len; i++) {
    const char *k = node->u.object.keys[i];
    if (strcmp(k, "pattern") == 0 || strcmp(k, "items") == 0 ||
        ceiling_schema_opaque(node->u.object.values[i]))
      return true;
  }
  return false;
}

/* ---- structural containment ---- */

enum { T_NULL = 1, T_BOOL = 2, T_INT = 4, T_NUM = 8, T_STR = 16, T_ARR = 32, T_OBJ = 64,
       T_ALL = 127 };

static unsigned types_of(const json_t *node) {
  static const char *const names[] = {"null", "boolean", "integer", "number",
                                      "string", "array", "object"};
  const json_t *t = json_object_get(node, "type");
  if (t == NULL)
    return T_ALL;
  unsigned bits = 0;
  for (size_t i = 0; i < 7; i++) {
    if (json_is(t, JSON_STRING) && strcmp(json_string_value(t), names[i]) == 0)
      bits |= 1u << i;
    for (size_t j = 0; json_is(t, JSON_ARRAY) && j < json_array_len(t); j++) {
      const char *s = json_string_value(json_array_get(t, j));
      if (s && strcmp(s, names[i]) == 0)
        bits |= 1u << i;
    }
  }
  return bits;
}

/* Does the node refuse anything at all? */
static bool constrains(const json_t *node) {
  if (node == NULL)
    return false;
  static const char *const keys[] = {"type", "enum", "minimum", "maximum",
                                     "maxLength", "pattern", NULL};
  for (size_t i = 0; keys[i]; i++)
    if (json_object_get(node, keys[i]) != NULL)
      return true;
  if (json_array_len(json_object_get(node, "required")) > 0)
    return true;
  const json_t *ap = json_object_get(node, "additionalProperties");
  if (json_is(ap, JSON_BOOL) && !ap->u.boolean)
    return true;
  if (constrains(json_object_get(node, "items")))
    return true;
  const json_t *props = json_object_get(node, "properties");
  for (size_t i = 0; json_is(props, JSON_OBJECT) && i < props->u.object.len; i++)
    if (constrains(props->u.object.values[i]))
      return true;
  return false;
}

static bool closed(const json_t *node) {
  const json_t *ap = json_object_get(node, "additionalProperties");
  return json_is(ap, JSON_BOOL) && !ap->u.boolean;
}

static bool listed(const json_t *arr, const char *s) {
  for (size_t i = 0; i < json_array_len(arr); i++)
    if (strcmp(json_string_value(json_array_get(arr, i)) ?: "", s) == 0)
      return true;
  return false;
}

/* p's number bound at least as tight as c's: for minimum (sign 1) p >= c. */
static bool bound_within(const json_t *p, const json_t *c, int sign) {
  if (c == NULL)
    return true;
  if (p == NULL)
    return false;
  return number_compare(p->u.number.text, c->u.number.text) * sign >= 0;
}

static bool objects_within(const json_t *p, const json_t *c) {
  const json_t *creq = json_object_get(c, "required");
  const json_t *preq = json_object_get(p, "required");
  for (size_t i = 0; i < json_array_len(creq); i++)
    if (!listed(preq, json_string_value(json_array_get(creq, i)) ?: ""))
      return false;
  const json_t *pp = json_object_get(p, "properties"), *cp = json_object_get(c, "properties");
  /* Every key the policy accepts: declared ones checked against the
   * ceiling's schema for that key (or the ceiling's closure); undeclared
   * ones, when the policy is open, are any value. */
  for (size_t i = 0; json_is(pp, JSON_OBJECT) && i < pp->u.object.len; i++) {
    const json_t *csub = json_object_get(cp, pp->u.object.keys[i]);
    if (csub == NULL ? closed(c) : !ceiling_schema_within(pp->u.object.values[i], csub))
      return false;
  }
  if (!closed(p)) {
    if (closed(c))
      return false;
    for (size_t i = 0; json_is(cp, JSON_OBJECT) && i < cp->u.object.len; i++)
      if (json_object_get(pp, cp->u.object.keys[i]) == NULL && constrains(cp->u.object.values[i]))
        return false;
  }
  return true;
}

bool ceiling_schema_within(const json_t *p, const json_t *c) {
  if (!constrains(c))
    return true;
  if (p == NULL)
    return false;
  if (json_equal(p, c))
    return true;
  const json_t *penum = json_object_get(p, "enum");
  if (json_is(penum, JSON_ARRAY)) {
    /* The policy accepts at most these values: decided one by one. */
    char *why = NULL;
    cleanup_json json_t *members = args_canonicalize(penum, &why);
    free(why);
    struct schema *ps = compiled(p), *cs = compiled(c);
    bool ok = members != NULL;
    for (size_t i = 0; ok && i < json_array_len(members); i++) {
      const json_t *m = json_array_get(members, i);
      ok = !(accepts(ps, m) && !accepts(cs, m));
    }
    schema_free(ps);
    schema_free(cs);
    return ok;
  }
  if (json_object_get(c, "enum") != NULL)
    return false;
  unsigned tp = types_of(p), tc = types_of(c);
  for (unsigned b = 1; b < T_ALL; b <<= 1)
    if ((tp & b) && !(tc & b) && !(b == T_INT && (tc & T_NUM)))
      return false;
  if (tp & (T_INT | T_NUM)) {
    if (!bound_within(json_object_get(p, "minimum"), json_object_get(c, "minimum"), 1) ||
        !bound_within(json_object_get(p, "maximum"), json_object_get(c, "maximum"), -1))
      return false;
  }
  if (tp & T_STR) {
    long long pl, cl;
    if (json_integer_value(json_object_get(c, "maxLength"), &cl) &&
        !(json_integer_value(json_object_get(p, "maxLength"), &pl) && pl <= cl))
      return false;
    const json_t *cpat = json_object_get(c, "pattern");
    if (cpat != NULL && !json_equal(cpat, json_object_get(p, "pattern")))
      return false;
  }
  if ((tp & T_ARR) && constrains(json_object_get(c, "items")) &&
      !ceiling_schema_within(json_object_get(p, "items"), json_object_get(c, "items")))
    return false;
  if ((tp & T_OBJ) && !objects_within(p, c))
    return false;
  return true;
}

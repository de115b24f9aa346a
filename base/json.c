/* The JSON tree (construction, access, equality) and json_dump, its
 * serialization through yajl's generator.  The parser is json_parse.c, the
 * direct serializer without a tree json_write.c. */
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "base/utf8.h"
#include "base/util.h"

/* ---- construction ---- */

static json_t *json_alloc(enum json_type t) {
  json_t *v = xcalloc(1, sizeof *v);
  v->type = t;
  return v;
}

json_t *json_new_null(void) { return json_alloc(JSON_NULL); }

json_t *json_new_bool(bool b) {
  json_t *v = json_alloc(JSON_BOOL);
  v->u.boolean = b;
  return v;
}

json_t *json_new_number(double d) {
  json_t *v = json_alloc(JSON_NUMBER);
  v->u.number.value = d;
  if (isfinite(d) && d == floor(d) && fabs(d) < 9.007199254740992e15)
    v->u.number.text = xasprintf("%lld", (long long)d);
  else if (isfinite(d))
    v->u.number.text = xasprintf("%.17g", d);
  else
    v->u.number.text = xstrdup("0"); /* JSON has no NaN or infinity */
  return v;
}

json_t *json_new_integer(long long i) {
  json_t *v = json_alloc(JSON_NUMBER);
  v->u.number.value = (double)i;
  v->u.number.text = xasprintf("%lld", i);
  return v;
}

json_t *json_new_number_text(const char *text, size_t len) {
  json_t *v = json_alloc(JSON_NUMBER);
  v->u.number.text = xstrndup(text, len);
  v->u.number.value = strtod(v->u.number.text, NULL);
  return v;
}

json_t *json_new_stringn(const char *s, size_t len) {
  json_t *v = json_alloc(JSON_STRING);
  v->u.string.s = xmalloc(len + 1);
  memcpy(v->u.string.s, s, len);
  v->u.string.s[len] = '\0';
  v->u.string.len = len;
  return v;
}

json_t *json_new_string(const char *s) {
  return json_new_stringn(s, strlen(s));
}

json_t *json_new_array(void) { return json_alloc(JSON_ARRAY); }
json_t *json_new_object(void) { return json_alloc(JSON_OBJECT); }

void json_free(json_t *v) {
  if (v == NULL)
    return;
  /* Iterative over arrays/objects would be safer for very deep trees; the
   * parser's depth limit bounds the recursion for parsed input. */
  switch (v->type) {
  case JSON_NUMBER:
    free(v->u.number.text);
    break;
  case JSON_STRING:
    free(v->u.string.s);
    break;
  case JSON_ARRAY:
    for (size_t i = 0; i < v->u.array.len; i++)
      json_free(v->u.array.items[i]);
    free(v->u.array.items);
    break;
  case JSON_OBJECT:
    for (size_t i = 0; i < v->u.object.len; i++) {
      free(v->u.object.keys[i]);
      json_free(v->u.object.values[i]);
    }
    free(v->u.object.keys);
    free(v->u.object.values);
    break;
  default:
    break;
  }
  free(v);
}

void json_freep(json_t **v) {
  if (v) {
    json_free(*v);
    *v = NULL;
  }
}

json_t *json_copy(const json_t *v) {
  if (v == NULL)
    return NULL;
  json_t *c = json_alloc(v->type);
  c->line = v->line;
  c->col = v->col;
  switch (v->type) {
  case JSON_BOOL:
    c->u.boolean = v->u.boolean;
    break;
  case JSON_NUMBER:
    c->u.number.value = v->u.number.value;
    c->u.number.text = xstrdup(v->u.number.text);
    break;
  case JSON_STRING:
    free(c);
    c = json_new_stringn(v->u.string.s, v->u.string.len);
    c->line = v->line;
    c->col = v->col;
    break;
  case JSON_ARRAY:
    for (size_t i = 0; i < v->u.array.len; i++)
      json_array_append(c, json_copy(v->u.array.items[i]));
    break;
  case JSON_OBJECT:
    for (size_t i = 0; i < v->u.object.len; i++)
      json_object_set(c, v->u.object.keys[i], json_copy(v->u.object.values[i]));
    break;
  default:
    break;
  }
  return c;
}

/* ---- access ---- */

static ssize_t object_index(const json_t *v, const char *key) {
  if (v == NULL || v->type != JSON_OBJECT)
    return -1;
  for (size_t i = 0; i < v->u.object.len; i++)
    if (strcmp(v->u.object.keys[i], key) == 0)
      return (ssize_t)i;
  return -1;
}

json_t *json_object_get(const json_t *v, const char *key) {
  ssize_t i = object_index(v, key);
  return i < 0 ? NULL : v->u.object.values[i];
}

void json_object_set(json_t *obj, const char *key, json_t *value) {
  if (obj == NULL || obj->type != JSON_OBJECT) {
    json_free(value);
    return;
  }
  ssize_t i = object_index(obj, key);
  if (i >= 0) {
    json_free(obj->u.object.values[i]);
    obj->u.object.values[i] = value;
    return;
  }
  if (obj->u.object.len == obj->u.object.cap) {
    obj->u.object.cap = obj->u.object.cap ? obj->u.object.cap * 2 : 8;
    obj->u.object.keys =
        xrealloc(obj->u.object.keys, obj->u.object.cap * sizeof(char *));
    obj->u.object.values =
        xrealloc(obj->u.object.values, obj->u.object.cap * sizeof(json_t *));
  }
  obj->u.object.keys[obj->u.object.len] = xstrdup(key);
  obj->u.object.values[obj->u.object.len] = value;
  obj->u.object.len++;
}

bool json_object_del(json_t *obj, const char *key) {
  ssize_t i = object_index(obj, key);
  if (i < 0)
    return false;
  free(obj->u.object.keys[i]);
  json_free(obj->u.object.values[i]);
  size_t rest = obj->u.object.len - (size_t)i - 1;
  memmove(&obj->u.object.keys[i], &obj->u.object.keys[i + 1],
          rest * sizeof(char *));
  memmove(&obj->u.object.values[i], &obj->u.object.values[i + 1],
          rest * sizeof(json_t *));
  obj->u.object.len--;
  return true;
}

static json_t *ensure(json_t *obj, const char *key, enum json_type t) {
  json_t *c = json_object_get(obj, key);
  if (c && c->type == t)
    return c;
  c = json_alloc(t);
  json_object_set(obj, key, c);
  return c;
}

json_t *json_object_ensure_object(json_t *obj, const char *key) {
  return ensure(obj, key, JSON_OBJECT);
}

json_t *json_object_ensure_array(json_t *obj, const char *key) {
  return ensure(obj, key, JSON_ARRAY);
}

json_t *json_get_path(const json_t *v, const char *dotted) {
  char key[256];
  const char *p = dotted;
  while (v && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof key)
      return NULL;
    memcpy(key, p, n);
    key[n] = '\0';
    v = json_object_get(v, key);
    p = dot ? dot + 1 : p + n;
  }
  return (json_t *)v;
}

size_t json_array_len(const json_t *v) {
  return v && v->type == JSON_ARRAY ? v->u.array.len : 0;
}

json_t *json_array_get(const json_t *v, size_t i) {
  return i < json_array_len(v) ? v->u.array.items[i] : NULL;
}

void json_array_append(json_t *arr, json_t *value) {
  if (arr == NULL || arr->type != JSON_ARRAY) {
    json_free(value);
    return;
  }
  if (arr->u.array.len == arr->u.array.cap) {
    arr->u.array.cap = arr->u.array.cap ? arr->u.array.cap * 2 : 8;
    arr->u.array.items =
        xrealloc(arr->u.array.items, arr->u.array.cap * sizeof(json_t *));
  }
  arr->u.array.items[arr->u.array.len++] = value;
}

void json_array_remove(json_t *arr, size_t i) {
  if (i >= json_array_len(arr))
    return;
  json_free(arr->u.array.items[i]);
  memmove(&arr->u.array.items[i], &arr->u.array.items[i + 1],
          (arr->u.array.len - i - 1) * sizeof(json_t *));
  arr->u.array.len--;
}

const char *json_string_value(const json_t *v) {
  return v && v->type == JSON_STRING ? v->u.string.s : NULL;
}

bool json_is_true(const json_t *v) {
  return v && v->type == JSON_BOOL && v->u.boolean;
}

bool json_is(const json_t *v, enum json_type t) { return v && v->type == t; }

bool json_integer_value(const json_t *v, long long *out) {
  if (v == NULL || v->type != JSON_NUMBER)
    return false;
  double d = v->u.number.value;
  if (!isfinite(d) || d != floor(d) || fabs(d) > 9.2e18)
    return false;
  /* Prefer the exact text for large integers that a double would round. */
  char *end = NULL;
  long long i = strtoll(v->u.number.text, &end, 10);
  if (end && *end == '\0') {
    *out = i;
    return true;
  }
  *out = (long long)d;
  return true;
}

const char *json_type_name(enum json_type t) {
  static const char *names[] = {"null",   "boolean", "number",
                                "string", "array",   "object"};
  return t <= JSON_OBJECT ? names[t] : "unknown";
}


bool json_equal_with(const json_t *a, const json_t *b,
                     bool (*same_number)(const json_t *, const json_t *)) {
  if (a == NULL || b == NULL)
    return a == b;
  if (a->type != b->type)
    return false;
  switch (a->type) {
  case JSON_NULL:
    return true;
  case JSON_BOOL:
    return a->u.boolean == b->u.boolean;
  case JSON_NUMBER:
    return same_number ? same_number(a, b) : a->u.number.value == b->u.number.value;
  case JSON_STRING:
    return a->u.string.len == b->u.string.len &&
           memcmp(a->u.string.s, b->u.string.s, a->u.string.len) == 0;
  case JSON_ARRAY:
    if (a->u.array.len != b->u.array.len)
      return false;
    for (size_t i = 0; i < a->u.array.len; i++)
      if (!json_equal_with(a->u.array.items[i], b->u.array.items[i], same_number))
        return false;
    return true;
  case JSON_OBJECT:
    if (a->u.object.len != b->u.object.len)
      return false;
    for (size_t i = 0; i < a->u.object.len; i++)
      if (!json_equal_with(a->u.object.values[i],
                           json_object_get(b, a->u.object.keys[i]), same_number))
        return false;
    return true;
  }
  return false;
}

bool json_equal(const json_t *a, const json_t *b) { return json_equal_with(a, b, NULL); }

/* ---- generation ---- */

/* Every string and key is checked with base/utf8.h before yajl sees it,
 * and yajl's own check (yajl_gen_validate_utf8) is off: it looks only at
 * the structure (so overlong forms and surrogates went through to strict
 * readers), and it refused the rest without writing anything, which an
 * unchecked generator turned into a string missing from an array or an
 * object's next key written as this key's value. */
static int gen_string(yajl_gen g, const char *s, size_t len) {
  if (utf8_check(s, len) != len)
    return -1;
  return yajl_gen_string(g, (const unsigned char *)s, len) == yajl_gen_status_ok ? 0 : -1;
}

static int gen_value(yajl_gen g, const json_t *v) {
  yajl_gen_status st = yajl_gen_status_ok;
  switch (v->type) {
  case JSON_NULL:
    st = yajl_gen_null(g);
    break;
  case JSON_BOOL:
    st = yajl_gen_bool(g, v->u.boolean);
    break;
  case JSON_NUMBER:
    st = yajl_gen_number(g, v->u.number.text, strlen(v->u.number.text));
    break;
  case JSON_STRING:
    return gen_string(g, v->u.string.s, v->u.string.len);
  case JSON_ARRAY:
    if (yajl_gen_array_open(g) != yajl_gen_status_ok)
      return -1;
    for (size_t i = 0; i < v->u.array.len; i++)
      if (gen_value(g, v->u.array.items[i]) < 0)
        return -1;
    st = yajl_gen_array_close(g);
    break;
  case JSON_OBJECT:
    if (yajl_gen_map_open(g) != yajl_gen_status_ok)
      return -1;
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      if (gen_string(g, k, strlen(k)) < 0 || gen_value(g, v->u.object.values[i]) < 0)
        return -1;
    }
    st = yajl_gen_map_close(g);
    break;
  }
  return st == yajl_gen_status_ok ? 0 : -1;
}

/* Where the first string or key of v that is not valid UTF-8 is: its path
 * appended to *path ("process.args[2]"), *key whether it is a key, *off
 * and *byte its first bad byte.  false when there is none. */
static bool find_bad_string(const json_t *v, struct json_buf *path, bool *key, size_t *off,
                            unsigned char *byte) {
  if (v->type == JSON_STRING) {
    *off = utf8_check(v->u.string.s, v->u.string.len);
    *byte = (unsigned char)v->u.string.s[*off];
    return *off != v->u.string.len;
  }
  size_t mark = path->len;
  for (size_t i = 0; i < json_array_len(v); i++) {
    char index[32];
    json_buf_raw(path, index, (size_t)snprintf(index, sizeof index, "[%zu]", i));
    if (find_bad_string(v->u.array.items[i], path, key, off, byte))
      return true;
    path->len = mark;
  }
  for (size_t i = 0; v->type == JSON_OBJECT && i < v->u.object.len; i++) {
    const char *k = v->u.object.keys[i];
    size_t n = strlen(k);
    *off = utf8_check(k, n);
    *byte = (unsigned char)k[*off];
    if (*off != n) {
      *key = true;
      return true;
    }
    if (mark > 0)
      json_buf_raw(path, ".", 1);
    json_buf_raw(path, k, n);
    if (find_bad_string(v->u.object.values[i], path, key, off, byte))
      return true;
    path->len = mark;
  }
  return false;
}

static void set_dump_error(const json_t *v, tg_error **err) {
  struct json_buf path = {0};
  bool key = false;
  size_t off = 0;
  unsigned char byte = 0;
  if (!find_bad_string(v, &path, &key, &off, &byte)) {
    free(path.s);
    tg_error_set(err, 0, "JSON text could not be generated");
    return;
  }
  const char *where = path.len ? path.s : "";
  tg_error_set(err, 0,
               "%s%s%s is not valid UTF-8 (byte %zu, 0x%02X, starts an overlong, surrogate or "
               "broken sequence): JSON text holds only UTF-8, so give it in UTF-8",
               key ? "a key" : "the string", path.len ? (key ? " of " : " at ") : "", where,
               off, (unsigned)byte);
  free(path.s);
}

char *json_dump_checked(const json_t *v, bool pretty, size_t *len, tg_error **err) {
  if (len)
    *len = 0;
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  if (!yajl_gen_config(g, yajl_gen_beautify, pretty ? 1 : 0) ||
      !yajl_gen_config(g, yajl_gen_indent_string, "  "))
    abort();
  const unsigned char *out = NULL;
  size_t n = 0;
  if (gen_value(g, v) < 0 || yajl_gen_get_buf(g, &out, &n) != yajl_gen_status_ok) {
    yajl_gen_free(g);
    set_dump_error(v, err);
    return NULL;
  }
  char *s = xstrndup((const char *)out, n);
  /* yajl's beautifier ends with a newline; keep output single-form. */
  while (n > 0 && s[n - 1] == '\n')
    s[--n] = '\0';
  yajl_gen_free(g);
  if (len)
    *len = n;
  return s;
}

char *json_dump(const json_t *v, bool pretty, size_t *len) {
  return json_dump_checked(v, pretty, len, NULL);
}

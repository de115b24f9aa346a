#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

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

/* ---- parsing ---- */

struct parse_ctx {
  json_t *root;
  json_t **stack; /* open containers */
  char **keys;    /* pending key per open object level */
  size_t depth, max_depth;
  unsigned line, col; /* position of the byte being fed */
  unsigned prev_line, prev_col; /* position of the byte before it */
  char *error;        /* first semantic error, owned */
  /* Whole-buffer parse with positions (see json_parse): the position of
   * the byte before yajl's offset is counted from the text, scanning
   * forward from the last one asked for. */
  yajl_handle h;
  const char *text;
  size_t scanned;     /* bytes of text counted into line/col */
};

/* Fast path: the value just reported ends at the byte before yajl's
 * offset (yajl has lexed the token; for a number it has looked at the
 * byte after it and left it unconsumed), which is exactly the byte the
 * byte-at-a-time feed reports for it. */
static void count_to_offset(struct parse_ctx *c) {
  size_t end = yajl_get_bytes_consumed(c->h);
  for (; c->scanned < end; c->scanned++) {
    if (c->text[c->scanned] == '\n') {
      c->line++;
      c->col = 0;
    } else {
      c->col++;
    }
  }
}

static void set_pos(struct parse_ctx *c, json_t *v) {
  if (c->h != NULL)
    count_to_offset(c);
  v->line = c->line;
  v->col = c->col;
}

static int add_value(struct parse_ctx *c, json_t *v) {
  set_pos(c, v);
  if (c->depth == 0) {
    c->root = v;
    return 1;
  }
  json_t *parent = c->stack[c->depth - 1];
  if (parent->type == JSON_ARRAY) {
    json_array_append(parent, v);
    return 1;
  }
  char *key = c->keys[c->depth - 1];
  c->keys[c->depth - 1] = NULL;
  if (key == NULL) { /* cannot happen with a validating yajl */
    json_free(v);
    return 0;
  }
  json_object_set(parent, key, v);
  free(key);
  return 1;
}

static int push(struct parse_ctx *c, json_t *v) {
  if (c->depth >= c->max_depth) {
    json_free(v);
    if (!c->error)
      c->error = xasprintf("nesting deeper than %zu levels", c->max_depth);
    return 0;
  }
  if (!add_value(c, v))
    return 0;
  c->stack[c->depth] = v;
  c->keys[c->depth] = NULL;
  c->depth++;
  return 1;
}

static int cb_null(void *ctx) { return add_value(ctx, json_new_null()); }
static int cb_bool(void *ctx, int b) { return add_value(ctx, json_new_bool(b)); }

static int cb_number(void *ctx, const char *s, size_t len) {
  struct parse_ctx *c = ctx;
  json_t *v = json_alloc(JSON_NUMBER);
  v->u.number.text = xstrndup(s, len);
  v->u.number.value = strtod(v->u.number.text, NULL);
  if (c->h != NULL)
    return add_value(c, v);
  /* yajl reports a number only once it sees the byte after it. */
  unsigned line = c->line, col = c->col;
  c->line = c->prev_line;
  c->col = c->prev_col;
  int r = add_value(c, v);
  c->line = line;
  c->col = col;
  return r;
}

static int cb_string(void *ctx, const unsigned char *s, size_t len) {
  return add_value(ctx, json_new_stringn((const char *)s, len));
}

static int cb_start_map(void *ctx) { return push(ctx, json_new_object()); }
static int cb_start_array(void *ctx) { return push(ctx, json_new_array()); }

static int cb_end(void *ctx) {
  struct parse_ctx *c = ctx;
  if (c->depth == 0)
    return 0;
  c->depth--;
  return 1;
}

static int cb_map_key(void *ctx, const unsigned char *s, size_t len) {
  struct parse_ctx *c = ctx;
  json_t *obj = c->stack[c->depth - 1];
  char *key = xstrndup((const char *)s, len);
  /* Reject duplicates: a second reader (runc, runsc, a person) might keep
   * the other value than we do, so the meaning would be ambiguous. */
  if (strlen(key) != len || object_index(obj, key) >= 0) {
    if (!c->error)
      c->error = xasprintf("line %u, column %u: duplicate or invalid key \"%s\"",
                           c->line, c->col, key);
    free(key);
    return 0;
  }
  free(c->keys[c->depth - 1]);
  c->keys[c->depth - 1] = key;
  return 1;
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

static void advance(struct parse_ctx *c, char ch) {
  c->prev_line = c->line;
  c->prev_col = c->col;
  if (ch == '\n') {
    c->line++;
    c->col = 0;
  } else {
    c->col++;
  }
}

static json_t *parse(const char *buf, size_t len,
                     const struct json_parse_options *opts, bool whole,
                     tg_error **err);

/* With positions, the text is first parsed in one piece, each value's
 * position counted from yajl's offset when it is reported; that costs
 * what a parse without positions costs.  Feeding yajl a byte at a time
 * (the other way to know where each callback is) made parsing a 15 KB
 * config.json take over a millisecond, on every create.  Anything but a
 * clean parse of an object or array (an error, whose message must name
 * the byte yajl stopped at, or a bare scalar, which yajl reports only at
 * the end of input) is parsed again a byte at a time, so positions and
 * messages are those of the byte-at-a-time parse in every case. */
json_t *json_parse(const char *buf, size_t len,
                   const struct json_parse_options *opts, tg_error **err) {
  if (opts != NULL && opts->track_positions) {
    json_t *v = parse(buf, len, opts, true, NULL);
    if (v != NULL && (v->type == JSON_OBJECT || v->type == JSON_ARRAY))
      return v;
    json_free(v);
  }
  return parse(buf, len, opts, false, err);
}

static json_t *parse(const char *buf, size_t len,
                     const struct json_parse_options *opts, bool whole,
                     tg_error **err) {
  struct json_parse_options o = {0};
  if (opts)
    o = *opts;
  struct parse_ctx c = {0};
  c.max_depth = o.max_depth ? o.max_depth : 64;
  c.line = 1;
  c.stack = xcalloc(c.max_depth + 1, sizeof(json_t *));
  c.keys = xcalloc(c.max_depth + 1, sizeof(char *));

  yajl_handle h = yajl_alloc(&callbacks, NULL, &c);
  if (h == NULL)
    abort();
  yajl_status st = yajl_status_ok;
  size_t fed = 0;
  if (whole) {
    c.h = h;
    c.text = buf;
    st = yajl_parse(h, (const unsigned char *)buf, len);
    fed = len;
    /* yajl_complete_parse reports what is left against a buffer of its
     * own: no offset into buf any more (json_parse redoes bare scalars). */
    c.h = NULL;
  } else if (o.track_positions) {
    /* Feed a byte at a time so the callbacks know where they are. */
    for (; fed < len && st == yajl_status_ok; fed++) {
      advance(&c, buf[fed]);
      st = yajl_parse(h, (const unsigned char *)buf + fed, 1);
    }
  } else {
    st = yajl_parse(h, (const unsigned char *)buf, len);
    fed = len;
  }
  if (st == yajl_status_ok)
    st = yajl_complete_parse(h);

  json_t *result = NULL;
  if (st == yajl_status_ok && c.root != NULL && c.depth == 0) {
    result = c.root;
    c.root = NULL;
  } else if (c.error) {
    tg_error_set(err, 0, "invalid JSON: %s", c.error);
  } else if (len == 0 || c.root == NULL) {
    tg_error_set(err, 0, "invalid JSON: empty input");
  } else {
    unsigned char *ye = yajl_get_error(h, 0, (const unsigned char *)buf, len);
    char *msg = xstrdup(ye ? (const char *)ye : "parse error");
    yajl_free_error(h, ye);
    char *nl = strchr(msg, '\n');
    if (nl)
      *nl = '\0';
    if (o.track_positions)
      tg_error_set(err, 0, "invalid JSON at line %u, column %u: %s", c.line,
                   c.col, msg);
    else
      tg_error_set(err, 0, "invalid JSON: %s", msg);
    free(msg);
  }
  yajl_free(h);
  for (size_t i = 0; i <= c.max_depth; i++)
    free(c.keys[i]);
  free(c.keys);
  free(c.stack);
  json_free(c.root);
  free(c.error);
  return result;
}

/* ---- generation ---- */

static void gen_value(yajl_gen g, const json_t *v) {
  switch (v->type) {
  case JSON_NULL:
    yajl_gen_null(g);
    break;
  case JSON_BOOL:
    yajl_gen_bool(g, v->u.boolean);
    break;
  case JSON_NUMBER:
    yajl_gen_number(g, v->u.number.text, strlen(v->u.number.text));
    break;
  case JSON_STRING:
    yajl_gen_string(g, (const unsigned char *)v->u.string.s, v->u.string.len);
    break;
  case JSON_ARRAY:
    yajl_gen_array_open(g);
    for (size_t i = 0; i < v->u.array.len; i++)
      gen_value(g, v->u.array.items[i]);
    yajl_gen_array_close(g);
    break;
  case JSON_OBJECT:
    yajl_gen_map_open(g);
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      yajl_gen_string(g, (const unsigned char *)k, strlen(k));
      gen_value(g, v->u.object.values[i]);
    }
    yajl_gen_map_close(g);
    break;
  }
}

char *json_dump(const json_t *v, bool pretty, size_t *len) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g == NULL)
    abort();
  yajl_gen_config(g, yajl_gen_beautify, pretty ? 1 : 0);
  yajl_gen_config(g, yajl_gen_indent_string, "  ");
  /* Strings we emit may come from the container; yajl escapes control
   * characters and, with validate_utf8, refuses invalid sequences. */
  yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  gen_value(g, v);
  const unsigned char *out = NULL;
  size_t n = 0;
  yajl_gen_get_buf(g, &out, &n);
  char *s = xstrndup((const char *)out, n);
  /* yajl's beautifier ends with a newline; keep output single-form. */
  while (n > 0 && s[n - 1] == '\n')
    s[--n] = '\0';
  yajl_gen_free(g);
  if (len)
    *len = n;
  return s;
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

/* ---- direct serialization ---- */

void json_buf_reserve(struct json_buf *b, size_t n) {
  if (b->cap - b->len > n)
    return;
  /* The first allocation is the size asked for (at least 64), so that a
   * caller can keep it below 1 KiB, where glibc's malloc would otherwise
   * consolidate its fast bins; it doubles from there. */
  size_t cap = b->cap ? b->cap : (n + 1 > 64 ? n + 1 : 64);
  while (cap - b->len <= n)
    cap *= 2;
  b->s = xrealloc(b->s, cap);
  b->cap = cap;
}

void json_buf_raw(struct json_buf *b, const char *s, size_t n) {
  json_buf_reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

/* The length of the UTF-8 sequence at s[0..n), or 0 when it is not a
 * well-formed one by RFC 3629: no overlong forms (C0 AF for '/'), no
 * UTF-16 surrogates (ED A0..BF, which is what yajl makes of a lone
 * \udc00), nothing past U+10FFFF.  yajl checks only the structure (a
 * lead byte, then that many continuation bytes); a strict reader
 * downstream (the audit log's, a tool's) would refuse what it lets by. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  size_t want;
  unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of s[1] */
  if (s[0] >= 0xC2 && s[0] <= 0xDF) {
    want = 2;
  } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    want = 3;
    if (s[0] == 0xE0)
      lo = 0xA0;
    else if (s[0] == 0xED)
      hi = 0x9F;
  } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    want = 4;
    if (s[0] == 0xF0)
      lo = 0x90;
    else if (s[0] == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (n < want || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < want; i++)
    if ((s[i] >> 6) != 0x2)
      return 0;
  return want;
}

size_t json_utf8_check(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = utf8_seq(s + i, n - i);
    if (k == 0)
      return i;
    i += k;
  }
  return n;
}

void json_buf_string(struct json_buf *b, const char *str, size_t n) {
  static const char hex[] = "0123456789ABCDEF"; /* yajl's case */
  const unsigned char *s = (const unsigned char *)str;
  json_buf_raw(b, "\"", 1);
  size_t i = 0;
  while (i < n) {
    /* Room for the worst case of a chunk (6 bytes out per byte in, as
     * \u00XX), reserved once per chunk so the loop never checks it and a
     * large argument never reserves six times its size at once. */
    size_t chunk_end = n - i > 4096 ? i + 4096 : n;
    json_buf_reserve(b, 6 * (chunk_end - i) + 8);
    char *o = b->s + b->len;
    while (i < chunk_end) {
      unsigned char c = s[i];
      if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
        *o++ = (char)c;
        i++;
        continue;
      }
      if (c >= 0x80) {
        /* A sequence may run past chunk_end by up to 3 bytes: the +8. */
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0) { /* not UTF-8: the replacement character, escaped */
          memcpy(o, "\\ufffd", 6);
          o += 6;
          i++;
          continue;
        }
        memcpy(o, s + i, k);
        o += k;
        i += k;
        continue;
      }
      *o++ = '\\';
      switch (c) {
      case '"': *o++ = '"'; break;
      case '\\': *o++ = '\\'; break;
      case '\b': *o++ = 'b'; break;
      case '\f': *o++ = 'f'; break;
      case '\n': *o++ = 'n'; break;
      case '\r': *o++ = 'r'; break;
      case '\t': *o++ = 't'; break;
      default:
        memcpy(o, "u00", 3);
        o[3] = hex[c >> 4];
        o[4] = hex[c & 0xf];
        o += 5;
        break;
      }
      i++;
    }
    b->len = (size_t)(o - b->s);
  }
  json_buf_raw(b, "\"", 1);
}

void json_buf_cstr(struct json_buf *b, const char *s) {
  if (s)
    json_buf_string(b, s, strlen(s));
  else
    json_buf_raw(b, "null", 4);
}

void json_buf_value(struct json_buf *b, const json_t *v) {
  if (v == NULL) {
    json_buf_raw(b, "null", 4);
    return;
  }
  switch (v->type) {
  case JSON_NULL:
    json_buf_raw(b, "null", 4);
    break;
  case JSON_BOOL:
    if (v->u.boolean)
      json_buf_raw(b, "true", 4);
    else
      json_buf_raw(b, "false", 5);
    break;
  case JSON_NUMBER:
    json_buf_raw(b, v->u.number.text, strlen(v->u.number.text));
    break;
  case JSON_STRING:
    json_buf_string(b, v->u.string.s, v->u.string.len);
    break;
  case JSON_ARRAY:
    json_buf_raw(b, "[", 1);
    for (size_t i = 0; i < v->u.array.len; i++) {
      if (i)
        json_buf_raw(b, ",", 1);
      json_buf_value(b, v->u.array.items[i]);
    }
    json_buf_raw(b, "]", 1);
    break;
  case JSON_OBJECT:
    json_buf_raw(b, "{", 1);
    for (size_t i = 0; i < v->u.object.len; i++) {
      if (i)
        json_buf_raw(b, ",", 1);
      json_buf_cstr(b, v->u.object.keys[i]);
      json_buf_raw(b, ":", 1);
      json_buf_value(b, v->u.object.values[i]);
    }
    json_buf_raw(b, "}", 1);
    break;
  }
}

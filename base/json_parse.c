/* json_parse: a json_t tree from JSON text, on yajl's parser callbacks,
 * with a nesting limit, duplicate keys refused and line/column positions
 * (see json.h). */
#include "base/json.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "base/util.h"


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
  json_t *v = json_new_number_text(s, len);
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
  if (strlen(key) != len || json_object_get(obj, key) != NULL) {
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

  /* yajl's lexer keeps its own UTF-8 check of the raw bytes (its default),
   * deliberately: it runs while lexing, at no cost of its own, and gives
   * the positioned "lexical error: invalid bytes in UTF8 string" that
   * config.json and policy files report.  It checks only the structure of
   * a sequence, and never what an escape decodes to (a lone \udc00 becomes
   * a surrogate), so it is no validity rule: base/utf8.h is, where strings
   * leave a tree (json_dump refuses them, json_buf replaces them) and
   * where a request's args reach the gate (args_canonical refuses them,
   * naming the argument). */
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

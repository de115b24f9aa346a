/* A small mutable JSON tree on top of yajl.
 *
 * yajl parses and generates; this module adds what yajl_tree lacks and
 * tollgate needs everywhere: a tree that can be edited (config.json
 * hardening), a nesting limit (untrusted bridge requests), rejection of
 * duplicate keys (two readers must never see two different values), and
 * line/column positions for error messages (policy files).
 *
 * Ownership: every json_t returned by a json_new_* or json_parse belongs to
 * the caller and is released with json_free(), which frees its children.
 * Setting a child (json_object_set, json_array_append) transfers ownership
 * of the child to the container.  Getters return borrowed pointers.
 */
#ifndef TOLLGATE_JSON_H
#define TOLLGATE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

enum json_type {
  JSON_NULL,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
};

typedef struct json json_t;
struct json {
  enum json_type type;
  /* 1-based position of the end of the value's first token in the parsed
   * text (the '{' or '[' of a container, the last byte of a scalar).
   * 0 when positions were not tracked or the value was built in code. */
  unsigned line, col;
  union {
    bool boolean;
    struct {
      double value;
      char *text; /* the number as written, output verbatim */
    } number;
    struct {
      char *s; /* NUL-terminated; may also contain NULs, see len */
      size_t len;
    } string;
    struct {
      json_t **items;
      size_t len, cap;
    } array;
    struct {
      char **keys;
      json_t **values;
      size_t len, cap;
    } object;
  } u;
};

struct json_parse_options {
  unsigned max_depth;   /* nesting limit; 0 means 64 */
  bool track_positions; /* fill line/col (slower: for files, not the bridge) */
};

/* Parse exactly one JSON value from buf[0..len).  NULL options mean the
 * defaults.  On error returns NULL and *err says what and where, e.g.
 * "line 3, column 7: duplicate key \"tools\"". */
json_t *json_parse(const char *buf, size_t len,
                   const struct json_parse_options *opts, tg_error **err);

void json_free(json_t *v);
void json_freep(json_t **v);
#define cleanup_json __attribute__((cleanup(json_freep)))

json_t *json_new_null(void);
json_t *json_new_bool(bool b);
json_t *json_new_number(double d); /* integral values print as integers */
json_t *json_new_integer(long long i);
/* A number from its JSON text text[0..len), kept verbatim for output; its
 * value is strtod's.  The text is not checked: give it in JSON's grammar
 * (the parser's, a canonical form). */
json_t *json_new_number_text(const char *text, size_t len);
json_t *json_new_string(const char *s);
json_t *json_new_stringn(const char *s, size_t len);
json_t *json_new_array(void);
json_t *json_new_object(void);
json_t *json_copy(const json_t *v);

/* Object access.  json_object_get returns NULL when v is not an object or
 * has no such key.  json_object_set replaces an existing key in place
 * (keeping order) or appends; it takes ownership of value. */
json_t *json_object_get(const json_t *v, const char *key);
void json_object_set(json_t *obj, const char *key, json_t *value);
/* Removes and frees the key's value.  Returns true when it was there. */
bool json_object_del(json_t *obj, const char *key);
/* Get obj[key], creating an empty object there if missing or not an
 * object.  Returns the borrowed child. */
json_t *json_object_ensure_object(json_t *obj, const char *key);
json_t *json_object_ensure_array(json_t *obj, const char *key);

/* Walk a dotted path of object keys: json_get_path(cfg, "process.user"). */
json_t *json_get_path(const json_t *v, const char *dotted);

/* Array access. */
size_t json_array_len(const json_t *v); /* 0 when not an array */
json_t *json_array_get(const json_t *v, size_t i);
void json_array_append(json_t *arr, json_t *value);
/* Removes and frees item i. */
void json_array_remove(json_t *arr, size_t i);

/* Typed reads; each returns the fallback/NULL/false when the type differs. */
const char *json_string_value(const json_t *v);
bool json_is_true(const json_t *v);
bool json_is(const json_t *v, enum json_type t);
/* true and *out when v is a number with an exact integer value. */
bool json_integer_value(const json_t *v, long long *out);
const char *json_type_name(enum json_type t);

/* Serialize.  Returns an owned NUL-terminated string; *len (optional) gets
 * its length.  pretty indents with two spaces.
 *
 * NULL (and *len 0) when a string or key of v is not valid UTF-8
 * (base/utf8.h), which JSON text cannot hold: never a text with it left
 * out or replaced.  A tree from json_parse never has one; a string built
 * from other bytes (argv, a path, a program's output) may: check it where
 * it comes in (json_utf8_check), so the user hears which argument or field,
 * or dump with json_dump_checked. */
char *json_dump(const json_t *v, bool pretty, size_t *len);
/* json_dump, and on NULL *err names the string: "the string at
 * process.args[2] is not valid UTF-8 (byte 0, 0xFF, ...)". */
char *json_dump_checked(const json_t *v, bool pretty, size_t *len, tg_error **err);

/* Direct serialization, without a tree or yajl: for text built per call
 * (the bridge's responses, audit records) where json_dump's tree and
 * generator cost more than the bytes.  For valid UTF-8 the output is byte
 * for byte what json_dump(v, false) writes: quotes, backslashes and control
 * characters escaped (\b \f \n \r \t, others \u00XX), '/' and DEL and
 * UTF-8 kept as they are.  Each byte that does not start a well-formed
 * sequence by RFC 3629 (an overlong form, a surrogate, a broken sequence:
 * json_dump's generator would refuse some and pass others) becomes \ufffd:
 * the output is always one valid JSON value that a strict reader accepts,
 * whatever bytes a tool or a container supplied.
 *
 * A json_buf starts zeroed ({0}); its text is always NUL-terminated once
 * anything was appended.  The caller owns b->s (free it, or take it). */
struct json_buf {
  char *s;
  size_t len, cap;
};
/* Make room for n more bytes (plus the NUL) without appending them. */
void json_buf_reserve(struct json_buf *b, size_t n);
/* Append n bytes verbatim (JSON syntax the caller vouches for). */
void json_buf_raw(struct json_buf *b, const char *s, size_t n);
/* json_buf_raw of a string literal, its length counted by the compiler. */
#define json_buf_lit(b, lit) json_buf_raw((b), "" lit, sizeof(lit) - 1)
/* Append a JSON string literal of s[0..n), quoted and escaped. */
void json_buf_string(struct json_buf *b, const char *s, size_t n);
/* json_buf_string of a C string, or null when s is NULL. */
void json_buf_cstr(struct json_buf *b, const char *s);
/* Append v compactly (NULL appends null). */
void json_buf_value(struct json_buf *b, const json_t *v);

/* The offset of the first byte of s[0..n) that does not start a
 * well-formed UTF-8 sequence (RFC 3629: no overlong forms, surrogates or
 * code points past U+10FFFF), or n when all of it is valid UTF-8:
 * utf8_check() of base/utf8.h, the one validator, for json.h's callers. */
size_t json_utf8_check(const char *s, size_t n);

/* Deep equality (object key order ignored, numbers by value). */
bool json_equal(const json_t *a, const json_t *b);

/* json_equal() with numbers compared by same_number (NULL: by value):
 * for a comparison of the numbers' exact text, say. */
bool json_equal_with(const json_t *a, const json_t *b,
                     bool (*same_number)(const json_t *, const json_t *));

#endif

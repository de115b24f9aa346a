/* Direct serialization without a tree or yajl: the json_buf_* functions
 * (see json.h), for text built per call (bridge responses, audit records). */
#include "base/json.h"

#include <string.h>

#include "base/utf8.h"
#include "base/util.h"

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

size_t json_utf8_check(const char *s, size_t n) { return utf8_check(s, n); }

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
        size_t k = utf8_decode(str + i, n - i, NULL);
        if (k == 0) { /* not UTF-8 (base/utf8.h): the replacement character, escaped */
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

#include <criterion/criterion.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"

static json_t *parse(const char *s, bool pos, tg_error **err) {
  struct json_parse_options o = {.max_depth = 8, .track_positions = pos};
  return json_parse(s, strlen(s), &o, err);
}

Test(json, round_trip_keeps_order_and_numbers) {
  cleanup_error tg_error *err = NULL;
  const char *in = "{\"b\":1,\"a\":[true,null,\"x\\u00e9\"],\"n\":1.50,\"big\":12345678901234567}";
  cleanup_json json_t *v = parse(in, false, &err);
  cr_assert_not_null(v, "%s", err ? err->msg : "");
  cleanup_free char *out = json_dump(v, false, NULL);
  cr_assert_str_eq(out, "{\"b\":1,\"a\":[true,null,\"x\xc3\xa9\"],\"n\":1.50,\"big\":12345678901234567}");
  long long big = 0;
  cr_assert(json_integer_value(json_object_get(v, "big"), &big));
  cr_assert_eq(big, 12345678901234567LL);
  cr_assert_not(json_integer_value(json_object_get(v, "n"), &big));
}

Test(json, depth_limit_is_enforced) {
  cleanup_error tg_error *err = NULL;
  json_t *v = parse("[[[[[[[[[[1]]]]]]]]]]", false, &err);
  cr_assert_null(v);
  cr_assert_not_null(strstr(err->msg, "nesting deeper than 8"), "%s", err->msg);
}

Test(json, duplicate_keys_are_refused_with_position) {
  cleanup_error tg_error *err = NULL;
  json_t *v = parse("{\n  \"a\": 1,\n  \"a\": 2\n}", true, &err);
  cr_assert_null(v);
  cr_assert_not_null(strstr(err->msg, "line 3"), "%s", err->msg);
  cr_assert_not_null(strstr(err->msg, "duplicate"), "%s", err->msg);
}

Test(json, syntax_error_names_line_and_column) {
  cleanup_error tg_error *err = NULL;
  json_t *v = parse("{\n  \"a\": 1,\n  \"b\": ]\n}", true, &err);
  cr_assert_null(v);
  cr_assert_not_null(strstr(err->msg, "line 3, column 8"), "%s", err->msg);
}

Test(json, positions_are_recorded) {
  cleanup_error tg_error *err = NULL;
  cleanup_json json_t *v = parse("{\n \"tools\": {\n  \"x\": 5\n }\n}", true, &err);
  cr_assert_not_null(v);
  json_t *x = json_get_path(v, "tools.x");
  cr_assert_eq(x->line, 3);
}

/* Positions come from a whole-buffer parse (json_parse counts them from
 * yajl's offset); they must be the ones a byte-at-a-time feed gives: the
 * '{' or '[' of a container, the last byte of a scalar (a number's last
 * digit, a string's closing quote, a literal's last letter). */
Test(json, positions_of_every_kind_of_token) {
  cleanup_error tg_error *err = NULL;
  const char *in = "{\n  \"n\": 12,\n  \"a\": [true, null, -1.5e3,\n"
                   "        \"s\\u00e9\"],\n  \"o\": {\"k\": false}\n}";
  cleanup_json json_t *v = parse(in, true, &err);
  cr_assert_not_null(v, "%s", err ? err->msg : "");
  static const struct {
    const char *path;
    unsigned line, col;
  } want[] = {{"n", 2, 9}, {"a", 3, 8}, {"o", 5, 8}, {"o.k", 5, 18}};
  cr_assert_eq(v->line, 1);
  cr_assert_eq(v->col, 1);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    json_t *x = json_get_path(v, want[i].path);
    cr_assert_not_null(x, "%s", want[i].path);
    cr_assert_eq(x->line, want[i].line, "%s line %u", want[i].path, x->line);
    cr_assert_eq(x->col, want[i].col, "%s col %u", want[i].path, x->col);
  }
  json_t *a = json_object_get(v, "a");
  static const unsigned items[][2] = {{3, 12}, {3, 18}, {3, 26}, {4, 17}};
  for (size_t i = 0; i < 4; i++) {
    cr_assert_eq(json_array_get(a, i)->line, items[i][0], "a[%zu]", i);
    cr_assert_eq(json_array_get(a, i)->col, items[i][1], "a[%zu]", i);
  }
  /* A bare scalar (reported only at the end of input) is positioned too. */
  cleanup_error tg_error *e2 = NULL;
  cleanup_json json_t *s = parse("\n \"x\"", true, &e2);
  cr_assert_not_null(s);
  cr_assert_eq(s->line, 2);
  cr_assert_eq(s->col, 4);
}

Test(json, empty_trailing_and_invalid_utf8_fail) {
  cleanup_error tg_error *e1 = NULL, *e2 = NULL, *e3 = NULL;
  cr_assert_null(parse("", false, &e1));
  cr_assert_null(parse("{} {}", false, &e2));
  cr_assert_null(parse("\"\xff\"", false, &e3));
}

Test(json, edit_object_and_array) {
  cleanup_json json_t *o = json_new_object();
  json_object_set(o, "a", json_new_integer(1));
  json_object_set(o, "b", json_new_string("x"));
  json_object_set(o, "a", json_new_bool(false));
  json_t *arr = json_object_ensure_array(o, "c");
  json_array_append(arr, json_new_number(2.5));
  json_array_append(arr, json_new_number(3));
  json_array_remove(arr, 0);
  cr_assert(json_object_del(o, "b"));
  cleanup_free char *out = json_dump(o, false, NULL);
  cr_assert_str_eq(out, "{\"a\":false,\"c\":[3]}");
  cleanup_json json_t *c = json_copy(o);
  cr_assert(json_equal(o, c));
}

/* ---- json_buf: the direct serializer must write exactly json_dump's bytes
 * for anything json_dump can write, and valid JSON for anything else. ---- */

static char *buf_string(const char *s, size_t n, size_t *len) {
  struct json_buf b = {0};
  json_buf_string(&b, s, n);
  *len = b.len;
  return b.s;
}

static void assert_same_as_dump(const char *s, size_t n) {
  cleanup_json json_t *v = json_new_stringn(s, n);
  size_t dl = 0, bl = 0;
  cleanup_free char *d = json_dump(v, false, &dl);
  cleanup_free char *b = buf_string(s, n, &bl);
  cr_assert_eq(bl, dl, "length %zu vs json_dump's %zu: %s vs %s", bl, dl, b, d);
  cr_assert_eq(memcmp(b, d, dl), 0, "%s vs json_dump's %s", b, d);
  cr_assert_eq(b[bl], '\0');
  /* and it reads back as the same bytes */
  cleanup_json json_t *back = json_parse(b, bl, NULL, NULL);
  cr_assert(json_equal(back, v), "%s does not read back", b);
}

Test(json, buf_string_escapes_every_byte_like_json_dump) {
  for (int c = 0; c < 0x80; c++) {
    char s[3] = {'a', (char)c, 'z'};
    assert_same_as_dump(s, 3);
  }
  const char *hostile[] = {"", "\"", "\\", "\\\"", "</script>", "a/b", "\x7f", "\"},\"hash\":\"x",
                           "line\nbreak\r\n\ttab\b\f", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++)
    assert_same_as_dump(hostile[i], strlen(hostile[i]));
  assert_same_as_dump("a\0b\0", 4); /* NULs inside, as \u0000 decodes */
}

Test(json, buf_string_matches_json_dump_on_random_utf8) {
  /* Random strings from a hostile alphabet: controls, quotes, backslashes,
   * and 2-, 3- and 4-byte characters, longer than one 4096-byte chunk so
   * that sequences straddle the chunk boundary. */
  static const char *pieces[] = {"\x01", "\x1f", "\"", "\\", "/", "\x7f", "a", " ", "\n", "\xc2\x80",
                                 "\xdf\xbf", "\xe0\xa0\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
                                 "\xf4\x8f\xbf\xbf", "\0"};
  unsigned seed = 12345;
  char *s = xmalloc(20000);
  for (int round = 0; round < 200; round++) {
    size_t n = 0, target = round < 190 ? (size_t)(round * 7) : 9000 + (size_t)round;
    while (n < target) {
      seed = seed * 1103515245u + 12345u;
      const char *p = pieces[(seed >> 16) % 16];
      size_t pl = p[0] ? strlen(p) : 1;
      memcpy(s + n, p, pl);
      n += pl;
    }
    assert_same_as_dump(s, n);
  }
  free(s);
}

Test(json, buf_string_replaces_invalid_utf8_and_stays_valid_json) {
  /* json_dump's generator refuses these and leaves broken text (a key
   * without its value); the serializer writes \ufffd per bad byte. */
  const struct {
    const char *in, *out;
  } cases[] = {
      {"\xff", "\"\\ufffd\""},
      {"a\x80z", "\"a\\ufffdz\""},
      {"\xc3", "\"\\ufffd\""},              /* cut after the lead byte */
      {"\xe2\x82", "\"\\ufffd\\ufffd\""},   /* cut inside: both bytes replaced */
      {"\xc3\x28", "\"\\ufffd(\""},         /* a lead byte without continuation */
      {"\xf8\x88\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""},
      {"ok\xc3\xa9\xfe", "\"ok\xc3\xa9\\ufffd\""},
      /* structurally fine, but not UTF-8 by RFC 3629; a strict reader of
       * the audit log refuses them, so they are replaced too */
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                 /* overlong '/' */
      {"\xed\xb0\x80", "\"\\ufffd\\ufffd\\ufffd\""},     /* lone surrogate, yajl's \udc00 */
      {"\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""},     /* overlong 3-byte */
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* past U+10FFFF */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t bl = 0;
    cleanup_free char *b = buf_string(cases[i].in, strlen(cases[i].in), &bl);
    cr_assert_str_eq(b, cases[i].out);
    cleanup_json json_t *back = json_parse(b, bl, NULL, NULL);
    cr_assert_not_null(back, "%s is not JSON", b);
  }
  /* inside a record, the keys after it keep their values */
  json_t *o = json_new_object();
  json_object_set(o, "message", json_new_string("tool said \xff\xfe"));
  json_object_set(o, "next", json_new_integer(7));
  struct json_buf b = {0};
  json_buf_value(&b, o);
  cleanup_json json_t *back = json_parse(b.s, b.len, NULL, NULL);
  cr_assert_not_null(back, "%s", b.s);
  long long next = 0;
  cr_assert(json_integer_value(json_object_get(back, "next"), &next));
  cr_assert_eq(next, 7);
  free(b.s);
  json_free(o);
}

Test(json, buf_value_matches_json_dump_on_parsed_trees) {
  const char *docs[] = {
      "null", "true", "false", "0", "-1.5e+10", "12345678901234567890", "\"x\"", "[]", "{}",
      "[1,[2,[3,{\"a\":[]}]],\"\\u0000\\u001f\\\"\\\\/\\ud83d\\ude00\"]",
      "{\"v\":1,\"tool\":\"echo\",\"args\":{\"msg\":\"hi\\nthere\",\"n\":[1.50,true,null,{}],"
      "\"\\u00e9\\t\":{\"deep\":{\"er\":\"\\\"},\\\"hash\\\":\\\"\"}}}}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
    cleanup_error tg_error *err = NULL;
    cleanup_json json_t *v = json_parse(docs[i], strlen(docs[i]), NULL, &err);
    cr_assert_not_null(v, "%s: %s", docs[i], err ? err->msg : "");
    size_t dl = 0;
    cleanup_free char *d = json_dump(v, false, &dl);
    struct json_buf b = {0};
    json_buf_value(&b, v);
    cr_assert_eq(b.len, dl);
    cr_assert_str_eq(b.s, d);
    cleanup_json json_t *back = json_parse(b.s, b.len, NULL, NULL);
    cr_assert(json_equal(back, v));
    free(b.s);
  }
  struct json_buf b = {0};
  json_buf_value(&b, NULL);
  json_buf_raw(&b, ",", 1);
  json_buf_cstr(&b, NULL);
  json_buf_raw(&b, ",", 1);
  json_buf_cstr(&b, "s");
  cr_assert_str_eq(b.s, "null,null,\"s\"");
  free(b.s);
}

/* Strings that are not UTF-8 in JSON trees: json_parse refuses them after
 * decoding, json_dump fails on them instead of writing a corrupted text. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"

/* yajl's generator refuses such a string without writing it and, unchecked,
 * the dump went on: the string dropped from an array (an exec argument
 * gone), or in an object the next key written as the value of this one.
 * Overlong forms and surrogates it wrote through. */
static json_t *with_bad(int shape, const char *bad) {
  json_t *v = NULL;
  switch (shape) {
  case 0: /* an array: ["a", BAD, "b"] */
    v = json_new_array();
    json_array_append(v, json_new_string("a"));
    json_array_append(v, json_new_string(bad));
    json_array_append(v, json_new_string("b"));
    break;
  case 1: /* an object value: {"a": BAD, "b": "c"} */
    v = json_new_object();
    json_object_set(v, "a", json_new_string(bad));
    json_object_set(v, "b", json_new_string("c"));
    break;
  case 2: /* an object key: {BAD: 1, "b": 2} */
    v = json_new_object();
    json_object_set(v, bad, json_new_integer(1));
    json_object_set(v, "b", json_new_integer(2));
    break;
  default: /* deep: {"process": {"args": ["sh", BAD]}} */
    v = json_new_object();
    json_t *args = json_object_ensure_array(json_object_ensure_object(v, "process"), "args");
    json_array_append(args, json_new_string("sh"));
    json_array_append(args, json_new_string(bad));
    break;
  }
  return v;
}

static const char *const bad_strings[] = {
    "\xff",             /* not UTF-8 at all */
    "x\xc3",            /* cut short */
    "..\xc0\xaf" "etc", /* overlong '/' */
    "\xed\xa0\x80",     /* a surrogate */
    "\xf4\x90\x80\x80", /* past U+10FFFF */
};

Test(json_utf8, dump_fails_on_a_string_that_is_not_utf8) {
  for (int shape = 0; shape < 4; shape++) {
    for (size_t i = 0; i < sizeof bad_strings / sizeof *bad_strings; i++) {
      cleanup_json json_t *v = with_bad(shape, bad_strings[i]);
      size_t len = 99;
      char *compact = json_dump(v, false, &len);
      cr_assert_null(compact, "shape %d, string %zu: dumped as %s", shape, i, compact);
      cr_assert_eq(len, 0, "shape %d, string %zu", shape, i);
      char *pretty = json_dump(v, true, NULL);
      cr_assert_null(pretty, "shape %d, string %zu (pretty): dumped as %s", shape, i, pretty);
    }
  }
  /* The same trees with valid strings dump, and read back the same. */
  for (int shape = 0; shape < 4; shape++) {
    cleanup_json json_t *v = with_bad(shape, "caf\xc3\xa9 \xf0\x9f\x98\x80");
    size_t len = 0;
    cleanup_free char *s = json_dump(v, false, &len);
    cr_assert_not_null(s);
    cleanup_json json_t *back = json_parse(s, len, NULL, NULL);
    cr_assert(json_equal(back, v), "shape %d: %s", shape, s);
  }
}

/* json_parse keeps yajl's lexer check (raw bytes, structure only) and its
 * messages; a string it lets by that is not UTF-8 by RFC 3629 (an overlong
 * form, a surrogate, also one decoded from a lone \udc00) is refused when
 * the tree is dumped, naming where. */
Test(json_utf8, a_parsed_string_yajl_lets_by_fails_the_dump_naming_it) {
  static const struct {
    const char *doc, *want;
  } cases[] = {
      {"{\"env\":[\"A=1\",\"B=..\xc0\xaf" "etc\"]}", "the string at env[1] is not valid UTF-8 (byte 4, 0xC0,"},
      {"{\"k\xc0\xaf\":1}", "a key is not valid UTF-8 (byte 1, 0xC0,"},
      {"{\"a\":[{\"b\":\"\xe0\x80\xaf\"}]}", "the string at a[0].b is not valid UTF-8 (byte 0, 0xE0,"},
      {"[\"\xed\xa0\x80\"]", "the string at [0] is not valid UTF-8 (byte 0, 0xED,"},
      {"{\"p\":\"\xf4\x90\x80\x80\"}", "the string at p is not valid UTF-8 (byte 0, 0xF4,"},
      {"{\"p\":\"x\\udc00y\"}", "the string at p is not valid UTF-8 (byte 1, 0xED,"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cleanup_error tg_error *perr = NULL;
    cleanup_json json_t *v = json_parse(cases[i].doc, strlen(cases[i].doc), NULL, &perr);
    cr_assert_not_null(v, "case %zu: %s", i, perr ? perr->msg : "");
    cleanup_error tg_error *err = NULL;
    cr_assert_null(json_dump_checked(v, false, NULL, &err), "case %zu dumped", i);
    cr_assert_not_null(strstr(err->msg, cases[i].want), "case %zu: %s", i, err->msg);
  }
  /* yajl's lexer refuses raw bytes that are not UTF-8 even in structure. */
  cleanup_error tg_error *e = NULL;
  cr_assert_null(json_parse("[\"\xff\"]", 5, NULL, &e));
  cr_assert_not_null(strstr(e->msg, "invalid bytes in UTF8 string"), "%s", e->msg);
}

Test(json_utf8, dump_checked_names_the_string_or_key) {
  static const struct {
    int shape;
    const char *want;
  } cases[] = {
      {0, "the string at [1] is not valid UTF-8 (byte 0, 0xFF,"},
      {1, "the string at a is not valid UTF-8 (byte 0, 0xFF,"},
      {2, "a key is not valid UTF-8 (byte 0, 0xFF,"},
      {3, "the string at process.args[1] is not valid UTF-8 (byte 0, 0xFF,"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cleanup_json json_t *v = with_bad(cases[i].shape, "\xff");
    cleanup_error tg_error *err = NULL;
    size_t len = 5;
    cr_assert_null(json_dump_checked(v, true, &len, &err));
    cr_assert_eq(len, 0);
    cr_assert_not_null(err);
    cr_assert_not_null(strstr(err->msg, cases[i].want), "case %zu: %s", i, err->msg);
  }
  cleanup_json json_t *v = json_new_object();
  json_object_set(json_object_ensure_object(v, "env"), "x\xc0\xaf", json_new_null());
  cleanup_error tg_error *err = NULL;
  cr_assert_null(json_dump_checked(v, false, NULL, &err));
  cr_assert_not_null(strstr(err->msg, "a key of env is not valid UTF-8 (byte 1, 0xC0,"), "%s", err->msg);
  cleanup_json json_t *good = with_bad(3, "ok");
  cleanup_error tg_error *none = NULL;
  cleanup_free char *s = json_dump_checked(good, false, NULL, &none);
  cr_assert_str_eq(s, "{\"process\":{\"args\":[\"sh\",\"ok\"]}}");
  cr_assert_null(none);
}

#include <criterion/criterion.h>
#include <string.h>

#include "shim/json.h"
#include "shim/util.h"

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

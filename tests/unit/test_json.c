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

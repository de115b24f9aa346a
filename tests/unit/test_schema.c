/* The JSON Schema subset: a table of (schema, value, valid?, message). */
#include <criterion/criterion.h>
#include <string.h>

#include "governance/schema.h"
#include "base/util.h"

static struct schema *compile(const char *text, bool lenient) {
  struct json_parse_options o = {.track_positions = true};
  cleanup_json json_t *src = json_parse(text, strlen(text), &o, NULL);
  cr_assert_not_null(src, "%s", text);
  struct policy_errors errs = {.file = "t"};
  struct schema *s = schema_compile(src, "args", lenient, &errs);
  policy_errors_free(&errs);
  return s;
}

static void check(const char *schema, const char *value, bool valid, const char *why_part) {
  struct schema *s = compile(schema, false);
  cr_assert_not_null(s, "schema %s does not compile", schema);
  cleanup_json json_t *v = json_parse(value, strlen(value), NULL, NULL);
  cr_assert_not_null(v);
  char *why = NULL;
  bool ok = schema_validate(s, v, &why);
  cr_assert_eq(ok, valid, "%s against %s: %s", value, schema, why ? why : "valid");
  if (!valid && why_part)
    cr_assert(strstr(why, why_part), "%s against %s: message \"%s\" lacks \"%s\"", value, schema,
              why, why_part);
  free(why);
  schema_free(s);
}

Test(schema, types) {
  check("{\"type\": \"object\"}", "{}", true, NULL);
  check("{\"type\": \"object\"}", "[]", false, "must be object");
  check("{\"type\": \"integer\"}", "3", true, NULL);
  check("{\"type\": \"integer\"}", "3.5", false, "must be integer");
  check("{\"type\": \"number\"}", "3.5", true, NULL);
  check("{\"type\": [\"string\", \"null\"]}", "null", true, NULL);
  check("{\"type\": [\"string\", \"null\"]}", "1", false, "must be null or string, not an integer");
  check("{\"type\": \"boolean\"}", "false", true, NULL);
  check("{}", "\"anything\"", true, NULL);
}

Test(schema, properties_required_additional) {
  const char *s = "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"string\"},"
                  " \"n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 10}},"
                  " \"required\": [\"id\"], \"additionalProperties\": false}";
  check(s, "{\"id\": \"a\", \"n\": 5}", true, NULL);
  check(s, "{\"n\": 5}", false, "missing required property \"id\"");
  check(s, "{\"id\": 1}", false, "args.id: must be string");
  check(s, "{\"id\": \"a\", \"n\": 0}", false, "args.n: 0 is less than the minimum 1");
  check(s, "{\"id\": \"a\", \"n\": 11}", false, "args.n: 11 is greater than the maximum 10");
  check(s, "{\"id\": \"a\", \"x\": 1}", false, "unexpected property \"x\"");
  check("{\"type\": \"object\"}", "{\"x\": 1}", true, NULL);
}

Test(schema, enum_maxlength_pattern_items) {
  check("{\"enum\": [\"eu\", \"us\"]}", "\"eu\"", true, NULL);
  check("{\"enum\": [\"eu\", \"us\"]}", "\"asia\"", false, "must be one of [\"eu\",\"us\"]");
  check("{\"type\": \"string\", \"maxLength\": 3}", "\"abc\"", true, NULL);
  check("{\"type\": \"string\", \"maxLength\": 3}", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"", true, NULL); /* 3 code points */
  check("{\"type\": \"string\", \"maxLength\": 3}", "\"abcd\"", false, "maxLength 3");
  check("{\"type\": \"string\", \"pattern\": \"^[A-Z]{2}-[0-9]+$\"}", "\"AB-12\"", true, NULL);
  check("{\"type\": \"string\", \"pattern\": \"^[A-Z]{2}-[0-9]+$\"}", "\"ab-12\"", false, "pattern");
  check("{\"type\": \"string\", \"pattern\": \"[0-9]\"}", "\"x1y\"", true, NULL); /* unanchored */
  check("{\"type\": \"string\", \"pattern\": \"^a\"}", "\"a\\u0000b\"", false, "pattern"); /* NUL never matches */
  check("{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}", "[1, 2]", true, NULL);
  check("{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}", "[1, \"2\"]", false, "args[1]");
}

Test(schema, strict_rejects_what_lenient_skips) {
  cr_assert_null(compile("{\"type\": \"string\", \"minLength\": 1}", false));
  cr_assert_null(compile("{\"type\": \"strin\"}", false));
  cr_assert_null(compile("{\"pattern\": \"(\"}", false));
  struct schema *s = compile("{\"type\": \"object\", \"$schema\": \"x\", \"minProperties\": 1}", true);
  cr_assert_not_null(s);
  schema_free(s);
}

/* Issue 16: bounds, enum and integer are exact decimals, never doubles;
 * the docs' list_files pattern refuses ".." components. */
Test(schema, exact_numbers_and_the_docs_path_pattern) {
  check("{\"maximum\": 9007199254740992}", "9007199254740993", false, "greater than the maximum 9007199254740992");
  check("{\"maximum\": 9007199254740992}", "9007199254740992", true, NULL);
  check("{\"minimum\": 0.1}", "0.09999999999999999999", false, "less than the minimum 0.1");
  check("{\"enum\": [1234567890123456789]}", "1234567890123456790", false, "must be one of");
  check("{\"enum\": [1234567890123456789]}", "1.234567890123456789e18", true, NULL);
  check("{\"enum\": [640]}", "6.4e2", true, NULL);
  check("{\"type\": \"integer\"}", "6.4e2", true, NULL);
  check("{\"type\": \"integer\"}", "12345678901234567890.5", false, "must be integer");
  const char *pat = "{\"type\": \"string\", \"pattern\": \"^/srv/data/([^./][^/]*/?)*$\"}";
  check(pat, "\"/srv/data/a/b.txt\"", true, NULL);
  check(pat, "\"/srv/data/\"", true, NULL);
  check(pat, "\"/srv/data/../../etc/passwd\"", false, "pattern");
  check(pat, "\"/srv/data/a/../../etc\"", false, "pattern");
  check(pat, "\"/srv/data/.ssh\"", false, "pattern");
  check(pat, "\"/srv/database\"", false, "pattern");
}

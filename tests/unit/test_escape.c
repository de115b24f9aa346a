#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/term_escape.h"
#include "base/json.h"
#include "base/log.h"
#include "base/util.h"

/* UTF-8 of cp into out (NUL-terminated); its length. */
static size_t utf8(uint32_t cp, char *out) {
  size_t n;
  if (cp < 0x80) {
    out[0] = (char)cp, n = 1;
  } else if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
  } else if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12)), out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
  } else {
    out[0] = (char)(0xf0 | (cp >> 18)), out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
  }
  out[n] = '\0';
  return n;
}

/* General category Cf (and Zl, Zp) of Unicode 14, as Python's unicodedata
 * lists it, plus 15.0's U+13439..U+1343F: every one must be escaped. */
static const uint32_t cf[][2] = {
    {0x00ad, 0x00ad}, {0x0600, 0x0605}, {0x061c, 0x061c},   {0x06dd, 0x06dd},   {0x070f, 0x070f},
    {0x0890, 0x0891}, {0x08e2, 0x08e2}, {0x180e, 0x180e},   {0x200b, 0x200f},   {0x2028, 0x202e},
    {0x2060, 0x2064}, {0x2066, 0x206f}, {0xfeff, 0xfeff},   {0xfff9, 0xfffb},   {0x110bd, 0x110bd},
    {0x110cd, 0x110cd}, {0x13430, 0x1343f}, {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0001, 0xe0001},
    {0xe0020, 0xe007f},
};

static void expect_escaped(uint32_t cp) {
  char in[16], want[16];
  utf8(cp, in);
  cr_assert(escape_code_point_is_hidden(cp), "U+%04X is hidden", cp);
  if (cp <= 0xffff)
    snprintf(want, sizeof want, "\\u%04x", cp);
  else
    snprintf(want, sizeof want, "\\U%08x", cp);
  char *got = escape_for_terminal(in, false);
  cr_expect_str_eq(got, want, "U+%04X in text", cp);
  free(got);
  got = escape_message(in);
  cr_expect_str_eq(got, want, "U+%04X in a message", cp);
  free(got);
  /* in JSON text: JSON's own escape, which decodes to the same string */
  char *doc = xasprintf("\"%s\"", in);
  got = escape_for_terminal(doc, true);
  cr_expect(strchr(got, '\\') != NULL, "U+%04X in JSON: %s", cp, got);
  for (const char *p = got; *p; p++)
    cr_assert((unsigned char)*p < 0x80, "U+%04X in JSON is ASCII: %s", cp, got);
  json_t *v = json_parse(got, strlen(got), NULL, NULL);
  cr_assert(v != NULL, "U+%04X: %s is JSON", cp, got);
  cr_expect_str_eq(json_string_value(v), in, "U+%04X decodes to itself", cp);
  json_free(v);
  free(got);
  free(doc);
}

Test(escape, every_format_character_is_escaped) {
  for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++)
    for (uint32_t cp = cf[i][0]; cp <= cf[i][1]; cp++)
      expect_escaped(cp);
}

Test(escape, the_brief_list_by_name) {
  /* bidi embeddings, overrides, isolates, marks; zero-width; BOM; soft
   * hyphen; tags */
  const uint32_t named[] = {0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
                            0x2069, 0x200e, 0x200f, 0x061c, 0x200b, 0x200c, 0x200d, 0x2060,
                            0x2061, 0x2062, 0x2063, 0x2064, 0xfeff, 0x00ad, 0xe0001, 0xe0020,
                            0xe0041, 0xe007f};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    expect_escaped(named[i]);
}

Test(escape, c1_controls_are_escaped) {
  for (uint32_t cp = 0x80; cp <= 0x9f; cp++)
    expect_escaped(cp);
}

Test(escape, ordinary_text_is_kept) {
  /* neighbours of the ranges, letters of other scripts, emoji, marks */
  const uint32_t keep[] = {0x00a0, 0x00ac, 0x00ae, 0x00e9, 0x05d0, 0x0627, 0x0606, 0x061b,
                           0x061d, 0x200a, 0x2010, 0x2027, 0x202f, 0x2026, 0x205f, 0x2070,
                           0x4e2d, 0xfefe, 0xff01, 0xfff8, 0xfffc, 0xfffd, 0x1f600, 0x1343f + 1,
                           0xe0080, 0xe0100, 0x10ffff};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
    char in[16];
    utf8(keep[i], in);
    cr_expect(!escape_code_point_is_hidden(keep[i]), "U+%04X is shown", keep[i]);
    char *got = escape_for_terminal(in, false);
    cr_expect_str_eq(got, in, "U+%04X is kept", keep[i]);
    free(got);
    got = escape_for_terminal(in, true);
    cr_expect_str_eq(got, in, "U+%04X is kept in JSON", keep[i]);
    free(got);
  }
}

Test(escape, controls_and_invalid_bytes) {
  char *s = escape_for_terminal("a\nb\rc\td\x1b[31me\x7f\\f\xff\xc0\xaf", false);
  cr_expect_str_eq(s, "a\\nb\\rc\\td\\x1b[31me\\x7f\\\\f\\xff\\xc0\\xaf");
  free(s);
  /* a message keeps its lines and tabs and its backslashes as they are */
  s = escape_message("line one\n\tline two \\n\x1b]0;x\x07\xe2\x80\xae!");
  cr_expect_str_eq(s, "line one\n\tline two \\n\\x1b]0;x\\x07\\u202e!");
  free(s);
  s = escape_for_terminal("\"a\xff\"", true);
  cr_expect_str_eq(s, "\"a\\ufffd\"");
  free(s);
  s = escape_for_terminal(NULL, false);
  cr_expect_str_eq(s, "");
  free(s);
}

Test(escape, an_override_in_arguments_stays_in_order) {
  /* what an approver would have seen reordered: "amount":"<RLO>00005" */
  const char *args = "{\"amount\":\"\xe2\x80\xae" "00005\",\"to\":\"x\"}";
  char *s = escape_for_terminal(args, true);
  cr_expect_str_eq(s, "{\"amount\":\"\\u202e00005\",\"to\":\"x\"}");
  free(s);
}

Test(escape, log_lines_are_escaped) {
  char path[] = "/tmp/tg-escape-log-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  /* an error that quotes a tool's words, in runc's JSON log format */
  int saved = dup(STDERR_FILENO);
  int null = open("/dev/null", O_WRONLY);
  dup2(null, STDERR_FILENO);
  log_line(path, true, "error", "tool said \xe2\x80\xae" "gnp.exe\n\x1b[2J");
  log_line(path, false, "warning", "zero\xe2\x80\x8bwidth");
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(null);
  char buf[512] = {0};
  fd = open(path, O_RDONLY);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  unlink(path);
  cr_assert(n > 0);
  cr_expect(strstr(buf, "tool said \\\\u202egnp.exe\\n\\\\x1b[2J") != NULL, "%s", buf);
  cr_expect(strstr(buf, "tollgate: warning: zero\\u200bwidth\n") != NULL, "%s", buf);
  cr_expect(strstr(buf, "\xe2\x80") == NULL, "no raw format character: %s", buf);
}

/* --format json output is a pretty dump: its newlines and indentation are
 * JSON's whitespace and stay, so the escaped text still parses (the first
 * version turned them into \u000a, and pending --format json broke). */
Test(escape, a_pretty_dump_stays_valid_json) {
  const char *raw = "{\"memo\":\"refund \xe2\x80\xae" "00005\",\"k\\n\":[1,\"\\u0007\xf3\xa0\x81\x81\"]}";
  json_t *v = json_parse(raw, strlen(raw), NULL, NULL);
  cr_assert(v != NULL);
  for (int pretty = 0; pretty < 2; pretty++) {
    char *dump = json_dump(v, pretty, NULL);
    char *s = escape_for_terminal(dump, true);
    cr_expect(strstr(s, "\\u202e00005") != NULL, "%s", s);
    json_t *back = json_parse(s, strlen(s), NULL, NULL);
    cr_assert(back != NULL, "pretty %d: %s", pretty, s);
    char *a = json_dump(v, false, NULL), *b = json_dump(back, false, NULL);
    cr_expect_str_eq(b, a, "the same value");
    free(a), free(b), free(s), free(dump);
    json_free(back);
  }
  json_free(v);
}

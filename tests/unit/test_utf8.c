/* base/utf8: the one UTF-8 validator (RFC 3629). */
#include <criterion/criterion.h>
#include <string.h>

#include "base/utf8.h"

static size_t dec(const char *s, size_t n, uint32_t *cp) { return utf8_decode(s, n, cp); }

Test(utf8, decodes_each_length_with_its_code_point) {
  static const struct {
    const char *s;
    size_t len;
    uint32_t cp;
  } ok[] = {
      {"\0", 1, 0},          {"A", 1, 'A'},          {"\x7f", 1, 0x7f},
      {"\xc2\x80", 2, 0x80}, {"\xdf\xbf", 2, 0x7ff}, {"\xe0\xa0\x80", 3, 0x800},
      {"\xed\x9f\xbf", 3, 0xd7ff}, {"\xee\x80\x80", 3, 0xe000}, {"\xef\xbf\xbf", 3, 0xffff},
      {"\xf0\x90\x80\x80", 4, 0x10000}, {"\xf0\x9f\x98\x80", 4, 0x1f600},
      {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint32_t cp = 0xdeadbeef;
    cr_assert_eq(dec(ok[i].s, ok[i].len, &cp), ok[i].len, "case %zu", i);
    cr_assert_eq(cp, ok[i].cp, "case %zu: U+%04X", i, (unsigned)cp);
    cr_assert_eq(dec(ok[i].s, ok[i].len, NULL), ok[i].len, "case %zu without cp", i);
  }
}

Test(utf8, refuses_overlongs_surrogates_past_the_range_and_broken_sequences) {
  static const struct {
    const char *s;
    size_t len;
  } bad[] = {
      {"\x80", 1},             /* a stray continuation byte */
      {"\xbf", 1},
      {"\xc0\xaf", 2},         /* overlong '/' */
      {"\xc1\xbf", 2},
      {"\xe0\x80\xaf", 3},     /* overlong 3-byte */
      {"\xe0\x9f\xbf", 3},
      {"\xed\xa0\x80", 3},     /* surrogates, as yajl decodes \ud800 and \udc00 */
      {"\xed\xb0\x80", 3},
      {"\xf0\x80\x80\xaf", 4}, /* overlong 4-byte */
      {"\xf0\x8f\xbf\xbf", 4},
      {"\xf4\x90\x80\x80", 4}, /* past U+10FFFF */
      {"\xf5\x80\x80\x80", 4},
      {"\xff", 1},
      {"\xc3", 1},             /* cut short */
      {"\xe2\x82", 2},
      {"\xf0\x9f\x98", 3},
      {"\xc3\x28", 2},         /* no continuation */
      {"\xe2\x28\xa1", 3},
      {"\xf0\x9f\x28\x80", 4},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint32_t cp = 7;
    cr_assert_eq(dec(bad[i].s, bad[i].len, &cp), 0, "case %zu", i);
    cr_assert_eq(cp, 7, "case %zu: *cp left alone", i);
  }
}

Test(utf8, check_names_the_first_bad_byte) {
  cr_assert_eq(utf8_check("", 0), 0);
  cr_assert_eq(utf8_check("plain", 5), 5);
  cr_assert_eq(utf8_check("caf\xc3\xa9 \xf0\x9f\x98\x80", 10), 10);
  cr_assert_eq(utf8_check("ab\xff", 3), 2);
  cr_assert_eq(utf8_check("a\0b\xc0\xaf", 5), 3); /* a NUL is U+0000, not an end */
  cr_assert_eq(utf8_check("ok\xc3", 3), 2);
  cr_assert_eq(utf8_check("x\xed\xa0\x80y", 5), 1);
}

/* UTF-8 decoding and validation; see utf8.h. */
#include "base/utf8.h"

size_t utf8_decode(const char *str, size_t n, uint32_t *cp) {
  const unsigned char *s = (const unsigned char *)str;
  if (s[0] < 0x80) {
    if (cp)
      *cp = s[0];
    return 1;
  }
  /* The lead byte fixes the length and the range of the second byte:
   * narrower after E0 (no overlong 3-byte form), ED (no surrogate), F0 (no
   * overlong 4-byte form) and F4 (nothing past U+10FFFF).  C0, C1 and
   * F5..FF never start a sequence. */
  size_t want;
  unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of s[1] */
  if (s[0] >= 0xC2 && s[0] <= 0xDF) {
    want = 2;
  } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    want = 3;
    if (s[0] == 0xE0)
      lo = 0xA0;
    else if (s[0] == 0xED)
      hi = 0x9F;
  } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    want = 4;
    if (s[0] == 0xF0)
      lo = 0x90;
    else if (s[0] == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (n < want || s[1] < lo || s[1] > hi)
    return 0;
  uint32_t v = s[0] & (0x7Fu >> want); /* the lead byte's payload bits */
  v = (v << 6) | (s[1] & 0x3Fu);
  for (size_t i = 2; i < want; i++) {
    if ((s[i] >> 6) != 0x2)
      return 0;
    v = (v << 6) | (s[i] & 0x3Fu);
  }
  if (cp)
    *cp = v;
  return want;
}

size_t utf8_check(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = utf8_decode(str + i, n - i, NULL);
    if (k == 0)
      return i;
    i += k;
  }
  return n;
}

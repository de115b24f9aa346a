/* Terminal-safe text; see term_escape.h. */
#include "base/term_escape.h"

#include <stdio.h>
#include <string.h>

#include "base/utf8.h"
#include "base/util.h"

/* General category Cf (Unicode 15.1), Zl and Zp, and the invisible reserved
 * code points beside them (U+2065; the whole tag block).  A bidi override
 * here is how a container would make an approver read "amount 5" where the
 * bytes say "amount 50000": sorted, so the lookup is a binary search. */
static const struct {
  uint32_t lo, hi;
} hidden[] = {
    {0x0080, 0x009f},   /* C1 controls (8-bit CSI and the like) */
    {0x00ad, 0x00ad},   /* soft hyphen */
    {0x0600, 0x0605},   /* Arabic number signs */
    {0x061c, 0x061c},   /* Arabic letter mark */
    {0x06dd, 0x06dd},   /* Arabic end of ayah */
    {0x070f, 0x070f},   /* Syriac abbreviation mark */
    {0x0890, 0x0891},   /* Arabic pound and piastre mark above */
    {0x08e2, 0x08e2},   /* Arabic disputed end of ayah */
    {0x180e, 0x180e},   /* Mongolian vowel separator */
    {0x200b, 0x200f},   /* zero-width space, (non-)joiner, LRM, RLM */
    {0x2028, 0x202e},   /* line/paragraph separator, embeddings, overrides */
    {0x2060, 0x206f},   /* word joiner, invisible operators, isolates, deprecated formats */
    {0xfeff, 0xfeff},   /* zero-width no-break space (BOM) */
    {0xfff9, 0xfffb},   /* interlinear annotation */
    {0x110bd, 0x110bd}, /* Kaithi number sign */
    {0x110cd, 0x110cd}, /* Kaithi number sign above */
    {0x13430, 0x1343f}, /* Egyptian hieroglyph format controls */
    {0x1bca0, 0x1bca3}, /* shorthand format controls */
    {0x1d173, 0x1d17a}, /* musical symbol format controls */
    {0xe0000, 0xe007f}, /* language tag and tag characters */
};

bool escape_code_point_is_hidden(uint32_t cp) {
  size_t lo = 0, hi = sizeof hidden / sizeof hidden[0];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cp < hidden[mid].lo)
      hi = mid;
    else if (cp > hidden[mid].hi)
      lo = mid + 1;
    else
      return true;
  }
  return false;
}

enum mode { TEXT, JSON_TEXT, MESSAGE };

/* A code point's escape: JSON's own form in JSON text (a surrogate pair
 * past U+FFFF, so a strict reader decodes the same value), \u or \U. */
static size_t put_code_point(char *out, uint32_t cp, enum mode m) {
  if (cp <= 0xffff)
    return (size_t)sprintf(out, "\\u%04x", (unsigned)cp);
  if (m == JSON_TEXT) {
    uint32_t v = cp - 0x10000;
    return (size_t)sprintf(out, "\\u%04x\\u%04x", (unsigned)(0xd800 + (v >> 10)),
                           (unsigned)(0xdc00 + (v & 0x3ff)));
  }
  return (size_t)sprintf(out, "\\U%08x", (unsigned)cp);
}

static char *escape(const char *s, enum mode m) {
  if (s == NULL)
    return xstrdup("");
  size_t len = strlen(s);
  /* at most 6 bytes out per byte in (\u00NN for one; 12 for a 4-byte
   * sequence as a surrogate pair, 10 as \UNNNNNNNN) */
  char *out = xmalloc(len * 6 + 1);
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  const unsigned char *end = p + len;
  while (*p) {
    unsigned c = *p;
    uint32_t cp = 0;
    size_t n = utf8_decode((const char *)p, (size_t)(end - p), &cp);
    if (n > 1) {
      if (escape_code_point_is_hidden(cp)) {
        o += put_code_point(out + o, cp, m);
      } else {
        memcpy(out + o, p, n);
        o += n;
      }
      p += n;
      continue;
    }
    p++;
    if (n == 1 && c >= 0x20 && c != 0x7f) {
      if (c == '\\' && m == TEXT)
        out[o++] = '\\';
      out[o++] = (char)c;
    } else if (m == JSON_TEXT && (c == '\n' || c == '\t' || c == '\r')) {
      /* whitespace between the tokens of a pretty dump (a dump escapes
       * every control inside a string, so a raw one is never text) */
      out[o++] = (char)c;
    } else if (m == JSON_TEXT) {
      /* in JSON text any other raw control can only sit inside a string;
       * an invalid byte becomes U+FFFD's escape */
      o += (size_t)sprintf(out + o, "\\u%04x", n == 0 ? 0xfffdu : c);
    } else if (c == '\n') {
      if (m == MESSAGE)
        out[o++] = '\n';
      else
        out[o++] = '\\', out[o++] = 'n';
    } else if (c == '\t') {
      if (m == MESSAGE)
        out[o++] = '\t';
      else
        out[o++] = '\\', out[o++] = 't';
    } else if (c == '\r') {
      out[o++] = '\\', out[o++] = 'r';
    } else {
      o += (size_t)sprintf(out + o, "\\x%02x", c);
    }
  }
  out[o] = '\0';
  return out;
}

char *escape_for_terminal(const char *s, bool json_text) {
  return escape(s, json_text ? JSON_TEXT : TEXT);
}

char *escape_message(const char *s) {
  return escape(s, MESSAGE);
}

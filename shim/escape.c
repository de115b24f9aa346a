/* Terminal-safe text; see escape.h. */
#include "shim/escape.h"

#include <stdio.h>
#include <string.h>

#include "shim/util.h"

/* The length of the valid UTF-8 sequence at p (1..4), or 0. */
static size_t utf8_len(const unsigned char *p) {
  if (p[0] < 0x80)
    return 1;
  size_t n = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
    return 0; /* a stray continuation byte, an overlong form, past U+10FFFF */
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
    return 0; /* overlong, or a surrogate */
  if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
    return 0;
  return n;
}

char *escape_for_terminal(const char *s, bool json_text) {
  if (s == NULL)
    return xstrdup("");
  size_t len = strlen(s);
  /* at most 6 bytes out per byte in (\u00NN) */
  char *out = xmalloc(len * 6 + 1);
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    size_t n = utf8_len(p);
    if (n > 1) {
      unsigned cp = ((p[0] & 0x1fu) << 6) | (p[1] & 0x3fu);
      if (n == 2 && cp >= 0x80 && cp <= 0x9f) { /* a C1 control: 8-bit CSI and the like */
        o += (size_t)sprintf(out + o, "\\u%04x", cp);
      } else {
        memcpy(out + o, p, n);
        o += n;
      }
      p += n;
      continue;
    }
    p++;
    if (n == 1 && c >= 0x20 && c != 0x7f) {
      if (c == '\\' && !json_text)
        out[o++] = '\\';
      out[o++] = (char)c;
    } else if (json_text) {
      /* in JSON text a raw control can only sit inside a string; an
       * invalid byte becomes U+FFFD's escape */
      o += (size_t)sprintf(out + o, "\\u%04x", n == 0 ? 0xfffdu : c);
    } else if (c == '\n') {
      out[o++] = '\\', out[o++] = 'n';
    } else if (c == '\r') {
      out[o++] = '\\', out[o++] = 'r';
    } else if (c == '\t') {
      out[o++] = '\\', out[o++] = 't';
    } else {
      o += (size_t)sprintf(out + o, "\\x%02x", c);
    }
  }
  out[o] = '\0';
  return out;
}

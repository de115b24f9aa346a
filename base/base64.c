/* base64 (base64.h).  EVP_DecodeBlock decodes whole quads and counts the
 * padding as zero bytes; the padding is taken off here. */
#include "base/base64.h"

#include <openssl/evp.h>
#include <string.h>

#include "base/util.h"

char *base64_encode(const void *s, size_t n) {
  char *out = xmalloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)out, s, (int)n);
  return out;
}

unsigned char *base64_decode(const char *text, size_t *n) {
  size_t len = strlen(text);
  if (len % 4 != 0 || len > (size_t)1 << 30)
    return NULL;
  /* One spelling only: the alphabet, then at most two '=' at the end.
   * EVP_DecodeBlock alone skips whitespace and takes '=' elsewhere. */
  size_t pad = (len >= 1 && text[len - 1] == '=') + (len >= 2 && text[len - 2] == '=');
  for (size_t i = 0; i < len - pad; i++) {
    char c = text[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
          c == '/'))
      return NULL;
  }
  unsigned char *out = xmalloc(3 * (len / 4) + 1);
  int r = len ? EVP_DecodeBlock(out, (const unsigned char *)text, (int)len) : 0;
  if (r < 0) {
    free(out);
    return NULL;
  }
  *n = (size_t)r - pad;
  out[*n] = '\0';
  return out;
}

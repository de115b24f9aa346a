/* Standard base64 (RFC 4648, with padding), through libcrypto's
 * EVP_EncodeBlock/EVP_DecodeBlock. */
#ifndef TOLLGATE_BASE64_H
#define TOLLGATE_BASE64_H

#include <stddef.h>

/* The encoding of s[0..n) (owned, NUL-terminated). */
char *base64_encode(const void *s, size_t n);

/* The bytes text encodes (owned, NUL-terminated, *n their count), or NULL
 * when text is not padded base64 (whitespace, or an "=" before the end, is not accepted either). */
unsigned char *base64_decode(const char *text, size_t *n);

#endif

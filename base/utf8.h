/* UTF-8 by RFC 3629: the one definition of well-formed text for JSON
 * (parsing, json_dump, json_buf) and for the terminal escaper.
 *
 * Well-formed means: no stray continuation byte, no overlong form (C0 AF
 * for '/', E0 80 AF), no UTF-16 surrogate (ED A0..BF: what yajl decodes a
 * lone \udc00 to), no code point past U+10FFFF (F4 90 and up, F5..FF), no
 * sequence cut short.  A check of the structure alone (a lead byte, then
 * that many continuation bytes: yajl's) lets the first three by, and a
 * strict reader downstream (the audit log's, a tool's, Python's) refuses
 * them. */
#ifndef TOLLGATE_UTF8_H
#define TOLLGATE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (1..4) of the well-formed sequence at s[0..n), n >= 1, and
 * its code point in *cp (cp may be NULL); 0 when s[0] does not start one
 * (*cp then untouched).  A NUL byte is the one-byte sequence U+0000. */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* The offset of the first byte of s[0..n) that does not start a
 * well-formed sequence, or n when all of s[0..n) is well-formed. */
size_t utf8_check(const char *s, size_t n);

#endif

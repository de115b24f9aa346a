/* libFuzzer target: the http backend's URL parser (governance/egress_check.c)
 * with container-controlled URLs and header values.  Beyond not crashing:
 * an accepted URL's canonical spelling parses again to itself
 * (idempotent), holds no userinfo, backslash, fragment or control byte,
 * and none of the shapes the canonical form refuses or rewrites (issue
 * 38.6): in the path no "." or ".." or empty segment, no ';', no encoded
 * '/', '\', ';', control or "%25HH", no %HH of a byte a path holds plainly,
 * and encoded bytes that decode to UTF-8; in the query no %HH of an
 * unreserved byte; every %HH with uppercase hex.  An accepted header
 * value holds no CR, LF or NUL.
 *
 * FUZZ_SOURCES: governance/egress_check.c base/utf8.c base/util.c base/error.c
 */
#include <ctype.h>
#include <stdint.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "governance/egress_check.h"

static int hexdigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1; /* lowercase hex is not canonical */
}

/* The canonical path or query p holds none of the refused or rewritten
 * shapes. */
static void check_canonical(const char *p, bool is_path) {
  size_t n = strlen(p);
  char *decoded = malloc(n + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c != '%') {
      if (c < 0x21 || c >= 0x7f || (is_path && c == ';'))
        abort();
      decoded[k++] = (char)c;
      continue;
    }
    if (i + 2 >= n)
      abort();
    int hi = hexdigit(p[i + 1]), lo = hexdigit(p[i + 2]);
    if (hi < 0 || lo < 0)
      abort();
    int v = hi * 16 + lo;
    bool unreserved = (v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') || (v >= '0' && v <= '9') ||
                      strchr("-._~", v) != NULL;
    if (unreserved || v < 0x20 || v == 0x7f)
      abort();
    if (is_path && (strchr("!$&'()*+,=:@/\\;", v) != NULL ||
                    (v == '%' && i + 4 < n && isxdigit((unsigned char)p[i + 3]) && isxdigit((unsigned char)p[i + 4]))))
      abort();
    decoded[k++] = (char)v;
    i += 2;
  }
  if (is_path && (utf8_check(decoded, k) != k || strstr(p, "//") != NULL || p[0] != '/'))
    abort();
  free(decoded);
}

static void check(const char *url, bool wildcard) {
  struct egress_url u, again;
  char *why = NULL;
  if (!egress_url_parse(url, wildcard, &u, &why)) {
    if (why == NULL)
      abort();
    free(why);
    return;
  }
  char *s = egress_url_format(&u, false);
  if (strpbrk(s, "\\#\r\n\t ") != NULL || (strpbrk(u.host, "@:%/") != NULL && u.family != AF_INET6))
    abort();
  if (!wildcard) {
    if (!egress_url_parse(s, false, &again, &why))
      abort();
    char *t = egress_url_format(&again, false);
    if (strcmp(s, t) != 0)
      abort();
    free(t);
    egress_url_clear(&again);
  }
  check_canonical(u.path, true);
  if (u.query)
    check_canonical(u.query, false);
  const char *p = u.path;
  while (p && *p) {
    const char *seg = p + 1, *end = strchr(seg, '/');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
      abort();
    p = end;
  }
  free(s);
  egress_url_clear(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  check(text, false);
  check(text, true);
  char *why = NULL;
  const char *colon = memchr(text, ':', size);
  if (colon) {
    char *name = strndup(text, (size_t)(colon - text));
    if (egress_header_ok(name, colon + 1, size - (size_t)(colon - text) - 1, &why)) {
      if (memchr(colon + 1, '\r', size - (size_t)(colon - text) - 1) ||
          memchr(colon + 1, '\n', size - (size_t)(colon - text) - 1) ||
          memchr(colon + 1, '\0', size - (size_t)(colon - text) - 1))
        abort();
    }
    free(why);
    free(name);
  }
  free(text);
  return 0;
}

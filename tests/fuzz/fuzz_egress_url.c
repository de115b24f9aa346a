/* libFuzzer target: the http backend's URL parser (governance/egress_check.c)
 * with container-controlled URLs and header values.  Beyond not crashing:
 * an accepted URL's normalised spelling parses again to itself, holds no
 * userinfo, backslash, fragment or control byte, and its path no "." or
 * ".." segment; an accepted header value holds no CR, LF or NUL.
 *
 * FUZZ_SOURCES: governance/egress_check.c base/util.c base/error.c
 */
#include <stdint.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "governance/egress_check.h"

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

/* Lexical path clean-up, for host paths (hostpath.c) and container paths
 * (the escape-shape checks) alike: no file system is looked at. */
#include <string.h>

#include "oci/transform.h"
#include "base/util.h"

char *oci_path_clean(const char *path) {
  size_t len = strlen(path);
  char *out = xmalloc(len + 2);
  size_t o = 0;
  const char *p = path;
  while (*p) {
    while (*p == '/')
      p++;
    const char *start = p;
    while (*p && *p != '/')
      p++;
    size_t n = (size_t)(p - start);
    if (n == 0 || (n == 1 && start[0] == '.'))
      continue;
    if (n == 2 && start[0] == '.' && start[1] == '.') {
      while (o > 0 && out[o - 1] != '/')
        o--;
      if (o > 0)
        o--;
      continue;
    }
    out[o++] = '/';
    memcpy(out + o, start, n);
    o += n;
  }
  if (o == 0)
    out[o++] = '/';
  out[o] = '\0';
  return out;
}

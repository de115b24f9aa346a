/* The rendering of an argument's path ("args.a.b[2]"). */
#include "governance/arg_path.h"

#include <stdlib.h>

#include "base/util.h"

char *arg_path_render(const struct arg_path *at) {
  if (at == NULL)
    return xstrdup("args");
  char *up = arg_path_render(at->up);
  char *s = at->key ? xasprintf("%s.%s", up, at->key) : xasprintf("%s[%zu]", up, at->index);
  free(up);
  return s;
}

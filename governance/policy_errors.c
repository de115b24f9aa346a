#include "governance/policy_errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void policy_error_add(struct policy_errors *e, const json_t *at,
                      const char *path, const char *fmt, ...) {
  va_list ap;
  char *what = NULL;
  va_start(ap, fmt);
  if (vasprintf(&what, fmt, ap) < 0)
    abort();
  va_end(ap);
  char *msg;
  const char *file = e->file ? e->file : "policy";
  if (at != NULL && at->line > 0)
    msg = xasprintf("%s:%u:%u: %s: %s", file, at->line, at->col,
                    path && *path ? path : "(top level)", what);
  else
    msg = xasprintf("%s: %s: %s", file, path && *path ? path : "(top level)", what);
  free(what);
  if (e->len == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 8;
    e->msgs = xrealloc(e->msgs, e->cap * sizeof *e->msgs);
  }
  e->msgs[e->len++] = msg;
}

char *policy_errors_join(const struct policy_errors *e) {
  if (e->len == 0)
    return NULL;
  size_t total = 0;
  for (size_t i = 0; i < e->len; i++)
    total += strlen(e->msgs[i]) + 1;
  char *s = xmalloc(total + 1), *p = s;
  for (size_t i = 0; i < e->len; i++) {
    size_t n = strlen(e->msgs[i]);
    memcpy(p, e->msgs[i], n);
    p += n;
    if (i + 1 < e->len)
      *p++ = '\n';
  }
  *p = '\0';
  return s;
}

void policy_errors_free(struct policy_errors *e) {
  for (size_t i = 0; i < e->len; i++)
    free(e->msgs[i]);
  free(e->msgs);
  e->msgs = NULL;
  e->len = e->cap = 0;
}

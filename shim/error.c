#include "shim/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *vformat(const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort(); /* out of memory: nothing sensible left to do */
  return s;
}

int tg_error_set(tg_error **err, int errnum, const char *fmt, ...) {
  if (err == NULL || *err != NULL)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  char *msg = vformat(fmt, ap);
  va_end(ap);
  if (errnum != 0) {
    char *full = NULL;
    if (asprintf(&full, "%s: %s", msg, strerror(errnum)) < 0)
      abort();
    free(msg);
    msg = full;
  }
  tg_error *e = calloc(1, sizeof *e);
  if (e == NULL)
    abort();
  e->errnum = errnum;
  e->msg = msg;
  *err = e;
  return -1;
}

int tg_error_wrap(tg_error **err, const char *fmt, ...) {
  if (err == NULL)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  char *ctx = vformat(fmt, ap);
  va_end(ap);
  if (*err == NULL) {
    tg_error_set(err, 0, "%s", ctx);
    free(ctx);
    return -1;
  }
  char *full = NULL;
  if (asprintf(&full, "%s: %s", ctx, (*err)->msg) < 0)
    abort();
  free(ctx);
  free((*err)->msg);
  (*err)->msg = full;
  return -1;
}

void tg_error_free(tg_error **err) {
  if (err == NULL || *err == NULL)
    return;
  free((*err)->msg);
  free(*err);
  *err = NULL;
}

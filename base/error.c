#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cause as it ends a message.  Three strerror texts are rewritten:
 * container managers classify a runtime's error by matching its text, and
 * podman turns any message with "No such file or directory" into "OCI
 * runtime attempted to invoke a command that was not found" (exit 127),
 * and "Permission denied" / "Operation not permitted" into "permission
 * denied" (exit 126), whatever tollgate was actually saying (a policy file
 * that cannot be read, a refused bundle).  The errno's name stays, so
 * nothing is lost for a person reading it. */
static const char *cause_text(int errnum) {
  switch (errnum) {
  case ENOENT:
    return "no such entry (ENOENT)";
  case EACCES:
    return "access refused (EACCES)";
  case EPERM:
    return "not allowed to the caller (EPERM)";
  default:
    return strerror(errnum);
  }
}

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
    if (asprintf(&full, "%s: %s", msg, cause_text(errnum)) < 0)
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

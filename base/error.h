/* One error idiom for all of tollgate (after crun's libcrun_error_t).
 *
 * A function that can fail takes `tg_error **err` as its last parameter.
 * On failure it calls tg_error_set() (which fills *err and returns -1) and
 * returns that negative value; the caller writes `if (ret < 0) return ret;`
 * or adds context with tg_error_wrap().  Only main() turns an error into a
 * log line and an exit status.
 */
#ifndef TOLLGATE_ERROR_H
#define TOLLGATE_ERROR_H

typedef struct tg_error {
  int errnum; /* errno-style cause, 0 when there is none */
  char *msg;  /* full human-readable message, owned */
} tg_error;

/* Set *err (if err and *err is NULL) to a message built from fmt.  When
 * errnum is non-zero ": <cause>" is appended: strerror(errnum), except
 * for ENOENT, EACCES and EPERM, whose strerror texts container managers
 * misread (podman: "No such file or directory" means "command not
 * found"); those read "no such entry (ENOENT)", "access refused
 * (EACCES)", "not allowed to the caller (EPERM)".  Always returns -1,
 * so `return tg_error_set(err, errno, "open %s", path);` is the idiom.
 * If *err is already set, the existing error wins and is left alone. */
int tg_error_set(tg_error **err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the existing error with context: "<context>: <old message>".
 * Returns -1.  If *err is NULL it behaves like tg_error_set(err, 0, ...). */
int tg_error_wrap(tg_error **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Free *err and set it to NULL.  Safe on NULL. */
void tg_error_free(tg_error **err);

#define cleanup_error __attribute__((cleanup(tg_error_free)))

#endif

/* Small, obvious helpers for the operations that are easy to get wrong:
 * cleanup attributes, whole reads and writes, bounded reads that never
 * follow a link or block on a FIFO, and atomic file replacement.
 * Every module uses these instead of open-coding its own variant. */
#ifndef TOLLGATE_UTIL_H
#define TOLLGATE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <sys/types.h>

#include "base/error.h"

void cleanup_free_fn(void *p);  /* free(*(void **)p) */
void cleanup_close_fn(int *fd); /* close(*fd) if >= 0, keeps errno */

#define cleanup_free __attribute__((cleanup(cleanup_free_fn)))
#define cleanup_close __attribute__((cleanup(cleanup_close_fn)))

/* Allocation that aborts on out-of-memory (as crun and systemd do). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write all of buf, retrying on EINTR and short writes.  0 or -1/errno. */
int write_all(int fd, const void *buf, size_t len);

/* Read until EOF, at most max bytes.  Returns the number of bytes read, or
 * -1 with errno set (EFBIG when the input holds more than max bytes).
 * *out is NUL-terminated and owned by the caller. */
ssize_t read_all_bounded(int fd, size_t max, char **out);

/* Open dirfd/name for reading without trusting it: O_NOFOLLOW (a symlink is
 * refused, never followed), O_NONBLOCK (a FIFO cannot block us), then fstat
 * insists on a regular file, then at most max bytes are read.  Returns 0
 * and an owned NUL-terminated buffer, or -1 with *err naming the problem;
 * errno is left as ELOOP (symlink), EINVAL (not a regular file), EFBIG
 * (larger than max) or the open/read failure.  dirfd may be AT_FDCWD. */
int read_file_untrusted(int dirfd, const char *name, size_t max, char **out,
                        size_t *len, tg_error **err);

/* Read a trusted host file (config, policy, bundle) of at most max bytes.
 * Follows symlinks like any normal open.  Same ownership as above. */
int read_file(const char *path, size_t max, char **out, size_t *len,
              tg_error **err);

/* Replace dirfd/name atomically: write "<name>.tmp.<pid>.<n>" with mode,
 * optionally fdatasync it, then rename over name.  A reader sees either the
 * old file or the whole new one, never half. */
int write_file_atomic(int dirfd, const char *name, const void *data,
                      size_t len, mode_t mode, bool sync, tg_error **err);

/* mkdir -p with mode for every created component.  0 or -1 with *err. */
int mkdir_p(const char *path, mode_t mode, tg_error **err);

/* Remove a directory tree without following symlinks.  Missing is fine. */
int remove_tree(const char *path, tg_error **err);

/* A container id as runc accepts it: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
 * Only a valid id may ever become part of a path. */
bool container_id_is_valid(const char *id);

/* Wall clock as RFC 3339 UTC with nanoseconds, e.g.
 * "2026-12-02T16:21:10.123456789Z".  buf must hold 40 bytes. */
void rfc3339_now(char *buf, size_t size);
/* The same for a given time. */
struct timespec;
void rfc3339_time(const struct timespec *ts, char *buf, size_t size);

/* The directory holding the running binary (from /proc/self/exe), owned,
 * or NULL.  Data files shipped beside tollgate are found from here. */
char *executable_dir(void);

/* Monotonic clock in nanoseconds. */
unsigned long long monotonic_ns(void);

/* Field 22 of /proc/<pid>/stat (the start time in clock ticks since
 * boot), or 0 when it cannot be read: with the pid it names one process,
 * whatever pid reuse does later. */
unsigned long long process_start_time(pid_t pid);

/* pidfd_open(2) and pidfd_send_signal(2), which glibc 2.36 declares
 * nowhere this project's headers reach: -1 with errno on failure. */
int pidfd_open_pid(pid_t pid);
int pidfd_signal(int pidfd, int sig);

/* pthread_create() with every signal blocked in the new thread, so that
 * signals (and the threads it starts in turn) stay the main thread's.
 * false with errno set to pthread_create's error. */
bool thread_start_masked(pthread_t *t, void *(*fn)(void *), void *arg);

#endif

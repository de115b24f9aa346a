#include "base/util.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void cleanup_free_fn(void *p) { free(*(void **)p); }

void cleanup_close_fn(int *fd) {
  if (*fd >= 0) {
    int saved = errno;
    close(*fd);
    errno = saved;
  }
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL)
    abort();
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL)
    abort();
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (p == NULL)
    abort();
  return p;
}

char *xstrdup(const char *s) {
  char *r = strdup(s);
  if (r == NULL)
    abort();
  return r;
}

char *xstrndup(const char *s, size_t n) {
  char *r = strndup(s, n);
  if (r == NULL)
    abort();
  return r;
}

char *xasprintf(const char *fmt, ...) {
  va_list ap;
  char *s = NULL;
  va_start(ap, fmt);
  int r = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (r < 0)
    abort();
  return s;
}

int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (n == 0) {
      errno = EIO;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Start with room for hint bytes and one more, so that a file of the size
 * fstat reported is read whole and its end seen without growing. */
static ssize_t read_all_sized(int fd, size_t max, size_t hint, char **out) {
  size_t cap = (max < hint ? max : hint) + 1, len = 0;
  char *buf = xmalloc(cap + 1);
  for (;;) {
    if (len == cap) {
      if (cap > max) {
        free(buf);
        errno = EFBIG;
        return -1;
      }
      cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      buf = xrealloc(buf, cap + 1);
    }
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int saved = errno;
      free(buf);
      errno = saved;
      return -1;
    }
    if (n == 0)
      break;
    len += (size_t)n;
    if (len > max) {
      free(buf);
      errno = EFBIG;
      return -1;
    }
  }
  buf[len] = '\0';
  *out = buf;
  return (ssize_t)len;
}

ssize_t read_all_bounded(int fd, size_t max, char **out) {
  return read_all_sized(fd, max, 4095, out);
}

int read_file_untrusted(int dirfd, const char *name, size_t max, char **out,
                        size_t *len, tg_error **err) {
  /* O_NOFOLLOW: a symlink planted by the container fails with ELOOP instead
   * of making us read a host file.  O_NONBLOCK: a FIFO opens without waiting
   * for a writer, and fstat below rejects it before any read. */
  cleanup_close int fd =
      openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    tg_error_set(err, e, "open %s", name);
    errno = e;
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    tg_error_set(err, e, "stat %s", name);
    errno = e;
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    tg_error_set(err, 0, "%s is not a regular file", name);
    errno = EINVAL;
    return -1;
  }
  if ((unsigned long long)st.st_size > max) {
    tg_error_set(err, 0, "%s is %lld bytes, over the limit of %zu", name,
                 (long long)st.st_size, max);
    errno = EFBIG;
    return -1;
  }
  /* Allocated by the size fstat saw, not a fixed 4 KiB: the bridge reads
   * one of these per call, and a chunk of 1 KiB or more makes glibc's
   * malloc consolidate its fast bins (malloc_consolidate showed in the
   * sidecar's profile).  The size may grow between fstat and read:
   * read_all_sized grows the buffer and re-checks the limit. */
  ssize_t n = read_all_sized(fd, max, (size_t)st.st_size, out);
  if (n < 0) {
    int e = errno;
    if (e == EFBIG)
      tg_error_set(err, 0, "%s is over the limit of %zu bytes", name, max);
    else
      tg_error_set(err, e, "read %s", name);
    errno = e;
    return -1;
  }
  if (len)
    *len = (size_t)n;
  return 0;
}

int read_file(const char *path, size_t max, char **out, size_t *len,
              tg_error **err) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return tg_error_set(err, errno, "open %s", path);
  ssize_t n = read_all_bounded(fd, max, out);
  if (n < 0) {
    if (errno == EFBIG)
      return tg_error_set(err, 0, "%s is larger than %zu bytes", path, max);
    return tg_error_set(err, errno, "read %s", path);
  }
  if (len)
    *len = (size_t)n;
  return 0;
}

int write_file_atomic(int dirfd, const char *name, const void *data,
                      size_t len, mode_t mode, bool sync, tg_error **err) {
  static atomic_uint counter;
  char tmp[4096];
  int r = snprintf(tmp, sizeof tmp, "%s.tmp.%d.%u", name, (int)getpid(),
                   atomic_fetch_add(&counter, 1));
  if (r < 0 || (size_t)r >= sizeof tmp)
    return tg_error_set(err, ENAMETOOLONG, "write %s", name);
  int fd = openat(dirfd, tmp,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return tg_error_set(err, errno, "create %s", tmp);
  if (write_all(fd, data, len) < 0 || (sync && fdatasync(fd) < 0)) {
    int e = errno;
    close(fd);
    unlinkat(dirfd, tmp, 0);
    return tg_error_set(err, e, "write %s", tmp);
  }
  if (close(fd) < 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return tg_error_set(err, e, "close %s", tmp);
  }
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return tg_error_set(err, e, "rename %s to %s", tmp, name);
  }
  return 0;
}

int mkdir_p(const char *path, mode_t mode, tg_error **err) {
  cleanup_free char *p = xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = '\0';
    if (mkdir(p, mode) < 0 && errno != EEXIST)
      return tg_error_set(err, errno, "mkdir %s", p);
    *s = '/';
  }
  if (mkdir(p, mode) < 0 && errno != EEXIST)
    return tg_error_set(err, errno, "mkdir %s", p);
  return 0;
}

static int remove_at(int parent, const char *name, tg_error **err) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return tg_error_set(err, errno, "unlink %s", name);
  /* A directory: descend without following links. */
  int fd = openat(parent, name,
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return tg_error_set(err, errno, "open %s", name);
  /* Never into a mount: a bind mount left in a state directory (a pin
   * of a host directory) would have its host files deleted. */
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH, 0, &stx) == 0 && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
      (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
    close(fd);
    return tg_error_set(err, EBUSY, "refusing to remove %s: it is a mount point (unmount it first)", name);
  }
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    int e = errno;
    close(fd);
    return tg_error_set(err, e, "opendir %s", name);
  }
  struct dirent *de;
  int ret = 0;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (remove_at(dirfd(d), de->d_name, err) < 0) {
      ret = -1;
      break;
    }
  }
  closedir(d);
  if (ret < 0)
    return ret;
  if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
    int e = errno;
    if (e != ENOTEMPTY)
      return tg_error_set(err, e, "rmdir %s", name);
    /* Something made an entry while it was removed: say which. */
    char seen[256] = "";
    int again = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *left = again < 0 ? NULL : fdopendir(again);
    if (left == NULL && again >= 0)
      close(again);
    while (left != NULL && (de = readdir(left)) != NULL) {
      size_t at = strlen(seen), n = strlen(de->d_name);
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || at + n + 3 >= sizeof seen)
        continue;
      if (at > 0) {
        memcpy(seen + at, ", ", 2);
        at += 2;
      }
      memcpy(seen + at, de->d_name, n + 1);
    }
    if (left != NULL)
      closedir(left);
    return tg_error_set(err, e, "rmdir %s (made meanwhile: %s)", name, seen);
  }
  return 0;
}

int remove_tree(const char *path, tg_error **err) {
  return remove_at(AT_FDCWD, path, err);
}

bool container_id_is_valid(const char *id) {
  if (id == NULL)
    return false;
  size_t n = strlen(id);
  if (n == 0 || n > 128)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = id[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9');
    if (i == 0 ? !alnum : !(alnum || c == '_' || c == '.' || c == '-'))
      return false;
  }
  return true;
}

static char *put_digits(char *p, unsigned long v, int width) {
  for (int i = width - 1; i >= 0; i--) {
    p[i] = (char)('0' + v % 10);
    v /= 10;
  }
  return p + width;
}

void rfc3339_time(const struct timespec *ts, char *buf, size_t size) {
  struct tm tm;
  gmtime_r(&ts->tv_sec, &tm);
  long year = tm.tm_year + 1900L;
  if (size < 31 || year < 0 || year > 9999 || ts->tv_nsec < 0 || ts->tv_nsec > 999999999L) {
    char base[64];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%09ldZ", base, ts->tv_nsec);
    return;
  }
  /* By hand, not strftime + snprintf: one of these goes into every audit
   * record, and the two showed as ~4 % of a governed call's CPU. */
  char *p = put_digits(buf, (unsigned long)year, 4);
  *p++ = '-';
  p = put_digits(p, (unsigned long)tm.tm_mon + 1, 2);
  *p++ = '-';
  p = put_digits(p, (unsigned long)tm.tm_mday, 2);
  *p++ = 'T';
  p = put_digits(p, (unsigned long)tm.tm_hour, 2);
  *p++ = ':';
  p = put_digits(p, (unsigned long)tm.tm_min, 2);
  *p++ = ':';
  p = put_digits(p, (unsigned long)tm.tm_sec, 2);
  *p++ = '.';
  p = put_digits(p, (unsigned long)ts->tv_nsec, 9);
  *p++ = 'Z';
  *p = '\0';
}

void rfc3339_now(char *buf, size_t size) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  rfc3339_time(&ts, buf, size);
}

unsigned long long monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull +
         (unsigned long long)ts.tv_nsec;
}

char *executable_dir(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return NULL;
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (slash == NULL)
    return NULL;
  *slash = '\0';
  return xstrdup(buf);
}

bool thread_start_masked(pthread_t *t, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  /* pthread_create returns its error; errno may hold another (ENOMEM
   * from the stack's mmap when it returns EAGAIN) or an older one. */
  if (r != 0)
    errno = r;
  return r == 0;
}

unsigned long long process_start_time(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  /* The command name (field 2) may hold spaces and parentheses: count
   * from the last ')'. */
  char *p = strrchr(buf, ')');
  for (int field = 2; field < 22 && p != NULL; field++)
    p = strchr(p + 1, ' ');
  return p ? strtoull(p + 1, NULL, 10) : 0;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int pidfd_open_pid(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int pidfd_signal(int pidfd, int sig) { return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0); }

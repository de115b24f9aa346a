/* The registry of state roots (shim/lifecycle/roots.h). */
#include "shim/lifecycle/roots.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define ENTRY_MAX 4096

/* FNV-1a, 64 bits: a name, not a secret (only root writes here). */
static void entry_name(const char *path, char out[17]) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    h ^= *p;
    h *= 1099511628211ULL;
  }
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Owned by us and writable by nobody else: a place only we could have
 * filled. */
static bool ours(const struct stat *st) {
  return st->st_uid == geteuid() && (st->st_mode & 022) == 0;
}

void roots_register(const char *root) {
  char real[PATH_MAX];
  if (realpath(root, real) == NULL)
    return;
  char name[17];
  entry_name(real, name);
  cleanup_free char *path = xasprintf("%s/%s", TG_ROOTS_REGISTRY, name);
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
    return; /* registered: the common case costs one lstat */
  if (mkdir(TG_ROOTS_REGISTRY, 0700) < 0 && errno != EEXIST)
    return;
  cleanup_close int dfd = open(TG_ROOTS_REGISTRY, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0 || fstat(dfd, &st) < 0 || !ours(&st))
    return;
  cleanup_free char *text = xasprintf("%s\n", real);
  tg_error *e = NULL;
  write_file_atomic(dfd, name, text, strlen(text), 0600, false, &e);
  tg_error_free(&e);
}

/* The root an entry names, checked, or NULL (the entry is removed when
 * its root is gone). */
static char *entry_root(int dfd, const char *name) {
  cleanup_close int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !ours(&st) || st.st_size > ENTRY_MAX)
    return NULL;
  char buf[ENTRY_MAX + 1];
  ssize_t n = read(fd, buf, ENTRY_MAX);
  if (n < 2 || buf[n - 1] != '\n')
    return NULL;
  buf[n - 1] = '\0';
  char want[17];
  entry_name(buf, want);
  if (buf[0] != '/' || memchr(buf, '\n', (size_t)n - 1) != NULL || strcmp(want, name) != 0)
    return NULL;
  if (lstat(buf, &st) < 0) {
    if (errno == ENOENT)
      unlinkat(dfd, name, 0); /* the root is gone: so is its entry */
    return NULL;
  }
  if (!S_ISDIR(st.st_mode) || !ours(&st))
    return NULL;
  return xstrdup(buf);
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char **roots_list(const char *current, size_t *n) {
  char **out = NULL;
  *n = 0;
  char real[PATH_MAX];
  if (current != NULL && realpath(current, real) != NULL) {
    out = xrealloc(out, sizeof *out);
    out[(*n)++] = xstrdup(real);
  }
  cleanup_close int dfd = open(TG_ROOTS_REGISTRY, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (dfd >= 0 && fstat(dfd, &st) == 0 && ours(&st)) {
    int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
    if (d == NULL && dup >= 0)
      close(dup);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
      if (e->d_name[0] == '.' || strlen(e->d_name) != 16)
        continue;
      char *r = entry_root(dfd, e->d_name);
      if (r == NULL)
        continue;
      out = xrealloc(out, (*n + 1) * sizeof *out);
      out[(*n)++] = r;
    }
    if (d)
      closedir(d);
  }
  if (*n > 1)
    qsort(out, *n, sizeof *out, cmp);
  size_t k = 0;
  for (size_t i = 0; i < *n; i++) {
    if (k > 0 && strcmp(out[k - 1], out[i]) == 0)
      free(out[i]);
    else
      out[k++] = out[i];
  }
  *n = k;
  return out;
}

void roots_free(char **roots, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(roots[i]);
  free(roots);
}

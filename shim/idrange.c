/* Host id range claims (see shim/idrange.h). */
#include "shim/idrange.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/util.h"

#define CLAIM_MAX 4096
/* In the owner directory: the token its claims carry.  An inode number
 * alone is no proof of identity (ext4 hands a freed one straight out
 * again to the next directory of the same name). */
#define OWNER_TOKEN ".id-claim"

static int pool_lock(const struct id_pool *pool, int *dir_fd, tg_error **err) {
  if (mkdir_p(pool->dir, 0700, err) < 0)
    return tg_error_wrap(err, "id range pool %s", pool->dir);
  *dir_fd = open(pool->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*dir_fd < 0)
    return tg_error_set(err, errno, "id range pool %s: open", pool->dir);
  int lock = openat(*dir_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) < 0) {
    int e = errno;
    if (lock >= 0)
      close(lock);
    close(*dir_fd);
    return tg_error_set(err, e, "id range pool %s: lock", pool->dir);
  }
  return lock;
}

/* The owner recorded in claim file name, or NULL when it is unreadable or
 * short (a crash mid-write): such a claim is free.  token gets the token
 * the owner directory held at claim time. */
static char *claim_owner(int dir_fd, const char *name, char token[33]) {
  char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dir_fd, name, CLAIM_MAX, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return NULL;
  }
  char *nl = memchr(buf, '\n', len);
  char *sp = nl ? memrchr(buf, ' ', (size_t)(nl - buf)) : NULL;
  if (sp == NULL || buf[0] != '/') {
    free(buf);
    return NULL;
  }
  *sp = '\0';
  size_t tl = (size_t)(nl - sp - 1);
  if (tl != 32) {
    free(buf);
    return NULL;
  }
  memcpy(token, sp + 1, 32);
  token[32] = '\0';
  return buf;
}

/* The token in dir/OWNER_TOKEN, or -1 when there is none. */
static int read_token(const char *dir, char token[33]) {
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return -1;
  char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dfd, OWNER_TOKEN, 64, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return -1;
  }
  int r = len == 32 ? 0 : -1;
  if (r == 0) {
    memcpy(token, buf, 32);
    token[32] = '\0';
  }
  free(buf);
  return r;
}

/* The owner's token, made on its first claim. */
static int owner_token(const char *owner, char token[33], tg_error **err) {
  if (read_token(owner, token) == 0)
    return 0;
  unsigned char raw[16];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return tg_error_set(err, errno, "id range claim: getrandom");
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(token + 2 * i, 3, "%02x", raw[i]);
  cleanup_close int dfd = open(owner, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return tg_error_set(err, errno, "id range claim: owner %s", owner);
  return write_file_atomic(dfd, OWNER_TOKEN, token, 32, 0600, false, err);
}

/* Does the claim still belong to a live owner, and is that owner owner? */
enum claim_state { CLAIM_FREE, CLAIM_MINE, CLAIM_OTHER };
static enum claim_state claim_state(int dir_fd, const char *name, const char *owner, char **holder) {
  char token[33];
  char *who = claim_owner(dir_fd, name, token);
  if (who == NULL)
    return CLAIM_FREE;
  char have[33];
  if (read_token(who, have) < 0 || strcmp(have, token) != 0) {
    free(who);
    return CLAIM_FREE; /* the owner's state directory is gone: reclaimable */
  }
  enum claim_state s = strcmp(who, owner) == 0 ? CLAIM_MINE : CLAIM_OTHER;
  if (holder)
    *holder = who;
  else
    free(who);
  return s;
}

/* owner as an absolute path with its parent resolved, the same whether or
 * not owner itself still exists (delete releases after removing it). */
static char *canonical_owner(const char *owner, tg_error **err) {
  cleanup_free char *copy = xstrdup(owner);
  size_t len = strlen(copy);
  while (len > 1 && copy[len - 1] == '/')
    copy[--len] = '\0';
  char *slash = strrchr(copy, '/');
  const char *base = slash ? slash + 1 : copy;
  const char *parent = slash == copy ? "/" : slash ? (*slash = '\0', copy) : ".";
  cleanup_free char *rp = realpath(parent, NULL);
  if (rp == NULL) {
    tg_error_set(err, errno, "id range: cannot resolve %s", owner);
    return NULL;
  }
  return xasprintf("%s/%s", strcmp(rp, "/") == 0 ? "" : rp, base);
}

static int write_claim(int dir_fd, unsigned long long slot, const char *owner, const char *token,
                       tg_error **err) {
  char name[32];
  snprintf(name, sizeof name, "%llu", slot);
  cleanup_free char *text = xasprintf("%s %s\n", owner, token);
  /* Not synced: claims only need to outlive a crashed tollgate, not the
   * host; after a reboot no container holds any id. */
  return write_file_atomic(dir_fd, name, text, strlen(text), 0600, false, err);
}

int idrange_claim(const struct id_pool *pool, const char *owner, const unsigned long long *want, size_t n,
                  unsigned long long *slot, tg_error **err) {
  cleanup_free char *abs = canonical_owner(owner, err);
  if (abs == NULL)
    return -1;
  owner = abs;
  /* The token is in place before any claim names it. */
  char token[33];
  if (owner_token(owner, token, err) < 0)
    return -1;
  int dir_fd = -1;
  cleanup_close int lock = pool_lock(pool, &dir_fd, err);
  if (lock < 0)
    return -1;
  cleanup_close int dfd = dir_fd;
  char name[32];
  if (n == 0) {
    for (unsigned long long k = 0; k < pool->count; k++) {
      snprintf(name, sizeof name, "%llu", k);
      if (claim_state(dfd, name, owner, NULL) == CLAIM_OTHER)
        continue;
      if (write_claim(dfd, k, owner, token, err) < 0)
        return -1;
      *slot = k;
      return 0;
    }
    return tg_error_set(err, 0, "every one of the %llu host id ranges in %s is held by a container: delete "
                        "containers, or raise id_range_count in the host config", pool->count, pool->dir);
  }
  for (size_t i = 0; i < n; i++) {
    if (want[i] >= pool->count)
      return tg_error_set(err, 0, "host id range %llu is outside the pool of %llu", want[i], pool->count);
    snprintf(name, sizeof name, "%llu", want[i]);
    char *holder = NULL;
    if (claim_state(dfd, name, owner, &holder) == CLAIM_OTHER) {
      unsigned long long lo = pool->base + want[i] * pool->size;
      tg_error_set(err, 0, "host ids %llu-%llu belong to container state %s: map ids of a range no "
                   "container holds, or leave out the user namespace so tollgate allocates one",
                   lo, lo + pool->size - 1, holder);
      free(holder);
      return -1;
    }
    free(holder);
  }
  for (size_t i = 0; i < n; i++)
    if (write_claim(dfd, want[i], owner, token, err) < 0)
      return -1;
  if (slot)
    *slot = want[0];
  return 0;
}

int idrange_release(const struct id_pool *pool, const char *owner, tg_error **err) {
  cleanup_free char *abs = canonical_owner(owner, err);
  if (abs == NULL)
    return -1;
  owner = abs;
  struct stat st;
  if (stat(pool->dir, &st) < 0 && errno == ENOENT)
    return 0;
  int dir_fd = -1;
  cleanup_close int lock = pool_lock(pool, &dir_fd, err);
  if (lock < 0)
    return -1;
  DIR *d = fdopendir(dir_fd);
  if (d == NULL) {
    close(dir_fd);
    return tg_error_set(err, errno, "id range pool %s", pool->dir);
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    char token[33];
    char *who = claim_owner(dirfd(d), de->d_name, token);
    if (who && strcmp(who, owner) == 0)
      unlinkat(dirfd(d), de->d_name, 0);
    free(who);
  }
  closedir(d);
  return 0;
}

struct id_pool idrange_pool(const struct host_config *cfg) {
  struct id_pool p = {.dir = cfg->id_range_dir,
                      .base = (unsigned long long)cfg->id_range_base,
                      .size = (unsigned long long)cfg->id_range_size,
                      .count = cfg->id_range_dir ? (unsigned long long)cfg->id_range_count : 0};
  return p;
}

void idrange_release_owner(const struct host_config *cfg, const char *owner) {
  struct id_pool p = idrange_pool(cfg);
  if (p.count == 0)
    return;
  tg_error *e = NULL;
  idrange_release(&p, owner, &e);
  tg_error_free(&e);
}

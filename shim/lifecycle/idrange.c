/* Host id range claims (see shim/lifecycle/idrange.h). */
#include "shim/lifecycle/idrange.h"

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

#include "base/util.h"

/* A claim file holds a line per owner: a pod's containers share their
 * pause container's range (up to CLAIM_LINES of them). */
#define CLAIM_MAX 65536
#define CLAIM_LINES 256
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

/* One line of a claim file: an owner directory and the token it held
 * at claim time. */
struct claim_line {
  char *owner;
  char token[33];
};

struct claim {
  struct claim_line line[CLAIM_LINES];
  size_t n;
};

static void claim_free(struct claim *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->line[i].owner);
  c->n = 0;
}

/* The owner lines of claim file name.  An unreadable file, or a line a
 * crash left short or malformed, holds no owner: that much of the claim is
 * free. */
static void claim_read(int dir_fd, const char *name, struct claim *c) {
  c->n = 0;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dir_fd, name, CLAIM_MAX, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return;
  }
  char *p = buf, *end = buf + len;
  while (p < end && c->n < CLAIM_LINES) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
      break; /* no newline: the write was cut short */
    char *sp = memrchr(p, ' ', (size_t)(nl - p));
    if (sp != NULL && p[0] == '/' && nl - sp - 1 == 32 && memchr(p, '\0', (size_t)(nl - p)) == NULL) {
      struct claim_line *l = &c->line[c->n++];
      l->owner = xstrndup(p, (size_t)(sp - p));
      memcpy(l->token, sp + 1, 32);
      l->token[32] = '\0';
    }
    p = nl + 1;
  }
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

/* Is line's owner still the directory that made it (it holds the token)? */
static bool line_alive(const struct claim_line *l) {
  char have[33];
  return read_token(l->owner, have) == 0 && strcmp(have, l->token) == 0;
}

/* Keep only the lines whose owner is still alive (a state directory that
 * is gone, or a new one of the same name without the token, holds
 * nothing). */
static void claim_prune(struct claim *c) {
  size_t k = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (line_alive(&c->line[i]))
      c->line[k++] = c->line[i];
    else
      free(c->line[i].owner);
  }
  c->n = k;
}

/* Does the claim still belong to a live owner, and is owner one of them?
 * *holder gets a live owner other than owner, for an error message. */
enum claim_state { CLAIM_FREE, CLAIM_MINE, CLAIM_OTHER };
static enum claim_state claim_state(int dir_fd, const char *name, const char *owner, char **holder) {
  struct claim c;
  claim_read(dir_fd, name, &c);
  claim_prune(&c);
  enum claim_state s = c.n == 0 ? CLAIM_FREE : CLAIM_OTHER;
  for (size_t i = 0; i < c.n; i++)
    if (strcmp(c.line[i].owner, owner) == 0)
      s = CLAIM_MINE;
  if (s == CLAIM_OTHER && holder)
    *holder = xstrdup(c.line[0].owner);
  claim_free(&c);
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

/* Write claim file slot with c's lines, then owner's (when not NULL). */
static int write_claim_lines(int dir_fd, unsigned long long slot, const struct claim *c, const char *owner,
                             const char *token, tg_error **err) {
  char name[32];
  snprintf(name, sizeof name, "%llu", slot);
  cleanup_free char *text = xstrdup("");
  for (size_t i = 0; i < c->n; i++) {
    char *t = xasprintf("%s%s %s\n", text, c->line[i].owner, c->line[i].token);
    free(text);
    text = t;
  }
  if (owner != NULL) {
    char *t = xasprintf("%s%s %s\n", text, owner, token);
    free(text);
    text = t;
  }
  if (strlen(text) > CLAIM_MAX)
    return tg_error_set(err, 0, "host id range %llu is shared by too many containers (claim file over %d "
                        "bytes): delete some of them", slot, CLAIM_MAX);
  if (text[0] == '\0')
    return unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT ? 0 : tg_error_set(err, errno, "id range claim %s", name);
  /* Not synced: claims only need to outlive a crashed tollgate, not the
   * host; after a reboot no container holds any id. */
  return write_file_atomic(dir_fd, name, text, strlen(text), 0600, false, err);
}

static int write_claim(int dir_fd, unsigned long long slot, const char *owner, const char *token,
                       tg_error **err) {
  struct claim none = {.n = 0};
  return write_claim_lines(dir_fd, slot, &none, owner, token, err);
}

/* Who holds a full pool, for its error: each holder's container id (its
 * state directory's name) and root, with how many ranges it holds. */
#define HOLDERS_SHOWN 8
struct holders {
  char *dir[HOLDERS_SHOWN];
  unsigned long long ranges[HOLDERS_SHOWN];
  size_t n;
  unsigned long long others; /* ranges of holders past the first few */
};

static void holders_add(struct holders *h, const char *dir) {
  for (size_t i = 0; i < h->n; i++)
    if (strcmp(h->dir[i], dir) == 0) {
      h->ranges[i]++;
      return;
    }
  if (h->n == HOLDERS_SHOWN) {
    h->others++;
    return;
  }
  h->dir[h->n] = xstrdup(dir);
  h->ranges[h->n++] = 1;
}

static void holders_free(struct holders *h) {
  for (size_t i = 0; i < h->n; i++)
    free(h->dir[i]);
  memset(h, 0, sizeof *h);
}

static char *holders_text(const struct holders *h) {
  char *text = xstrdup("");
  for (size_t i = 0; i < h->n; i++) {
    const char *slash = strrchr(h->dir[i], '/');
    int root_len = slash ? (int)(slash - h->dir[i]) : 0;
    char *t = xasprintf("%s%scontainer %s of root %.*s: %llu", text, i ? ", " : "", slash ? slash + 1 : h->dir[i],
                        root_len, h->dir[i], h->ranges[i]);
    free(text);
    text = t;
  }
  if (h->others) {
    char *t = xasprintf("%s, other containers: %llu", text, h->others);
    free(text);
    text = t;
  }
  return text;
}

/* owner's token (in place before any claim names it), then the pool's
 * lock: the lock fd, *dir_fd the pool directory; -1 with *err. */
static int claim_begin(const struct id_pool *pool, const char *owner, char token[33], int *dir_fd,
                       tg_error **err) {
  if (owner_token(owner, token, err) < 0)
    return -1;
  return pool_lock(pool, dir_fd, err);
}

int idrange_claim(const struct id_pool *pool, const char *owner, const unsigned long long *want, size_t n,
                  unsigned long long *slot, tg_error **err) {
  cleanup_free char *abs = canonical_owner(owner, err);
  if (abs == NULL)
    return -1;
  owner = abs;
  char token[33];
  int dir_fd = -1;
  cleanup_close int lock = claim_begin(pool, owner, token, &dir_fd, err);
  if (lock < 0)
    return -1;
  cleanup_close int dfd = dir_fd;
  char name[32];
  unsigned long long max = pool->max_per_owner ? pool->max_per_owner : 1;
  if (n > max)
    return tg_error_set(err, 0, "the user namespace mappings (linux.uidMappings, linux.gidMappings) reach host ids "
                        "of %zu ranges of the pool; a container may hold %llu (host config "
                        "max_id_ranges_per_container): map container ids onto one range of %llu host ids, or "
                        "leave out the mappings so tollgate allocates a range", n, max, pool->size);
  if (n == 0) {
    struct holders hs = {0};
    for (unsigned long long k = 0; k < pool->count; k++) {
      snprintf(name, sizeof name, "%llu", k);
      char *holder = NULL;
      enum claim_state cs = claim_state(dfd, name, owner, &holder);
      if (cs == CLAIM_OTHER) {
        holders_add(&hs, holder);
        free(holder);
        continue;
      }
      holders_free(&hs);
      /* A slot owner holds already is kept as it is: rewriting it would
       * drop the pod members that share it. */
      if (cs == CLAIM_FREE && write_claim(dfd, k, owner, token, err) < 0)
        return -1;
      *slot = k;
      return 0;
    }
    cleanup_free char *who = holders_text(&hs);
    holders_free(&hs);
    return tg_error_set(err, 0, "every one of the %llu host id ranges in %s is held by a container (%s): delete "
                        "containers, or raise id_range_count in the host config", pool->count, pool->dir, who);
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
  for (size_t i = 0; i < n; i++) {
    snprintf(name, sizeof name, "%llu", want[i]);
    if (claim_state(dfd, name, owner, NULL) == CLAIM_MINE)
      continue;
    if (write_claim(dfd, want[i], owner, token, err) < 0)
      return -1;
  }
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
  int ret = 0;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    char *tail = NULL;
    unsigned long long slot = strtoull(de->d_name, &tail, 10);
    if (*tail != '\0')
      continue;
    /* Only owner's line goes: the range stays claimed while another
     * member of a pod still holds it. */
    struct claim c;
    claim_read(dirfd(d), de->d_name, &c);
    size_t k = 0;
    bool had = false;
    for (size_t i = 0; i < c.n; i++) {
      if (strcmp(c.line[i].owner, owner) == 0) {
        had = true;
        free(c.line[i].owner);
      } else {
        c.line[k++] = c.line[i];
      }
    }
    c.n = k;
    if (had && write_claim_lines(dirfd(d), slot, &c, NULL, NULL, ret < 0 ? NULL : err) < 0)
      ret = -1;
    claim_free(&c);
  }
  closedir(d);
  return ret;
}

struct id_pool idrange_pool(const struct host_config *cfg) {
  struct id_pool p = {.dir = cfg->id_range_dir,
                      .base = (unsigned long long)cfg->id_range_base,
                      .size = (unsigned long long)cfg->id_range_size,
                      .count = cfg->id_range_dir ? (unsigned long long)cfg->id_range_count : 0,
                      .max_per_owner = (unsigned long long)cfg->max_id_ranges_per_container};
  return p;
}

int idrange_usage(const struct id_pool *pool, unsigned long long *held, tg_error **err) {
  *held = 0;
  cleanup_close int dfd = open(pool->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return errno == ENOENT ? 0 : tg_error_set(err, errno, "id range pool %s", pool->dir);
  int copy = dup(dfd);
  DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
  if (d == NULL) {
    if (copy >= 0)
      close(copy);
    return tg_error_set(err, errno, "id range pool %s", pool->dir);
  }
  /* Read without the pool's lock: a count for a person, never a claim. */
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *tail = NULL;
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    unsigned long long slot = strtoull(de->d_name, &tail, 10);
    if (*tail != '\0' || slot >= pool->count)
      continue;
    struct claim c;
    claim_read(dfd, de->d_name, &c);
    claim_prune(&c);
    if (c.n > 0)
      ++*held;
    claim_free(&c);
  }
  closedir(d);
  return 0;
}

bool idrange_low(unsigned long long held, unsigned long long count) {
  unsigned long long free_slots = held < count ? count - held : 0;
  unsigned long long mark = count / 8 < 64 ? count / 8 : 64;
  if (mark == 0)
    mark = 1; /* a small pool is low at its last free range */
  return free_slots <= mark;
}

json_t *idrange_usage_json(const struct host_config *cfg) {
  struct id_pool p = idrange_pool(cfg);
  unsigned long long held = 0;
  tg_error *e = NULL;
  if (p.count == 0 || idrange_usage(&p, &held, &e) < 0) {
    tg_error_free(&e);
    return NULL;
  }
  json_t *o = json_new_object();
  json_object_set(o, "dir", json_new_string(p.dir));
  json_object_set(o, "total", json_new_integer((long long)p.count));
  json_object_set(o, "free", json_new_integer((long long)(held < p.count ? p.count - held : 0)));
  json_object_set(o, "low", json_new_bool(idrange_low(held, p.count)));
  return o;
}

void idrange_release_owner(const struct host_config *cfg, const char *owner) {
  struct id_pool p = idrange_pool(cfg);
  if (p.count == 0)
    return;
  tg_error *e = NULL;
  idrange_release(&p, owner, &e);
  tg_error_free(&e);
}

int idrange_share(const struct id_pool *pool, const char *owner, const char *holder, unsigned long long slot,
                  tg_error **err) {
  cleanup_free char *abs = canonical_owner(owner, err);
  if (abs == NULL)
    return -1;
  cleanup_free char *held_by = canonical_owner(holder, err);
  if (held_by == NULL)
    return -1;
  if (slot >= pool->count)
    return tg_error_set(err, 0, "host id range %llu is outside the pool of %llu", slot, pool->count);
  char token[33];
  int dir_fd = -1;
  cleanup_close int lock = claim_begin(pool, abs, token, &dir_fd, err);
  if (lock < 0)
    return -1;
  cleanup_close int dfd = dir_fd;
  char name[32];
  snprintf(name, sizeof name, "%llu", slot);
  struct claim c;
  claim_read(dfd, name, &c);
  claim_prune(&c);
  bool held = false, mine = false;
  for (size_t i = 0; i < c.n; i++) {
    held = held || strcmp(c.line[i].owner, held_by) == 0;
    mine = mine || strcmp(c.line[i].owner, abs) == 0;
  }
  /* Only a live holder's range is shared: a pod whose pause container is
   * gone (its claim freed, perhaps taken by another container since)
   * gives nothing to join. */
  int ret = 0;
  if (!held)
    ret = tg_error_set(err, 0, "host id range %llu is not held by container state %s: start the pod's "
                       "sandbox container again", slot, held_by);
  else if (c.n >= CLAIM_LINES && !mine)
    ret = tg_error_set(err, 0, "host id range %llu is shared by %d containers already: delete some of them",
                       slot, CLAIM_LINES);
  else
    ret = write_claim_lines(dfd, slot, &c, mine ? NULL : abs, token, err);
  claim_free(&c);
  return ret;
}

/* Sealing and verifying checkpoint images (see shim/lifecycle/checkpoint_seal.h). */
#include "shim/lifecycle/checkpoint_seal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/util.h"

#define KEY_BYTES 32
#define SEAL_MAX_BYTES (64u * 1024)
#define SEAL_FORMAT "tollgate checkpoint seal v1"
/* Bounds on what an image may hold: a hostile image could otherwise
 * make verification walk without end. */
#define IMAGE_MAX_DEPTH 16
#define IMAGE_MAX_ENTRIES 100000

/* ---- the host key ---- */

/* The key file must be root's alone: anyone else who could read it could
 * seal an image of their own making, anyone who could write it could
 * replace it. */
static int key_read(const char *path, unsigned char key[KEY_BYTES], tg_error **err) {
  cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return tg_error_set(err, errno, "checkpoint key %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return tg_error_set(err, errno, "checkpoint key %s", path);
  if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0 || st.st_size != KEY_BYTES)
    return tg_error_set(err, 0, "checkpoint key %s must be a regular file of %d bytes owned by root with mode "
                        "0600: remove it (tollgate makes a new one on the next checkpoint, and images sealed "
                        "under the old one no longer restore) or fix its owner and mode", path, KEY_BYTES);
  size_t got = 0;
  while (got < KEY_BYTES) {
    ssize_t n = read(fd, key + got, KEY_BYTES - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return tg_error_set(err, n < 0 ? errno : EIO, "checkpoint key %s: read", path);
    got += (size_t)n;
  }
  return 0;
}

/* Make the key: written whole under a temporary name, synced, then linked
 * into place, so a concurrent checkpoint either wins the link or reads the
 * winner's complete key. */
static int key_make(const char *path, tg_error **err) {
  cleanup_free char *dir = xstrdup(path);
  char *slash = strrchr(dir, '/');
  if (slash != NULL && slash != dir) {
    *slash = '\0';
    if (mkdir_p(dir, 0700, err) < 0)
      return tg_error_wrap(err, "checkpoint key %s", path);
  }
  unsigned char key[KEY_BYTES];
  if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key)
    return tg_error_set(err, errno, "checkpoint key %s: getrandom", path);
  cleanup_free char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return tg_error_set(err, errno, "checkpoint key %s: create %s", path, tmp);
  int ok = fchmod(fd, 0600) == 0 && write_all(fd, key, sizeof key) == 0 && fsync(fd) == 0;
  int e = errno;
  OPENSSL_cleanse(key, sizeof key);
  close(fd);
  if (!ok) {
    unlink(tmp);
    return tg_error_set(err, e, "checkpoint key %s: write %s", path, tmp);
  }
  int linked = link(tmp, path);
  e = errno;
  unlink(tmp);
  if (linked < 0 && e != EEXIST)
    return tg_error_set(err, e, "checkpoint key %s: link", path);
  return 0;
}

static int key_load(const struct host_config *cfg, bool create, unsigned char key[KEY_BYTES], tg_error **err) {
  const char *path = cfg->checkpoint_key;
  if (path == NULL || path[0] != '/')
    return tg_error_set(err, 0, "the host config's checkpoint_key must be an absolute path");
  if (create && access(path, F_OK) < 0 && errno == ENOENT && key_make(path, err) < 0)
    return -1;
  return key_read(path, key, err);
}

/* ---- the MAC over the body and the image ---- */

struct mac {
  EVP_MAC *alg;
  EVP_MAC_CTX *ctx;
};

static int mac_begin(struct mac *m, const unsigned char key[KEY_BYTES], tg_error **err) {
  memset(m, 0, sizeof *m);
  m->alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
  m->ctx = m->alg ? EVP_MAC_CTX_new(m->alg) : NULL;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (m->ctx == NULL || EVP_MAC_init(m->ctx, key, KEY_BYTES, params) != 1)
    return tg_error_set(err, 0, "HMAC-SHA256 is not available from libcrypto");
  return 0;
}

static void mac_end(struct mac *m) {
  EVP_MAC_CTX_free(m->ctx);
  EVP_MAC_free(m->alg);
  memset(m, 0, sizeof *m);
}

static int mac_update(struct mac *m, const void *data, size_t len) {
  return EVP_MAC_update(m->ctx, data, len) == 1 ? 0 : -1;
}

/* A length as 8 big-endian bytes: every variable-length field is framed,
 * so no two different images give the same input. */
static int mac_u64(struct mac *m, uint64_t v) {
  unsigned char b[8];
  for (int i = 7; i >= 0; i--, v >>= 8)
    b[i] = (unsigned char)(v & 0xff);
  return mac_update(m, b, sizeof b);
}

static int mac_field(struct mac *m, char tag, const char *s, size_t len) {
  return mac_update(m, &tag, 1) < 0 || mac_u64(m, len) < 0 || mac_update(m, s, len) < 0 ? -1 : 0;
}

static int mac_final_hex(struct mac *m, char hex[DIGEST_HEX_SIZE]) {
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t n = 0;
  if (EVP_MAC_final(m->ctx, out, &n, sizeof out) != 1 || n != DIGEST_BYTES)
    return -1;
  digest_hex(out, hex);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Only root may be able to change what was sealed or verified: an entry
 * another user can write (or a directory it can rename entries in) could
 * be swapped between verification and the backend's restore. */
static bool roots_alone(const struct stat *st) {
  return st->st_uid == 0 && (st->st_mode & 022) == 0;
}

struct walk {
  struct mac *mac;
  size_t entries;
  char *reason; /* set on failure */
};

static int walk_fail(struct walk *w, char *reason) {
  if (w->reason == NULL)
    w->reason = reason;
  else
    free(reason);
  return -1;
}

/* The file dfd/name (relative path rel), already lstat'ed as st. */
static int walk_file(struct walk *w, int dfd, const char *name, const char *rel, const struct stat *st) {
  cleanup_close int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat fst;
  if (fd < 0 || fstat(fd, &fst) < 0 || fst.st_ino != st->st_ino || fst.st_dev != st->st_dev ||
      !S_ISREG(fst.st_mode))
    return walk_fail(w, xasprintf("%s cannot be opened as the regular file it was listed as", rel));
  if (mac_field(w->mac, 'F', rel, strlen(rel)) < 0 || mac_u64(w->mac, (uint64_t)fst.st_size) < 0)
    return walk_fail(w, xstrdup("HMAC update failed"));
  static unsigned char buf[1 << 16];
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return walk_fail(w, xasprintf("%s: read: %s", rel, strerror(errno)));
    if (n == 0)
      break;
    total += (uint64_t)n;
    if (total > (uint64_t)fst.st_size || mac_update(w->mac, buf, (size_t)n) < 0)
      break;
  }
  if (total != (uint64_t)fst.st_size)
    return walk_fail(w, xasprintf("%s changed while it was read", rel));
  return 0;
}

static int walk_dir(struct walk *w, int dfd, const char *rel, int depth) {
  if (depth > IMAGE_MAX_DEPTH)
    return walk_fail(w, xasprintf("%s is nested deeper than %d directories", rel, IMAGE_MAX_DEPTH));
  int copy = dup(dfd);
  DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
  if (d == NULL) {
    if (copy >= 0)
      close(copy);
    return walk_fail(w, xasprintf("%s: cannot list it", rel[0] ? rel : "the image directory"));
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  int ret = 0;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
        (depth == 0 && strcmp(de->d_name, SEAL_NAME) == 0))
      continue;
    if (++w->entries > IMAGE_MAX_ENTRIES) {
      ret = walk_fail(w, xasprintf("the image holds more than %d entries", IMAGE_MAX_ENTRIES));
      break;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      names = realloc(names, cap * sizeof *names);
      if (names == NULL)
        abort();
    }
    names[n++] = xstrdup(de->d_name);
  }
  closedir(d);
  if (ret == 0)
    qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; ret == 0 && i < n; i++) {
    cleanup_free char *path = rel[0] ? xasprintf("%s/%s", rel, names[i]) : xstrdup(names[i]);
    struct stat st;
    if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
      ret = walk_fail(w, xasprintf("%s: %s", path, strerror(errno)));
    } else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
      ret = walk_fail(w, xasprintf("%s is a %s: a checkpoint image holds only directories and regular files",
                                   path, S_ISLNK(st.st_mode) ? "symbolic link" : "special file"));
    } else if (!roots_alone(&st)) {
      ret = walk_fail(w, xasprintf("%s can be changed by a user other than root (owner %u, mode %04o)", path,
                                   (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777)));
    } else if (S_ISREG(st.st_mode)) {
      ret = walk_file(w, dfd, names[i], path, &st);
    } else {
      cleanup_close int sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0)
        ret = walk_fail(w, xasprintf("%s: %s", path, strerror(errno)));
      else if (mac_field(w->mac, 'D', path, strlen(path)) < 0)
        ret = walk_fail(w, xstrdup("HMAC update failed"));
      else
        ret = walk_dir(w, sub, path, depth + 1);
      if (ret == 0 && mac_field(w->mac, 'E', path, strlen(path)) < 0)
        ret = walk_fail(w, xstrdup("HMAC update failed"));
    }
  }
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return ret;
}

/* Every directory from / down to the image directory: root's, and not
 * writable by others unless sticky (as /tmp: no one renames root's entry). */
static int check_ancestors(const char *real, char **reason) {
  struct stat st;
  if (stat("/", &st) < 0 || st.st_uid != 0 || (st.st_mode & 022) != 0) {
    *reason = xstrdup("/ can be changed by a user other than root");
    return -1;
  }
  cleanup_free char *p = xstrdup(real);
  for (size_t i = 1;; i++) {
    bool end = p[i] == '\0';
    if (p[i] != '/' && !end)
      continue;
    char c = p[i];
    p[i] = '\0';
    bool ok = stat(p, &st) == 0 && st.st_uid == 0 &&
              ((st.st_mode & 022) == 0 || (!end && (st.st_mode & S_ISVTX)));
    if (!ok) {
      *reason = xasprintf("%s can be changed by a user other than root (its owner or mode): keep the image "
                          "in directories of root's", p);
      return -1;
    }
    p[i] = c;
    if (end)
      return 0;
  }
}

/* The MAC of body and image directory dir (open as dfd) under key. */
static int image_mac(const unsigned char key[KEY_BYTES], const char *body, int dfd, char hex[DIGEST_HEX_SIZE], char **reason,
                     tg_error **err) {
  struct mac m;
  if (mac_begin(&m, key, err) < 0) {
    mac_end(&m);
    return -1;
  }
  struct walk w = {.mac = &m};
  int r = 0;
  if (mac_update(&m, SEAL_FORMAT, sizeof SEAL_FORMAT) < 0 || mac_field(&m, 'B', body, strlen(body)) < 0)
    r = walk_fail(&w, xstrdup("HMAC update failed"));
  if (r == 0)
    r = walk_dir(&w, dfd, "", 0);
  if (r == 0 && mac_final_hex(&m, hex) < 0)
    r = walk_fail(&w, xstrdup("HMAC final failed"));
  mac_end(&m);
  *reason = w.reason;
  return r;
}

/* ---- credentials ---- */

static int cmp_str_json(const void *a, const void *b) {
  return strcmp(json_string_value(*(json_t *const *)a) ?: "", json_string_value(*(json_t *const *)b) ?: "");
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

json_t *seal_credentials(const json_t *config, const char *profile) {
  const json_t *proc = json_object_get(config, "process");
  const json_t *user = json_object_get(proc, "user");
  json_t *out = json_new_object();
  json_object_set(out, "profile", json_new_string(profile ? profile : ""));
  json_t *u = json_new_object();
  long long v = 0;
  json_object_set(u, "uid", json_new_integer(json_integer_value(json_object_get(user, "uid"), &v) ? v : 0));
  json_object_set(u, "gid", json_new_integer(json_integer_value(json_object_get(user, "gid"), &v) ? v : 0));
  json_object_set(u, "umask", json_integer_value(json_object_get(user, "umask"), &v) ? json_new_integer(v)
                                                                                    : json_new_null());
  const json_t *extra = json_object_get(user, "additionalGids");
  size_t ne = json_array_len(extra);
  long long *gids = xcalloc(ne + 1, sizeof *gids);
  size_t k = 0;
  for (size_t i = 0; i < ne; i++)
    if (json_integer_value(json_array_get(extra, i), &v))
      gids[k++] = v;
  qsort(gids, k, sizeof *gids, cmp_ll);
  json_t *garr = json_new_array();
  for (size_t i = 0; i < k; i++)
    if (i == 0 || gids[i] != gids[i - 1])
      json_array_append(garr, json_new_integer(gids[i]));
  free(gids);
  json_object_set(u, "additionalGids", garr);
  json_object_set(out, "user", u);
  static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
  const json_t *caps = json_object_get(proc, "capabilities");
  json_t *c = json_new_object();
  for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
    const json_t *arr = json_object_get(caps, sets[s]);
    size_t n = json_array_len(arr);
    json_t **items = xcalloc(n + 1, sizeof *items);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (json_string_value(json_array_get(arr, i)) != NULL)
        items[m++] = (json_t *)json_array_get(arr, i);
    qsort(items, m, sizeof *items, cmp_str_json);
    json_t *sorted = json_new_array();
    for (size_t i = 0; i < m; i++)
      if (i == 0 || cmp_str_json(&items[i], &items[i - 1]) != 0)
        json_array_append(sorted, json_new_string(json_string_value(items[i])));
    free(items);
    json_object_set(c, sets[s], sorted);
  }
  json_object_set(out, "capabilities", c);
  const json_t *nnp = json_object_get(proc, "noNewPrivileges");
  json_object_set(out, "noNewPrivileges", json_new_bool(json_is(nnp, JSON_BOOL) && nnp->u.boolean));
  return out;
}

/* ---- seal and verify ---- */

int seal_write(const struct host_config *cfg, const char *image_dir, const char *id, const char *backend,
               const char *config_digest, const json_t *credentials, tg_error **err) {
  unsigned char key[KEY_BYTES];
  if (key_load(cfg, true, key, err) < 0)
    return tg_error_wrap(err, "checkpoint: cannot seal the image");
  cleanup_close int dfd = open(image_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    OPENSSL_cleanse(key, sizeof key);
    return tg_error_set(err, errno, "checkpoint: the image directory %s", image_dir);
  }
  char now[40];
  rfc3339_now(now, sizeof now);
  cleanup_json json_t *b = json_new_object();
  json_object_set(b, "container", json_new_string(id));
  json_object_set(b, "backend", json_new_string(backend));
  json_object_set(b, "checkpointed", json_new_string(now));
  json_object_set(b, "config_digest", json_new_string(config_digest));
  json_object_set(b, "credentials", json_copy(credentials));
  cleanup_free char *body = json_dump(b, false, NULL);
  char hex[DIGEST_HEX_SIZE];
  char *reason = NULL;
  int r = image_mac(key, body, dfd, hex, &reason, err);
  OPENSSL_cleanse(key, sizeof key);
  if (r < 0) {
    if (reason != NULL) {
      tg_error_set(err, 0, "checkpoint: the image in %s cannot be sealed: %s (restore accepts only a sealed "
                   "image: give --image-path a directory of root's that the backend alone writes)",
                   image_dir, reason);
      free(reason);
    }
    return -1;
  }
  cleanup_json json_t *seal = json_new_object();
  json_object_set(seal, "seal", json_new_string(SEAL_FORMAT));
  json_object_set(seal, "body", json_new_string(body));
  json_object_set(seal, "mac", json_new_string(hex));
  size_t len = 0;
  cleanup_free char *text = json_dump(seal, true, &len);
  if (write_file_atomic(dfd, SEAL_NAME, text, len, 0600, true, err) < 0)
    return tg_error_wrap(err, "checkpoint: seal %s", image_dir);
  return 0;
}

static int verdict(enum seal_status *status, enum seal_status s, char **reason, char *why) {
  *status = s;
  *reason = why;
  return 0;
}

int seal_verify(const struct host_config *cfg, const char *image_dir, enum seal_status *status, json_t **body,
                char **reason, tg_error **err) {
  (void)err;
  *body = NULL;
  *reason = NULL;
  cleanup_free char *real = realpath(image_dir, NULL);
  if (real == NULL)
    return verdict(status, SEAL_INVALID, reason, xasprintf("the image directory %s: %s", image_dir,
                                                             strerror(errno)));
  cleanup_close int dfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return verdict(status, SEAL_INVALID, reason, xasprintf("the image directory %s: %s", image_dir,
                                                             strerror(errno)));
  cleanup_free char *text = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dfd, SEAL_NAME, SEAL_MAX_BYTES, &text, &len, &e) < 0) {
    bool missing = e->errnum == ENOENT;
    char *why = xasprintf("%s: %s", SEAL_NAME, e->msg);
    tg_error_free(&e);
    if (missing) {
      free(why);
      return verdict(status, SEAL_MISSING, reason, xasprintf("the image has no %s", SEAL_NAME));
    }
    return verdict(status, SEAL_INVALID, reason, why);
  }
  struct json_parse_options po = {.max_depth = 4};
  cleanup_json json_t *seal = json_parse(text, len, &po, &e);
  tg_error_free(&e);
  const char *fmt = json_string_value(json_object_get(seal, "seal"));
  const char *btext = json_string_value(json_object_get(seal, "body"));
  const char *mac = json_string_value(json_object_get(seal, "mac"));
  if (fmt == NULL || strcmp(fmt, SEAL_FORMAT) != 0 || btext == NULL || mac == NULL || strlen(mac) != 64)
    return verdict(status, SEAL_INVALID, reason, xasprintf("%s is not a tollgate seal (%s)", SEAL_NAME,
                                                             SEAL_FORMAT));
  char *why = NULL;
  if (check_ancestors(real, &why) < 0)
    return verdict(status, SEAL_INVALID, reason, why);
  unsigned char key[KEY_BYTES];
  if (key_load(cfg, false, key, &e) < 0) {
    why = xasprintf("no usable checkpoint key on this host (%s): the image was not sealed here", e->msg);
    tg_error_free(&e);
    return verdict(status, SEAL_INVALID, reason, why);
  }
  char hex[DIGEST_HEX_SIZE];
  int r = image_mac(key, btext, dfd, hex, &why, &e);
  OPENSSL_cleanse(key, sizeof key);
  if (r < 0) {
    if (why == NULL)
      why = xstrdup(e ? e->msg : "HMAC failed");
    tg_error_free(&e);
    return verdict(status, SEAL_INVALID, reason, why);
  }
  /* Constant-time (the seal's mac is the image writer's to choose): an
   * early-exit compare would leak how much of a forged MAC is right. */
  if (!digest_hex_equal(hex, mac))
    return verdict(status, SEAL_INVALID, reason,
                   xstrdup("the seal does not verify under this host's checkpoint key: the image was changed "
                           "after tollgate sealed it, or sealed on another host"));
  struct json_parse_options bo = {.max_depth = 8};
  json_t *parsed = json_parse(btext, strlen(btext), &bo, &e);
  tg_error_free(&e);
  if (!json_is(parsed, JSON_OBJECT) || json_object_get(parsed, "credentials") == NULL) {
    json_free(parsed);
    return verdict(status, SEAL_INVALID, reason, xstrdup("the sealed body records no credentials"));
  }
  *body = parsed;
  *status = SEAL_VALID;
  return 0;
}

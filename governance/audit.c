/* Audit log writer: hash chain, write-ahead intent records, group commit,
 * fail-closed health.  See audit.h and docs/audit.md. */
#include "governance/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/util.h"

#define GROUP_COMMIT_MS 50

struct audit {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  pthread_t flusher;
  bool flusher_running, stop;
  int fd;
  char *path;
  char *container_id;
  unsigned char *key;
  size_t keylen;
  long long seq;
  char prev[AUDIT_HASH_HEX + 1];
  off_t size; /* bytes of whole records in the file */
  bool dirty; /* written but not yet fdatasync'ed */
  int dir_fd;  /* the audit directory, until the new log's entry is synced */
  atomic_bool dir_synced;
  bool healthy;
  unsigned long long quota; /* 0: none; see audit_set_quota */
  atomic_bool full;
  pthread_mutex_t resume_mu; /* one "resumed" record per recovery */
  struct digest *md; /* the chain hash's context, reused under mu */
  EVP_MAC_CTX *mac; /* with a key: HMAC's, reused under mu */
};

static const char zero_hash[AUDIT_HASH_HEX + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

char *audit_log_path(const char *dir, const char *container_id) {
  return xasprintf("%s/%s.jsonl", dir, container_id);
}

char *audit_log_stem_for_state(const char *container_id, const char *state_dir) {
  char hex[DIGEST_HEX_SIZE];
  if (digest_buffer_hex(state_dir, strlen(state_dir), hex, NULL) < 0)
    abort();
  return xasprintf("%s@%.16s", container_id, hex); /* the first 8 bytes */
}

/* One writer per log: the same container id under two --roots (or a
 * stale sidecar) must never interleave records in one file, which would
 * break the chain.  The lock lives as long as the descriptor. */
static int lock_log(struct audit *a, int fd, tg_error **err) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0)
    return 0;
  if (errno == EWOULDBLOCK)
    return tg_error_set(err, EBUSY, "the audit log %s is being written by another gate "
                        "(the same container id under another --root?)", a->path);
  return tg_error_set(err, errno, "lock the audit log %s", a->path);
}

/* HMAC fetched once, for the reason base/digest.c fetches SHA-256 once
 * (an implicit fetch per record, docs/performance.md finding 1).  Never
 * freed: it lives as long as the process. */
static EVP_MAC *hmac_fetched;
static void fetch_hmac(void) { hmac_fetched = EVP_MAC_fetch(NULL, "HMAC", NULL); }
static EVP_MAC *hmac_mac(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fetch_hmac);
  if (hmac_fetched == NULL)
    abort(); /* no HMAC in this OpenSSL: refuse rather than write an unkeyed chain */
  return hmac_fetched;
}

_Static_assert(AUDIT_HASH_HEX == DIGEST_HEX_LEN, "the chain hash is a SHA-256 in hex");

struct hash_part {
  const void *p;
  size_t n;
};

/* The chain hash over prev, a newline, then the parts in order, fed to the
 * digest piece by piece: the record is never copied into one buffer for
 * it.  With mac, HMAC-SHA-256 under key; otherwise SHA-256 with md. */
static void chain_hash_parts(struct digest *md, EVP_MAC_CTX *mac, const unsigned char *key,
                             size_t keylen, const char *prev_hex, const struct hash_part *parts,
                             size_t nparts, char out[AUDIT_HASH_HEX + 1]) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  /* The input is prev, a newline, then the record's exact bytes: editing
   * any byte of the record or of the chain before it changes the hash. */
  if (mac != NULL) {
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    size_t outl = 0;
    if (EVP_MAC_init(mac, key, keylen, params) != 1 ||
        EVP_MAC_update(mac, (const unsigned char *)prev_hex, AUDIT_HASH_HEX) != 1 ||
        EVP_MAC_update(mac, (const unsigned char *)"\n", 1) != 1)
      abort();
    for (size_t i = 0; i < nparts; i++)
      if (EVP_MAC_update(mac, parts[i].p, parts[i].n) != 1)
        abort();
    if (EVP_MAC_final(mac, digest, &outl, sizeof digest) != 1 || outl != DIGEST_BYTES)
      abort();
  } else {
    if (digest_init(md, NULL) < 0 || digest_update(md, prev_hex, AUDIT_HASH_HEX, NULL) < 0 ||
        digest_update(md, "\n", 1, NULL) < 0)
      abort();
    for (size_t i = 0; i < nparts; i++)
      if (digest_update(md, parts[i].p, parts[i].n, NULL) < 0)
        abort();
    if (digest_final(md, digest, NULL) < 0)
      abort();
  }
  digest_hex(digest, out);
}

void audit_chain_hash(const unsigned char *key, size_t keylen, const char *prev_hex,
                      const char *body, size_t bodylen, char out[AUDIT_HASH_HEX + 1]) {
  struct hash_part part = {body, bodylen};
  cleanup_digest struct digest *md = NULL;
  EVP_MAC_CTX *mac = NULL;
  if (key != NULL) {
    mac = EVP_MAC_CTX_new(hmac_mac());
    if (mac == NULL)
      abort();
  } else {
    md = digest_new();
  }
  chain_hash_parts(md, mac, key, keylen, prev_hex, &part, 1, out);
  EVP_MAC_CTX_free(mac);
}

int audit_read_key(const char *path, unsigned char **key, size_t *len, tg_error **err) {
  char *buf = NULL;
  if (read_file(path, 4096, &buf, len, err) < 0)
    return tg_error_wrap(err, "read audit key %s", path);
  if (*len < 16) {
    free(buf);
    return tg_error_set(err, 0, "audit key %s holds %zu bytes; use at least 16 random bytes (e.g. head -c 32 /dev/urandom > %s)",
                        path, *len, path);
  }
  *key = (unsigned char *)buf;
  return 0;
}

/* The log file's directory entry, synced once: by the first sync of the
 * log (the flusher's first round, right after the open record, or an
 * earlier synced record).  A synced record returns only after it, so a
 * record said to be on disk is in a file that is on disk.  Two threads
 * may both sync the directory; that is harmless. */
static int sync_dir_once(struct audit *a) {
  if (atomic_load(&a->dir_synced))
    return 0;
  if (a->dir_fd >= 0 && fsync(a->dir_fd) < 0)
    return -1;
  atomic_store(&a->dir_synced, true);
  return 0;
}

static void *flusher_main(void *arg) {
  struct audit *a = arg;
  pthread_mutex_lock(&a->mu);
  while (!a->stop) {
    /* First round at once: the open record, written unsynced. */
    if (a->dirty) {
      a->dirty = false;
      int fd = a->fd;
      pthread_mutex_unlock(&a->mu);
      int r = fdatasync(fd);
      if (r == 0)
        r = sync_dir_once(a);
      pthread_mutex_lock(&a->mu);
      if (r < 0)
        a->healthy = false;
    }
    if (a->stop)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += GROUP_COMMIT_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&a->cond, &a->mu, &ts);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* Continue an existing log: find the last record's seq and hash.  A log
 * whose tail is not a whole record (a crash mid-write, or damage) is moved
 * aside rather than extended, so the damage stays visible. */
static int load_tail(struct audit *a, int rfd, bool *moved, tg_error **err) {
  struct stat st;
  *moved = false;
  if (fstat(rfd, &st) < 0)
    return tg_error_set(err, errno, "stat %s", a->path);
  if (st.st_size == 0)
    return 0;
  /* Enough for the longest record (arguments up to the bridge's request
   * cap, which is configurable) with room to spare. */
  size_t cap = 16u << 20;
  size_t want = (size_t)st.st_size < cap ? (size_t)st.st_size : cap;
  cleanup_free char *buf = xmalloc(want + 1);
  ssize_t n = pread(rfd, buf, want, st.st_size - want);
  if (n != (ssize_t)want)
    return tg_error_set(err, n < 0 ? errno : EIO, "read the tail of %s", a->path);
  buf[want] = '\0';
  if (buf[want - 1] == '\n') {
    buf[want - 1] = '\0';
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    cleanup_json json_t *rec = json_parse(line, strlen(line), NULL, NULL);
    long long seq;
    const char *hash = json_string_value(json_object_get(rec, "hash"));
    if (rec && json_integer_value(json_object_get(rec, "seq"), &seq) && hash &&
        strlen(hash) == AUDIT_HASH_HEX) {
      a->seq = seq;
      memcpy(a->prev, hash, AUDIT_HASH_HEX + 1);
      a->size = st.st_size;
      return 0;
    }
  }
  char stamp[40];
  rfc3339_now(stamp, sizeof stamp);
  cleanup_free char *aside = xasprintf("%s.damaged-%s", a->path, stamp);
  if (rename(a->path, aside) < 0)
    return tg_error_set(err, errno, "move the damaged audit log %s aside", a->path);
  *moved = true;
  return 0;
}

int audit_open(const char *dir, const char *container_id, const char *key_path,
               const char *policy_path, struct audit **out, tg_error **err) {
  return audit_open_named(dir, container_id, container_id, key_path, policy_path, NULL, out, err);
}

int audit_open_named(const char *dir, const char *stem, const char *container_id,
                     const char *key_path, const char *policy_path, const char *state_dir,
                     struct audit **out, tg_error **err) {
  return audit_open_resumed(dir, stem, container_id, key_path, policy_path, state_dir, NULL, out,
                            err);
}

/* The members an open record carries, for an open or resume record. */
static json_t *open_extra(const struct audit *a, const char *policy_path, const char *state_dir,
                          const json_t *more) {
  json_t *extra = more && json_is(more, JSON_OBJECT) ? json_copy(more) : json_new_object();
  json_object_set(extra, "alg", json_new_string(a->key ? "hmac-sha256" : "sha256"));
  json_object_set(extra, "policy", policy_path ? json_new_string(policy_path) : json_new_null());
  json_object_set(extra, "pid", json_new_integer(getpid()));
  if (state_dir)
    json_object_set(extra, "state_dir", json_new_string(state_dir));
  return extra;
}

int audit_open_resumed(const char *dir, const char *stem, const char *container_id,
                       const char *key_path, const char *policy_path, const char *state_dir,
                       const struct audit_record *resume, struct audit **out, tg_error **err) {
  *out = NULL;
  if (!container_id_is_valid(container_id))
    return tg_error_set(err, 0, "audit: invalid container id \"%s\"", container_id);
  if (mkdir_p(dir, 0700, err) < 0)
    return tg_error_wrap(err, "create audit directory %s (set audit_dir in the host config)", dir);
  struct audit *a = xcalloc(1, sizeof *a);
  a->fd = -1;
  a->dir_fd = -1;
  atomic_init(&a->dir_synced, false);
  a->path = audit_log_path(dir, stem);
  a->container_id = xstrdup(container_id);
  memcpy(a->prev, zero_hash, sizeof zero_hash);
  a->healthy = true;
  pthread_mutex_init(&a->mu, NULL);
  pthread_mutex_init(&a->resume_mu, NULL);
  atomic_init(&a->full, false);
  pthread_cond_init(&a->cond, NULL);
  if (key_path && audit_read_key(key_path, &a->key, &a->keylen, err) < 0)
    goto fail;
  if (a->key)
    a->mac = EVP_MAC_CTX_new(hmac_mac());
  else
    a->md = digest_new();
  if (a->md == NULL && a->mac == NULL) {
    tg_error_set(err, ENOMEM, "audit: create the hash context");
    goto fail;
  }
  /* O_NOFOLLOW: a planted symlink never redirects the log elsewhere. */
  a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (a->fd < 0) {
    tg_error_set(err, errno, "open audit log %s", a->path);
    goto fail;
  }
  /* The new file's directory entry must survive a crash too: synced with
   * the log's first sync (sync_dir_once), not here, where it sat in front
   * of every container start. */
  a->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_log(a, a->fd, err) < 0)
    goto fail;
  if (fchmod(a->fd, 0600) < 0) {
    tg_error_set(err, errno, "chmod 0600 %s", a->path);
    goto fail;
  }
  {
    /* O_APPEND needs read access for the tail; open a reader separately. */
    int rfd = open(a->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (rfd < 0) {
      tg_error_set(err, errno, "open audit log %s", a->path);
      goto fail;
    }
    bool moved = false;
    int r = load_tail(a, rfd, &moved, err);
    close(rfd);
    if (r < 0)
      goto fail;
    if (moved) { /* start a fresh log where the damaged one was */
      close(a->fd);
      a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (a->fd < 0) {
        tg_error_set(err, errno, "create %s", a->path);
        goto fail;
      }
      if (lock_log(a, a->fd, err) < 0)
        goto fail;
    }
  }
  /* Written now (a full disk fails the open here), synced by the
   * flusher's first round, at once but off the caller's path: ~0.45 ms of
   * fdatasync and directory fsync that every container start waited for.
   * The group-commit rule covers it like any other record; the first
   * synced record (an intent) syncs it and the directory first anyway. */
  int r = 0;
  if (resume == NULL || a->seq == 0) {
    json_t *extra = open_extra(a, policy_path, state_dir, NULL);
    struct audit_record open_rec = {.event = "open", .duration_ms = -1, .extra = extra};
    r = audit_append(a, &open_rec, false, err);
    json_free(extra);
  }
  if (r == 0 && resume != NULL) {
    /* The resume record is synced: it is the only trace of the crash. */
    json_t *extra = open_extra(a, policy_path, state_dir, resume->extra);
    struct audit_record rec = *resume;
    rec.extra = extra;
    r = audit_append(a, &rec, true, err);
    json_free(extra);
  }
  if (r < 0)
    goto fail;
  /* pthread_create returns its error; errno is not set. */
  int e = pthread_create(&a->flusher, NULL, flusher_main, a);
  if (e != 0) {
    tg_error_set(err, e, "start the audit flusher thread");
    goto fail;
  }
  a->flusher_running = true;
  *out = a;
  return 0;
fail:
  if (a->fd >= 0)
    close(a->fd);
  if (a->dir_fd >= 0)
    close(a->dir_fd);
  digest_free(a->md);
  EVP_MAC_CTX_free(a->mac);
  free(a->key);
  free(a->path);
  free(a->container_id);
  pthread_mutex_destroy(&a->resume_mu);
  free(a);
  return -1;
}

/* Room before a record's text for {"seq":N, filled in under the lock:
 * 7 bytes of key and up to 20 of a long long. */
#define SEQ_ROOM 32
/* ,"prev":"<64>" then ,"hash":"<64>"} and the newline */
#define PREV_LEN (9 + AUDIT_HASH_HEX + 1)
#define HASH_LEN (9 + AUDIT_HASH_HEX + 3)

/* Append ,"key":"value" (or null). */
#define MEMBER_STR(b, key_sep, v) (json_buf_lit(b, key_sep), json_buf_cstr(b, v))

static size_t format_ll(char *out, long long v) {
  char tmp[24];
  size_t n = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  size_t len = 0;
  if (v < 0)
    out[len++] = '-';
  while (n)
    out[len++] = tmp[--n];
  return len;
}

/* The record's text from ,"time" up to (not including) ,"prev": every
 * member the lock does not decide, in docs/audit.md's order, after
 * SEQ_ROOM bytes of room, with room behind it for prev and hash. */
static void record_text(struct json_buf *b, const struct audit *a, const struct audit_record *r) {
  char now[40];
  rfc3339_now(now, sizeof now);
  /* One allocation for a typical record (~450 bytes) with its seq, prev
   * and hash, under 1 KiB (see json_buf_reserve). */
  json_buf_reserve(b, SEQ_ROOM + 720 + PREV_LEN + HASH_LEN);
  b->len = SEQ_ROOM;
  MEMBER_STR(b, ",\"time\":", now);
  MEMBER_STR(b, ",\"container\":", a->container_id);
  MEMBER_STR(b, ",\"event\":", r->event);
  MEMBER_STR(b, ",\"call\":", r->call_id);
  MEMBER_STR(b, ",\"tool\":", r->tool);
  json_buf_lit(b, ",\"args\":");
  json_buf_value(b, r->args);
  MEMBER_STR(b, ",\"decision\":", r->decision);
  MEMBER_STR(b, ",\"reason\":", r->reason);
  MEMBER_STR(b, ",\"approver\":", r->approver);
  json_buf_lit(b, ",\"duration_ms\":");
  if (r->duration_ms >= 0) {
    char num[24];
    json_buf_raw(b, num, format_ll(num, r->duration_ms));
  } else {
    json_buf_lit(b, "null");
  }
  MEMBER_STR(b, ",\"outcome\":", r->outcome);
  MEMBER_STR(b, ",\"message\":", r->message);
  if (r->extra && r->extra->type == JSON_OBJECT)
    for (size_t i = 0; i < r->extra->u.object.len; i++) {
      json_buf_lit(b, ",");
      json_buf_cstr(b, r->extra->u.object.keys[i]);
      json_buf_lit(b, ":");
      json_buf_value(b, r->extra->u.object.values[i]);
    }
  json_buf_reserve(b, PREV_LEN + HASH_LEN);
}

/* Records that may use the headroom below the quota: the one saying the
 * quota was reached, the counted summaries and the closing record, so a
 * full log still ends verifiably and says what it did not record. */
static bool uses_headroom(const struct audit_record *r) {
  return strcmp(r->event, "closed") == 0 || strcmp(r->event, "summary") == 0 ||
         strcmp(r->event, "audit_full") == 0;
}

static int append_locked(struct audit *a, struct json_buf *b, bool sync, tg_error **err);

/* With mu held: would this record take the log past its quota?  The first
 * time, write the "audit_full" record in the headroom. */
static bool over_quota(struct audit *a, const struct audit_record *r, size_t text_len) {
  if (a->quota == 0)
    return false;
  /* the line is the text plus seq, prev and hash: at most this much */
  unsigned long long line_max = text_len + PREV_LEN + HASH_LEN;
  unsigned long long limit = a->quota > AUDIT_QUOTA_HEADROOM ? a->quota - AUDIT_QUOTA_HEADROOM : 0;
  if (uses_headroom(r)) {
    /* even the headroom has an end: the quota itself */
    return (unsigned long long)a->size + line_max > a->quota;
  }
  if (!atomic_load(&a->full) && (unsigned long long)a->size + line_max <= limit)
    return false;
  if (!atomic_load(&a->full)) {
    atomic_store(&a->full, true);
    char why[160];
    snprintf(why, sizeof why,
             "the audit log reached its quota of %llu bytes (audit_max_bytes in the host config): "
             "this container's calls are refused audit_full",
             a->quota);
    struct audit_record full = {.event = "audit_full", .duration_ms = -1, .reason = why,
                                .outcome = "audit_full"};
    struct json_buf fb = {0};
    record_text(&fb, a, &full);
    cleanup_free char *ftext = fb.s;
    append_locked(a, &fb, false, NULL); /* releases mu */
    pthread_mutex_lock(&a->mu);
  }
  return true;
}

bool audit_full(struct audit *a) { return atomic_load(&a->full); }

void audit_set_quota(struct audit *a, unsigned long long max_bytes) {
  a->quota = max_bytes;
  /* A continued log may already be past it. */
  if (max_bytes && (unsigned long long)a->size + AUDIT_QUOTA_HEADROOM > max_bytes)
    atomic_store(&a->full, true);
}

long long audit_last_seq(struct audit *a) {
  pthread_mutex_lock(&a->mu);
  long long s = a->seq;
  pthread_mutex_unlock(&a->mu);
  return s;
}

bool audit_resume(struct audit *a) {
  if (audit_healthy(a))
    return true;
  pthread_mutex_lock(&a->resume_mu);
  bool ok = audit_healthy(a); /* another thread may have resumed it meanwhile */
  if (!ok) {
    struct audit_record rec = {.event = "resumed", .duration_ms = -1,
                               .reason = "the audit log is writable again after a failure"};
    ok = audit_append(a, &rec, true, NULL) == 0;
  }
  pthread_mutex_unlock(&a->resume_mu);
  return ok;
}

int audit_append(struct audit *a, const struct audit_record *r, bool sync, tg_error **err) {
  /* Everything but seq, prev and hash is built before taking the lock,
   * which serialises the sidecar's workers: under it only those three
   * are filled in, the hash computed and the one write() made. */
  struct json_buf b = {0};
  record_text(&b, a, r);
  cleanup_free char *text = b.s; /* nothing appends to b after this */
  pthread_mutex_lock(&a->mu);
  if (over_quota(a, r, b.len)) {
    pthread_mutex_unlock(&a->mu);
    errno = EDQUOT;
    return tg_error_set(err, EDQUOT, "the audit log %s reached its quota of %llu bytes "
                        "(audit_max_bytes in the host config)", a->path, a->quota);
  }
  return append_locked(a, &b, sync, err);
}

/* With mu held (released on return): seq, prev and hash into b's room,
 * the one write(), and the sync when asked. */
static int append_locked(struct audit *a, struct json_buf *bp, bool sync, tg_error **err) {
  struct json_buf b = *bp;
  char head[SEQ_ROOM];
  size_t hl = 7;
  memcpy(head, "{\"seq\":", 7);
  hl += format_ll(head + 7, a->seq + 1);
  char *line = b.s + SEQ_ROOM - hl;
  memcpy(line, head, hl);
  char *p = b.s + b.len;
  memcpy(p, ",\"prev\":\"", 9);
  memcpy(p + 9, a->prev, AUDIT_HASH_HEX);
  p[9 + AUDIT_HASH_HEX] = '"';
  p += PREV_LEN;
  /* The hashed body is the line without its hash member: up to prev,
   * then the closing brace (docs/audit.md, Chain). */
  char hash[AUDIT_HASH_HEX + 1];
  struct hash_part parts[] = {{line, (size_t)(p - line)}, {"}", 1}};
  chain_hash_parts(a->md, a->mac, a->key, a->keylen, a->prev, parts, 2, hash);
  memcpy(p, ",\"hash\":\"", 9);
  memcpy(p + 9, hash, AUDIT_HASH_HEX);
  memcpy(p + 9 + AUDIT_HASH_HEX, "\"}\n", 3);
  p += HASH_LEN;
  size_t llen = (size_t)(p - line);
  ssize_t n = write(a->fd, line, llen);
  if (n != (ssize_t)llen) {
    int e = n < 0 ? errno : ENOSPC;
    /* Never leave half a record: cut the file back to the last whole one. */
    if (n > 0 && ftruncate(a->fd, a->size) < 0)
      e = errno;
    a->healthy = false;
    pthread_mutex_unlock(&a->mu);
    return tg_error_set(err, e, "write audit log %s", a->path);
  }
  a->size += llen;
  a->seq++;
  memcpy(a->prev, hash, sizeof hash);
  if (!sync) {
    a->dirty = true;
    a->healthy = true;
    pthread_mutex_unlock(&a->mu);
    return 0;
  }
  int fd = a->fd;
  a->dirty = false;
  pthread_mutex_unlock(&a->mu);
  /* Outside the lock: other records keep being written while this one (and
   * every one before it) reaches the disk. */
  if (fdatasync(fd) < 0 || sync_dir_once(a) < 0) {
    int e = errno;
    pthread_mutex_lock(&a->mu);
    a->healthy = false;
    pthread_mutex_unlock(&a->mu);
    return tg_error_set(err, e, "fdatasync audit log %s", a->path);
  }
  pthread_mutex_lock(&a->mu);
  a->healthy = true;
  pthread_mutex_unlock(&a->mu);
  return 0;
}

bool audit_healthy(struct audit *a) {
  pthread_mutex_lock(&a->mu);
  bool h = a->healthy;
  pthread_mutex_unlock(&a->mu);
  return h;
}

const char *audit_path(const struct audit *a) { return a->path; }

int audit_close(struct audit *a) {
  if (a == NULL)
    return 0;
  /* Lost before the close: a failed append leaves the log unhealthy
   * until a later one succeeds; the "closed" record's own append below
   * would clear that, so it is read first. */
  bool lost = !audit_healthy(a);
  struct audit_record closed = {.event = "closed", .duration_ms = -1};
  cleanup_error tg_error *err = NULL;
  int closed_synced = audit_append(a, &closed, true, &err);
  if (a->flusher_running) {
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->flusher, NULL);
  }
  /* A synced "closed" record is the last write, and its fdatasync covered
   * every record before it; a second one (an ext4 flush on the path of
   * every delete and every end of `run`) only runs when that append
   * failed, to keep what did reach the file. */
  if (closed_synced < 0)
    fdatasync(a->fd);
  close(a->fd);
  if (a->dir_fd >= 0)
    close(a->dir_fd);
  pthread_mutex_destroy(&a->mu);
  pthread_mutex_destroy(&a->resume_mu);
  pthread_cond_destroy(&a->cond);
  digest_free(a->md);
  EVP_MAC_CTX_free(a->mac);
  if (a->key) {
    memset(a->key, 0, a->keylen);
    free(a->key);
  }
  free(a->path);
  free(a->container_id);
  free(a);
  return lost || closed_synced < 0 ? -1 : 0;
}

/* Audit log verification; see verify.h and docs/audit.md. */
#include "governance/verify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/audit.h"
#include "shim/util.h"

/* ,"hash":"<64 hex>"} */
#define HASH_SUFFIX_LEN (9 + AUDIT_HASH_HEX + 2)

static const char zero_hash[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

void audit_verify_result_clear(struct audit_verify_result *res) {
  free(res->message);
  memset(res, 0, sizeof *res);
}

static bool is_hex64(const char *s, size_t n) {
  if (n != AUDIT_HASH_HEX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

static int fail(struct audit_verify_result *res, long long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct audit_verify_result *res, long long line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *what = NULL;
  if (vasprintf(&what, fmt, ap) < 0)
    abort();
  va_end(ap);
  res->ok = false;
  res->bad_line = line;
  res->message = line > 0 ? xasprintf("line %lld: %s; records 1..%lld verify", line, what,
                                       res->verified)
                          : xstrdup(what);
  free(what);
  return 0;
}

/* A log read a line at a time: memory is bounded by the longest record,
 * not by the file, and every count and offset is 64-bit, so a log of any
 * size (past 4 GiB too) streams through. */
struct line_reader {
  FILE *f;
  char *buf;
  size_t cap;
  unsigned long long offset; /* of the line just read */
  unsigned long long next;   /* of the one after it */
};

static void line_reader_close(struct line_reader *r) {
  if (r->f)
    fclose(r->f);
  free(r->buf);
}
#define cleanup_line_reader __attribute__((cleanup(line_reader_close)))

static int line_reader_open(struct line_reader *r, const char *path, tg_error **err) {
  memset(r, 0, sizeof *r);
  /* O_NOFOLLOW: a log is never a symbolic link tollgate wrote */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return tg_error_set(err, errno, "open %s", path);
  r->f = fdopen(fd, "r");
  if (r->f == NULL) {
    close(fd);
    return tg_error_set(err, errno, "open %s", path);
  }
  return 0;
}

/* The next line without its newline, *len its length, *complete whether
 * it ended with one.  NULL at the end (or on a read error, with *err). */
static const char *line_reader_next(struct line_reader *r, size_t *len, bool *complete,
                                    tg_error **err) {
  ssize_t n = getline(&r->buf, &r->cap, r->f);
  if (n < 0) {
    if (ferror(r->f))
      tg_error_set(err, EIO, "read the log at byte %llu", r->next);
    return NULL;
  }
  r->offset = r->next;
  r->next += (unsigned long long)n;
  *complete = n > 0 && r->buf[n - 1] == '\n';
  *len = (size_t)n - (*complete ? 1 : 0);
  return r->buf;
}

int audit_verify(const char *path, const char *key_path, bool allow_open,
                 struct audit_verify_result *res, tg_error **err) {
  memset(res, 0, sizeof *res);
  cleanup_free unsigned char *key = NULL;
  size_t keylen = 0;
  if (key_path && audit_read_key(key_path, &key, &keylen, err) < 0)
    return -1;
  cleanup_line_reader struct line_reader rd = {0};
  if (line_reader_open(&rd, path, err) < 0)
    return -1;
  char prev[AUDIT_HASH_HEX + 1];
  memcpy(prev, zero_hash, sizeof prev);
  long long seq = 0, lineno = 0;
  bool keyed = false, last_closed = false;
  cleanup_free char *container = NULL;
  cleanup_free char *body = NULL;
  size_t body_cap = 0;
  for (;;) {
    size_t n = 0;
    bool complete = false;
    tg_error *rerr = NULL;
    const char *line = line_reader_next(&rd, &n, &complete, &rerr);
    if (line == NULL) {
      if (rerr) {
        *err = rerr;
        return tg_error_wrap(err, "%s", path);
      }
      break;
    }
    lineno++;
    if (!complete)
      return fail(res, lineno, "incomplete last record (no newline): the log was truncated mid-record");
    res->records++;
    if (n < HASH_SUFFIX_LEN + 2 || memcmp(line + n - HASH_SUFFIX_LEN, ",\"hash\":\"", 9) != 0 ||
        memcmp(line + n - 2, "\"}", 2) != 0 ||
        !is_hex64(line + n - HASH_SUFFIX_LEN + 9, AUDIT_HASH_HEX))
      return fail(res, lineno, "not a chained record (it must end with ,\"hash\":\"<64 hex>\"}): edited or damaged");
    cleanup_json json_t *rec = json_parse(line, n, NULL, NULL);
    if (rec == NULL || !json_is(rec, JSON_OBJECT))
      return fail(res, lineno, "not valid JSON: the record was edited");
    long long rseq;
    const char *rprev = json_string_value(json_object_get(rec, "prev"));
    const char *event = json_string_value(json_object_get(rec, "event"));
    const char *rcont = json_string_value(json_object_get(rec, "container"));
    if (!json_integer_value(json_object_get(rec, "seq"), &rseq) || rprev == NULL ||
        strlen(rprev) != AUDIT_HASH_HEX || event == NULL || rcont == NULL)
      return fail(res, lineno, "missing seq, prev, event or container: the record was edited");
    if (strcmp(event, "open") == 0) {
      const char *alg = json_string_value(json_object_get(rec, "alg"));
      keyed = alg && strcmp(alg, "hmac-sha256") == 0;
      if (keyed && key == NULL)
        return fail(res, lineno, "the log is HMAC-keyed: pass the key with --key FILE to verify it");
      if (!keyed && key != NULL)
        return fail(res, lineno,
                    "the log claims an unkeyed chain (alg %s) but a key was given: the chain was rebuilt without the key",
                    alg ? alg : "missing");
    } else if (seq == 0) {
      return fail(res, lineno, "the first record is a %s record, not open: records before it were deleted",
                  event);
    }
    /* Edited?  The hash covers the record's own bytes and its prev. */
    size_t bodylen = n - HASH_SUFFIX_LEN + 1;
    if (bodylen + 1 > body_cap) {
      free(body);
      body_cap = bodylen + 1;
      body = xmalloc(body_cap);
    }
    memcpy(body, line, bodylen - 1);
    body[bodylen - 1] = '}';
    body[bodylen] = '\0';
    char want[AUDIT_HASH_HEX + 1];
    audit_chain_hash(keyed ? key : NULL, keyed ? keylen : 0, rprev, body, bodylen, want);
    if (memcmp(want, line + n - HASH_SUFFIX_LEN + 9, AUDIT_HASH_HEX) != 0)
      return fail(res, lineno, "seq %lld: the hash does not match the record: it was edited%s", rseq,
                  keyed ? " (or the chain was rebuilt without the key)" : "");
    /* Deleted, inserted or reordered?  The chain links break. */
    if (strcmp(rprev, prev) != 0)
      return fail(res, lineno,
                  "seq %lld: prev does not match the previous record's hash: a record before it was deleted, inserted or reordered",
                  rseq);
    if (rseq != seq + 1)
      return fail(res, lineno, "seq %lld where %lld was expected: a record was deleted, inserted or reordered",
                  rseq, seq + 1);
    if (last_closed && strcmp(event, "open") != 0)
      return fail(res, lineno, "a %s record follows the closed record: it was appended after the log closed",
                  event);
    if (container == NULL)
      container = xstrdup(rcont);
    else if (strcmp(container, rcont) != 0)
      return fail(res, lineno, "container %s in a log of container %s: records were mixed in", rcont,
                  container);
    seq = rseq;
    memcpy(prev, want, sizeof prev);
    last_closed = strcmp(event, "closed") == 0;
    res->verified++;
  }
  if (lineno == 0)
    return fail(res, 0, "%s is empty: every log starts with an open record", path);
  res->closed = last_closed;
  if (!last_closed && !allow_open) {
    res->ok = false;
    res->bad_line = lineno + 1;
    res->message = xasprintf("records 1..%lld verify, but the log ends at seq %lld without a closed record: "
                             "it was truncated (or its gate is still running or crashed; --open accepts that)",
                             res->verified, seq);
    return 0;
  }
  res->ok = true;
  res->message = xasprintf("ok: %lld records verify (%s chain%s)", res->verified,
                           keyed ? "HMAC-SHA-256" : "SHA-256",
                           last_closed ? ", closed" : ", not closed: the gate is running or crashed");
  return 0;
}

int audit_each_record(const char *path, int (*fn)(void *ctx, const json_t *rec), void *ctx,
                      tg_error **err) {
  cleanup_line_reader struct line_reader rd = {0};
  if (line_reader_open(&rd, path, err) < 0)
    return -1;
  for (;;) {
    size_t n = 0;
    bool complete = false;
    tg_error *rerr = NULL;
    const char *line = line_reader_next(&rd, &n, &complete, &rerr);
    if (line == NULL) {
      if (rerr) {
        *err = rerr;
        return tg_error_wrap(err, "%s", path);
      }
      return 0;
    }
    cleanup_json json_t *rec = n ? json_parse(line, n, NULL, NULL) : NULL;
    if (rec && fn(ctx, rec) != 0)
      return 0;
  }
}

static int append_copy(void *ctx, const json_t *rec) {
  json_array_append(ctx, json_copy(rec));
  return 0;
}

int audit_read_records(const char *path, json_t **records, tg_error **err) {
  *records = NULL;
  json_t *arr = json_new_array();
  if (audit_each_record(path, append_copy, arr, err) < 0) {
    json_free(arr);
    return -1;
  }
  *records = arr;
  return 0;
}

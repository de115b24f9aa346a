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
#include "base/digest.h"
#include "base/util.h"

/* ,"hash":"<64 hex>"} */
#define HASH_SUFFIX_LEN (9 + AUDIT_HASH_HEX + 2)

static const char zero_hash[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

void audit_verify_result_clear(struct audit_verify_result *res) {
  free(res->message);
  memset(res, 0, sizeof *res);
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

/* One run's records, from its open to its closed.  Only the few latest
 * intents still without an outcome are named (the count is exact: an
 * outcome always follows its own intent in the same run). */
#define SEGMENT_NAMED 8
struct segment {
  long long index, first_seq, last_seq, pid;
  char opened[40];
  long long intents, outcomes;
  char *named[SEGMENT_NAMED]; /* owned call ids of unanswered intents */
  size_t n_named;
};

static void segment_clear(struct segment *g) {
  for (size_t i = 0; i < g->n_named; i++)
    free(g->named[i]);
  memset(g, 0, sizeof *g);
}

static void segment_start(struct segment *g, long long index, long long seq, const json_t *open) {
  segment_clear(g);
  g->index = index;
  g->first_seq = g->last_seq = seq;
  const char *t = json_string_value(json_object_get(open, "time"));
  snprintf(g->opened, sizeof g->opened, "%s", t ? t : "?");
  json_integer_value(json_object_get(open, "pid"), &g->pid);
}

static void segment_note(struct segment *g, const char *event, const char *call) {
  if (strcmp(event, "intent") == 0) {
    g->intents++;
    if (call == NULL)
      return;
    if (g->n_named == SEGMENT_NAMED) { /* the oldest drops out of the names */
      free(g->named[0]);
      memmove(g->named, g->named + 1, (SEGMENT_NAMED - 1) * sizeof g->named[0]);
      g->n_named--;
    }
    g->named[g->n_named++] = xstrdup(call);
  } else if (strcmp(event, "outcome") == 0 || strcmp(event, "unknown") == 0) {
    /* an "unknown" (a supervisor's record after a sidecar died) answers
     * only an intent it names: it also names reversible calls in flight */
    bool unknown = event[0] == 'u';
    if (!unknown)
      g->outcomes++;
    for (size_t i = 0; call && i < g->n_named; i++)
      if (strcmp(g->named[i], call) == 0) {
        if (unknown)
          g->outcomes++;
        free(g->named[i]);
        memmove(g->named + i, g->named + i + 1, (g->n_named - i - 1) * sizeof g->named[0]);
        g->n_named--;
        break;
      }
  }
}

static long long segment_unanswered(const struct segment *g) {
  return g->intents > g->outcomes ? g->intents - g->outcomes : 0;
}

/* "segment 2 (seq 58..118, opened TIME by gate pid N)" and what it left:
 * owned. */
static char *segment_describe(const struct segment *g) {
  long long lost = segment_unanswered(g);
  char calls[512] = "";
  size_t o = 0;
  for (size_t i = 0; i < g->n_named && o + 80 < sizeof calls; i++)
    o += (size_t)snprintf(calls + o, sizeof calls - o, "%s%.64s", i ? ", " : "", g->named[i]);
  return xasprintf("segment %lld (seq %lld..%lld, opened %s by gate pid %lld) ended without a closed "
                   "record: its gate crashed or was killed, leaving %lld intent%s without an outcome%s%s%s",
                   g->index, g->first_seq, g->last_seq, g->opened, g->pid, lost, lost == 1 ? "" : "s",
                   o ? " (call " : "", calls, o ? (lost > (long long)g->n_named ? ", ...)" : ")") : "");
}

/* What audit_verify saw once every record verified. */
struct verdict {
  unsigned accept;
  bool keyed, closed;             /* the chain's kind; the log ends with closed */
  long long last_seq, last_line;
  const struct segment *last;     /* the last segment */
  const char *first_crash;        /* the first crashed segment, described, or NULL */
  long long crash_line;           /* the open record that followed it */
};

/* res's verdict and message: ok, or which segment ended without closed
 * (the first earlier one before an open last one). */
static void verdict(struct audit_verify_result *res, const struct verdict *v) {
  res->closed = v->closed;
  if (!v->closed)
    res->open_intents = segment_unanswered(v->last);
  cleanup_free char *more = NULL;
  if (res->crashed > 1)
    more = xasprintf("; %lld segments in all ended so, leaving %lld intents without an outcome",
                     res->crashed, res->lost_intents);
  if (res->crashed > 0 && !(v->accept & AUDIT_VERIFY_CRASHED)) {
    res->ok = false;
    res->bad_line = v->crash_line;
    res->message = xasprintf("records 1..%lld verify, but %s; the next run opened the log at line %lld%s "
                             "(--allow-crashed accepts crashed segments)",
                             res->verified, v->first_crash, v->crash_line, more ? more : "");
    return;
  }
  cleanup_free char *crashed = NULL;
  if (res->crashed > 0)
    crashed = xasprintf("; %lld crashed segment%s (%lld intent%s without an outcome), the first: %s",
                        res->crashed, res->crashed == 1 ? "" : "s", res->lost_intents,
                        res->lost_intents == 1 ? "" : "s", v->first_crash);
  cleanup_free char *open_left = NULL;
  if (!v->closed && res->open_intents > 0)
    open_left = xasprintf(", with %lld intent%s without an outcome", res->open_intents,
                          res->open_intents == 1 ? "" : "s");
  if (!v->closed && !(v->accept & AUDIT_VERIFY_OPEN)) {
    res->ok = false;
    res->bad_line = v->last_line + 1;
    res->message = xasprintf("records 1..%lld verify, but the log ends at seq %lld without a closed record%s: "
                             "it was truncated (or its gate is still running or crashed; --open accepts that)%s",
                             res->verified, v->last_seq, open_left ? open_left : "", crashed ? crashed : "");
    return;
  }
  res->ok = true;
  res->message = xasprintf("ok: %lld records verify (%s chain%s%s%s)", res->verified,
                           v->keyed ? "HMAC-SHA-256" : "SHA-256",
                           v->closed ? ", closed" : ", not closed: the gate is running or crashed",
                           open_left ? open_left : "", crashed ? crashed : "");
}

int audit_verify(const char *path, const char *key_path, unsigned accept,
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
  /* the segment being read, and the first earlier one that crashed */
  __attribute__((cleanup(segment_clear))) struct segment seg = {0};
  cleanup_free char *first_crash = NULL;
  long long crash_line = 0;
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
        !digest_hex_is_valid(line + n - HASH_SUFFIX_LEN + 9, AUDIT_HASH_HEX))
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
    /* Constant-time: keyed, want is an HMAC under the host's key, and the
     * log's hash is whatever its writer put there; an early-exit compare
     * would tell someone timing repeated verifications how many leading
     * digits of their forgery are right. */
    if (!digest_hex_equal(want, line + n - HASH_SUFFIX_LEN + 9))
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
    if (strcmp(event, "open") == 0) {
      /* A new run.  The one before it either closed or was cut short. */
      if (seq > 0 && !last_closed) {
        res->crashed++;
        res->lost_intents += segment_unanswered(&seg);
        if (first_crash == NULL) {
          first_crash = segment_describe(&seg);
          crash_line = lineno;
        }
      }
      res->segments++;
      segment_start(&seg, res->segments, rseq, rec);
    } else {
      seg.last_seq = rseq;
      segment_note(&seg, event, json_string_value(json_object_get(rec, "call")));
    }
    seq = rseq;
    memcpy(prev, want, sizeof prev);
    last_closed = strcmp(event, "closed") == 0;
    res->verified++;
  }
  if (lineno == 0)
    return fail(res, 0, "%s is empty: every log starts with an open record", path);
  struct verdict v = {.accept = accept, .keyed = keyed, .closed = last_closed, .last_seq = seq,
                      .last_line = lineno, .last = &seg, .first_crash = first_crash,
                      .crash_line = crash_line};
  verdict(res, &v);
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

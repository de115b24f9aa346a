/* Audit log verification; see verify.h and docs/audit.md. */
#include "governance/verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/audit.h"
#include "shim/util.h"

#define AUDIT_LOG_MAX (1ull << 32)
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

int audit_verify(const char *path, const char *key_path, bool allow_open,
                 struct audit_verify_result *res, tg_error **err) {
  memset(res, 0, sizeof *res);
  cleanup_free unsigned char *key = NULL;
  size_t keylen = 0;
  if (key_path && audit_read_key(key_path, &key, &keylen, err) < 0)
    return -1;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file(path, AUDIT_LOG_MAX, &buf, &len, err) < 0)
    return -1;
  if (len == 0)
    return fail(res, 0, "%s is empty: every log starts with an open record", path);
  char prev[AUDIT_HASH_HEX + 1];
  memcpy(prev, zero_hash, sizeof prev);
  long long seq = 0, lineno = 0;
  bool keyed = false, last_closed = false;
  cleanup_free char *container = NULL;
  const char *p = buf, *end = buf + len;
  while (p < end) {
    lineno++;
    const char *nl = memchr(p, '\n', end - p);
    if (nl == NULL)
      return fail(res, lineno, "incomplete last record (no newline): the log was truncated mid-record");
    size_t n = nl - p;
    const char *line = p;
    p = nl + 1;
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
    cleanup_free char *body = xmalloc(bodylen + 1);
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

int audit_read_records(const char *path, json_t **records, tg_error **err) {
  *records = NULL;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file(path, AUDIT_LOG_MAX, &buf, &len, err) < 0)
    return -1;
  json_t *arr = json_new_array();
  const char *p = buf, *end = buf + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', end - p);
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    json_t *rec = n ? json_parse(p, n, NULL, NULL) : NULL;
    if (rec)
      json_array_append(arr, rec);
    p += n + 1;
  }
  *records = arr;
  return 0;
}

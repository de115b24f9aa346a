/* The audit chain: a clean log verifies; every tamper case is caught and
 * located: any edited byte, a deleted, inserted or reordered record,
 * truncation (no closed record), a chain rebuilt without the HMAC key.
 * And the gate fails closed when the log cannot be written. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/audit.h"
#include "governance/gate.h"
#include "governance/verify.h"
#include "base/util.h"
#include "thread_fail_util.h"

static char dir[] = "/tmp/tg-audit-XXXXXX";
static bool mounted;
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) {
  if (mounted) {
    cleanup_free char *m = xasprintf("%s/tiny", dir);
    umount2(m, MNT_DETACH);
    mounted = false;
  }
  remove_tree(dir, NULL);
}
TestSuite(audit, .init = setup, .fini = teardown);

static const char *POLICY =
    "{\"version\": 1, \"tools\": {"
    "\"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"allow\"}]},"
    "\"wipe\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"irreversible\": true, \"rules\": [{\"effect\": \"allow\"}]},"
    "\"no\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"rules\": [{\"effect\": \"deny\", \"reason\": \"never\"}]}}}";

static char *key_path(void) {
  cleanup_free char *p = xasprintf("%s/key", dir);
  FILE *f = fopen(p, "w");
  fputs("0123456789abcdef0123456789abcdef", f);
  fclose(f);
  return xstrdup(p);
}

/* Write a log with a few calls; returns its path. */
static char *make_log(const char *audit_dir, const char *key, bool close_it, struct gate **keep) {
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(POLICY, f);
  fclose(f);
  struct gate_config cfg = {.container_id = "au", .policy_path = pp, .audit_dir = audit_dir,
                            .audit_key = key};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  const char *reqs[] = {"{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":\"h\\u00e9llo\"}}",
                        "{\"v\":1,\"tool\":\"no\",\"args\":{}}",
                        "{\"v\":1,\"tool\":\"wipe\",\"args\":{\"all\":true}}",
                        "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":2}}"};
  for (int i = 0; i < 4; i++) {
    cleanup_json json_t *r = json_parse(reqs[i], strlen(reqs[i]), NULL, NULL);
    cleanup_free char *id = xasprintf("c%d", i);
    free(gate_handle(g, id, r, NULL, NULL));
  }
  char *path = xstrdup(gate_audit_path(g));
  if (close_it)
    gate_close(g);
  else
    *keep = g;
  return path;
}

static char *slurp(const char *path, size_t *len) {
  char *buf = NULL;
  cr_assert_eq(read_file(path, 1 << 20, &buf, len, NULL), 0);
  return buf;
}

static void spit(const char *path, const char *buf, size_t len) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write_all(fd, buf, len), 0);
  close(fd);
}

static struct audit_verify_result verify(const char *path, const char *key, bool open_ok) {
  struct audit_verify_result r;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_verify(path, key, open_ok, &r, &err), 0, "%s", err ? err->msg : "");
  return r;
}

/* Lines of buf as offsets: starts[i] .. starts[i+1]. */
static size_t split(const char *buf, size_t len, size_t *starts) {
  size_t n = 0;
  starts[n++] = 0;
  for (size_t i = 0; i < len; i++)
    if (buf[i] == '\n')
      starts[n++] = i + 1;
  return n - 1; /* number of lines; starts[n] = len */
}

Test(audit, clean_log_verifies_and_has_every_field) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *path = make_log(ad, NULL, true, NULL);
  struct audit_verify_result r = verify(path, NULL, false);
  cr_assert(r.ok, "%s", r.message);
  cr_assert_eq(r.records, 7, "open, call, deny, intent, outcome, call, closed: %lld", r.records);
  cr_assert(r.closed);
  audit_verify_result_clear(&r);
  size_t len;
  cleanup_free char *buf = slurp(path, &len);
  const char *fields[] = {"\"seq\":", "\"time\":", "\"container\":\"au\"", "\"call\":", "\"tool\":",
                          "\"args\":", "\"decision\":", "\"reason\":", "\"approver\":",
                          "\"duration_ms\":", "\"outcome\":", "\"prev\":", "\"hash\":"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    cr_assert(strstr(buf, fields[i]), "no %s", fields[i]);
  cr_assert(strstr(buf, "\"event\":\"intent\""));
  cr_assert(strstr(buf, "\"event\":\"outcome\""));
  struct stat st;
  stat(path, &st);
  cr_assert_eq(st.st_mode & 0777, 0600);
}

/* audit_append writes each record directly, not through a tree and
 * json_dump: every line must still be exactly what json_dump writes for
 * the same members in docs/audit.md's order (so logs written before and
 * after that change read and verify alike), hostile strings included. */
Test(audit, records_are_byte_for_byte_what_json_dump_writes) {
  cleanup_free char *ad = xasprintf("%s/direct", dir);
  for (int keyed = 0; keyed < 2; keyed++) {
    cleanup_free char *key = keyed ? key_path() : NULL;
    const char *id = keyed ? "direct-k" : "direct";
    struct audit *a = NULL;
    cleanup_error tg_error *err = NULL;
    cr_assert_eq(audit_open(ad, id, key, "/etc/p\"olicy.json", &a, &err), 0, "%s",
                 err ? err->msg : "");
    const char *args_text =
        "{\"s\":\"q\\\"uote\\\\back\\/slash\\u0000nul\\u001f\\n\\t\\u00e9\\ud83d\\ude00\","
        "\"n\":[1.50,-0,1e400,12345678901234567890],\"o\":{\"\\\"},\\\"hash\\\":\\\"\":null},"
        "\"b\":true}";
    cleanup_json json_t *args = json_parse(args_text, strlen(args_text), NULL, &err);
    cr_assert_not_null(args, "%s", err ? err->msg : "");
    struct audit_record recs[] = {
        {.event = "call", .call_id = "c1", .tool = "echo", .args = args, .decision = "allow",
         .reason = "rule 0: allow", .approver = "policy", .duration_ms = 0, .outcome = "ok"},
        {.event = "call", .call_id = "c2", .tool = "t\nool\x7f", .args = NULL, .decision = "deny",
         .reason = "\"quoted\" (approver said: \\no\\)", .approver = "uid:0",
         .duration_ms = 1234567890123LL, .outcome = "denied", .message = "line1\r\nline2\b\f"},
        {.event = "unanswerable", .duration_ms = -1, .message = "x"},
    };
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++)
      cr_assert_eq(audit_append(a, &recs[i], i == 0, &err), 0, "%s", err ? err->msg : "");
    audit_close(a);

    cleanup_free char *path = audit_log_path(ad, id);
    size_t len, st[16];
    cleanup_free char *buf = slurp(path, &len);
    size_t n = split(buf, len, st);
    cr_assert_eq(n, 5, "open, 3 records, closed: %zu lines", n);
    for (size_t i = 0; i < n; i++) {
      size_t ll = st[i + 1] - st[i] - 1;
      cleanup_json json_t *rec = json_parse(buf + st[i], ll, NULL, &err);
      cr_assert_not_null(rec, "line %zu: %s", i + 1, err ? err->msg : "");
      size_t dl = 0;
      cleanup_free char *dumped = json_dump(rec, false, &dl);
      cr_assert_eq(dl, ll, "line %zu: %.*s\nvs json_dump's\n%s", i + 1, (int)ll, buf + st[i], dumped);
      cr_assert_eq(memcmp(dumped, buf + st[i], ll), 0, "line %zu differs from json_dump's", i + 1);
      static const char *order[] = {"seq", "time", "container", "event", "call", "tool", "args",
                                    "decision", "reason", "approver", "duration_ms", "outcome",
                                    "message"};
      for (size_t k = 0; k < sizeof order / sizeof *order; k++)
        cr_assert_str_eq(rec->u.object.keys[k], order[k], "line %zu key %zu", i + 1, k);
      cr_assert_str_eq(rec->u.object.keys[rec->u.object.len - 2], "prev");
      cr_assert_str_eq(rec->u.object.keys[rec->u.object.len - 1], "hash");
    }
    cr_assert(strstr(buf, "\"alg\":\"hmac-sha256\"") || !keyed);
    cr_assert(strstr(buf, "\"policy\":\"/etc/p\\\"olicy.json\",\"pid\":"));
    struct audit_verify_result r = verify(path, key, false);
    cr_assert(r.ok, "%s", r.message);
    cr_assert_eq(r.records, 5);
    audit_verify_result_clear(&r);
  }
}

/* A tool's stderr need not be UTF-8: the record stays valid JSON (the bad
 * bytes become U+FFFD) and the chain verifies, where yajl's generator
 * dropped the string and shifted every later member. */
Test(audit, a_message_that_is_not_utf8_keeps_the_record_valid) {
  cleanup_free char *ad = xasprintf("%s/bad", dir);
  struct audit *a = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_open(ad, "bad", NULL, NULL, &a, &err), 0);
  struct audit_record rec = {.event = "call", .call_id = "c1", .tool = "t", .duration_ms = 1,
                             .outcome = "tool_failed", .message = "stderr: \xff\xfe\xc3"};
  cr_assert_eq(audit_append(a, &rec, false, &err), 0);
  audit_close(a);
  cleanup_free char *path = audit_log_path(ad, "bad");
  size_t len, st[8];
  cleanup_free char *buf = slurp(path, &len);
  cr_assert_eq(split(buf, len, st), 3);
  cleanup_json json_t *r2 = json_parse(buf + st[1], st[2] - st[1] - 1, NULL, NULL);
  cr_assert_not_null(r2);
  cr_assert_str_eq(json_string_value(json_object_get(r2, "message")),
                   "stderr: \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  struct audit_verify_result r = verify(path, NULL, false);
  cr_assert(r.ok, "%s", r.message);
  audit_verify_result_clear(&r);
}

/* The incremental hash is the documented one: SHA-256 or HMAC-SHA-256 of
 * prev, a newline and the body, as one-shot OpenSSL computes it. */
Test(audit, chain_hash_is_the_documented_digest) {
  const char *prev = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  const char *body = "{\"seq\":1,\"x\":\"y\"}";
  char in[256];
  int n = snprintf(in, sizeof in, "%s\n%s", prev, body);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  char want[65], got[65];
  const unsigned char key[] = "0123456789abcdef0123";
  for (int keyed = 0; keyed < 2; keyed++) {
    if (keyed)
      HMAC(EVP_sha256(), key, 20, (const unsigned char *)in, (size_t)n, md, &ml);
    else
      EVP_Digest(in, (size_t)n, md, &ml, EVP_sha256(), NULL);
    for (unsigned i = 0; i < ml; i++)
      sprintf(want + 2 * i, "%02x", md[i]);
    audit_chain_hash(keyed ? key : NULL, keyed ? 20 : 0, prev, body, strlen(body), got);
    cr_assert_str_eq(got, want, "keyed %d", keyed);
  }
}

Test(audit, every_single_byte_edit_is_detected) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *path = make_log(ad, NULL, true, NULL);
  size_t len;
  cleanup_free char *orig = slurp(path, &len);
  cleanup_free char *buf = xmalloc(len);
  for (size_t i = 0; i < len; i++) {
    memcpy(buf, orig, len);
    buf[i] = buf[i] == 'x' ? 'y' : (buf[i] == '\n' ? ' ' : 'x');
    spit(path, buf, len);
    struct audit_verify_result r = verify(path, NULL, true);
    cr_assert_not(r.ok, "editing byte %zu ('%c') went unnoticed", i, orig[i]);
    cr_assert_gt(r.bad_line, 0);
    audit_verify_result_clear(&r);
  }
}

Test(audit, edited_record_names_its_line) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *path = make_log(ad, NULL, true, NULL);
  size_t len;
  cleanup_free char *buf = slurp(path, &len);
  char *deny = strstr(buf, "\"decision\":\"deny\"");
  cr_assert_not_null(deny);
  memcpy(deny + 12, "allo", 4); /* "deny" -> "allo": same length */
  deny[16] = 'w';
  spit(path, buf, len);
  struct audit_verify_result r = verify(path, NULL, false);
  cr_assert_not(r.ok);
  cr_assert_eq(r.bad_line, 3);
  cr_assert(strstr(r.message, "line 3") && strstr(r.message, "edited") &&
            strstr(r.message, "records 1..2 verify"), "%s", r.message);
  audit_verify_result_clear(&r);
}

Test(audit, deleted_inserted_reordered_and_truncated_records) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *path = make_log(ad, NULL, true, NULL);
  size_t len, s[32];
  cleanup_free char *orig = slurp(path, &len);
  size_t n = split(orig, len, s);
  cr_assert_eq(n, 7);
  cleanup_free char *buf = xmalloc(2 * len);
  /* deleted: drop line 4 */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (i != 3) {
      memcpy(buf + m, orig + s[i], s[i + 1] - s[i]);
      m += s[i + 1] - s[i];
    }
  spit(path, buf, m);
  struct audit_verify_result r = verify(path, NULL, false);
  cr_assert_not(r.ok);
  cr_assert_eq(r.bad_line, 4, "%s", r.message);
  cr_assert(strstr(r.message, "deleted, inserted or reordered"), "%s", r.message);
  audit_verify_result_clear(&r);
  /* inserted: line 2 again after line 2 */
  m = 0;
  for (size_t i = 0; i < n; i++) {
    memcpy(buf + m, orig + s[i], s[i + 1] - s[i]);
    m += s[i + 1] - s[i];
    if (i == 1) {
      memcpy(buf + m, orig + s[i], s[i + 1] - s[i]);
      m += s[i + 1] - s[i];
    }
  }
  spit(path, buf, m);
  r = verify(path, NULL, false);
  cr_assert_not(r.ok);
  cr_assert_eq(r.bad_line, 3, "%s", r.message);
  audit_verify_result_clear(&r);
  /* reordered: swap lines 3 and 4 */
  m = 0;
  size_t order[] = {0, 1, 3, 2, 4, 5, 6};
  for (size_t k = 0; k < n; k++) {
    size_t i = order[k];
    memcpy(buf + m, orig + s[i], s[i + 1] - s[i]);
    m += s[i + 1] - s[i];
  }
  spit(path, buf, m);
  r = verify(path, NULL, false);
  cr_assert_not(r.ok);
  cr_assert_eq(r.bad_line, 3, "%s", r.message);
  audit_verify_result_clear(&r);
  /* truncated: the closed record is gone */
  spit(path, orig, s[n - 1]);
  r = verify(path, NULL, false);
  cr_assert_not(r.ok);
  cr_assert(strstr(r.message, "without a closed record") && strstr(r.message, "records 1..6 verify"),
            "%s", r.message);
  audit_verify_result_clear(&r);
  r = verify(path, NULL, true); /* --open: a crashed gate's log verifies up to its end */
  cr_assert(r.ok, "%s", r.message);
  audit_verify_result_clear(&r);
  /* truncated mid-record */
  spit(path, orig, s[n - 1] - 10);
  r = verify(path, NULL, true);
  cr_assert_not(r.ok);
  cr_assert(strstr(r.message, "incomplete"), "%s", r.message);
  audit_verify_result_clear(&r);
}

Test(audit, hmac_chain_needs_the_key_and_cannot_be_rebuilt_without_it) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *key = key_path();
  cleanup_free char *path = make_log(ad, key, true, NULL);
  struct audit_verify_result r = verify(path, key, false);
  cr_assert(r.ok, "%s", r.message);
  audit_verify_result_clear(&r);
  r = verify(path, NULL, false);
  cr_assert_not(r.ok);
  cr_assert(strstr(r.message, "--key"), "%s", r.message);
  audit_verify_result_clear(&r);
  /* A wrong key fails. */
  cleanup_free char *wrong = xasprintf("%s/wrong", dir);
  FILE *f = fopen(wrong, "w");
  fputs("fedcba9876543210fedcba9876543210", f);
  fclose(f);
  r = verify(path, wrong, false);
  cr_assert_not(r.ok);
  audit_verify_result_clear(&r);
  /* Rebuild: edit a record, then recompute every hash as plain SHA-256 and
   * claim an unkeyed chain.  Without a key that passes (nothing to check it
   * against); with the key it is caught. */
  size_t len, s[32];
  cleanup_free char *orig = slurp(path, &len);
  size_t n = split(orig, len, s);
  cleanup_free char *out = xmalloc(len + 256);
  size_t m = 0;
  char prev[65] = "0000000000000000000000000000000000000000000000000000000000000000";
  for (size_t i = 0; i < n; i++) {
    size_t ll = s[i + 1] - s[i] - 1;
    cleanup_free char *line = xstrndup(orig + s[i], ll);
    char *alg = strstr(line, "\"alg\":\"hmac-sha256\"");
    if (alg)
      memmove(alg + 7, alg + 12, strlen(alg + 12) + 1); /* hmac-sha256 -> sha256 */
    char *x = strstr(line, "h\\u00e9llo");
    if (x == NULL)
      x = strstr(line, "h\xc3\xa9llo");
    if (x)
      x[0] = 'j';
    char *p = strstr(line, "\"prev\":\"");
    memcpy(p + 8, prev, 64);
    size_t bl = strlen(line) - 75 + 1;
    cleanup_free char *body = xstrndup(line, bl);
    body[bl - 1] = '}';
    char h[65];
    audit_chain_hash(NULL, 0, prev, body, bl, h);
    memcpy(line + strlen(line) - 66, h, 64);
    memcpy(prev, h, 65);
    m += sprintf(out + m, "%s\n", line);
  }
  spit(path, out, m);
  r = verify(path, NULL, false);
  cr_assert(r.ok, "the rebuilt chain is self-consistent: %s", r.message);
  audit_verify_result_clear(&r);
  r = verify(path, key, false);
  cr_assert_not(r.ok);
  cr_assert(strstr(r.message, "rebuilt without the key"), "%s", r.message);
  audit_verify_result_clear(&r);
}

Test(audit, reopening_continues_the_chain) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *p1 = make_log(ad, NULL, true, NULL);
  cleanup_free char *p2 = make_log(ad, NULL, true, NULL);
  cr_assert_str_eq(p1, p2);
  struct audit_verify_result r = verify(p1, NULL, false);
  cr_assert(r.ok, "%s", r.message);
  cr_assert_eq(r.records, 14);
  audit_verify_result_clear(&r);
}

Test(audit, a_full_disk_fails_closed) {
  if (geteuid() != 0) {
    cr_skip_test("mounting a tmpfs needs root");
  }
  cleanup_free char *tiny = xasprintf("%s/tiny", dir);
  cr_assert_eq(mkdir(tiny, 0700), 0);
  cr_assert_eq(mount("tmpfs", tiny, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k"), 0, "%s",
               strerror(errno));
  mounted = true;
  struct gate *g = NULL;
  cleanup_free char *path = make_log(tiny, NULL, false, &g);
  /* Fill the filesystem to the last byte. */
  cleanup_free char *filler = xasprintf("%s/filler", tiny);
  int fd = open(filler, O_WRONLY | O_CREAT, 0600);
  char block[4096];
  memset(block, 'f', sizeof block);
  while (write(fd, block, sizeof block) > 0)
    ;
  while (write(fd, block, 1) > 0)
    ;
  close(fd);
  const char *req = "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":1}}";
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  /* tmpfs allocates whole pages: records fill the log's last page, then
   * every write fails. */
  bool refused = false;
  for (int i = 0; i < 200 && !refused; i++) {
    cleanup_free char *resp = gate_handle(g, "fill", r, NULL, NULL);
    refused = strstr(resp, "\"code\":\"audit_unavailable\"") != NULL;
  }
  cr_assert(refused, "a full disk never refused a call");
  for (int i = 0; i < 3; i++) {
    cleanup_free char *resp = gate_handle(g, "full", r, NULL, NULL);
    cr_assert(strstr(resp, "\"code\":\"audit_unavailable\""), "%s", resp);
  }
  const char *irr = "{\"v\":1,\"tool\":\"wipe\",\"args\":{}}";
  cleanup_json json_t *ri = json_parse(irr, strlen(irr), NULL, NULL);
  cleanup_free char *resp = gate_handle(g, "full-irr", ri, NULL, NULL);
  cr_assert(strstr(resp, "\"code\":\"audit_unavailable\""), "%s", resp);
  /* Space again: calls work again, and the log still verifies (no half
   * records were left behind). */
  unlink(filler);
  cleanup_free char *ok = gate_handle(g, "after", r, NULL, NULL);
  cr_assert(strstr(ok, "\"ok\":true"), "%s", ok);
  gate_close(g);
  struct audit_verify_result v = verify(path, NULL, false);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
}

/* A record larger than 64 KiB (big arguments) at the end of a log: the
 * next gate continues the chain instead of taking the log for damaged. */
Test(audit, a_huge_last_record_is_continued) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(POLICY, f);
  fclose(f);
  for (int run = 0; run < 2; run++) {
    struct gate_config cfg = {.container_id = "big", .policy_path = pp, .audit_dir = ad};
    struct gate *g = NULL;
    cleanup_error tg_error *err = NULL;
    cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
    size_t n = 200000;
    char *req = xmalloc(n + 64);
    int len = sprintf(req, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"pad\":\"");
    memset(req + len, 'x', n);
    strcpy(req + len + n, "\"}}");
    cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
    free(req);
    free(gate_handle(g, "big", r, NULL, NULL));
    /* no closed record: the next open starts right after this huge one */
    if (run == 0) {
      cleanup_free char *path = xstrdup(gate_audit_path(g));
      gate_close(g);
      size_t flen;
      cleanup_free char *buf = slurp(path, &flen);
      size_t s[32];
      size_t lines = split(buf, flen, s);
      spit(path, buf, s[lines - 1]); /* drop the closed record */
    } else {
      gate_close(g);
    }
  }
  cleanup_free char *path = xasprintf("%s/big.jsonl", ad);
  /* the first run's segment has no closed record: reported, accepted only
   * when crashed segments are expected */
  struct audit_verify_result v = verify(path, NULL, false);
  cr_assert_not(v.ok, "%s", v.message);
  cr_assert_eq(v.crashed, 1, "%s", v.message);
  audit_verify_result_clear(&v);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_verify(path, NULL, AUDIT_VERIFY_CRASHED, &v, &err), 0);
  cr_assert(v.ok, "%s", v.message);
  cr_assert_eq(v.records, 5); /* open, call, open, call, closed */
  audit_verify_result_clear(&v);
}

/* After the disk comes back, calls arriving at once write one "resumed"
 * record between them, not one each (audit_resume serialises). */
struct resume_arg {
  struct gate *g;
  const json_t *req;
  int i;
  pthread_barrier_t *start;
};
static void *call_once(void *p) {
  struct resume_arg *a = p;
  pthread_barrier_wait(a->start); /* all at once, into the unhealthy log */
  char id[16];
  snprintf(id, sizeof id, "r%d", a->i);
  free(gate_handle(a->g, id, a->req, NULL, NULL));
  return NULL;
}

static size_t count_event(const char *path, const char *event) {
  json_t *recs = NULL;
  cr_assert_eq(audit_read_records(path, &recs, NULL), 0);
  size_t n = 0;
  for (size_t i = 0; i < json_array_len(recs); i++) {
    const char *e = json_string_value(json_object_get(json_array_get(recs, i), "event"));
    n += e && strcmp(e, event) == 0;
  }
  json_free(recs);
  return n;
}

Test(audit, one_resumed_record_per_recovery) {
  if (geteuid() != 0) {
    cr_skip_test("mounting a tmpfs needs root");
  }
  cleanup_free char *tiny = xasprintf("%s/tiny", dir);
  cr_assert_eq(mkdir(tiny, 0700), 0);
  cr_assert_eq(mount("tmpfs", tiny, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k"), 0, "%s",
               strerror(errno));
  mounted = true;
  cleanup_free char *pp = xasprintf("%s/policy-many.json", dir);
  FILE *f = fopen(pp, "w");
  fputs("{\"version\": 1, \"tools\": {\"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
        " \"rules\": [{\"effect\": \"allow\"}]}}, \"budgets\": {\"max_tool_calls\": 100000}}", f);
  fclose(f);
  struct gate_config cfg = {.container_id = "res", .policy_path = pp, .audit_dir = tiny};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  cleanup_free char *path = xstrdup(gate_audit_path(g));
  cleanup_free char *filler = xasprintf("%s/filler", tiny);
  const char *req = "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":1}}";
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  enum { ROUNDS = 10 };
  for (int round = 0; round < ROUNDS; round++) {
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char block[4096];
    memset(block, 'f', sizeof block);
    while (write(fd, block, sizeof block) > 0)
      ;
    while (write(fd, block, 1) > 0)
      ;
    close(fd);
    bool refused = false;
    for (int i = 0; i < 200 && !refused; i++) {
      cleanup_free char *resp = gate_handle(g, "fill", r, NULL, NULL);
      refused = strstr(resp, "\"code\":\"audit_unavailable\"") != NULL;
    }
    cr_assert(refused);
    unlink(filler);
    pthread_t t[8];
    struct resume_arg args[8];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 8);
    for (int i = 0; i < 8; i++) {
      args[i] = (struct resume_arg){.g = g, .req = r, .i = i, .start = &start};
      pthread_create(&t[i], NULL, call_once, &args[i]);
    }
    for (int i = 0; i < 8; i++)
      pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
  }
  gate_close(g);
  cr_assert_eq(count_event(path, "resumed"), ROUNDS, "one resumed record per recovery");
  struct audit_verify_result v = verify(path, NULL, false);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
}

/* A container's log has a quota: past it that container's calls are
 * refused audit_full (one record says so, the log still closes and
 * verifies), and another container's log in the same directory is not
 * affected. */
Test(audit, a_log_past_its_quota_refuses_only_its_own_calls) {
  cleanup_free char *ad = xasprintf("%s/q", dir);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(POLICY, f);
  fclose(f);
  const unsigned long long quota = 160 * 1024;
  struct gate_config small = {.container_id = "small", .policy_path = pp, .audit_dir = ad,
                              .audit_max_bytes = quota};
  struct gate_config other = {.container_id = "other", .policy_path = pp, .audit_dir = ad};
  struct gate *gs = NULL, *go = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&small, &gs, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(gate_open(&other, &go, &err), 0, "%s", err ? err->msg : "");
  const char *req = "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":1}}";
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  int full_at = -1;
  for (int i = 0; i < 45 && full_at < 0; i++) { /* the default cap is 50 */
    char id[16];
    snprintf(id, sizeof id, "s%d", i);
    /* big arguments, so the quota is reached within the call cap */
    cleanup_free char *big = xmalloc(8200);
    memset(big, 'a', 8190);
    big[8190] = '\0';
    cleanup_free char *text = xasprintf("{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":\"%s\"}}", big);
    cleanup_json json_t *rb = json_parse(text, strlen(text), NULL, NULL);
    cleanup_free char *resp = gate_handle(gs, id, rb, NULL, NULL);
    if (strstr(resp, "\"code\":\"audit_full\""))
      full_at = i;
    else
      cr_assert(strstr(resp, "\"ok\":true"), "%s", resp);
  }
  cr_assert_geq(full_at, 0, "the quota never refused a call");
  cleanup_free char *again = gate_handle(gs, "after", r, NULL, NULL);
  cr_assert(strstr(again, "\"code\":\"audit_full\""), "%s", again);
  cleanup_free char *fine = gate_handle(go, "o1", r, NULL, NULL);
  cr_assert(strstr(fine, "\"ok\":true"), "%s", fine);
  cleanup_free char *ps = xstrdup(gate_audit_path(gs));
  cleanup_free char *po = xstrdup(gate_audit_path(go));
  gate_close(gs);
  gate_close(go);
  struct stat st;
  cr_assert_eq(stat(ps, &st), 0);
  cr_assert_leq((unsigned long long)st.st_size, quota);
  cr_assert_eq(count_event(ps, "audit_full"), 1);
  struct audit_verify_result v = verify(ps, NULL, false);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
  v = verify(po, NULL, false);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
  /* a later run continuing the log is held to the same quota: the size
   * is the file's, not the run's */
  cr_assert_eq(gate_open(&small, &gs, &err), 0, "%s", err ? err->msg : "");
  bool refused = false;
  for (int i = 0; i < 3 && !refused; i++) {
    cleanup_free char *big = xmalloc(8200);
    memset(big, 'b', 8190);
    big[8190] = '\0';
    cleanup_free char *text = xasprintf("{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":\"%s\"}}", big);
    cleanup_json json_t *rb = json_parse(text, strlen(text), NULL, NULL);
    cleanup_free char *cont = gate_handle(gs, "next", rb, NULL, NULL);
    refused = strstr(cont, "\"code\":\"audit_full\"") != NULL;
  }
  cr_assert(refused, "the continued log grew past its quota");
  gate_close(gs);
  cr_assert_eq(stat(ps, &st), 0);
  cr_assert_leq((unsigned long long)st.st_size, quota);
}

/* verify and show stream: a log far larger than the memory they may use
 * verifies, so a log's size is no limit (no 4 GiB cap; the counts and
 * offsets are 64-bit).  The child's address space is capped at its
 * current size plus 24 MiB, under the 48 MiB log; under AddressSanitizer,
 * which reserves terabytes of address space, the cap cannot apply and
 * only the streaming result is checked. */
#include <sys/resource.h>
#include <sys/wait.h>
__attribute__((unused)) static unsigned long long vm_size(void) {
  cleanup_free char *st = NULL;
  cr_assert_eq(read_file("/proc/self/status", 1 << 16, &st, NULL, NULL), 0);
  const char *p = strstr(st, "VmSize:");
  cr_assert_not_null(p);
  return strtoull(p + 7, NULL, 10) * 1024;
}

static int count_one(void *ctx, const json_t *rec) {
  (void)rec;
  ++*(long long *)ctx;
  return 0;
}

Test(audit, verify_streams_a_log_larger_than_its_memory) {
  cleanup_free char *ad = xasprintf("%s/big", dir);
  struct audit *a = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_open(ad, "big", NULL, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  char text[1024];
  memset(text, 'r', sizeof text - 1);
  text[sizeof text - 1] = '\0';
  long long n = 0;
  struct stat st = {0};
  cleanup_free char *path = xstrdup(audit_path(a));
  while (st.st_size < (off_t)48 << 20) {
    struct audit_record rec = {.event = "call", .call_id = "c", .reason = text, .duration_ms = 1,
                               .outcome = "ok"};
    for (int i = 0; i < 1000; i++, n++)
      cr_assert_eq(audit_append(a, &rec, false, NULL), 0);
    cr_assert_eq(stat(path, &st), 0);
  }
  audit_close(a);
  pid_t pid = fork();
  if (pid == 0) {
#ifndef __SANITIZE_ADDRESS__
    struct rlimit rl = {.rlim_cur = vm_size() + (24u << 20), .rlim_max = RLIM_INFINITY};
    rl.rlim_max = rl.rlim_cur;
    if (setrlimit(RLIMIT_AS, &rl) < 0)
      _exit(3);
#endif
    struct audit_verify_result v;
    if (audit_verify(path, NULL, false, &v, NULL) < 0 || !v.ok || v.records != n + 2)
      _exit(1);
    long long seen = 0;
    if (audit_each_record(path, count_one, &seen, NULL) < 0 || seen != n + 2)
      _exit(2);
    _exit(0);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "verify of a %lld-byte log under a capped address space: status %d",
            (long long)st.st_size, status);
}

/* The same container id under two roots at once: never one file with two
 * writers.  The second gate writes <id>@<hash of its state dir>.jsonl;
 * without a state dir it is refused with a reason. */
Test(audit, one_log_per_root_and_id) {
  cleanup_free char *ad = xasprintf("%s/roots", dir);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(POLICY, f);
  fclose(f);
  struct gate_config a = {.container_id = "twin", .policy_path = pp, .audit_dir = ad,
                          .state_dir = "/run/a/twin"};
  struct gate_config b = a;
  b.state_dir = "/run/b/twin";
  struct gate *ga = NULL, *gb = NULL, *gc = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&a, &ga, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(gate_open(&b, &gb, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_neq(gate_audit_path(ga), gate_audit_path(gb));
  struct gate_config c = a;
  c.state_dir = NULL;
  cr_assert_eq(gate_open(&c, &gc, &err), -1);
  cr_assert(strstr(err->msg, "another gate"), "%s", err->msg);
  const char *req = "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":1}}";
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  for (int i = 0; i < 20; i++) {
    free(gate_handle(ga, "a", r, NULL, NULL));
    free(gate_handle(gb, "b", r, NULL, NULL));
  }
  cleanup_free char *pa = xstrdup(gate_audit_path(ga));
  cleanup_free char *pb = xstrdup(gate_audit_path(gb));
  gate_close(ga);
  gate_close(gb);
  struct audit_verify_result v = verify(pa, NULL, false);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
  v = verify(pb, NULL, false);
  cr_assert(v.ok, "%s", v.message);
  audit_verify_result_clear(&v);
  cr_assert(strstr(pb, "twin@") != NULL, "%s", pb);
}

/* A run cut short (its gate killed after an intent), then a later run of
 * the same id appending its own segment: verify still reports the first,
 * with its intent without an outcome, and fails unless told crashed
 * segments are expected. */
Test(audit, a_crashed_segment_stays_visible_after_a_later_run) {
  cleanup_free char *ad = xasprintf("%s/log", dir);
  cleanup_free char *path = make_log(ad, NULL, true, NULL);
  size_t len, s[16];
  cleanup_free char *orig = slurp(path, &len);
  size_t n = split(orig, len, s);
  cr_assert_eq(n, 7);
  cr_assert(memmem(orig + s[3], s[4] - s[3], "\"event\":\"intent\"", 16) != NULL, "line 4 is c2's intent");
  /* the gate died right after the intent of c2 (the chain still verifies) */
  spit(path, orig, s[4]);
  free(make_log(ad, NULL, true, NULL));
  struct audit_verify_result r = verify(path, NULL, false);
  cr_assert_not(r.ok, "%s", r.message);
  cr_expect_eq(r.segments, 2);
  cr_expect_eq(r.crashed, 1);
  cr_expect_eq(r.lost_intents, 1);
  cr_expect(r.closed, "the last run closed");
  cr_expect_eq(r.bad_line, 5, "the next run's open: %s", r.message);
  cr_expect(strstr(r.message, "segment 1 (seq 1..4, opened ") != NULL, "%s", r.message);
  cr_expect(strstr(r.message, "leaving 1 intent without an outcome (call c2)") != NULL, "%s", r.message);
  cr_expect(strstr(r.message, "--allow-crashed") != NULL, "%s", r.message);
  audit_verify_result_clear(&r);
  /* --open is about the last segment: it does not accept an earlier crash */
  r = verify(path, NULL, true);
  cr_assert_not(r.ok, "%s", r.message);
  audit_verify_result_clear(&r);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(audit_verify(path, NULL, AUDIT_VERIFY_CRASHED, &r, &err), 0);
  cr_assert(r.ok, "%s", r.message);
  cr_expect(strstr(r.message, ", closed; 1 crashed segment (1 intent without an outcome), the first: segment 1") != NULL,
            "%s", r.message);
  audit_verify_result_clear(&r);

  /* the second run is cut short too, after its own intent: now the last
   * segment is open and two intents are unanswered */
  size_t len2, s2[32];
  cleanup_free char *both = slurp(path, &len2);
  size_t n2 = split(both, len2, s2);
  cr_assert_eq(n2, 4 + 7);
  spit(path, both, s2[4 + 4]);
  r = verify(path, NULL, AUDIT_VERIFY_OPEN);
  cr_assert_not(r.ok, "an earlier crash still fails: %s", r.message);
  audit_verify_result_clear(&r);
  cr_assert_eq(audit_verify(path, NULL, AUDIT_VERIFY_CRASHED, &r, &err), 0);
  cr_assert_not(r.ok, "the open last segment fails without --open: %s", r.message);
  cr_expect(strstr(r.message, "without a closed record, with 1 intent without an outcome") != NULL, "%s",
            r.message);
  cr_expect_eq(r.open_intents, 1);
  audit_verify_result_clear(&r);
  cr_assert_eq(audit_verify(path, NULL, AUDIT_VERIFY_CRASHED | AUDIT_VERIFY_OPEN, &r, &err), 0);
  cr_assert(r.ok, "%s", r.message);
  audit_verify_result_clear(&r);
}

/* The flusher thread cannot start: audit_open fails naming the error
 * pthread_create returned, not whatever errno an earlier call left. */
static int open_without_threads(tg_error **err) {
  struct audit *a = NULL;
  return audit_open(dir, "nothread", NULL, NULL, &a, err);
}

Test(audit, flusher_that_cannot_start_names_the_real_error) {
  struct thread_fail_report rep = thread_fail_run(open_without_threads);
  thread_fail_assert_named(&rep);
  cr_expect(strstr(rep.msg, "start the audit flusher thread") != NULL, "%s", rep.msg);
}

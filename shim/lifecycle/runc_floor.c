/* The runc version floor: see runc_floor.h. */
#include "shim/lifecycle/runc_floor.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci/namelist.h"
#include "base/log.h"
#include "shim/lifecycle/proc.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"

#define FLOOR_FILE "backend-floor.json"
/* a leading dot: never a container id, so never a state directory */
#define CACHE_FILE ".runc-version.json"

struct semver {
  long n[3];
  const char *pre; /* after '-', up to '+' or end; NULL for a release */
  size_t pre_len;
};

static bool parse_semver(const char *s, struct semver *v) {
  memset(v, 0, sizeof *v);
  if (s && *s == 'v')
    s++;
  for (int i = 0; i < 3; i++) {
    if (s == NULL || !isdigit((unsigned char)*s))
      return false;
    char *end;
    v->n[i] = strtol(s, &end, 10);
    s = end;
    if (i < 2) {
      if (*s != '.')
        return i == 1; /* "1.2" is 1.2.0 */
      s++;
    }
  }
  if (*s == '-') {
    v->pre = s + 1;
    v->pre_len = strcspn(v->pre, "+");
  }
  return true;
}

int runc_version_compare(const char *a, const char *b) {
  struct semver x, y;
  bool okx = parse_semver(a, &x), oky = parse_semver(b, &y);
  if (!okx || !oky)
    return okx == oky ? 0 : (okx ? 1 : -1);
  for (int i = 0; i < 3; i++)
    if (x.n[i] != y.n[i])
      return x.n[i] < y.n[i] ? -1 : 1;
  if (!x.pre || !y.pre)
    return x.pre == y.pre ? 0 : (x.pre ? -1 : 1);
  /* pre-releases: compare dot-separated fields, numbers numerically */
  const char *p = x.pre, *q = y.pre, *pe = x.pre + x.pre_len, *qe = y.pre + y.pre_len;
  while (p < pe && q < qe) {
    size_t lp = strcspn(p, ".+"), lq = strcspn(q, ".+");
    if (p + lp > pe) lp = (size_t)(pe - p);
    if (q + lq > qe) lq = (size_t)(qe - q);
    int c;
    if (isdigit((unsigned char)*p) && isdigit((unsigned char)*q))
      c = strtol(p, NULL, 10) < strtol(q, NULL, 10) ? -1 : strtol(p, NULL, 10) > strtol(q, NULL, 10);
    else {
      c = strncmp(p, q, lp < lq ? lp : lq);
      if (c == 0 && lp != lq)
        c = lp < lq ? -1 : 1;
    }
    if (c != 0)
      return c < 0 ? -1 : 1;
    p += lp + (p + lp < pe);
    q += lq + (q + lq < qe);
  }
  return (p < pe) - (q < qe);
}

bool runc_below_floor(const char *version, const json_t *floor, char **fix) {
  const json_t *fixed = json_object_get(floor, "fixed");
  if (fix) {
    size_t n = 0;
    char buf[256] = "";
    for (size_t i = 0; i < json_array_len(fixed); i++) {
      const char *f = json_string_value(json_array_get(fixed, i));
      if (f)
        n += (size_t)snprintf(buf + n, n < sizeof buf ? sizeof buf - n : 0, "%s%s", i ? ", " : "", f);
    }
    *fix = xstrdup(buf);
  }
  if (json_array_has_string(json_object_get(floor, "patched_builds"), version))
    return false;
  struct semver v;
  if (!parse_semver(version, &v))
    return true; /* cannot tell: say so */
  bool newer_than_all = true;
  for (size_t i = 0; i < json_array_len(fixed); i++) {
    struct semver f;
    const char *fs = json_string_value(json_array_get(fixed, i));
    if (!parse_semver(fs, &f))
      continue;
    if (f.n[0] == v.n[0] && f.n[1] == v.n[1])
      return runc_version_compare(version, fs) < 0;
    if (v.n[0] < f.n[0] || (v.n[0] == f.n[0] && v.n[1] < f.n[1]))
      newer_than_all = false;
  }
  return !newer_than_all;
}

/* "runc version 1.1.5+ds1\ncommit: ..." -> "1.1.5+ds1" */
static char *version_from_output(const char *out) {
  const char *p = out ? strstr(out, "runc version ") : NULL;
  if (p == NULL)
    return NULL;
  p += strlen("runc version ");
  return xstrndup(p, strcspn(p, " \n"));
}

/* The binary's version, from the cache when the binary is the same file. */
static char *runc_version(const struct cli *cli, const struct backend *b, const struct stat *st, bool *cached,
                          bool *warned, tg_error **err) {
  *warned = *cached = false;
  cleanup_free char *key = xasprintf("%s:%llu:%llu:%lld:%lld", b->path, (unsigned long long)st->st_dev,
                                     (unsigned long long)st->st_ino, (long long)st->st_size,
                                     (long long)st->st_mtim.tv_sec);
  tg_error *ce = NULL;
  cleanup_json json_t *cache = state_read_json(cli->root, CACHE_FILE, &ce);
  tg_error_free(&ce);
  const char *ckey = json_string_value(json_object_get(cache, "binary"));
  const char *cver = json_string_value(json_object_get(cache, "version"));
  if (ckey && cver && strcmp(ckey, key) == 0) {
    *warned = json_is_true(json_object_get(cache, "warned"));
    *cached = true;
    return xstrdup(cver);
  }
  char *argv[] = {b->path, "--version", NULL};
  struct proc_opts o = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  if (proc_run(argv, &o, &res, err) < 0)
    return NULL;
  char *v = res.status == 0 ? version_from_output(res.out) : NULL;
  proc_result_free(&res);
  if (v == NULL)
    tg_error_set(err, 0, "%s --version did not print \"runc version X\": is %s runc?", b->path, b->path);
  return v;
}

static void remember(const struct cli *cli, const struct backend *b, const struct stat *st, const char *version,
                     bool warned) {
  cleanup_json json_t *c = json_new_object();
  cleanup_free char *key = xasprintf("%s:%llu:%llu:%lld:%lld", b->path, (unsigned long long)st->st_dev,
                                     (unsigned long long)st->st_ino, (long long)st->st_size,
                                     (long long)st->st_mtim.tv_sec);
  json_object_set(c, "binary", json_new_string(key));
  json_object_set(c, "version", json_new_string(version));
  json_object_set(c, "warned", json_new_bool(warned));
  tg_error *e = NULL;
  if (mkdir_p(cli->root, 0711, &e) == 0)
    state_write_json(cli->root, CACHE_FILE, c, &e);
  tg_error_free(&e);
}

static json_t *load_floor(const struct cli *cli, tg_error **err) {
  cleanup_free char *path = host_config_data_path(&cli->config, FLOOR_FILE, err);
  if (path == NULL)
    return NULL;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file(path, 64 * 1024, &buf, &len, err) < 0)
    return NULL;
  struct json_parse_options po = {.max_depth = 8};
  tg_error *pe = NULL;
  json_t *doc = json_parse(buf, len, &po, &pe);
  if (doc == NULL || !json_is(json_object_get(doc, "runc"), JSON_OBJECT)) {
    tg_error_set(err, 0, "%s: %s; reinstall tollgate's data files", path, pe ? pe->msg : "no \"runc\" object");
    tg_error_free(&pe);
    json_free(doc);
    return NULL;
  }
  return doc;
}

/* Whether this process is the one to show the warning for this binary:
 * the cache's "warned" is read before and written after, so 40 creates
 * at once all read false and all warned (7 of 40 seen).  The marker is
 * made with O_EXCL: exactly one create per root and binary (device,
 * inode, size, mtime) makes it.  A marker that cannot be made for any
 * other reason (the root is not writable) shows the warning: never
 * hidden by a failure. */
static bool claim_warning(const struct cli *cli, const struct stat *st) {
  tg_error *e = NULL;
  if (mkdir_p(cli->root, 0711, &e) < 0) {
    tg_error_free(&e);
    return true;
  }
  /* a leading dot, like the cache: never a container id */
  cleanup_free char *marker = xasprintf("%s/.runc-floor-warned.%llu.%llu.%lld.%lld", cli->root,
                                        (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
                                        (long long)st->st_size, (long long)st->st_mtim.tv_sec);
  int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return errno != EEXIST;
  close(fd);
  return true;
}

int runc_floor_check(const struct cli *cli, const struct backend *b, tg_error **err) {
  if (b->kind != BACKEND_RUNC)
    return 0;
  bool refuse = cli->config.runc_version_floor && strcmp(cli->config.runc_version_floor, "refuse") == 0;
  struct stat st;
  if (stat(b->path, &st) < 0)
    return tg_error_set(err, errno, "runc %s", b->path);
  bool warned = false, cached = false;
  tg_error *ve = NULL;
  cleanup_free char *version = runc_version(cli, b, &st, &cached, &warned, &ve);
  if (version == NULL) {
    /* A binary whose version cannot be read is handled as a missing data
     * file is: refuse refuses, warn warns and lets the backend speak for
     * itself (its own failure is then the message). */
    if (refuse) {
      *err = ve;
      return tg_error_wrap(err, "the runc version floor (\"runc_version_floor\": \"refuse\")");
    }
    cleanup_free char *msg = xasprintf("cannot check runc against the version floor: %s", ve->msg);
    tg_error_free(&ve);
    log_line(cli->log_path, cli->log_json, "warning", msg);
    return 0;
  }
  tg_error *le = NULL;
  cleanup_json json_t *doc = load_floor(cli, &le);
  if (doc == NULL) {
    /* An install without the data file cannot check: refuse says so;
     * warn says so on every create until the file is there. */
    if (refuse) {
      tg_error_set(err, le->errnum, "the runc version floor (\"runc_version_floor\": \"refuse\"): %s", le->msg);
      tg_error_free(&le);
      return -1;
    }
    cleanup_free char *msg = xasprintf("cannot check runc %s against the version floor: %s", version, le->msg);
    tg_error_free(&le);
    log_line(cli->log_path, cli->log_json, "warning", msg);
    return 0;
  }
  const json_t *floor = json_object_get(doc, "runc");
  cleanup_free char *fix = NULL;
  bool below = runc_below_floor(version, floor, &fix);
  if (!below) {
    if (!cached)
      remember(cli, b, &st, version, false);
    return 0;
  }
  char cves[128] = "";
  const json_t *cv = json_object_get(floor, "cves");
  for (size_t i = 0, n = 0; i < json_array_len(cv); i++)
    if (json_string_value(json_array_get(cv, i)))
      n += (size_t)snprintf(cves + n, n < sizeof cves ? sizeof cves - n : 0, "%s%s", i ? ", " : "",
                            json_string_value(json_array_get(cv, i)));
  if (refuse)
    return tg_error_set(err, 0, "runc %s (%s) predates the fixes for %s (fixed in %s): upgrade runc, use runsc, or set \"runc_version_floor\": \"warn\" in the host config to run it anyway",
                        version, b->path, cves, fix);
  if (!warned && claim_warning(cli, &st)) {
    cleanup_free char *msg = xasprintf("runc %s (%s) predates the fixes for %s (fixed in %s); upgrade runc or use runsc. "
                                       "This warning is shown once; \"runc_version_floor\": \"refuse\" in the host config refuses it",
                                       version, b->path, cves, fix);
    log_line(cli->log_path, cli->log_json, "warning", msg);
  }
  if (!warned)
    remember(cli, b, &st, version, true);
  return 0;
}

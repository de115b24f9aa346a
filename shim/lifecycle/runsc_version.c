#include "shim/lifecycle/runsc_version.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "shim/lifecycle/proc.h"
#include "base/util.h"

#define CACHE_MAX_BYTES 4096

void runsc_version_free(struct runsc_version *v) {
  free(v->text);
  memset(v, 0, sizeof *v);
}

/* The first run of exactly eight digits that reads as a plausible date
 * (gVisor's releases are named by day: 20221219, 20240729). */
static unsigned date_in(const char *s) {
  for (const char *p = s; *p; p++) {
    if (!isdigit((unsigned char)*p) || (p > s && isdigit((unsigned char)p[-1])))
      continue;
    size_t n = 0;
    while (isdigit((unsigned char)p[n]))
      n++;
    if (n != 8)
      continue;
    unsigned d = (unsigned)strtoul(p, NULL, 10);
    unsigned month = d / 100 % 100, day = d % 100;
    if (d >= 20180101u && d <= 29991231u && month >= 1 && month <= 12 &&
        day >= 1 && day <= 31)
      return d;
  }
  return 0;
}

void runsc_version_parse(const char *text, struct runsc_version *v) {
  const char *line = text ? text : "";
  const char *end = strchr(line, '\n');
  v->text = end ? xstrndup(line, (size_t)(end - line)) : xstrdup(line);
  v->date = 0;
  /* Only the version line counts: "runsc version <V>". */
  const char *m = strstr(v->text, "version ");
  if (m != NULL)
    v->date = date_in(m + strlen("version "));
}

void runsc_flags_parse(const char *text, struct runsc_version *v) {
  v->systrap = v->directfs = false;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    cleanup_free char *l = xstrndup(line, len);
    const char *flag = l + strspn(l, " \t");
    /* "-platform string" then its help on the next line: "specifies
     * which platform to use: systrap (default), ptrace, kvm." */
    if (strstr(flag, "specifies which platform to use") != NULL &&
        strstr(flag, "systrap") != NULL)
      v->systrap = true;
    if (strcmp(flag, "-directfs") == 0)
      v->directfs = true;
    line = end ? end + 1 : NULL;
  }
}

/* FNV-1a of the path: the cache file's name, one per binary. */
static uint64_t path_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

/* The identity of the binary's current contents: an upgrade (dpkg writes
 * a new inode), a copy over it (mtime, size) or a touch (ctime) all change
 * it. */
static json_t *identity_of(const char *path, const struct stat *st) {
  json_t *id = json_new_object();
  json_object_set(id, "path", json_new_string(path));
  json_object_set(id, "dev", json_new_integer((long long)st->st_dev));
  json_object_set(id, "ino", json_new_integer((long long)st->st_ino));
  json_object_set(id, "size", json_new_integer((long long)st->st_size));
  json_object_set(id, "mtime_ns",
                  json_new_integer((long long)st->st_mtim.tv_sec * 1000000000ll +
                                   st->st_mtim.tv_nsec));
  json_object_set(id, "ctime_ns",
                  json_new_integer((long long)st->st_ctim.tv_sec * 1000000000ll +
                                   st->st_ctim.tv_nsec));
  return id;
}

static bool cached(const char *file, const json_t *id, struct runsc_version *v) {
  cleanup_free char *text = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file(file, CACHE_MAX_BYTES, &text, &len, &e) < 0) {
    tg_error_free(&e);
    return false;
  }
  json_t *c = json_parse(text, len, NULL, NULL);
  bool hit = c != NULL && json_equal(json_object_get(c, "binary"), id);
  const char *line = json_string_value(json_object_get(c, "version"));
  const json_t *systrap = json_object_get(c, "systrap");
  const json_t *directfs = json_object_get(c, "directfs");
  if (hit && line != NULL && json_is(systrap, JSON_BOOL) && json_is(directfs, JSON_BOOL)) {
    runsc_version_parse(line, v);
    v->systrap = json_is_true(systrap);
    v->directfs = json_is_true(directfs);
  } else {
    hit = false;
  }
  json_free(c);
  return hit;
}

/* Best effort: a cache that cannot be written only costs the next create
 * another `runsc --version`. */
static void remember(const char *cache_dir, const char *name, json_t *id,
                     const struct runsc_version *v) {
  tg_error *e = NULL;
  if (mkdir(cache_dir, 0700) < 0 && errno != EEXIST)
    return;
  json_t *c = json_new_object();
  json_object_set(c, "binary", json_copy(id));
  json_object_set(c, "version", json_new_string(v->text));
  json_object_set(c, "systrap", json_new_bool(v->systrap));
  json_object_set(c, "directfs", json_new_bool(v->directfs));
  size_t len = 0;
  cleanup_free char *text = json_dump(c, true, &len);
  json_free(c);
  int dfd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return;
  write_file_atomic(dfd, name, text, len, 0600, false, &e);
  close(dfd);
  tg_error_free(&e);
}

/* Run `path arg` and return what it printed (owned), or NULL when it
 * fails.  `runsc flags` prints its list on stderr, --version on stdout. */
static char *answer_of(const char *path, const char *arg) {
  char *const argv[] = {(char *)path, (char *)arg, NULL};
  struct proc_opts o = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  tg_error *e = NULL;
  char *out = NULL;
  if (proc_run(argv, &o, &res, &e) == 0 && res.status == 0) {
    char **keep = res.out && res.out[0] ? &res.out : &res.err_text;
    out = *keep;
    *keep = NULL;
  }
  tg_error_free(&e);
  proc_result_free(&res);
  return out;
}

/* Both questions; true when both were answered. */
static bool ask(const char *path, struct runsc_version *v) {
  cleanup_free char *version = answer_of(path, "--version");
  cleanup_free char *flags = version ? answer_of(path, "flags") : NULL;
  runsc_version_parse(version ? version : "", v);
  runsc_flags_parse(flags, v);
  return version != NULL && flags != NULL;
}

int runsc_version_of(const char *path, const char *cache_dir,
                     struct runsc_version *v, tg_error **err) {
  memset(v, 0, sizeof *v);
  struct stat st;
  if (stat(path, &st) < 0)
    return tg_error_set(err, errno, "runsc at %s", path);
  json_t *id = identity_of(path, &st);
  char name[64];
  snprintf(name, sizeof name, "runsc-%016llx.version.json",
           (unsigned long long)path_hash(path));
  cleanup_free char *file =
      cache_dir ? xasprintf("%s/%s", cache_dir, name) : NULL;
  if (file == NULL || !cached(file, id, v)) {
    /* Only a real answer is remembered: a binary that failed once (a
     * full disk, a signal) is asked again next time. */
    if (ask(path, v) && cache_dir != NULL)
      remember(cache_dir, name, id, v);
  }
  json_free(id);
  return 0;
}

const char *runsc_platform_for(const struct runsc_version *v,
                               const char *configured, tg_error **err) {
  /* "auto" is ptrace on every release: measured side by side on runsc
   * 20240729 (docs/performance.md, "systrap and ptrace"), systrap pays
   * 2-3 times ptrace's cost for each new address space (fork, exec), so a
   * process per call, the container's start and the bridge round trip
   * were all slower; it was ahead only in 8-caller throughput, by ~10 %.
   * A host whose load favours systrap sets "platform": "systrap". */
  if (configured == NULL || configured[0] == '\0' ||
      strcmp(configured, "auto") == 0)
    return "ptrace";
  /* A release that answered and does not list systrap lacks it; one that
   * could not say is given the host's choice and runsc's own error. */
  if (strcmp(configured, "systrap") == 0 && v->text[0] != '\0' && !v->systrap) {
    tg_error_set(err, 0,
                 "platform \"systrap\": %s has no systrap platform (gVisor "
                 "has it since mid-2023): set \"platform\": \"auto\" or "
                 "\"ptrace\" in the host config, or install a newer runsc "
                 "with 'make deps'",
                 v->text);
    return NULL;
  }
  return configured;
}

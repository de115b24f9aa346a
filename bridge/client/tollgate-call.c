/* tollgate-call: call a host tool from inside a tollgate container.
 *
 *   tollgate-call [--timeout S] [--repeat N [--concurrency C]] TOOL [ARGS-JSON | -]
 *   tollgate-call --rlimits NAME=SOFT:HARD... -- PROGRAM [ARG...]
 *
 * The second form is tollgate's own, under runc (rlimit_exec.h).
 * Prints the tool's result JSON on stdout.  Each error class has its own
 * exit status (see usage()), and the error message goes to stderr.  Static
 * and dependency-free: it must run in any container, so it carries its own
 * small JSON scanner instead of a library.  The protocol it speaks is
 * docs/bridge-protocol.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bridge/client/rlimit_exec.h"

enum exit_code {
  EXIT_OK = 0,
  EXIT_USAGE = 1,          /* bad command line or a local failure */
  EXIT_BAD_REQUEST = 2,
  EXIT_DENIED = 3,
  EXIT_APPROVAL_TIMEOUT = 4,
  EXIT_BUDGET_EXHAUSTED = 5,
  EXIT_UNKNOWN_TOOL = 6,
  EXIT_TOOL_FAILED = 7,
  EXIT_TOOL_TIMEOUT = 8,
  EXIT_CONTAINER_STOPPED = 9,
  EXIT_AUDIT_UNAVAILABLE = 10,
  EXIT_BRIDGE_FULL = 11,
  EXIT_NO_ANSWER = 12,     /* no response within the timeout */
  EXIT_PROTOCOL = 13,      /* a response this client does not understand */
  EXIT_OUTCOME_UNKNOWN = 14, /* the sidecar died mid-call: it may have run */
  EXIT_ANOMALY = 15,       /* an anomaly limit of the policy stopped the run */
};

static const struct {
  const char *code;
  int status;
} codes[] = {
    {"bad_request", EXIT_BAD_REQUEST},
    {"denied", EXIT_DENIED},
    {"approval_timeout", EXIT_APPROVAL_TIMEOUT},
    {"budget_exhausted", EXIT_BUDGET_EXHAUSTED},
    {"unknown_tool", EXIT_UNKNOWN_TOOL},
    {"tool_failed", EXIT_TOOL_FAILED},
    {"tool_timeout", EXIT_TOOL_TIMEOUT},
    {"container_stopped", EXIT_CONTAINER_STOPPED},
    {"audit_unavailable", EXIT_AUDIT_UNAVAILABLE},
    {"bridge_full", EXIT_BRIDGE_FULL},
    {"outcome_unknown", EXIT_OUTCOME_UNKNOWN},
    {"anomaly", EXIT_ANOMALY},
};

static void usage(void) {
  fputs("usage: tollgate-call [--timeout S] [--repeat N [--concurrency C]] TOOL [ARGS-JSON | -]\n"
        "Calls TOOL on the host through the tollgate bridge and prints its\n"
        "result JSON.  ARGS-JSON is an object (default {}); - reads it from stdin.\n"
        "--repeat N makes N calls (C threads at once) and prints one JSON line of\n"
        "latency percentiles and calls/s instead of results (for benchmarks).\n"
        "Environment: TOLLGATE_DIR (default /run/tollgate), TOLLGATE_TIMEOUT.\n"
        "Exit status: 0 ok, 1 usage or local error, 2 bad_request, 3 denied,\n"
        "4 approval_timeout, 5 budget_exhausted, 6 unknown_tool, 7 tool_failed,\n"
        "8 tool_timeout, 9 container_stopped, 10 audit_unavailable,\n"
        "11 bridge_full, 12 no answer in time, 13 unreadable response,\n"
        "14 outcome_unknown (the sidecar died mid-call: it may or may not have run),\n"
        "15 anomaly (an anomaly limit of the policy stopped the run: every later\n"
        "call is refused).\n",
        stderr);
}

/* ---- a minimal JSON scanner: enough to find keys and skip values ---- */

#define MAX_DEPTH 128

static const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

static const char *skip_string(const char *p, const char *end) {
  if (p >= end || *p != '"')
    return NULL;
  for (p++; p < end; p++) {
    if (*p == '\\') {
      p++;
      continue;
    }
    if (*p == '"')
      return p + 1;
    if ((unsigned char)*p < 0x20)
      return NULL;
  }
  return NULL;
}

static const char *skip_value(const char *p, const char *end, int depth) {
  p = ws(p, end);
  if (p >= end || depth > MAX_DEPTH)
    return NULL;
  if (*p == '"')
    return skip_string(p, end);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    bool obj = *p == '{';
    p = ws(p + 1, end);
    if (p < end && *p == close)
      return p + 1;
    for (;;) {
      if (obj) {
        p = skip_string(ws(p, end), end);
        if (p == NULL)
          return NULL;
        p = ws(p, end);
        if (p >= end || *p != ':')
          return NULL;
        p++;
      }
      p = skip_value(p, end, depth + 1);
      if (p == NULL)
        return NULL;
      p = ws(p, end);
      if (p < end && *p == ',') {
        p++;
        continue;
      }
      if (p < end && *p == close)
        return p + 1;
      return NULL;
    }
  }
  const char *s = p;
  while (p < end && (strchr("+-.eE", *p) || (*p >= '0' && *p <= '9') ||
                     (*p >= 'a' && *p <= 'z')))
    p++;
  return p > s ? p : NULL;
}

/* The value of key in the object at p, or NULL.  Keys are compared as
 * written (the host writes plain ASCII keys). */
static const char *find_key(const char *p, const char *end, const char *key) {
  p = ws(p, end);
  if (p >= end || *p != '{')
    return NULL;
  p = ws(p + 1, end);
  size_t klen = strlen(key);
  while (p < end && *p == '"') {
    const char *kend = skip_string(p, end);
    if (kend == NULL)
      return NULL;
    bool match = (size_t)(kend - p - 2) == klen && memcmp(p + 1, key, klen) == 0;
    p = ws(kend, end);
    if (p >= end || *p != ':')
      return NULL;
    p = ws(p + 1, end);
    if (match)
      return p;
    p = skip_value(p, end, 1);
    if (p == NULL)
      return NULL;
    p = ws(p, end);
    if (p < end && *p == ',')
      p = ws(p + 1, end);
  }
  return NULL;
}

static void put_utf8(char **o, unsigned cp) {
  char *q = *o;
  if (cp < 0x80) {
    *q++ = (char)cp;
  } else if (cp < 0x800) {
    *q++ = (char)(0xc0 | (cp >> 6));
    *q++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *q++ = (char)(0xe0 | (cp >> 12));
    *q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *q++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *q++ = (char)(0xf0 | (cp >> 18));
    *q++ = (char)(0x80 | ((cp >> 12) & 0x3f));
    *q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *q++ = (char)(0x80 | (cp & 0x3f));
  }
  *o = q;
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v = v * 16 + (unsigned)(c >= '0' && c <= '9'   ? c - '0'
                            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                   : 0);
  }
  return v;
}

/* Decode the JSON string at p into a new NUL-terminated buffer. */
static char *decode_string(const char *p, const char *end) {
  const char *e = skip_string(p, end);
  if (e == NULL)
    return NULL;
  char *out = malloc((size_t)(e - p) * 2 + 1), *o = out;
  if (out == NULL)
    return NULL;
  for (p++; p < e - 1; p++) {
    if (*p != '\\') {
      *o++ = *p;
      continue;
    }
    p++;
    switch (*p) {
    case 'n': *o++ = '\n'; break;
    case 't': *o++ = '\t'; break;
    case 'r': *o++ = '\r'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'u':
      if (e - 1 - p > 4) {
        unsigned cp = hex4(p + 1);
        p += 4;
        if (cp >= 0xd800 && cp < 0xdc00 && e - 1 - p > 6 && p[1] == '\\' &&
            p[2] == 'u') {
          unsigned lo = hex4(p + 3);
          if (lo >= 0xdc00 && lo < 0xe000) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
          }
        }
        put_utf8(&o, cp);
      }
      break;
    default: *o++ = *p; break;
    }
  }
  *o = '\0';
  return out;
}

/* ---- files ---- */

/* Read fd to its end, at most max bytes (EFBIG beyond).  The first buffer
 * is sized from fstat, so a complete file (a response, tools.json) takes
 * one allocation of its own size and one read, where doubling from 4 KiB
 * took a realloc and a read per doubling.  A pipe (stdin) still doubles. */
static char *read_all(int fd, size_t max, size_t *len) {
  struct stat st;
  size_t cap = 4096, n = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0)
    cap = (size_t)st.st_size < max ? (size_t)st.st_size + 1 : max;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (n == cap) {
      if (cap >= max) {
        free(buf);
        errno = EFBIG;
        return NULL;
      }
      cap = cap > max / 2 ? max : cap * 2;
      char *nb = realloc(buf, cap + 1);
      if (nb == NULL)
        break;
      buf = nb;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      free(buf);
      return NULL;
    }
    if (r == 0) {
      buf[n] = '\0';
      *len = n;
      return buf;
    }
    n += (size_t)r;
  }
  free(buf);
  errno = ENOMEM;
  return NULL;
}

static char *read_path(const char *path, size_t max, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return NULL;
  char *buf = read_all(fd, max, len);
  int e = errno;
  close(fd);
  errno = e;
  return buf;
}

static bool space_error(int e) { return e == ENOSPC || e == EDQUOT; }

static int fail_local(const char *what, int e) {
  if (space_error(e)) {
    fprintf(stderr, "tollgate-call: bridge_full: %s: the bridge area "
            "/run/tollgate/calls is full; remove files there and call again\n",
            what);
    return EXIT_BRIDGE_FULL;
  }
  fprintf(stderr, "tollgate-call: %s: %s\n", what, strerror(e));
  return EXIT_USAGE;
}

/* The call's deadline: --timeout or TOLLGATE_TIMEOUT if given, else the
 * approval timeout plus the tool's own timeout plus slack, so the host
 * always answers first unless it is gone. */
static double default_timeout(const char *dir, const char *tool) {
  char path[4096];
  size_t len;
  double approval = 60, tool_timeout = 60;
  snprintf(path, sizeof path, "%s/bridge.json", dir);
  char *b = read_path(path, 1 << 20, &len);
  if (b) {
    const char *v = find_key(b, b + len, "approval_timeout_ms");
    if (v)
      approval = strtod(v, NULL) / 1000.0;
    free(b);
  }
  snprintf(path, sizeof path, "%s/tools.json", dir);
  char *t = read_path(path, 64 << 20, &len);
  if (t) {
    const char *end = t + len, *arr = find_key(t, end, "tools");
    if (arr && *arr == '[') {
      const char *p = ws(arr + 1, end);
      while (p && p < end && *p == '{') {
        const char *name = find_key(p, end, "name");
        char *n = name ? decode_string(name, end) : NULL;
        if (n && strcmp(n, tool) == 0) {
          const char *to = find_key(p, end, "timeout");
          if (to)
            tool_timeout = strtod(to, NULL);
        }
        free(n);
        p = skip_value(p, end, 1);
        p = p ? ws(p, end) : NULL;
        if (p && p < end && *p == ',')
          p = ws(p + 1, end);
      }
    }
    free(t);
  }
  return approval + tool_timeout + 10;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool tool_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 128)
    return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
      return false;
  return true;
}

/* The sidecar renews <dir>/alive every second (bridge/heartbeat.h); an
 * mtime unchanged for this long means nobody will answer. */
#define HEARTBEAT_NAME "alive"
#define HEARTBEAT_STALE_S 10.0

struct call_ctx {
  int root, rq, rs; /* root: the tollgate dir, for the heartbeat; -1: none */
  const char *tool, *args, *resp_dir, *dir;
  size_t args_len;
  double timeout;
};

/* A call's file names in calls/req and calls/resp. */
struct call_names {
  char name[64], marker[64];
};

/* Write the request <id>.json, then its marker <id>.done.  0, or the exit
 * status of a local failure (nothing left behind). */
static int send_request(const struct call_ctx *c, const struct call_names *f) {
  /* The body: {"v":1,"tool":TOOL,"args":ARGS}.  The tool name needs no
   * escaping (checked above); ARGS is passed through as written. */
  size_t blen = strlen(c->tool) + c->args_len + 64;
  char *body = malloc(blen);
  if (body == NULL)
    return fail_local("build the request", ENOMEM);
  int n = snprintf(body, blen, "{\"v\":1,\"tool\":\"%s\",\"args\":%.*s}", c->tool,
                   (int)c->args_len, c->args);
  /* The body goes straight to <id>.json: the host reads it only once the
   * marker exists, and the marker is created after the body is closed, so
   * a temp file and rename would only add a (gofer) round trip. */
  int fd = openat(c->rq, f->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    free(body);
    return fail_local("create the request", errno);
  }
  ssize_t w = 0;
  for (size_t off = 0; off < (size_t)n; off += (size_t)w) {
    w = write(fd, body + off, (size_t)n - off);
    if (w < 0 && errno == EINTR) {
      w = 0;
      continue;
    }
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      close(fd);
      unlinkat(c->rq, f->name, 0);
      free(body);
      return fail_local("write the request", e);
    }
  }
  free(body);
  if (close(fd) < 0) {
    int e = errno;
    unlinkat(c->rq, f->name, 0);
    return fail_local("write the request", e);
  }
  fd = openat(c->rq, f->marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    unlinkat(c->rq, f->name, 0);
    return fail_local("mark the request ready", e);
  }
  close(fd);
  return 0;
}

/* The heartbeat, checked once a second: its mtime compared with the last
 * one seen, on this client's own clock. */
struct heartbeat_watch {
  double next, changed;
  struct timespec seen;
  bool known;
};

/* Has the heartbeat stood still past HEARTBEAT_STALE_S at time now? */
static bool heartbeat_stale(const struct call_ctx *c, struct heartbeat_watch *hb, double now) {
  if (c->root < 0 || now < hb->next)
    return false;
  struct stat hs;
  hb->next = now + 1.0;
  if (fstatat(c->root, HEARTBEAT_NAME, &hs, AT_SYMLINK_NOFOLLOW) != 0)
    return false;
  if (!hb->known || hs.st_mtim.tv_sec != hb->seen.tv_sec ||
      hs.st_mtim.tv_nsec != hb->seen.tv_nsec) {
    hb->known = true;
    hb->seen = hs.st_mtim;
    hb->changed = now;
    return false;
  }
  return now - hb->changed > HEARTBEAT_STALE_S;
}

/* Wait for the response marker: 0 once it is there, else EXIT_NO_ANSWER
 * (the request withdrawn, the reason on stderr).
 *
 * Polled with adaptive back-off: inotify inside gVisor does not see the
 * host's writes.  A few immediate checks catch the fast answers; then the
 * wait grows by half from 5 us up to 2 ms, and is never shorter than
 * twice what one check costs, so that polling takes at most a third of
 * the time (a check is a system call under runc but a round trip to the
 * gofer under gVisor). */
static int wait_answer(const struct call_ctx *c, const struct call_names *f) {
  double deadline = now_s() + c->timeout;
  long wait_ns = 5000;
  struct stat st;
  struct heartbeat_watch hb = {0};
  for (int k = 0;; k++) {
    double t0 = now_s();
    if (fstatat(c->rs, f->marker, &st, AT_SYMLINK_NOFOLLOW) == 0)
      return 0;
    double t1 = now_s();
    bool stale = heartbeat_stale(c, &hb, t1);
    if (stale && fstatat(c->rs, f->marker, &st, AT_SYMLINK_NOFOLLOW) == 0)
      return 0; /* the answer came after all */
    if (t1 > deadline || stale) {
      unlinkat(c->rq, f->name, 0);
      unlinkat(c->rq, f->marker, 0);
      if (stale)
        fprintf(stderr, "tollgate-call: no answer from the tollgate bridge: its heartbeat "
                "(%s/" HEARTBEAT_NAME ") stopped %.0f s ago, so neither the sidecar nor its "
                "supervisor is running; the call may or may not have run\n",
                c->dir, t1 - hb.changed);
      else
        fprintf(stderr, "tollgate-call: no answer from the tollgate bridge within "
                "%.0f s: the host side is not running (container stopping, or "
                "the sidecar died); the call may or may not have run\n", c->timeout);
      return EXIT_NO_ANSWER;
    }
    if (k < 3) {
      sched_yield();
      continue;
    }
    long check_ns = (long)((t1 - t0) * 1e9);
    if (wait_ns < 2 * check_ns)
      wait_ns = 2 * check_ns;
    if (wait_ns > 2000000)
      wait_ns = 2000000;
    struct timespec ts = {0, wait_ns};
    nanosleep(&ts, NULL);
    wait_ns += wait_ns / 2;
  }
}

/* Read the response, remove it, print its result (unless quiet) or its
 * error.  Returns the exit status for its outcome. */
static int take_response(const struct call_ctx *c, const struct call_names *f, bool quiet) {
  size_t rlen = 0;
  char rpath[4200];
  snprintf(rpath, sizeof rpath, "%s/%s", c->resp_dir, f->name);
  char *resp = read_path(rpath, 1u << 30, &rlen);
  int e = errno;
  unlinkat(c->rs, f->name, 0);
  unlinkat(c->rs, f->marker, 0);
  if (resp == NULL) {
    fprintf(stderr, "tollgate-call: read the response %s: %s\n", rpath, strerror(e));
    return EXIT_PROTOCOL;
  }
  const char *end = resp + rlen, *ok = find_key(resp, end, "ok");
  if (ok && strncmp(ok, "true", 4) == 0) {
    const char *res = find_key(resp, end, "result");
    const char *rend = res ? skip_value(res, end, 0) : NULL;
    if (rend == NULL) {
      if (!quiet)
        fputs("null\n", stdout);
    } else if (!quiet) {
      fwrite(res, 1, (size_t)(rend - res), stdout);
      fputc('\n', stdout);
    }
    free(resp);
    return quiet || fflush(stdout) == 0 ? EXIT_OK : EXIT_USAGE;
  }
  const char *err = ok ? find_key(resp, end, "error") : NULL;
  const char *cv = err ? find_key(err, end, "code") : NULL;
  const char *m = err ? find_key(err, end, "message") : NULL;
  char *code = cv ? decode_string(cv, end) : NULL;
  char *msg = m ? decode_string(m, end) : NULL;
  if (code == NULL) {
    fprintf(stderr, "tollgate-call: unreadable response: %.200s\n", resp);
    free(resp);
    free(msg);
    return EXIT_PROTOCOL;
  }
  if (!quiet)
    fprintf(stderr, "tollgate-call: %s: %s\n", code, msg ? msg : "");
  free(resp);
  free(msg);
  int status = EXIT_PROTOCOL;
  for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
    if (strcmp(codes[k].code, code) == 0)
      status = codes[k].status;
  free(code);
  return status;
}

/* One call: write the request, wait for the answer, print it (unless
 * quiet).  Returns the exit status for its outcome.  Reentrant: the
 * benchmark runs it from several threads. */
static int call_once(const struct call_ctx *c, bool quiet) {
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
    return fail_local("getrandom", errno);
  char id[33];
  for (int k = 0; k < 16; k++)
    snprintf(id + 2 * k, 3, "%02x", rnd[k]);
  struct call_names f;
  snprintf(f.name, sizeof f.name, "%s.json", id);
  snprintf(f.marker, sizeof f.marker, "%s.done", id);
  int r = send_request(c, &f);
  if (r == 0)
    r = wait_answer(c, &f);
  return r == 0 ? take_response(c, &f, quiet) : r;
}

/* ---- --repeat N [--concurrency C]: measure the round trip ---- */

struct bench_worker {
  const struct call_ctx *ctx;
  long n;
  double *lat;
  int failures;
  pthread_t thread;
};

static void *bench_main(void *arg) {
  struct bench_worker *w = arg;
  for (long k = 0; k < w->n; k++) {
    double t0 = now_s();
    if (call_once(w->ctx, true) != EXIT_OK)
      w->failures++;
    w->lat[k] = now_s() - t0;
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Prints one JSON line on stdout: calls, concurrency, seconds, calls/s and
 * the latency percentiles in microseconds. */
static int bench(const struct call_ctx *ctx, long repeat, long concurrency) {
  struct bench_worker *w = calloc((size_t)concurrency, sizeof *w);
  double *lat = calloc((size_t)repeat, sizeof *lat);
  if (w == NULL || lat == NULL)
    return fail_local("allocate", ENOMEM);
  long off = 0;
  double t0 = now_s();
  for (long k = 0; k < concurrency; k++) {
    w[k].ctx = ctx;
    w[k].n = repeat / concurrency + (k < repeat % concurrency);
    w[k].lat = lat + off;
    off += w[k].n;
    /* pthread_create returns its error and leaves errno alone. */
    int rc = pthread_create(&w[k].thread, NULL, bench_main, &w[k]);
    if (rc != 0)
      return fail_local("start a thread", rc);
  }
  int failures = 0;
  for (long k = 0; k < concurrency; k++) {
    pthread_join(w[k].thread, NULL);
    failures += w[k].failures;
  }
  double secs = now_s() - t0;
  qsort(lat, (size_t)repeat, sizeof *lat, cmp_double);
#define PCT(p) (repeat ? lat[(size_t)((repeat - 1) * (p))] * 1e6 : 0.0)
  printf("{\"calls\":%ld,\"concurrency\":%ld,\"failures\":%d,\"seconds\":%.3f,"
         "\"calls_per_s\":%.0f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f}\n",
         repeat, concurrency, failures, secs, secs > 0 ? repeat / secs : 0.0,
         PCT(0.50), PCT(0.90), PCT(0.99));
  free(lat);
  free(w);
  return failures ? EXIT_PROTOCOL : EXIT_OK;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], RLIMIT_EXEC_FLAG) == 0)
    return rlimit_exec_main(argc, argv);
  double timeout = 0;
  int i = 1;
  if (i < argc && (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)) {
    usage();
    return EXIT_OK;
  }
  long repeat = 0, concurrency = 1;
  while (i + 1 < argc && strncmp(argv[i], "--", 2) == 0) {
    if (strcmp(argv[i], "--timeout") == 0)
      timeout = strtod(argv[i + 1], NULL);
    else if (strcmp(argv[i], "--repeat") == 0)
      repeat = strtol(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--concurrency") == 0)
      concurrency = strtol(argv[i + 1], NULL, 10);
    else
      break;
    i += 2;
  }
  if (repeat < 0 || concurrency < 1 || concurrency > 256) {
    usage();
    return EXIT_USAGE;
  }
  if (argc - i < 1 || argc - i > 2) {
    usage();
    return EXIT_USAGE;
  }
  const char *tool = argv[i];
  if (!tool_name_ok(tool)) {
    fprintf(stderr, "tollgate-call: bad tool name \"%s\": use [A-Za-z0-9_.-]{1,128}\n",
            tool);
    return EXIT_USAGE;
  }
  char *args = NULL;
  size_t args_len = 2;
  if (argc - i == 2 && strcmp(argv[i + 1], "-") == 0) {
    args = read_all(0, 64 << 20, &args_len);
    if (args == NULL)
      return fail_local("read the arguments from stdin", errno);
  } else {
    args = strdup(argc - i == 2 ? argv[i + 1] : "{}");
    args_len = strlen(args);
  }
  const char *aend = args + args_len, *a = ws(args, aend);
  const char *after = a < aend && *a == '{' ? skip_value(a, aend, 0) : NULL;
  if (after == NULL || ws(after, aend) != aend) {
    fprintf(stderr, "tollgate-call: ARGS-JSON must be one JSON object, like "
            "'{\"order_id\": 42}'\n");
    return EXIT_USAGE;
  }
  const char *dir = getenv("TOLLGATE_DIR");
  if (dir == NULL || *dir == '\0')
    dir = "/run/tollgate";
  if (timeout <= 0 && getenv("TOLLGATE_TIMEOUT"))
    timeout = strtod(getenv("TOLLGATE_TIMEOUT"), NULL);
  if (timeout <= 0)
    timeout = default_timeout(dir, tool);
  /* Short sleeps while polling should be short. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  char req_dir[4096], resp_dir[4096];
  snprintf(req_dir, sizeof req_dir, "%s/calls/req", dir);
  snprintf(resp_dir, sizeof resp_dir, "%s/calls/resp", dir);
  int rq = open(req_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rs = open(resp_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rq < 0 || rs < 0) {
    fprintf(stderr, "tollgate-call: %s is not there: is this a tollgate "
            "container? (%s)\n", rq < 0 ? req_dir : resp_dir, strerror(errno));
    return EXIT_USAGE;
  }

  /* No heartbeat (an older host, `tollgate run`): the timeout alone. */
  int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct call_ctx ctx = {.root = root, .rq = rq, .rs = rs, .tool = tool, .args = a, .dir = dir,
                         .args_len = (size_t)(after - a), .timeout = timeout,
                         .resp_dir = resp_dir};
  if (repeat > 0)
    return bench(&ctx, repeat, concurrency);
  return call_once(&ctx, false);
}

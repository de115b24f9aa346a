/* tollgate-flood: a hostile (and a measuring) client of the bridge's file
 * protocol, run inside real containers by tests/integration/
 * test_bridge_flood.sh.  Static, no dependency on the container's libc.
 *
 *   tollgate-flood flood SECONDS
 *       four processes for SECONDS, as fast as they can:
 *         invalid ids (and junk names), fresh valid ids with malformed
 *         bodies, replays of one answered id, and well-formed calls (over
 *         the cap once max_tool_calls is spent).  Responses are removed so
 *         the bridge area never fills and the flood never stops by itself.
 *       Prints "flood done: N markers" at the end.
 *   tollgate-flood calls N TOOL
 *       N sequential calls of TOOL with {} and the latency of each; prints
 *       "calls answered=A ok=K of N p50_us=P max_us=M".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQ "/run/tollgate/calls/req"
#define RESP "/run/tollgate/calls/resp"

static int rq, rs;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int put(int dir, const char *name, const char *body) {
  int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  if (body && write(fd, body, strlen(body)) < 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

/* One call written the way the clients do: the body, then the marker. */
static int submit(const char *id, const char *body) {
  char name[96];
  snprintf(name, sizeof name, "%s.json", id);
  if (body && put(rq, name, body) < 0)
    return -1;
  snprintf(name, sizeof name, "%s.done", id);
  return put(rq, name, NULL);
}

/* Wait for id's response; 1 with ok true, 0 with ok false, -1 none. */
static int await(const char *id, double timeout) {
  char marker[96], name[96];
  snprintf(marker, sizeof marker, "%s.done", id);
  snprintf(name, sizeof name, "%s.json", id);
  double end = now_s() + timeout;
  struct stat st;
  long wait_ns = 5000;
  while (fstatat(rs, marker, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (now_s() > end)
      return -1;
    struct timespec ts = {0, wait_ns};
    nanosleep(&ts, NULL);
    if (wait_ns < 2000000)
      wait_ns += wait_ns / 2;
  }
  char buf[4096] = {0};
  int fd = openat(rs, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    if (read(fd, buf, sizeof buf - 1) < 0)
      buf[0] = '\0';
    close(fd);
  }
  unlinkat(rs, name, 0);
  unlinkat(rs, marker, 0);
  return strstr(buf, "\"ok\":true") ? 1 : 0;
}

/* Remove responses so the area never fills (the flood must not stop). */
static void drop_response(const char *id) {
  char name[96];
  snprintf(name, sizeof name, "%s.json", id);
  unlinkat(rs, name, 0);
  snprintf(name, sizeof name, "%s.done", id);
  unlinkat(rs, name, 0);
}

static unsigned long flood_one(int kind, double end) {
  unsigned long n = 0;
  char id[64], name[96];
  const char *replay_id = "replay-1"; /* answered by main before the flood */
  while (now_s() < end) {
    for (int k = 0; k < 64; k++, n++) {
      switch (kind) {
      case 0: /* invalid ids, and junk */
        snprintf(name, sizeof name, "bad..id-%d-%lu.done", (int)getpid(), n);
        put(rq, name, NULL);
        snprintf(name, sizeof name, "junk-%d-%lu", (int)getpid(), n);
        put(rq, name, NULL);
        break;
      case 1: /* fresh valid ids, malformed bodies */
        snprintf(id, sizeof id, "m%d-%lu", (int)getpid(), n);
        submit(id, "{\"v\":1,\"tool\":");
        if (n >= 64)
          snprintf(id, sizeof id, "m%d-%lu", (int)getpid(), n - 64), drop_response(id);
        break;
      case 2: /* replays of the answered id */
        submit(replay_id, NULL);
        break;
      case 3: /* well-formed calls: over the cap once it is spent */
        snprintf(id, sizeof id, "c%d-%lu", (int)getpid(), n);
        submit(id, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"x\":1}}");
        if (n >= 64)
          snprintf(id, sizeof id, "c%d-%lu", (int)getpid(), n - 64), drop_response(id);
        break;
      }
    }
  }
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  rq = open(REQ, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  rs = open(RESP, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rq < 0 || rs < 0) {
    fprintf(stderr, "tollgate-flood: no bridge at /run/tollgate/calls: %s\n", strerror(errno));
    return 2;
  }
  if (argc == 3 && strcmp(argv[1], "flood") == 0) {
    /* an id answered within the cap, to be replayed for the whole flood */
    submit("replay-1", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}");
    printf("replayed id answered: %d\n", await("replay-1", 10));
    double end = now_s() + atof(argv[2]);
    pid_t kids[4];
    for (int k = 0; k < 4; k++) {
      kids[k] = fork();
      if (kids[k] == 0) {
        unsigned long n = flood_one(k, end);
        printf("flooder %d: %lu attempts\n", k, n);
        fflush(stdout);
        _exit(0);
      }
    }
    for (int k = 0; k < 4; k++)
      waitpid(kids[k], NULL, 0);
    printf("flood done\n");
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "calls") == 0) {
    int n = atoi(argv[2]);
    if (n <= 0 || n > 100000)
      return 2;
    double *lat = calloc((size_t)n, sizeof *lat);
    int answered = 0, ok = 0;
    char id[64], body[256];
    snprintf(body, sizeof body, "{\"v\":1,\"tool\":\"%s\",\"args\":{}}", argv[3]);
    for (int i = 0; i < n; i++) {
      snprintf(id, sizeof id, "p%d-%d", (int)getpid(), i);
      double t0 = now_s();
      if (submit(id, body) < 0) {
        lat[i] = 1e9;
        continue;
      }
      int r = await(id, 30);
      lat[i] = r < 0 ? 1e9 : now_s() - t0;
      answered += r >= 0;
      ok += r == 1;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    printf("calls answered=%d ok=%d of %d p50_us=%.0f max_us=%.0f\n", answered, ok, n,
           lat[n / 2] * 1e6, lat[n - 1] * 1e6);
    free(lat);
    return 0;
  }
  fprintf(stderr, "usage: tollgate-flood flood SECONDS | tollgate-flood calls N TOOL\n");
  return 2;
}

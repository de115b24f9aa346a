/* callbench: the in-container bridge benchmark client (static).
 *
 * Runs inside the container.  Makes N sequential calls to one tool and
 * records each round trip, then runs C concurrent callers (processes) making
 * M calls each.  Prints one JSON object per phase on stdout:
 *   {"phase":"sequential","calls":N,"errors":E,"p50_us":...,"p90_us":...,
 *    "p99_us":...,"mean_us":...,"calls_per_s":...}
 *   {"phase":"concurrent","threads":C,"calls":C*M,...same fields...}
 * Every call's arguments differ ({"i":K,"msg":"..."}) so no repeat limit
 * of the governed path is hit, and every response is checked to be ok.
 *
 * With -x X it first runs the shipped static client, tollgate-call, X times
 * one after the other (a new process per call, as a shell script uses it):
 *   {"phase":"tollgate-call","calls":X,...}
 *
 * Usage: callbench [-n N] [-c C] [-m M] [-w WARMUP] [-x X] [-t TOOL]
 *                  [-d CALLS_DIR] [-X TOLLGATE_CALL]
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "bench/client_call.h"

static const char *calls_dir = "/run/tollgate/calls";
static const char *tool = "echo";
static atomic_ulong next_arg;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *v, size_t n, double p) {
  if (n == 0)
    return 0;
  size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (k < 1)
    k = 1;
  if (k > n)
    k = n;
  return v[k - 1];
}

/* One timed call; returns its latency in µs, or a negative value on error
 * (and prints the first few errors to stderr). */
static double timed_call(void) {
  static atomic_int reported;
  char args[96];
  snprintf(args, sizeof args, "{\"i\":%lu,\"msg\":\"bench\"}",
           (unsigned long)atomic_fetch_add(&next_arg, 1));
  char *resp = NULL;
  double t0 = now_us();
  int r = bench_client_call(calls_dir, tool, args, &resp);
  double t1 = now_us();
  bool ok = r == 0 && resp && strstr(resp, "\"ok\":true");
  if (!ok && atomic_fetch_add(&reported, 1) < 5)
    fprintf(stderr, "callbench: call failed (%s): %s\n", r == 0 ? "response" : strerror(-r),
            resp ? resp : "(no response)");
  free(resp);
  return ok ? t1 - t0 : -1;
}

static void report(const char *phase, int threads, double *lat, size_t n,
                   size_t errors, double wall_us) {
  qsort(lat, n, sizeof *lat, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += lat[i];
  printf("{\"phase\":\"%s\",\"threads\":%d,\"calls\":%zu,\"errors\":%zu,"
         "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f,"
         "\"calls_per_s\":%.0f}\n",
         phase, threads, n + errors, errors, percentile(lat, n, 50),
         percentile(lat, n, 90), percentile(lat, n, 99), n ? sum / (double)n : 0,
         wall_us > 0 ? (double)(n + errors) / (wall_us / 1e6) : 0);
  fflush(stdout);
}

/* One run of the tollgate-call program; latency in µs or -1. */
static double timed_cli_call(const char *prog) {
  char args[96];
  snprintf(args, sizeof args, "{\"i\":%lu,\"msg\":\"bench\"}",
           (unsigned long)atomic_fetch_add(&next_arg, 1));
  double t0 = now_us();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, 1);
    execl(prog, prog, tool, args, (char *)NULL);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    ;
  double t1 = now_us();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t1 - t0 : -1;
}

/* One concurrent caller: a child process making m calls, writing its
 * latencies (or -1 for an error) into its slice of a shared mapping.
 * Processes rather than threads, like separate agents in one container;
 * the shipped tollgate-call --repeat --concurrency (threads) is timed beside
 * it.  (Processes also kept working when a seccomp profile made glibc's
 * thread creation fail under runsc: docs/performance.md, finding 5.) */
static void run_caller(double *slot, int m) {
  for (int i = 0; i < m; i++)
    slot[i] = timed_call();
}

int main(int argc, char **argv) {
  int n = 5000, c = 8, m = 500, warmup = 50, x = 0, opt;
  const char *cli_prog = "/run/tollgate/tollgate-call";
  while ((opt = getopt(argc, argv, "n:c:m:w:x:t:d:X:")) != -1) {
    switch (opt) {
    case 'n': n = atoi(optarg); break;
    case 'c': c = atoi(optarg); break;
    case 'm': m = atoi(optarg); break;
    case 'w': warmup = atoi(optarg); break;
    case 't': tool = optarg; break;
    case 'd': calls_dir = optarg; break;
    case 'x': x = atoi(optarg); break;
    case 'X': cli_prog = optarg; break;
    default:
      fprintf(stderr, "usage: callbench [-n N] [-c C] [-m M] [-w WARMUP] [-x X] [-t TOOL] [-d DIR] [-X PROG]\n");
      return 2;
    }
  }
  if (n < 0 || c < 0 || c > 256 || m < 0 || warmup < 0 || x < 0) {
    fprintf(stderr, "callbench: counts must be >= 0 and at most 256 threads\n");
    return 2;
  }

  size_t errors = 0;
  for (int i = 0; i < warmup; i++)
    if (timed_call() < 0)
      errors++;
  if (errors) {
    fprintf(stderr, "callbench: %zu of %d warm-up calls failed; is the bridge serving %s?\n",
            errors, warmup, calls_dir);
    return 1;
  }

  if (x > 0) {
    double *lat = calloc((size_t)x, sizeof *lat);
    size_t got = 0;
    errors = 0;
    double t0 = now_us();
    for (int i = 0; i < x; i++) {
      double l = timed_cli_call(cli_prog);
      if (l < 0)
        errors++;
      else
        lat[got++] = l;
    }
    report("tollgate-call", 1, lat, got, errors, now_us() - t0);
    free(lat);
  }

  if (n > 0) {
    double *lat = calloc((size_t)n, sizeof *lat);
    size_t got = 0;
    errors = 0;
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
      double l = timed_call();
      if (l < 0)
        errors++;
      else
        lat[got++] = l;
    }
    report("sequential", 1, lat, got, errors, now_us() - t0);
    free(lat);
  }

  if (c > 0 && m > 0) {
    size_t total = (size_t)c * (size_t)m;
    double *shared = mmap(NULL, total * sizeof(double), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
      perror("callbench: mmap");
      return 1;
    }
    fflush(stdout);
    double t0 = now_us();
    int started = 0;
    for (int i = 0; i < c; i++) {
      pid_t pid = fork();
      if (pid < 0) {
        fprintf(stderr, "callbench: caller %d: fork: %s\n", i + 1, strerror(errno));
        break;
      }
      if (pid == 0) {
        atomic_store(&next_arg, 1000000000UL * (unsigned long)(i + 1)); /* distinct args */
        run_caller(shared + (size_t)i * (size_t)m, m);
        _exit(0);
      }
      started++;
    }
    int bad = 0, status;
    for (int i = 0; i < started; i++)
      if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bad++;
    double wall = now_us() - t0;
    if (started < c || bad) {
      fprintf(stderr, "callbench: %d of %d callers started, %d failed\n", started, c, bad);
      return 1;
    }
    double *all = calloc(total, sizeof *all);
    size_t got = 0;
    errors = 0;
    for (size_t i = 0; i < total; i++) {
      if (shared[i] < 0)
        errors++;
      else
        all[got++] = shared[i];
    }
    report("concurrent", c, all, got, errors, wall);
    free(all);
    munmap(shared, total * sizeof(double));
  }

  return 0;
}

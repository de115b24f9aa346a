/* gatebench: the user-space CPU of one governed call, in process.
 *
 * Usage: gatebench DIR CALLS [THREADS]
 * (built by bench/run.sh as build/bench/gatebench; not part of its runs)
 *
 * Opens a gate with the echo allow policy (the one bench/run.sh and
 * bench/profile-sidecar.sh drive through a real sidecar), then parses and
 * answers CALLS requests the way the bridge does (json_parse + gate_handle,
 * an audit record each), split over THREADS threads (default 1).  Prints
 * one JSON object with the process CPU time per call (and its user and
 * system parts, from getrusage's coarser clock): the sidecar's cost
 * without the container, the file protocol or the scheduler, so before and
 * after of a change in the gate or the audit log compare in seconds.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "governance/gate.h"
#include "base/error.h"
#include "base/json.h"
#include "base/util.h"

static const char POLICY[] =
    "{\"version\": 1,\n"
    " \"tools\": {\"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},\n"
    "                      \"args\": {\"type\": \"object\"}, \"rules\": [{\"effect\": \"allow\"}]}},\n"
    " \"budgets\": {\"max_tool_calls\": 100000000}}\n";

static void usage_us(double *user, double *sys) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *user = (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec;
  *sys = (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
}

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct worker {
  pthread_t tid;
  struct gate *g;
  long first, count;
};

static void *work(void *arg) {
  struct worker *w = arg;
  for (long i = w->first; i < w->first + w->count; i++) {
    char id[40], text[160];
    snprintf(id, sizeof id, "%032lx", i);
    int n = snprintf(text, sizeof text,
                     "{\"v\":1,\"tool\":\"echo\",\"args\":{\"msg\":\"hello from caller\",\"n\":%ld}}", i);
    json_t *req = json_parse(text, (size_t)n, NULL, NULL);
    size_t len = 0;
    char *resp = gate_handle(w->g, id, req, req ? NULL : "not JSON", &len);
    if (resp == NULL || strstr(resp, "\"ok\":true") == NULL) {
      fprintf(stderr, "gatebench: call %ld: %s\n", i, resp ? resp : "(no answer)");
      exit(1);
    }
    free(resp);
    json_free(req);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: gatebench DIR CALLS [THREADS]\n");
    return 2;
  }
  const char *dir = argv[1];
  long calls = atol(argv[2]);
  int threads = argc == 4 ? atoi(argv[3]) : 1;
  if (threads < 1 || threads > 64 || calls < threads)
    return 2;
  cleanup_free char *pp = xasprintf("%s/gatebench-policy.json", dir);
  FILE *f = fopen(pp, "w");
  if (f == NULL || fputs(POLICY, f) < 0 || fclose(f) != 0) {
    perror(pp);
    return 1;
  }
  struct gate_config cfg = {.container_id = "gatebench", .policy_path = pp, .audit_dir = dir,
                            .approval_timeout_ms = 1000};
  struct gate *g = NULL;
  tg_error *err = NULL;
  if (gate_open(&cfg, &g, &err) < 0) {
    fprintf(stderr, "gatebench: %s\n", err->msg);
    return 1;
  }
  /* Warm up the allocator, the policy and OpenSSL before timing. */
  struct worker warm = {.g = g, .first = 0, .count = calls / 10 + 1};
  work(&warm);

  struct worker *w = xcalloc((size_t)threads, sizeof *w);
  long per = calls / threads;
  double u0, s0, u1, s1;
  usage_us(&u0, &s0);
  double c0 = now(CLOCK_PROCESS_CPUTIME_ID), t0 = now(CLOCK_MONOTONIC);
  for (int t = 0; t < threads; t++) {
    w[t] = (struct worker){.g = g, .first = warm.count + per * t, .count = per};
    pthread_create(&w[t].tid, NULL, work, &w[t]);
  }
  for (int t = 0; t < threads; t++)
    pthread_join(w[t].tid, NULL);
  double c1 = now(CLOCK_PROCESS_CPUTIME_ID), t1 = now(CLOCK_MONOTONIC);
  usage_us(&u1, &s1);
  gate_close(g);
  long done = per * threads;
  printf("{\"calls\":%ld,\"threads\":%d,\"cpu_us_per_call\":%.2f,\"user_us_per_call\":%.2f,"
         "\"sys_us_per_call\":%.2f,\"calls_per_s\":%.0f}\n",
         done, threads, (c1 - c0) * 1e6 / (double)done, (u1 - u0) / (double)done,
         (s1 - s0) / (double)done, (double)done / (t1 - t0));
  free(w);
  return 0;
}

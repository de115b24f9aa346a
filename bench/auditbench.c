/* auditbench: the audit log's write paths, in process.
 *
 * Usage: auditbench DIR RECORDS INTENTS
 *
 *   group_commit  RECORDS call records appended by 1 thread, then by 8
 *                 threads, each run ending with audit_close() (so the last
 *                 group commit and the closing fdatasync are inside the
 *                 time): records/s
 *   intent        INTENTS irreversible-intent records appended with sync
 *                 (fdatasync before audit_append returns), each timed: the
 *                 median and p99 latency in µs
 * The logs are DIR/auditbench-1.jsonl, DIR/auditbench-8.jsonl and
 * DIR/auditbench-intent.jsonl; the harness then times `tollgate audit
 * verify` on the first.  Prints one JSON object.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "governance/audit.h"
#include "base/error.h"
#include "base/json.h"
#include "base/util.h"

static unsigned long long ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static int cmp_ull(const void *a, const void *b) {
  unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, tg_error *err) {
  fprintf(stderr, "auditbench: %s: %s\n", what, err ? err->msg : "failed");
  exit(1);
}

struct writer {
  pthread_t tid;
  struct audit *a;
  long first, count;
};

/* A call record as the gate writes one for an allowed echo call. */
static void append_call(struct audit *a, long i, bool sync, const char *event) {
  char text[128], id[40];
  snprintf(text, sizeof text, "{\"order_id\":%ld,\"msg\":\"benchmark record\"}", i);
  snprintf(id, sizeof id, "%032lx", i);
  tg_error *err = NULL;
  json_t *args = json_parse(text, strlen(text), NULL, &err);
  if (!args)
    die("args", err);
  struct audit_record r = {.event = event, .call_id = id, .tool = "get_order",
                           .args = args, .decision = "allow", .reason = "rule 0: allow",
                           .approver = "policy", .duration_ms = 0,
                           .outcome = sync ? NULL : "ok"};
  if (audit_append(a, &r, sync, &err) < 0)
    die("audit_append", err);
  json_free(args);
}

static void *write_records(void *arg) {
  struct writer *w = arg;
  for (long i = w->first; i < w->first + w->count; i++)
    append_call(w->a, i, false, "call");
  return NULL;
}

static double group_commit(const char *dir, const char *id, long records, int threads) {
  tg_error *err = NULL;
  struct audit *a = NULL;
  if (audit_open(dir, id, NULL, NULL, &a, &err) < 0)
    die("audit_open", err);
  struct writer w[8];
  unsigned long long t0 = ns();
  for (int t = 0; t < threads; t++) {
    w[t] = (struct writer){.a = a, .first = records / threads * t, .count = records / threads};
    pthread_create(&w[t].tid, NULL, write_records, &w[t]);
  }
  for (int t = 0; t < threads; t++)
    pthread_join(w[t].tid, NULL);
  audit_close(a);
  return (double)(records / threads * threads) / ((double)(ns() - t0) / 1e9);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: auditbench DIR RECORDS INTENTS\n");
    return 2;
  }
  const char *dir = argv[1];
  long records = atol(argv[2]), intents = atol(argv[3]);
  if (records < 8)
    records = 8;
  if (intents < 1)
    intents = 1;

  double rate1 = group_commit(dir, "auditbench-1", records, 1);
  double rate8 = group_commit(dir, "auditbench-8", records, 8);

  tg_error *err = NULL;
  struct audit *a = NULL;
  if (audit_open(dir, "auditbench-intent", NULL, NULL, &a, &err) < 0)
    die("audit_open", err);
  unsigned long long *lat = xcalloc((size_t)intents, sizeof *lat);
  for (long i = 0; i < intents; i++) {
    unsigned long long t0 = ns();
    append_call(a, i, true, "intent");
    lat[i] = ns() - t0;
  }
  audit_close(a);
  qsort(lat, (size_t)intents, sizeof *lat, cmp_ull);

  char *path = audit_log_path(dir, "auditbench-1");
  struct stat st;
  long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : 0;
  printf("{\"records\":%ld,\"records_per_s_1_thread\":%.0f,\"records_per_s_8_threads\":%.0f,"
         "\"intents\":%ld,\"intent_p50_us\":%.1f,\"intent_p99_us\":%.1f,"
         "\"log\":\"%s\",\"log_bytes\":%lld}\n",
         records, rate1, rate8, intents, (double)lat[intents / 2] / 1e3,
         (double)lat[(size_t)((double)intents * 0.99)] / 1e3, path, bytes);
  free(path);
  free(lat);
  return 0;
}

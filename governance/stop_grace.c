/* The grace of an anomaly stop; see stop_grace.h. */
#include "governance/stop_grace.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "base/util.h"

struct stop_grace {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC: a wall clock step neither
                        shortens nor lengthens the grace */
  bool cancelled;
  struct timespec deadline;
  void (*fn)(void *ctx);
  void *ctx;
};

static void *grace_main(void *arg) {
  struct stop_grace *s = arg;
  pthread_mutex_lock(&s->mu);
  int r = 0;
  while (!s->cancelled && r != ETIMEDOUT)
    r = pthread_cond_timedwait(&s->cv, &s->mu, &s->deadline);
  bool fire = !s->cancelled;
  pthread_mutex_unlock(&s->mu);
  if (fire)
    s->fn(s->ctx);
  return NULL;
}

struct stop_grace *stop_grace_start(long long grace_ms, void (*fn)(void *ctx), void *ctx) {
  if (grace_ms <= 0) {
    fn(ctx);
    return NULL;
  }
  struct stop_grace *s = xcalloc(1, sizeof *s);
  s->fn = fn;
  s->ctx = ctx;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&s->mu, NULL);
  clock_gettime(CLOCK_MONOTONIC, &s->deadline);
  s->deadline.tv_sec += grace_ms / 1000;
  s->deadline.tv_nsec += (grace_ms % 1000) * 1000000L;
  if (s->deadline.tv_nsec >= 1000000000L) {
    s->deadline.tv_sec++;
    s->deadline.tv_nsec -= 1000000000L;
  }
  if (!thread_start_masked(&s->thread, grace_main, s)) {
    /* No thread: no grace either, the stop comes now. */
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
    fn(ctx);
    return NULL;
  }
  return s;
}

void stop_grace_free(struct stop_grace *s) {
  if (s == NULL)
    return;
  pthread_mutex_lock(&s->mu);
  s->cancelled = true;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

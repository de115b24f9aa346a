/* The bridge server's start and stop: the service's lifecycle.  One
 * watcher thread reads untrusted requests (server_watcher.c), a pool of
 * workers that grows on demand (server_pool.c) governs and answers them
 * (server_answer.c).  See server.h, and server_state.h for how the parts
 * fit. */
#include "bridge/server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "bridge/protocol.h"
#include "bridge/server_answer.h"
#include "bridge/server_pool.h"
#include "bridge/server_state.h"
#include "bridge/server_watcher.h"
#include "base/util.h"

#define WORKER_STACK (512 * 1024)

static void server_free(struct bridge_service *s) {
  watcher_close(s);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->reserve_mu);
  pthread_cond_destroy(&s->work);
  pthread_cond_destroy(&s->not_full);
  seen_free(&s->seen);
  pthread_attr_destroy(&s->attr);
  free(s->workers);
  free(s);
}

/* opts with its defaults filled in, and the limits derived from it. */
static struct bridge_service *server_new(const struct bridge_service_options *opts) {
  struct bridge_service *s = xcalloc(1, sizeof *s);
  s->opt = *opts;
  if (s->opt.request_max_bytes == 0)
    s->opt.request_max_bytes = BRIDGE_DEFAULT_REQUEST_MAX;
  if (s->opt.workers == 0)
    s->opt.workers = 8;
  if (s->opt.gc_seconds == 0)
    s->opt.gc_seconds = 300;
  if (s->opt.refused_per_second == 0)
    s->opt.refused_per_second = BRIDGE_DEFAULT_REFUSED_PER_SECOND;
  if (s->opt.backoff_ms == 0)
    s->opt.backoff_ms = BRIDGE_DEFAULT_BACKOFF_MS;
  if (s->opt.seen_max == 0)
    s->opt.seen_max = BRIDGE_SEEN_MAX;
  s->seen.max = s->opt.seen_max;
  s->seen.cap_calls = gate_max_calls(s->opt.gate);
  {
    long long mp = gate_max_pending(s->opt.gate);
    if (mp < 0)
      mp = 0;
    if (mp > 4096)
      mp = 4096; /* a thread each; the policy's limit still applies */
    s->max_threads = s->opt.workers + (unsigned)mp;
  }
  if (s->opt.run_limit == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->opt.run_limit = cpus > 0 ? (unsigned)cpus : 1;
  }
  if (s->opt.run_limit > s->opt.workers)
    s->opt.run_limit = s->opt.workers;
  s->inotify_fd = s->epoll_fd = s->wake_fd = s->pause_epoll_fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->reserve_mu, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->not_full, NULL);
  pthread_attr_init(&s->attr);
  pthread_attr_setstacksize(&s->attr, WORKER_STACK);
  return s;
}

int bridge_service_start(const struct bridge_service_options *opts,
                        struct bridge_service **out, tg_error **err) {
  struct bridge_service *s = server_new(opts);
  if (watcher_open(s, err) < 0) {
    server_free(s);
    return -1;
  }
  answer_make_reserve(s);
  int r = pool_start(s);
  if (r != 0) {
    server_free(s);
    return tg_error_set(err, r, "bridge: start worker thread");
  }
  r = pthread_create(&s->watcher, &s->attr, watcher_main, s);
  if (r != 0) {
    pool_stop(s);
    server_free(s);
    return tg_error_set(err, r, "bridge: start watcher thread");
  }
  *out = s;
  return 0;
}

void bridge_service_wait(struct bridge_service *s) {
  if (!s->watcher_joined) {
    pthread_join(s->watcher, NULL);
    s->watcher_joined = true;
  }
}

void bridge_service_stop(struct bridge_service *s) {
  if (s == NULL)
    return;
  watcher_stop(s);
  pool_unblock_push(s);
  bridge_service_wait(s);
  /* Parked approvals end now; the calls still queued are answered by the
   * gate, which knows the container stopped. */
  gate_container_stopped(s->opt.gate);
  pool_stop(s);
  server_free(s);
}

void bridge_service_get_stats(struct bridge_service *s,
                             struct bridge_service_stats *o) {
  o->requests = atomic_load(&s->st.requests);
  o->bad = atomic_load(&s->st.bad);
  o->replays = atomic_load(&s->st.replays);
  o->bad_ids = atomic_load(&s->st.bad_ids);
  o->junk = atomic_load(&s->st.junk);
  o->answered = atomic_load(&s->st.answered);
  o->no_space = atomic_load(&s->st.no_space);
  o->withdrawn = atomic_load(&s->st.withdrawn);
  o->backoffs = atomic_load(&s->st.backoffs);
  o->seen_ids = atomic_load(&s->seen.count);
}

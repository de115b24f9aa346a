/* The bridge server's job queue and worker pool; see server_pool.h.
 * Nothing here reads container bytes: the jobs come parsed from the
 * watcher, and answer_job does the work. */
#include "bridge/server_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bridge/server_answer.h"
#include "base/util.h"

/* Request bytes parsed and waiting in the queue: a container's big
 * requests stall the watcher (back-pressure) rather than grow the
 * sidecar's memory, whatever the policy's cap. */
#define QUEUE_BYTES (512 * 1024)

static void add_worker(struct bridge_service *s);

/* With mu held: may another worker start?  opt.workers of them may run
 * calls; the ones parked on an approval come on top (up to max_pending),
 * so approvals never take the pool from allowed calls. */
static bool pool_has_room(const struct bridge_service *s) {
  return !s->closing && s->nworkers < s->max_threads &&
         s->nworkers - s->parked < s->opt.workers;
}

/* A job is queued (or a running slot came free): decide, with mu held, who
 * takes it.  Nobody while run_limit workers are already running jobs that
 * do not block: one of them takes it when it finishes, without sleeping in
 * between.  Else an idle worker (true: the caller signals `work` after
 * unlocking), else, when may_spawn, a new worker while the pool has room.
 * The watcher never spawns (its seccomp filter has no clone): when it finds
 * no idle worker, a running one takes the job next, and a worker that
 * blocks leaves an idle spare behind (worker_may_block).
 *
 * Why a limit: every job handed to a sleeping worker costs a futex wake
 * and a context switch, on a core the callers need too.  With the pool at
 * 8 workers and 8 callers, every call woke a different, cold thread and
 * the sidecar spent ~150 us of CPU per call against ~100 us with the
 * running workers capped at the number of CPUs (docs/performance.md). */
static bool offer_job(struct bridge_service *s, bool may_spawn) {
  if (s->count == 0 || (s->running >= s->opt.run_limit && !s->closing))
    return false;
  if (s->idle > 0)
    return true;
  if (may_spawn && pool_has_room(s))
    add_worker(s);
  return false;
}

static bool queue_full(const struct bridge_service *s, const struct job *j) {
  return s->count == QUEUE_CAP || (s->count > 0 && s->queued_bytes + j->bytes > QUEUE_BYTES);
}

/* Blocks while the queue is full (back-pressure on the watcher; inotify
 * may overflow meanwhile, and the rescan then catches up).  Returns false
 * when the server is stopping and the job was not queued. */
bool pool_push(struct bridge_service *s, struct job *j) {
  pthread_mutex_lock(&s->mu);
  while (queue_full(s, j) && !s->closing && !atomic_load(&s->stopping))
    pthread_cond_wait(&s->not_full, &s->mu);
  if (queue_full(s, j)) {
    pthread_mutex_unlock(&s->mu);
    return false;
  }
  s->queue[(s->head + s->count) % QUEUE_CAP] = j;
  s->count++;
  s->queued_bytes += j->bytes;
  bool wake = offer_job(s, false);
  pthread_mutex_unlock(&s->mu);
  if (wake)
    pthread_cond_signal(&s->work); /* after the unlock: the woken worker takes mu next */
  return true;
}

void pool_unblock_push(struct bridge_service *s) {
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->not_full);
  pthread_mutex_unlock(&s->mu);
}

void job_free(struct job *j) {
  if (j == NULL)
    return;
  json_free(j->request);
  free(j->reason);
  free(j);
}

static void *worker_main(void *arg);

/* Start one more worker; with mu held.  A failure only means fewer
 * workers than asked (at least one is always running). */
static void add_worker(struct bridge_service *s) {
  if (pthread_create(&s->workers[s->nworkers], &s->attr, worker_main, s) == 0)
    s->nworkers++;
}

/* Whether the job this worker thread runs has said it may block. */
static __thread bool worker_blocked;

/* The gate's block hook (gate_set_block_hook): the job on this worker is
 * about to wait (for a person, a tool that is not builtin, a synced intent
 * record).  It stops counting toward run_limit, so the next job is taken
 * by another worker (started if none is idle) instead of waiting behind
 * it: a blocked call never holds up the calls after it while the pool has
 * room. */
static void worker_may_block(void *arg) {
  struct bridge_service *s = arg;
  if (worker_blocked)
    return;
  worker_blocked = true;
  pthread_mutex_lock(&s->mu);
  s->running--;
  bool wake = offer_job(s, true);
  /* Keep a spare: jobs queued while every worker waits would otherwise
   * wait too (the watcher cannot start a worker). */
  if (s->idle == 0 && pool_has_room(s))
    add_worker(s);
  pthread_mutex_unlock(&s->mu);
  if (wake)
    pthread_cond_signal(&s->work);
}

/* The gate's park hook (gate_set_park_hook): the job on this worker
 * waits for a person (parked true) or has its decision (false).  A parked
 * worker stops counting toward opt.workers, so the pool can start another
 * in its place: parked calls are bounded by the policy's max_pending, not
 * by the pool, and allowed calls keep flowing while approvals wait. */
static void worker_parks(void *arg, bool parked) {
  struct bridge_service *s = arg;
  pthread_mutex_lock(&s->mu);
  bool wake = false;
  if (parked) {
    s->parked++;
    wake = offer_job(s, true);
    if (s->idle == 0 && pool_has_room(s))
      add_worker(s);
  } else {
    s->parked--;
  }
  pthread_mutex_unlock(&s->mu);
  if (wake)
    pthread_cond_signal(&s->work);
}

/* The pool starts with one worker and grows to opt.workers, but at most
 * opt.run_limit of them run jobs that do not block at once (offer_job says
 * why).  A worker that finishes a job takes the next queued one before it
 * sleeps, so under load the same warm threads keep the queue moving. */
static void *worker_main(void *arg) {
  struct bridge_service *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if (s->count > 0 && (s->running < s->opt.run_limit || s->closing)) {
      struct job *j = s->queue[s->head];
      s->head = (s->head + 1) % QUEUE_CAP;
      s->count--;
      s->queued_bytes -= j->bytes;
      s->running++;
      pthread_cond_signal(&s->not_full);
      /* More queued than running, and a slot left: bring in a helper. */
      bool wake = offer_job(s, true);
      pthread_mutex_unlock(&s->mu);
      if (wake)
        pthread_cond_signal(&s->work);
      worker_blocked = false;
      answer_job(s, j);
      job_free(j);
      pthread_mutex_lock(&s->mu);
      if (!worker_blocked)
        s->running--;
      continue;
    }
    if (s->closing && s->count == 0)
      break; /* the queue is drained */
    s->idle++;
    pthread_cond_wait(&s->work, &s->mu);
    s->idle--;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int pool_start(struct bridge_service *s) {
  gate_set_block_hook(s->opt.gate, worker_may_block, s);
  gate_set_park_hook(s->opt.gate, worker_parks, s);
  s->workers = xcalloc(s->max_threads, sizeof *s->workers);
  /* one worker to begin with; worker_main adds more when needed */
  pthread_mutex_lock(&s->mu);
  int r = pthread_create(&s->workers[0], &s->attr, worker_main, s);
  if (r == 0)
    s->nworkers++;
  pthread_mutex_unlock(&s->mu);
  if (r != 0) {
    gate_set_block_hook(s->opt.gate, NULL, NULL);
    gate_set_park_hook(s->opt.gate, NULL, NULL);
  }
  return r;
}

void pool_stop(struct bridge_service *s) {
  pthread_mutex_lock(&s->mu);
  s->closing = true; /* no worker is added after this */
  unsigned n = s->nworkers;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->mu);
  for (unsigned k = 0; k < n; k++)
    pthread_join(s->workers[k], NULL);
  gate_set_block_hook(s->opt.gate, NULL, NULL);
  gate_set_park_hook(s->opt.gate, NULL, NULL);
}

/* Internal to bridge/: the state the bridge server's four parts share.
 * Nothing outside server.c, server_pool.c, server_watcher.c and
 * server_answer.c includes it; the server's API is server.h.
 *
 *   server.c          start and stop: the service's lifecycle
 *   server_watcher.c  the watcher: the only code that reads container bytes
 *   server_pool.c     the job queue and the worker pool
 *   server_answer.c   what a worker does with a job: govern and respond
 *
 * Calls go one way, no part calling back into one that calls it:
 * server.c starts and stops the others; the watcher posts jobs to the
 * pool (and has server_answer.c clean up a job the stopping pool did not
 * take, and tell whether the space reserve is to be remade); the pool
 * hands each job to server_answer.c.  Each field below says which part
 * owns it and what guards it.
 */
#ifndef TOLLGATE_BRIDGE_SERVER_STATE_H
#define TOLLGATE_BRIDGE_SERVER_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "bridge/seen.h"
#include "bridge/server.h"

#define QUEUE_CAP 1024

struct job;

struct bridge_service {
  struct bridge_service_options opt; /* with the defaults filled in (server.c) */

  /* the watcher's (server_watcher.c); wake_fd is also written by stop */
  int inotify_fd, epoll_fd, wake_fd;
  int pause_epoll_fd; /* the stop fds only: waited on during a back-off */
  unsigned long long refused_window_start, refused_window_base; /* watcher */
  bool over_cap_read;   /* watcher: the first over-cap attempt's body was read */
  pthread_t watcher;
  bool watcher_joined;

  /* the pool's (server_pool.c) */
  pthread_t *workers;   /* room for max_threads */
  unsigned nworkers;    /* started so far; grows under mu, see worker_main */
  unsigned parked;      /* workers waiting for a person's approval; under mu.
                           They do not count toward opt.workers: a parked
                           call holds none of the pool (worker_parks) */
  unsigned max_threads; /* opt.workers + the policy's max_pending */
  unsigned idle;        /* workers waiting for a job; under mu */
  unsigned running;     /* workers running a job that has not said it may
                           block; under mu, at most opt.run_limit */
  pthread_attr_t attr;  /* for workers started later (and the watcher) */

  pthread_mutex_t mu;
  pthread_cond_t work;  /* a job was queued, or a running slot came free */
  pthread_cond_t not_full;
  struct job *queue[QUEUE_CAP];
  size_t head, count;
  size_t queued_bytes;  /* the bytes of the queued jobs; under mu */
  bool closing;    /* workers: drain the queue and exit */
  atomic_bool stopping; /* watcher: stop taking requests */

  /* the responses' (server_answer.c) */
  pthread_mutex_t reserve_mu;
  bool reserve_present;

  struct seen_set seen; /* the watcher's (seen.h) */
  struct {
    atomic_ullong requests, bad, replays, bad_ids, junk, answered, no_space;
    atomic_ullong withdrawn, backoffs;
  } st;
};

#endif

/* The bridge server: serves calls/req -> calls/resp for one container.
 *
 * One watcher thread is the only code that reads container bytes.  It
 * waits on inotify (IN_CREATE/IN_MOVED_TO on calls/req; a rescan covers
 * queue overflow and files that were there before the watch), reads each
 * ready request without trusting it, parses and validates it, and hands
 * the parsed tree to a pool of worker threads (one at first, more, up to
 * `workers`, whenever every started worker is busy; at most `run_limit`
 * of them run calls that do not block at the same time).  The watcher runs
 * under a seccomp filter (seccomp.c) that allows only what it uses.  The
 * workers pass every attempt through the gate and write the response.
 * Each call id is answered at most once while its response is uncollected;
 * a replayed id is rejected and counted.  What the container can make the
 * host hold is bounded whatever it writes: the remembered ids (at most the
 * call cap, and opt.seen_max), the queued request bytes, the audit records
 * of refusals (counted, governance/refusals.h), and the work itself (past
 * opt.refused_per_second refused attempts the watcher pauses for
 * opt.backoff_ms).  A call parked for approval holds no worker of the
 * pool.  No thread is created per call and the host never sleeps.
 *
 * The code, by job: server.c starts and stops the service,
 * server_watcher.c is the watcher, server_pool.c the queue and the worker
 * pool, server_answer.c the responses (server_state.h, internal, says how
 * they fit).
 */
#ifndef TOLLGATE_BRIDGE_SERVICE_H
#define TOLLGATE_BRIDGE_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "governance/gate.h"
#include "base/error.h"

struct bridge_service_options {
  int area_fd;              /* the bridge area root (for the space reserve) */
  int req_fd, resp_fd;      /* calls/req and calls/resp; borrowed */
  struct gate *gate;        /* borrowed; the caller closes it after stop */
  size_t request_max_bytes; /* 0: BRIDGE_DEFAULT_REQUEST_MAX */
  unsigned workers;         /* most worker threads; 0: 8 */
  unsigned run_limit;       /* most workers running calls that do not block
                               (builtin tools) at once; 0: online CPUs */
  unsigned gc_seconds;      /* age after which leftovers are removed; 0: 300 */
  int stop_fd;              /* readable means stop (a pidfd or a signalfd);
                               -1: none, only bridge_service_stop stops it */
  int stop_fd2;             /* a second one (the sidecar watches both) */
  bool seccomp;             /* confine the watcher thread */
  unsigned refused_per_second; /* the attempt budget: past this many refused
                                  attempts in a second the watcher pauses;
                                  0: BRIDGE_DEFAULT_REFUSED_PER_SECOND */
  unsigned backoff_ms;      /* how long it pauses; 0: BRIDGE_DEFAULT_BACKOFF_MS */
  unsigned seen_max;        /* most call ids remembered at once (for tests);
                               0: BRIDGE_SEEN_MAX */
};

#define BRIDGE_SEEN_MAX (1u << 15)

#define BRIDGE_DEFAULT_REFUSED_PER_SECOND 200
#define BRIDGE_DEFAULT_BACKOFF_MS 1000

struct bridge_service;

/* Counters, for tests and `tollgate calls`. */
struct bridge_service_stats {
  unsigned long long requests;   /* markers with a valid id handed to the gate */
  unsigned long long bad;        /* of which malformed or unreadable */
  unsigned long long replays;    /* markers for an id already answered */
  unsigned long long bad_ids;    /* markers whose name is not a valid id */
  unsigned long long junk;       /* other files removed */
  unsigned long long answered;   /* responses written */
  unsigned long long no_space;   /* responses that hit a full bridge area */
  unsigned long long withdrawn;  /* markers whose body the caller removed */
  unsigned long long backoffs;   /* pauses of the attempt budget */
  unsigned long long seen_ids;   /* call ids remembered now (bounded) */
};

/* Start the watcher and the workers.  The bridge area must already hold
 * calls/req and calls/resp.  0 or -1 with *err. */
int bridge_service_start(const struct bridge_service_options *opts,
                        struct bridge_service **out, tg_error **err);

/* Block until the watcher ends (a stop fd became readable, or
 * bridge_service_stop was called from another thread). */
void bridge_service_wait(struct bridge_service *s);

/* Stop: no new requests are taken, the gate is told the container stopped,
 * queued calls are still answered (by the gate: container_stopped), the
 * threads are joined and s is freed.  The gate stays open. */
void bridge_service_stop(struct bridge_service *s);

void bridge_service_get_stats(struct bridge_service *s,
                             struct bridge_service_stats *out);

#endif

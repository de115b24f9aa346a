/* Internal to bridge/: the bridge server's job queue and worker pool (see
 * server_state.h for how the server's parts fit).
 *
 * The watcher pushes jobs; the workers take them and hand each one to
 * answer_job (server_answer.c).  The pool starts with one worker and grows
 * on demand up to opt.workers, plus one for each call parked on a person's
 * approval; at most opt.run_limit workers run jobs that do not block at
 * once.  Everything here runs under s->mu; no function reads container
 * bytes.
 */
#ifndef TOLLGATE_BRIDGE_SERVER_POOL_H
#define TOLLGATE_BRIDGE_SERVER_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "bridge/protocol.h"
#include "bridge/server_state.h"
#include "governance/gate.h"

enum job_kind { JOB_CALL, JOB_REFUSED, JOB_RESERVE, JOB_FLUSH };

struct job {
  enum job_kind kind;
  char id[BRIDGE_ID_MAX + 1];
  json_t *request;   /* JOB_CALL: parsed request or NULL */
  struct seen_id *seen; /* JOB_CALL: req/<id>.done and .json are still
                           there, for the worker to remove once answered */
  bool withdrawn;    /* JOB_CALL: the body was gone: audit, answer nothing */
  bool claimed;      /* JOB_CALL: an id not remembered (over the cap): the
                        watcher removed its marker, the worker its body */
  enum gate_refusal refusal; /* JOB_REFUSED: why */
  char *reason;      /* JOB_CALL: why request is NULL; JOB_REFUSED: what */
  size_t bytes;      /* JOB_CALL: the request body's size, for QUEUE_BYTES */
};

/* Free j, its request and its reason.  NULL is fine. */
void job_free(struct job *j);

/* Queue j (the watcher's only way to hand over work).  Blocks while the
 * queue is full: back-pressure on the watcher.  false when the server is
 * stopping and j was not queued: j is still the caller's. */
bool pool_push(struct bridge_service *s, struct job *j);

/* Wake a watcher blocked in pool_push, so that it sees `stopping`. */
void pool_unblock_push(struct bridge_service *s);

/* Install the gate's block and park hooks and start the first worker.
 * 0, or pthread_create's error (the hooks are removed again). */
int pool_start(struct bridge_service *s);

/* Close the pool: the workers drain the queue and exit, and are joined;
 * then the gate's hooks are removed.  No worker is added after this. */
void pool_stop(struct bridge_service *s);

#endif

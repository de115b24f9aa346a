/* A backend call started ahead of its moment and held before it does
 * anything: governed `tollgate run`'s `runc run --detach`.
 *
 * runc's start-up (the Go runtime, its command line) takes ~3 ms before
 * it reads a byte of the container's config, and tollgate still has ~3 ms
 * of its own to do at the moment it knows the call it will make (mount
 * pins, bridge area, the configs, the gate, the guard).  So the call is
 * spawned then, with its --log naming a FIFO in the state directory:
 * runc opens its log first of all (runc main.go: app.Before, configLogrus,
 * before the verb runs), and a FIFO's open for writing blocks until a
 * reader opens it.  runc's start-up runs on the other core while tollgate
 * works; backend_hold_release() opens the FIFO once the config is final
 * and the run guard holds the process, and runc goes on to read it.  Until
 * then runc has read nothing of the container and started nothing.
 *
 * runc is still what runs the verb, with the same arguments (only --log
 * differs): what runc writes into the FIFO is copied into the container's
 * backend.log, so errors read as for any call.  A held call dies with
 * tollgate (PR_SET_PDEATHSIG) and is killed when create is undone.  With
 * --debug (a log the FIFO's buffer would have to hold) or when the FIFO
 * cannot be made, the call is started at release instead, as before. */
#ifndef TOLLGATE_BACKEND_HOLD_H
#define TOLLGATE_BACKEND_HOLD_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "shim/context.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/proc.h"

struct backend_hold {
  struct proc proc;      /* the call, once spawned (pid -1 before) */
  struct proc_opts opts; /* die_with_parent, stdio inherited */
  char **argv;           /* the verb's own arguments (NULL-terminated) */
  char *verb;
  char *fifo;            /* the FIFO its --log names, or NULL: not held */
  int read_fd;           /* the FIFO's read end once released, else -1 */
  off_t log_from;        /* backend.log's size at release */
};

/* The call: verb and its own arguments (copied); nothing is started. */
void backend_hold_prepare(struct backend_hold *h, const char *verb, char *const *args);

/* Spawn the prepared call of c's backend, held at the open of its log.
 * 0, or -1 with *err when the backend could not be started at all; a
 * hold that cannot be made (--debug, no FIFO) leaves the call to
 * backend_hold_start(), not an error. */
int backend_hold_spawn(const struct cli *cli, const struct container *c, struct backend_hold *h,
                       tg_error **err);

/* Start the call now if it was not held.  0 or -1 with *err. */
int backend_hold_start(const struct cli *cli, const struct container *c, struct backend_hold *h,
                       tg_error **err);

/* Let a held call go on: open the FIFO's read end.  0 or -1 with *err
 * (the call is then still held: cancel it). */
int backend_hold_release(const struct container *c, struct backend_hold *h, tg_error **err);

/* The FIFO's read end to poll while waiting (POLLIN), or -1; drain it
 * when readable: runc blocks once it is full. */
int backend_hold_fd(const struct backend_hold *h);
void backend_hold_drain(const struct container *c, struct backend_hold *h);

/* Reap the call, copy the rest of its log, and make the log what
 * container_backend_error() quotes.  Its exit status (>= 0), or -1 with
 * *err. */
int backend_hold_finish(const struct container *c, struct backend_hold *h,
                        struct proc_result *res, tg_error **err);

/* Kill and reap a call that will not be made; free h either way. */
void backend_hold_cancel(struct backend_hold *h);
void backend_hold_free(struct backend_hold *h);

#endif

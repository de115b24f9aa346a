/* A guard that stops a `tollgate run` container when tollgate dies.
 *
 * `tollgate run` is the container's governing process: it serves the
 * bridge in-process and holds the gate.  Killed (-9), it takes the gate
 * with it, and a container that ran on would be ungoverned (its callers
 * waiting out their timeouts, issue 38).  runsc's `runsc run` dies with
 * tollgate (PR_SET_PDEATHSIG) and its sandbox with it; runc's init is
 * tollgate's re-parented child, which no parent-death signal reaches.
 * The guard is a forked child that holds the read end of a pipe only
 * tollgate writes: EOF without the "done" byte means tollgate is gone,
 * and the guard SIGKILLs the container's init through a pidfd (its pid
 * namespace goes with it) and then asks the backend to kill whatever is
 * left (`kill --all ID KILL`).  `tollgate delete` removes the rest. */
#ifndef TOLLGATE_RUN_GUARD_H
#define TOLLGATE_RUN_GUARD_H

#include <sys/types.h>

#include "base/error.h"
#include "shim/context.h"
#include "shim/lifecycle/container.h"

struct run_guard {
  pid_t pid;    /* the guard, or 0 */
  int done_fd;  /* the pipe's write end (close-on-exec), or -1 */
};

/* Start the guard for container c whose init is init_pid (0: none yet,
 * the backend kill alone).  The guard keeps no other fd of tollgate's
 * (its stdio is /dev/null) and ignores the terminal's signals.  0 or -1
 * with *err. */
int run_guard_start(const struct cli *cli, const struct container *c, pid_t init_pid,
                    struct run_guard *g, tg_error **err);

/* The container is over (or tollgate stops it itself): tell the guard to
 * exit without killing anything, and reap it.  Safe on a guard that never
 * started. */
void run_guard_release(struct run_guard *g);

#endif

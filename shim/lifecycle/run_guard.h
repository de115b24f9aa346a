/* A guard that stops a `tollgate run` container when tollgate dies.
 *
 * `tollgate run` is the container's governing process: it serves the
 * bridge in-process and holds the gate.  Killed (-9), it takes the gate
 * with it, and a container that ran on would be ungoverned (its callers
 * waiting out their timeouts, issue 38).  runsc's `runsc run` dies with
 * tollgate (PR_SET_PDEATHSIG) and its sandbox with it; runc's init is
 * tollgate's re-parented child, which no parent-death signal reaches.
 * The guard is a forked child that holds one end of a socket only
 * tollgate writes: EOF without the "done" byte means tollgate is gone,
 * and the guard SIGKILLs the container's init through a pidfd (its pid
 * namespace goes with it) and then asks the backend to kill whatever is
 * left (`kill --all ID KILL`).  `tollgate delete` removes the rest.
 *
 * Under the one-call `runc run` (create_direct.c) the guard starts before
 * `runc run` does, and learns its pidfd right after the spawn and the
 * init's once the pid file names it (run_follow.h): on tollgate's death
 * it kills `runc run` first and waits (bounded) for it to be gone, so
 * that a container half-way through its start never reaches the user's
 * process, then the init, then the backend's kill as above. */
#ifndef TOLLGATE_RUN_GUARD_H
#define TOLLGATE_RUN_GUARD_H

#include <sys/types.h>

#include "base/error.h"
#include "shim/context.h"
#include "shim/lifecycle/container.h"

struct run_guard {
  pid_t pid;    /* the guard, or 0 */
  int done_fd;  /* tollgate's end of the socket (close-on-exec), or -1 */
};

/* Start the guard for container c whose init is init_pid (0: none yet,
 * the backend kill alone).  The guard keeps no other fd of tollgate's
 * (its stdio is /dev/null) and ignores the terminal's signals.  0 or -1
 * with *err. */
int run_guard_start(const struct cli *cli, const struct container *c, pid_t init_pid,
                    struct run_guard *g, tg_error **err);

/* Hand the guard a pidfd (it gets its own copy; the caller keeps
 * pidfd): of the `runc run` that starts the container (killed first, and
 * waited for), or of the container's init once it is known and verified.
 * 0, or -1 with errno (the guard is gone). */
int run_guard_watch_runner(struct run_guard *g, int pidfd);
int run_guard_watch_init(struct run_guard *g, int pidfd);

/* The container is over (or tollgate stops it itself): tell the guard to
 * exit without killing anything, and reap it.  Safe on a guard that never
 * started. */
void run_guard_release(struct run_guard *g);

#endif

/* tollgate run: create + start + wait in the foreground, returning the
 * container's status; the bridge is served from this process instead of
 * a sidecar.  INT, TERM, HUP, QUIT, USR1 and USR2 sent to tollgate are
 * passed on to the container.
 *
 * runc: tollgate becomes a child subreaper before runc's create, so the
 * container's init is re-parented to it; start, then waitpid() gives the
 * real exit status, and signals go through a pidfd.  When nothing needs
 * runc's create/start split (shim/lifecycle/create_direct.c), one `runc
 * run --detach` does both: its init is re-parented to tollgate as
 * create's is, and the rest is the same.
 *
 * runsc: the exit status of a sandbox whose init exits quickly is only
 * known to the runsc process that is the sandbox's parent (`runsc wait`
 * after a detached create answers "exit status is unavailable"), so
 * tollgate prepares everything as create does, then runs `runsc run` in
 * the foreground, passing signals on with `runsc kill` (runsc run does
 * not forward them).  tollgate must not be a subreaper here: runsc waits
 * for its sandbox process to disappear, and an unreaped zombie never
 * does. */
#ifndef TOLLGATE_RUN_H
#define TOLLGATE_RUN_H

#include <stdbool.h>

#include "base/error.h"
#include "shim/context.h"
#include "shim/lifecycle/container.h"

/* The container's exit status (128+N for signal N), or -1 with *err set
 * when tollgate itself failed.  Deletes the container afterwards unless
 * keep (--keep); a failed run puts the bundle back as a failed create
 * does. */
int container_run(struct cli *cli, struct create_request *create, bool keep,
                  tg_error **err);

/* --detach: create (with its sidecar) and start; a start that fails
 * deletes what create made.  0, or -1 with *err set. */
int container_run_detached(struct cli *cli, struct create_request *create,
                           tg_error **err);

#endif

/* The sidecar's supervisor (in the manner of conmon's monitor): a small
 * single-threaded process that outlives the bridge sidecar it starts.
 *
 * The double-forked process of bridge_spawn_sidecar() becomes the
 * supervisor; it forks the worker (the sidecar proper: gate, watcher,
 * workers) and waits on a pidfd.  When the worker dies while the container
 * still runs, the supervisor at once answers every call left in calls/req
 * with outcome_unknown (bridge_answer_orphans: names only, no container
 * byte is read), then, per the host config's sidecar_on_death, starts a
 * new worker whose gate continues the audit log with a sidecar_died record
 * and one unknown record per such call, or kills the container and records
 * that.  At most sidecar_max_restarts restarts a minute; past that it
 * stops the container.  It writes <state_dir>/sidecar.json (host only) for
 * `tollgate state`.  Killed itself, it leaves the worker serving,
 * unsupervised (bridge_sidecar_status says so); should that worker die
 * too, the clients notice its stopped heartbeat (bridge/heartbeat.h).
 *
 * This header is internal to bridge/: sidecar.c and supervisor.c.
 */
#ifndef TOLLGATE_BRIDGE_SUPERVISOR_H
#define TOLLGATE_BRIDGE_SUPERVISOR_H

#include <sys/types.h>

#include "bridge/bridge.h"

#define BRIDGE_SUPERVISOR_LOCK "supervisor.lock" /* in the state dir */
#define BRIDGE_SIDECAR_STATUS "sidecar.json"     /* in the state dir */

/* Run the supervisor: ready is the pipe to create (it gets "ready <worker
 * pid>\n" or "error: ..."), init_pid the container's init.  Never
 * returns. */
__attribute__((noreturn)) void bridge_supervise(const struct bridge_setup *setup, pid_t init_pid,
                                                int ready);

/* Fork a worker (sidecar.c): it serves until a stop fd fires.  The child
 * gets init_pidfd (the container's init, dup'ed) and reports to *ready_rd
 * ("ready <pid>\n" or "error: ...").  resume: NULL for the first worker,
 * else what its gate records first.  Returns the pid, or -1 with *err. */
pid_t bridge_worker_fork(const struct bridge_setup *setup, int init_pidfd,
                         const struct gate_resume *resume, int *ready_rd, tg_error **err);

/* Keep only what serving needs (sidecar.c): the supervisor keeps the same
 * set, because the workers it starts cannot gain more. */
int bridge_sidecar_drop_capabilities(tg_error **err);

/* Let go of the code pages create's work faulted in (sidecar.c). */
void bridge_sidecar_drop_clean_file_pages(void);

/* Take the POSIX lock <state_dir>/name for the life of the process;
 * its holder's pid is what bridge_sidecar_pid() and the supervisor's
 * lookup report.  Returns the fd, or -1 with *err. */
int bridge_take_lock(const char *state_dir, const char *name, tg_error **err);

/* Write a formatted message to fd (a report pipe); a reader that is gone
 * is ignored. */
void bridge_report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The pid holding <state_dir>/name, or 0. */
pid_t bridge_lock_holder(const char *state_dir, const char *name);

#endif

/* The detached per-container bridge sidecar (in the manner of conmon). */
#ifndef TOLLGATE_BRIDGE_SIDECAR_H
#define TOLLGATE_BRIDGE_SIDECAR_H

#include <sys/types.h>

#include "bridge/bridge.h"

#define BRIDGE_SIDECAR_LOCK "sidecar.lock" /* in the state dir */

/* A sidecar worker's exit status when it closed its gate but the audit
 * log lost records (its closing ones among them: a full audit disk).
 * 0 is a whole log; anything else is a death. */
#define BRIDGE_SIDECAR_EXIT_LOG_LOST 3

/* Fill a gate config for setup; strings point into setup or into
 * *control_socket, which the caller frees. */
void bridge_gate_config(const struct bridge_setup *setup,
                        struct gate_config *cfg, char **control_socket);

/* The pid of the sidecar serving state_dir, from the POSIX lock it holds on
 * <state_dir>/sidecar.lock (so a recycled pid is never signalled), or 0
 * when none is running. */
pid_t bridge_sidecar_pid(const char *state_dir);

/* The pid of its supervisor (bridge/supervisor.h), the same way, or 0. */
pid_t bridge_supervisor_pid(const char *state_dir);

/* What `tollgate state` shows of the sidecar: {"status": "running" |
 * "restarting" | "unsupervised" | "stopped" | "dead", "pid", "supervisor_pid",
 * "restarts", "last_death", "log_closed" (once stopped: false when the
 * audit log's closing records were lost)}, from the locks and the supervisor's
 * <state_dir>/sidecar.json.  NULL when no sidecar was ever started there.
 * Owned by the caller. */
json_t *bridge_sidecar_status(const char *state_dir);

/* Stop the sidecar of state_dir: its supervisor, then any worker left;
 * each SIGTERM, wait up to 5 s on its pidfd, then SIGKILL.  None running
 * is fine.  0 or -1 with *err. */
int bridge_sidecar_stop(const char *state_dir, tg_error **err);

#endif

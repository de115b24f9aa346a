/* The tool bridge, as the shim's lifecycle commands see it.
 *
 * create:  bridge_prepare() before the backend's create (tmpfs, directories,
 *          tools.json, clients, mounts added to the effective config), then
 *          bridge_spawn_sidecar() once the container's init pid is known.
 * run:     bridge_gate_open_begin() early and bridge_gate_open_end()
 *          before the backend is called, bridge_prepare(), then
 *          bridge_serve_in_process() around the backend's run, then
 *          bridge_stop_in_process().
 * delete:  bridge_teardown() stops the sidecar (if alive), unmounts and
 *          removes the bridge area.  Idempotent.
 */
#ifndef TOLLGATE_BRIDGE_H
#define TOLLGATE_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "governance/gate.h"
#include "base/hostconfig.h"
#include "base/error.h"
#include "base/json.h"

struct bridge_setup {
  const char *container_id;
  const char *state_dir;   /* <root>/<id>: the bridge area is <state_dir>/bridge */
  const char *policy_path; /* NULL: bridge still mounted, every call denied */
  const struct host_config *host;
};

/* Create the bridge area and add its mounts (/run/tollgate read-only,
 * /run/tollgate/calls read-write) to config.  0 or -1 with *err; on error
 * nothing is left mounted. */
int bridge_prepare(const struct bridge_setup *setup, json_t *config,
                   tg_error **err);

/* Start the detached per-container sidecar (double fork, setsid, stdio on
 * /dev/null, no inherited fds).  Returns once it reports ready; *pid gets
 * its pid.  init_pid is the container's init, watched with a pidfd. */
int bridge_spawn_sidecar(const struct bridge_setup *setup, pid_t init_pid,
                         pid_t *pid, tg_error **err);

/* `tollgate run` opens the gate (policy, audit log, control socket) on a
 * thread while create hardens the bundle: begin never fails (without a
 * thread it opens the gate itself), end joins and hands over the gate, or
 * the error that stopped it.  setup must outlive the opening. */
struct bridge_gate_opening;
struct bridge_gate_opening *bridge_gate_open_begin(const struct bridge_setup *setup);
int bridge_gate_open_end(struct bridge_gate_opening *o, struct gate **gate,
                         tg_error **err);

/* In-process bridge for `tollgate run`.  gate: one opened by
 * bridge_gate_open_end(), owned from here on, even on failure; NULL opens
 * one here. */
struct bridge_server;
int bridge_serve_in_process(const struct bridge_setup *setup, struct gate *gate,
                            struct bridge_server **out, tg_error **err);
void bridge_stop_in_process(struct bridge_server *s);
/* The same in two halves, so that the caller can tear the container down
 * meanwhile: _begin stops serving (the service, the control socket, the
 * area's descriptors: the area can be unmounted after it) and closes the
 * gate on a thread; _end waits for that and frees s. */
void bridge_stop_in_process_begin(struct bridge_server *s);
void bridge_stop_in_process_end(struct bridge_server *s);

/* Stop the sidecar, unmount and remove the bridge area.  Missing is fine. */
int bridge_teardown(const char *state_dir, tg_error **err);

#endif

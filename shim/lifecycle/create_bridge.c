/* create's bridge: run's gate, opening on its own thread while create
 * works; the bridge area and its mounts; the sidecar once the container's
 * init runs (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <stddef.h>

#include "base/util.h"

int create_begin_gate(struct create_context *cx, tg_error **err) {
  (void)err; /* it cannot fail: the gate's own error waits for create_gate_opened() */
  struct created *out = cx->out;
  /* run serves the bridge itself: its gate opens while the bundle is
   * hardened, and is ready before the backend is called.  Without a
   * policy the profile decides whether there is a bridge at all
   * (passthrough has none), so the gate waits for the hardening. */
  out->dir = xstrdup(cx->u->dir);
  out->policy_path = cx->policy ? xstrdup(cx->policy) : NULL;
  out->setup = (struct bridge_setup){.container_id = cx->id,
                                     .state_dir = out->dir,
                                     .policy_path = out->policy_path,
                                     .host = &cx->cli->config};
  if (cx->req->in_process_bridge && cx->policy != NULL)
    cx->u->gate_opening = bridge_gate_open_begin(&out->setup);
  return 0;
}

int create_prepare_bridge(struct create_context *cx, tg_error **err) {
  struct created *out = cx->out;
  if (cx->req->in_process_bridge && out->bridged && cx->u->gate_opening == NULL)
    cx->u->gate_opening = bridge_gate_open_begin(&out->setup);

  /* The bridge area and its mounts. */
  if (out->bridged && bridge_prepare(&out->setup, cx->config, err) < 0)
    return -1;
  return 0;
}

int create_gate_opened(struct undo *u, struct created *out, tg_error **err) {
  if (u->gate_opening == NULL)
    return 0;
  int r = bridge_gate_open_end(u->gate_opening, &out->gate, err);
  u->gate_opening = NULL;
  return r;
}

int create_start_sidecar(struct create_context *cx, tg_error **err) {
  struct created *out = cx->out;
  cx->sidecar = 0;
  if (!cx->req->in_process_bridge && out->bridged &&
      bridge_spawn_sidecar(&out->setup, out->init_pid, &cx->sidecar, err) < 0)
    return -1;
  return 0;
}

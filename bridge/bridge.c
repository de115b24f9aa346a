/* Temporary no-op bridge so the CLI can be built first; the tool-bridge
 * issue replaces this file. */
#include "bridge/bridge.h"

int bridge_prepare(const struct bridge_setup *setup, json_t *config,
                   tg_error **err) {
  (void)setup; (void)config; (void)err;
  return 0;
}

int bridge_spawn_sidecar(const struct bridge_setup *setup, pid_t init_pid,
                         pid_t *pid, tg_error **err) {
  (void)setup; (void)init_pid; (void)err;
  *pid = 0;
  return 0;
}

int bridge_serve_in_process(const struct bridge_setup *setup,
                            struct bridge_server **out, tg_error **err) {
  (void)setup; (void)err;
  *out = NULL;
  return 0;
}

void bridge_stop_in_process(struct bridge_server *s) { (void)s; }

int bridge_teardown(const char *state_dir, tg_error **err) {
  (void)state_dir; (void)err;
  return 0;
}

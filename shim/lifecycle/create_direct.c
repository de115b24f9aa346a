/* run under runc: whether the container can be started by one `runc run`
 * instead of create, start and delete (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <string.h>

/* Whether the effective config has a hook at any stage.  A hook (Docker's
 * prestart hook adds a veth, for one) could change the container between
 * runc's create and its start, where the split run checks the network
 * namespace; so any hook keeps the split. */
static bool has_hooks(const json_t *config) {
  const json_t *hooks = json_object_get(config, "hooks");
  if (hooks == NULL)
    return false;
  if (!json_is(hooks, JSON_OBJECT))
    return true; /* not ours to interpret: keep the checked path */
  for (size_t i = 0; i < hooks->u.object.len; i++)
    if (!json_is(hooks->u.object.values[i], JSON_ARRAY) ||
        json_array_len(hooks->u.object.values[i]) > 0)
      return true;
  return false;
}

/* Whether the config asks runc for a new network namespace of its own
 * (a "network" entry without a path): runc makes it with lo alone, and
 * with no hook nothing else runs before the container's process, so it
 * holds lo alone when that process starts, which is what the split run's
 * check between create and start proves otherwise. */
static bool fresh_network_namespace(const json_t *config) {
  const json_t *ns = json_get_path(config, "linux.namespaces");
  bool fresh = false;
  for (size_t i = 0; i < json_array_len(ns); i++) {
    const json_t *n = json_array_get(ns, i);
    const char *type = json_string_value(json_object_get(n, "type"));
    if (type == NULL || strcmp(type, "network") != 0)
      continue;
    const json_t *path = json_object_get(n, "path");
    if (path != NULL && !(json_is(path, JSON_STRING) && json_string_value(path)[0] == '\0'))
      return false;
    fresh = true;
  }
  return fresh;
}

int create_choose_direct_run(struct create_context *cx, tg_error **err) {
  (void)err;
  const struct create_request *req = cx->req;
  cx->out->run_direct = false;
  if (!req->run_direct_if_eligible || req->restore != NULL || req->prepare_only)
    return 0;
  if (cx->kind_only.kind != BACKEND_RUNC)
    return 0;
  /* A governed container may take it too: its run guard starts before
   * `runc run` and holds that process's pidfd from its spawn, then the
   * init's once the pid file names it (verified, run_follow.h), so that a
   * kill -9 of tollgate run stops the container at any moment of its
   * start (run_guard.h); the bridge is served before `runc run` starts. */
  /* A console, a caller's pid file, a pod or a joined owner each need
   * something between runc's create and start (the console's master, the
   * init's pid, the pod network's check). */
  if (req->console_socket != NULL || req->pid_file != NULL || cx->joined ||
      cx->podnet || cx->pod_pid > 0 || req->join != NULL)
    return 0;
  if (json_is_true(json_get_path(cx->config, "process.terminal")))
    return 0;
  if (has_hooks(cx->config) || !fresh_network_namespace(cx->config))
    return 0;
  cx->out->run_direct = true;
  return 0;
}

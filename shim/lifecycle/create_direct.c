/* run under runc: whether the container can be started by one `runc run`
 * instead of create, start and delete (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "shim/lifecycle/backend_bundle.h"
#include "shim/lifecycle/backend_hold.h"

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

/* Whether nothing found so far needs runc's create/start split. */
static bool direct_run_eligible(const struct create_context *cx) {
  const struct create_request *req = cx->req;
  if (!req->run_direct_if_eligible || req->restore != NULL || req->prepare_only)
    return false;
  if (cx->kind_only.kind != BACKEND_RUNC)
    return false;
  /* A governed container may take it too: its run guard starts before
   * `runc run` goes on (held until then, backend_hold.h) and holds that
   * process's pidfd from then, then the
   * init's once the pid file names it (verified, run_follow.h), so that a
   * kill -9 of tollgate run stops the container at any moment of its
   * start (run_guard.h); the bridge is served before `runc run` starts. */
  /* A console, a caller's pid file, a pod or a joined owner each need
   * something between runc's create and start (the console's master, the
   * init's pid, the pod network's check). */
  if (req->console_socket != NULL || req->pid_file != NULL || cx->joined ||
      cx->podnet || cx->pod_pid > 0 || req->join != NULL)
    return false;
  if (json_is_true(json_get_path(cx->config, "process.terminal")))
    return false;
  if (has_hooks(cx->config) || !fresh_network_namespace(cx->config))
    return false;
  return true;
}

/* A governed one-call run (the bridge served from tollgate run; an
 * ungoverned one stays a foreground `runc run`, cmd_run.c). */
static bool governed(const struct create_context *cx) {
  return !cx->passthrough || cx->policy != NULL;
}

/* The `runc run --detach` of this container, with its arguments: the
 * private bundle, the pid file the run follows, the caller's flags;
 * spawned and held when spawn (backend_hold.h). */
static void hold_direct_run(struct create_context *cx, bool spawn, tg_error **err) {
  const struct create_request *req = cx->req;
  struct backend b;
  if (backend_from_state(cx->state, &b, err) < 0)
    return;
  cleanup_free char *bundle = backend_bundle_path(cx->u->dir);
  cleanup_free char *pid_file = xasprintf("%s/backend.pid", cx->u->dir);
  struct create_flags cf = {.bundle = bundle,
                            .pid_file = pid_file,
                            .no_pivot = req->no_pivot,
                            .no_new_keyring = req->no_new_keyring,
                            .preserve_fds = req->preserve_fds};
  struct argv args = {0};
  backend_create_args(&b, &cf, &args);
  argv_add(&args, "--detach");
  struct backend_hold *h = xmalloc(sizeof *h);
  backend_hold_prepare(h, "run", args.v);
  argv_free(&args);
  cleanup_free char *backend_id = backend_container_id(&cx->kind_only, cx->cli->root, cx->id);
  struct container view = {.id = (char *)cx->id, .backend_id = backend_id, .dir = cx->u->dir, .backend = b};
  if (spawn && backend_hold_spawn(cx->cli, &view, h, err) < 0) {
    backend_hold_free(h);
    free(h);
    h = NULL;
  }
  backend_free(&b);
  cx->out->held_run = h;
}

static void drop_held_run(struct create_context *cx) {
  if (cx->out->held_run != NULL) {
    backend_hold_cancel(cx->out->held_run);
    free(cx->out->held_run);
    cx->out->held_run = NULL;
  }
}

int create_hold_direct_run(struct create_context *cx, tg_error **err) {
  (void)err;
  /* Run twice: as soon as the state directory is claimed, on what is
   * known then (the user's config; governed for sure only when the host
   * config allows no passthrough), and after hardening, when it is
   * known.  The final choice drops a hold it does not make. */
  bool hardened = cx->profile != NULL;
  bool gov = hardened ? governed(cx) : !cx->cli->config.allow_passthrough;
  if (cx->out->held_run != NULL || !gov || !direct_run_eligible(cx))
    return 0;
  /* Not being able to start runc early only loses the overlap: the run
   * starts it at its moment, and says why if it cannot. */
  tg_error *e = NULL;
  hold_direct_run(cx, true, &e);
  tg_error_free(&e);
  return 0;
}

int create_choose_direct_run(struct create_context *cx, tg_error **err) {
  (void)err;
  cx->out->run_direct = direct_run_eligible(cx);
  /* Held early on what was known then: not to be made after all. */
  if (!cx->out->run_direct || !governed(cx))
    drop_held_run(cx);
  return 0;
}

int create_settle_direct_run(struct create_context *cx, tg_error **err) {
  if (!cx->out->run_direct || !governed(cx) || cx->out->held_run != NULL)
    return 0;
  /* Not held (--debug, no FIFO, or eligible only now): the run starts it. */
  hold_direct_run(cx, false, err);
  return cx->out->held_run != NULL ? 0 : -1;
}

/* create: from a bundle to a created container, all or nothing.  The
 * sequence of the steps (create_steps.h) and the undo of whatever they
 * did when one fails. */
#include "shim/lifecycle/container.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/lifecycle/create_steps.h"
#include "shim/lifecycle/effective_mark.h"
#include "shim/lifecycle/idrange.h"
#include "shim/lifecycle/lifetime.h"
#include "shim/lifecycle/mount_pin.h"
#include "shim/lifecycle/mount_reach.h"
#include "shim/lifecycle/roots.h"
#include "shim/lifecycle/state.h"
#include "base/digest.h"
#include "base/util.h"

/* The gate's audit log hashes its first record (the "open") with
 * SHA-256, and OpenSSL 3's first fetch of a digest initialises the
 * library: its config file, the default provider, every algorithm's
 * method; callgrind put that at a third of the instructions of a whole
 * `tollgate run` (~1.5 ms), and the sidecar paid it again before it was
 * ready.  A thread pays it while create parses and hardens the bundle
 * (digest_warm_up: base/digest fetches SHA-256 once per process); the
 * audit log's digests (run's gate opening, on its own thread, or the
 * sidecar, which inherits the fetched algorithm through fork) then reuse
 * it, and its HMAC finds the library initialised.  Nothing is skipped:
 * the same initialisation, earlier and on the other core.  The thread is
 * joined before create starts the backend or the sidecar, so no forked
 * child can inherit a lock it holds.  (struct warm_up: create_steps.h.) */
static void *warm_up_sha256(void *arg) {
  (void)arg;
  digest_warm_up();
  return NULL;
}

static void warm_up_start(struct warm_up *w) {
  /* Signals stay the main thread's (the backend calls forward them). */
  w->running = thread_start_masked(&w->thread, warm_up_sha256, NULL);
}

void create_warm_up_wait(struct warm_up *w) {
  if (w->running)
    pthread_join(w->thread, NULL);
  w->running = false;
}

static void undo_all(struct cli *cli, struct undo *u, const char *id) {
  if (u->backend_called) {
    struct container c = {.id = (char *)id, .dir = u->dir};
    tg_error *e = NULL;
    json_t *s = state_read_json(u->dir, "state.json", &e);
    tg_error_free(&e);
    c.backend_id = (char *)state_backend_id(s, id);
    if (s && c.backend_id && backend_from_state(s, &c.backend, &e) == 0) {
      char *args[] = {"--force", NULL};
      struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
      struct proc_result res;
      if (container_call(cli, &c, "delete", args, NULL, &quiet, &res, &e) >= 0)
        proc_result_free(&res);
      backend_free(&c.backend);
    }
    tg_error_free(&e);
    json_free(s);
  }
  if (u->dir) {
    tg_error *e = NULL;
    mount_reach_release(u->dir, &e);
    tg_error_free(&e);
    bridge_teardown(u->dir, &e);
    tg_error_free(&e);
    mount_pin_release(u->dir, &e);
    tg_error_free(&e);
    state_remove_dir(u->dir, &e);
    tg_error_free(&e);
    idrange_release_owner(&cli->config, u->dir);
  }
  if (u->wrote_config) {
    tg_error *e = NULL;
    write_file_atomic(u->bundle_fd, "config.json", u->config_before,
                      u->config_before_len, u->config_mode, true, &e);
    tg_error_free(&e);
  }
  if (u->wrote_orig)
    unlinkat(u->bundle_fd, "config.json.orig", 0);
  if (u->wrote_mark)
    unlinkat(u->bundle_fd, EFFECTIVE_MARK, 0);
}

static int claim_state_dir(struct create_context *cx, tg_error **err) {
  if (state_create_dir(cx->cli->root, cx->id, &cx->u->dir, err) < 0)
    return -1;
  /* Held until create (or its undo) is over: a delete of this id waits. */
  cx->u->lock_fd = state_lock(cx->u->dir);
  return 0;
}

/* Its owner and deadline (lifetime.h), and its root in the registry
 * (roots.h), under the lock: a reaper never sees the directory without
 * what decides its fate, other than as a create under way (locked). */
static int record_lifetime(struct create_context *cx, tg_error **err) {
  const struct create_request *req = cx->req;
  struct lifetime lt = {0};
  if (req->owner_pid != NULL && lifetime_parse_owner(req->owner_pid, &lt, err) < 0)
    return -1;
  if (req->owner_pid == NULL && req->owner_self)
    lifetime_owner_self(&lt);
  if (req->deadline != NULL && lifetime_parse_deadline(req->deadline, time(NULL), &lt.deadline, err) < 0)
    return -1;
  roots_register(cx->cli->root);
  if (lifetime_is_set(&lt) && lifetime_write(cx->u->dir, &lt, err) < 0)
    return -1;
  return 0;
}

/* restore: the caller's check of the restored init, once it runs (a
 * refusal is undone like any failure). */
static int check_restored(struct create_context *cx, tg_error **err) {
  const struct create_request *req = cx->req;
  if (req->restore_check &&
      req->restore_check(req->restore_arg, cx->config, cx->state, cx->out->init_pid, err) < 0)
    return -1;
  return 0;
}

/* The steps in their order (create_steps.h): up to the backend's create,
 * where prepare_only stops, */
static create_step *const up_to_the_backend[] = {
    create_choose_backend,     /* the id, the backend (no fall back) */
    create_read_bundle,        /* config.json, or the original behind the mark */
    create_check_rootfs,
    claim_state_dir,           /* <root>/<id>, locked */
    record_lifetime,           /* its owner and deadline; the root registered */
    create_decide_join,        /* whose namespaces, by the join rule */
    create_resolve_policy,
    create_check_ceiling,      /* within the host config's ceilings */
    create_begin_gate,         /* run: the gate opens on its own thread */
    create_harden_options,
    create_read_pod_network,   /* the pod network's path, before hardening */
    create_claim_id_range,
    create_harden,             /* oci_harden() */
    create_settle_id_range,
    create_check_kept_network,
    create_join_pod,           /* the pod's policy, its sandbox */
    create_pod_network,        /* its namespace, egress refused (opt-in) */
    create_pin_mounts,
    create_prepare_bridge,     /* the bridge area and its mounts */
    create_make_mount_points,
    create_defer_rlimits,      /* runc: address-space rlimits after its init */
    create_write_configs,      /* the effective config, the original kept */
    create_choose_direct_run,  /* run under runc: one `runc run`? */
    create_record_state,       /* state.json: creating */
    create_load_container,     /* run's gate joined */
};

/* then the backend's create and what needs the container's init. */
static create_step *const from_the_backend[] = {
    create_call_backend,       /* and a joined container's waiter */
    create_check_network,      /* runc: loopback only */
    check_restored,
    create_start_sidecar,
    create_mark_created,       /* state.json: created; the caller's pid file */
};

static int run_steps(struct create_context *cx, create_step *const *steps, size_t n, tg_error **err) {
  for (size_t i = 0; i < n; i++)
    if (steps[i](cx, err) < 0)
      return -1;
  return 0;
}

/* The steps; the caller undoes whatever they did when one fails. */
static int create_steps(struct create_context *cx, tg_error **err) {
  if (run_steps(cx, up_to_the_backend, sizeof up_to_the_backend / sizeof up_to_the_backend[0], err) < 0)
    return -1;
  if (cx->req->prepare_only || cx->out->run_direct)
    return 0;
  return run_steps(cx, from_the_backend, sizeof from_the_backend / sizeof from_the_backend[0], err);
}

static int do_create(struct cli *cli, const struct create_request *req,
                     struct created *out, struct undo *u, struct warm_up *warm,
                     tg_error **err) {
  struct create_context cx = {.cli = cli, .req = req, .id = req->id, .out = out, .u = u, .warm = warm};
  int r = create_steps(&cx, err);
  /* What the steps share is theirs alone: gone before any undo. */
  json_free(cx.state);
  json_free(cx.config);
  free(cx.bundle);
  free(cx.orig_buf);
  join_free(&cx.jn);
  free(cx.policy);
  free(cx.profiles);
  free(cx.seccomp);
  free(cx.profile);
  free(cx.podnet_asked);
  return r;
}

int container_create(struct cli *cli, const struct create_request *req,
                     struct created *out, tg_error **err) {
  memset(out, 0, sizeof *out);
  struct undo u = {.bundle_fd = -1, .lock_fd = -1};
  struct warm_up warm;
  warm_up_start(&warm);
  int r = do_create(cli, req, out, &u, &warm, err);
  if (create_gate_opened(&u, out, r < 0 ? NULL : err) < 0)
    r = -1;
  create_warm_up_wait(&warm);
  if (r < 0) {
    if (out->gate != NULL) { /* before its control socket's directory goes */
      gate_close(out->gate);
      out->gate = NULL;
    }
    undo_all(cli, &u, req->id);
    created_free(out);
  }
  if (u.lock_fd >= 0)
    close(u.lock_fd);
  if (u.bundle_fd >= 0)
    close(u.bundle_fd);
  free(u.config_before);
  free(u.dir);
  return r;
}

void created_free(struct created *c) {
  if (c->gate != NULL)
    gate_close(c->gate);
  free(c->dir);
  free(c->policy_path);
  container_free(&c->container);
  memset(c, 0, sizeof *c);
}

/* create's backend: the backend chosen and recorded, state.json written,
 * the backend's create run (with a waiter for a container inside its
 * pod's sandbox), runc's network namespace checked, and the container
 * recorded as created (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "oci/netcheck.h"
#include "shim/lifecycle/backend_bundle.h"
#include "shim/lifecycle/lifetime.h"
#include "shim/lifecycle/runc_floor.h"
#include "shim/lifecycle/state.h"
#include "shim/lifecycle/cgroup_place.h"
#include "shim/lifecycle/waiter.h"

int create_choose_backend(struct create_context *cx, tg_error **err) {
  struct cli *cli = cx->cli;
  if (state_check_id(cx->id, err) < 0)
    return -1;
  struct backend b;
  if (backend_choose(cli, &b, err) < 0)
    return -1;
  if (runc_floor_check(cli, &b, err) < 0) {
    backend_free(&b);
    return -1;
  }
  cx->state = json_new_object();
  backend_to_state(&b, cx->state);
  cx->kind_only = (struct backend){.kind = b.kind};
  backend_free(&b);
  return 0;
}

static char *owner_name(void) {
  /* runc reports an owner only for rootless containers; root is "". */
  if (geteuid() == 0)
    return xstrdup("");
  struct passwd *pw = getpwuid(geteuid());
  return pw ? xstrdup(pw->pw_name) : xasprintf("%u", (unsigned)geteuid());
}

int create_record_state(struct create_context *cx, tg_error **err) {
  const struct create_request *req = cx->req;
  struct created *out = cx->out;
  json_t *state = cx->state;
  const char *id = cx->id;
  char now[40];
  rfc3339_now(now, sizeof now);
  cleanup_free char *owner = owner_name();
  cleanup_free char *rootfs = create_rootfs_path(cx->bundle, cx->config);
  /* The backend id is a SHA-256: computed once the warm-up has paid
   * OpenSSL's initialisation on the other core (container_create.c,
   * warm_up). */
  create_warm_up_wait(cx->warm);
  {
    char *bid = backend_container_id(&cx->kind_only, cx->cli->root, id);
    json_object_set(state, "backend_id", json_new_string(bid));
    free(bid);
  }
  json_object_set(state, "id", json_new_string(id));
  /* The pid namespace its processes are numbered in: a delete or a
   * reaper in another one must leave it alone (lifetime_pidns_elsewhere). */
  json_object_set(state, "pid_ns", json_new_integer((long long)lifetime_self_pidns()));
  /* With prepare_only (or run_direct) the caller's `runsc run` (`runc
   * run`) creates it next (and
   * deletes it itself when the init exits): it is never mid-create. */
  json_object_set(state, "status",
                  json_new_string(req->prepare_only || cx->out->run_direct ? "created" : "creating"));
  json_object_set(state, "bundle", json_new_string(cx->bundle));
  json_object_set(state, "rootfs", json_new_string(rootfs));
  json_object_set(state, "profile", json_new_string(cx->profile));
  json_object_set(state, "passthrough", json_new_bool(cx->passthrough));
  json_object_set(state, "bridge", json_new_bool(out->bridged));
  json_object_set(state, "policy", cx->policy ? json_new_string(cx->policy) : json_new_null());
  json_object_set(state, "created", json_new_string(now));
  json_object_set(state, "owner", json_new_string(owner));
  json_object_set(state, "init_pid", json_new_integer(0));
  json_object_set(state, "sidecar_pid", json_new_integer(0));
  if (state_write_json(cx->u->dir, "state.json", state, err) < 0)
    return -1;
  return 0;
}

int create_load_container(struct create_context *cx, tg_error **err) {
  struct created *out = cx->out;
  /* The backend's create.  stdio is inherited: it is the container's. */
  struct container *c = &out->container;
  c->id = xstrdup(cx->id);
  c->backend_id = xstrdup(state_backend_id(cx->state, cx->id));
  c->dir = xstrdup(cx->u->dir);
  c->state = json_copy(cx->state);
  if (backend_from_state(cx->state, &c->backend, err) < 0)
    return -1;
  if (create_gate_opened(cx->u, out, err) < 0)
    return -1;
  return 0;
}

/* The backend calls a waiter makes for the container create made
 * (shim/lifecycle/waiter.h), in the forked waiter. */
struct waiter_arg {
  const struct cli *cli;
  const struct container *c;
};

static int waiter_call_start(void *arg, tg_error **err) {
  const struct waiter_arg *w = arg;
  /* The container's stdio is ours: runsc hands the caller's to it. */
  struct proc_opts inherit = {0};
  struct proc_result res = {0};
  int st = container_call(w->cli, w->c, "start", NULL, NULL, &inherit, &res, err);
  if (st > 0)
    container_backend_error(w->c, "start", &res, err);
  proc_result_free(&res);
  return st == 0 ? 0 : -1;
}

static void waiter_call_kill(void *arg, int signo) {
  const struct waiter_arg *w = arg;
  char num[16];
  snprintf(num, sizeof num, "%d", signo);
  char *after[] = {num, NULL};
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  tg_error *e = NULL;
  /* Not started, or gone: nothing to signal. */
  container_call(w->cli, w->c, "kill", NULL, after, &quiet, &res, &e);
  tg_error_free(&e);
  proc_result_free(&res);
}

static const struct proc_opts waiter_quiet = {.capture_stdout = true, .capture_stderr = true};

static int waiter_call_wait(void *arg, struct proc *child, tg_error **err) {
  const struct waiter_arg *w = arg;
  return container_spawn(w->cli, w->c, "wait", NULL, NULL, &waiter_quiet, child, err);
}

static int waiter_call_events(void *arg, struct proc *child, tg_error **err) {
  const struct waiter_arg *w = arg;
  char interval[32];
  snprintf(interval, sizeof interval, "--interval=%d", WAITER_EVENTS_S);
  char *args[] = {interval, NULL};
  /* A killed waiter's watch ends with it, not with the sandbox. */
  static const struct proc_opts watch = {.capture_stdout = true, .capture_stderr = true, .die_with_parent = true};
  return container_spawn(w->cli, w->c, "events", args, NULL, &watch, child, err);
}

static int waiter_call_finish(void *arg, struct proc *child, struct proc_result *res, tg_error **err) {
  const struct waiter_arg *w = arg;
  return container_finish(w->c, child, &waiter_quiet, res, err);
}

static bool mounts_cgroupfs(const json_t *config) {
  const json_t *mounts = json_object_get(config, "mounts");
  for (size_t i = 0; i < json_array_len(mounts); i++) {
    const char *dest = json_string_value(json_object_get(json_array_get(mounts, i), "destination"));
    if (dest != NULL && strcmp(dest, "/sys/fs/cgroup") == 0)
      return true;
  }
  return false;
}

/* runsc reports the sandbox's pid for a container inside it: the waiter
 * stands for this one (shim/lifecycle/waiter.h). */
static int spawn_waiter(struct create_context *cx, tg_error **err) {
  pid_t sandbox = (pid_t)cx->pid; /* what runsc reported: the sandbox's */
  struct waiter_arg arg = {.cli = cx->cli, .c = &cx->out->container};
  struct waiter_calls calls = {.arg = &arg,
                               .start = waiter_call_start,
                               .kill = waiter_call_kill,
                               .wait = waiter_call_wait,
                               .finish = waiter_call_finish,
                               .events = waiter_call_events};
  /* gVisor accounts a container's memory apart only when the container
   * mounts /sys/fs/cgroup; otherwise `runsc events` splits the sandbox's
   * total evenly among its containers, and a small idle member would be
   * killed for a big neighbour: no watch then (docs/kubernetes.md). */
  if (mounts_cgroupfs(cx->config))
    json_integer_value(json_get_path(cx->config, "linux.resources.memory.limit"), &calls.memory_limit);
  pid_t w = 0;
  if (waiter_spawn(arg.c->id, arg.c->dir, &calls, &w, err) < 0)
    return -1;
  /* containerd reads the stats, and watches the OOM events, of the cgroup
   * of the pid create reports: the waiter goes where the container's
   * memory is, its sandbox's cgroup (the pod's), not its caller's
   * (shim/lifecycle/cgroup_place.h).  A refusal costs the stats only. */
  tg_error *e = NULL;
  if (sandbox > 0 && cgroup_place_like(w, sandbox, &e) < 0 && cx->cli->log_path != NULL) {
    cleanup_free char *msg = xasprintf("container %s: its waiter stays out of its sandbox's cgroup, so its stats are not the "
                                       "container's: %s", cx->id, e->msg);
    log_line(cx->cli->log_path, cx->cli->log_json, "warning", msg);
  }
  tg_error_free(&e);
  waiter_record(cx->state, w);
  cx->out->init_pid = w;
  cx->pid = w;
  return 0;
}

int create_call_backend(struct create_context *cx, tg_error **err) {
  const struct create_request *req = cx->req;
  struct created *out = cx->out;
  struct undo *u = cx->u;
  struct container *c = &out->container;
  cleanup_free char *backend_pid = xasprintf("%s/backend.pid", u->dir);
  /* The private bundle: the config decided here, which no other create
   * nor the bundle's author can rewrite before the backend reads it. */
  cleanup_free char *bundle = backend_bundle_path(u->dir);
  struct create_flags cf = {.bundle = bundle,
                            .pid_file = backend_pid,
                            .console_socket = req->console_socket,
                            .no_pivot = req->no_pivot,
                            .no_new_keyring = req->no_new_keyring,
                            .preserve_fds = req->preserve_fds};
  struct argv args = {0};
  backend_create_args(&c->backend, &cf, &args);
  /* restore: the same hardened bundle, state directory and bridge as
   * create; only the backend's verb differs (runc's and runsc's restore
   * both create the container from the bundle and start it from the
   * image).  Detached: tollgate returns once the process runs. */
  const char *verb = req->restore ? "restore" : "create";
  if (req->restore) {
    argv_add(&args, "--detach");
    for (size_t i = 0; req->restore->v && req->restore->v[i]; i++)
      argv_add(&args, req->restore->v[i]);
  }
  struct proc_opts inherit = {0};
  struct proc_result res;
  create_warm_up_wait(cx->warm); /* before the first fork */
  if (req->restore_check && req->restore_check(req->restore_arg, cx->config, cx->state, 0, err) < 0) {
    argv_free(&args);
    return -1;
  }
  u->backend_called = true;
  int rc = container_call(cx->cli, c, verb, args.v, NULL, &inherit, &res, err);
  argv_free(&args);
  if (rc < 0)
    return -1;
  if (rc != 0) {
    container_backend_error(c, verb, &res, err);
    proc_result_free(&res);
    return -1;
  }
  proc_result_free(&res);
  cx->pid = 0;
  if (state_read_pid_file(backend_pid, &cx->pid, err) < 0)
    return tg_error_wrap(err, "%s %s", c->backend.name, verb);
  out->init_pid = (pid_t)cx->pid;
  if (cx->joined && spawn_waiter(cx, err) < 0)
    return -1;
  return 0;
}

int create_check_network(struct create_context *cx, tg_error **err) {
  struct cli *cli = cx->cli;
  struct created *out = cx->out;
  /* runc: the new network namespace must hold nothing but lo before the
   * process starts (runsc runs with --network=none and has no netns). */
  /* The pod network: its namespace holds the pod's interface, and must
   * refuse egress as recorded. */
  if (cx->podnet)
    return create_check_pod_network(cx, err);
  if (out->container.backend.kind == BACKEND_RUNC && !cx->passthrough) {
    /* A pod's namespace is shared: checked, never changed.  The
     * container's own fresh namespace may have gained a client's veth
     * (Docker's default network, set up by its prestart hook): removed,
     * so the container runs loopback-only as the profile says, and said
     * once in the runtime log. */
    if (cx->pod_pid > 0) {
      if (oci_check_netns_loopback_only(out->init_pid, err) < 0)
        return tg_error_wrap(err, "the pod's network namespace");
    } else {
      cleanup_free char *removed = NULL;
      if (oci_netns_strip_to_loopback(out->init_pid, &removed, err) < 0)
        return -1;
      if (removed != NULL && cli->log_path != NULL) {
        cleanup_free char *msg = xasprintf(
            "container %s: the %s profile gives no network: removed %s that the client set up in the container's network namespace (the container has lo only; run it with --network none to say so)",
            cx->id, cx->profile, removed);
        log_line(cli->log_path, cli->log_json, "warning", msg);
      }
    }
  }
  return 0;
}

int create_mark_created(struct create_context *cx, tg_error **err) {
  const struct create_request *req = cx->req;
  struct created *out = cx->out;
  struct container *c = &out->container;
  json_t *state = cx->state;
  json_object_set(state, "status",
                  json_new_string(req->restore ? "running" : "created"));
  json_object_set(state, "init_pid", json_new_integer(out->init_pid));
  json_object_set(state, "sidecar_pid", json_new_integer(cx->sidecar));
  if (state_write_json(cx->u->dir, "state.json", state, err) < 0)
    return -1;
  json_free(c->state);
  c->state = json_copy(state);

  /* Last, so a failed create never leaves a pid file for the caller. */
  if (req->pid_file && state_write_pid_file(req->pid_file, cx->pid, err) < 0)
    return -1;
  return 0;
}

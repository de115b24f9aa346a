/* The bridge as the lifecycle commands see it: prepare the area and the
 * mounts, serve in-process for `run`, tear down on delete.  The sidecar
 * lives in sidecar.c, the protocol server in server.c (and its parts,
 * server_state.h). */
#include "bridge/bridge.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "bridge/area.h"
#include "bridge/server.h"
#include "bridge/sidecar.h"
#include "bridge/supervisor.h"
#include "base/util.h"

int bridge_prepare(const struct bridge_setup *setup, json_t *config,
                   tg_error **err) {
  uid_t uid;
  gid_t gid;
  if (bridge_container_owner(config, &uid, &gid, err) < 0)
    return -1;
  cleanup_free char *py = bridge_client_path(setup->host, "tollgate.py", err);
  if (py == NULL)
    return -1;
  cleanup_free char *call = bridge_client_path(setup->host, "tollgate-call", err);
  if (call == NULL)
    return -1;
  const struct host_config *h = setup->host;
  struct bridge_area_params p = {
      .tmpfs_bytes = h ? h->bridge_tmpfs_bytes : 0,
      .request_max_bytes = h ? h->request_max_bytes : 0,
      .approval_timeout_ms = h ? h->approval_timeout_ms : 0,
      .uid = uid,
      .gid = gid,
      .python_client = py,
      .call_client = call,
  };
  if (bridge_area_create(setup->state_dir, &p, err) < 0)
    return -1;
  /* The client's source is its bind in the area (bridge/area.h). */
  cleanup_free char *bound = xasprintf("%s/" BRIDGE_CLIENT_MOUNT, setup->state_dir);
  if (bridge_add_mounts(config, setup->state_dir, bound, err) < 0) {
    bridge_area_destroy(setup->state_dir, NULL);
    return -1;
  }
  return 0;
}

struct bridge_server {
  struct gate *gate;
  struct bridge_service *svc;
  int area_fd, req_fd, resp_fd;
  pthread_t closer;      /* closing the gate, between _begin and _end */
  bool closer_running;
};

struct bridge_gate_opening {
  pthread_t thread;
  bool threaded;
  struct gate_config cfg;
  char *control;
  struct gate *gate;
  tg_error *err;
};

static void *open_gate(void *arg) {
  struct bridge_gate_opening *o = arg;
  gate_open(&o->cfg, &o->gate, &o->err);
  return NULL;
}

/* Opening the gate was ~0.9 ms of a `tollgate run` (policy load, the
 * audit log's create and "open" record, then synced there, OpenSSL's first
 * digest fetch, the control socket), all of it independent of hardening
 * the bundle, which takes as long on the main thread; done one after the
 * other, both sat in front of the container's start.  The gate's own threads are started from this
 * one and inherit its mask: every signal stays the main thread's. */
struct bridge_gate_opening *bridge_gate_open_begin(const struct bridge_setup *setup) {
  struct bridge_gate_opening *o = xcalloc(1, sizeof *o);
  bridge_gate_config(setup, &o->cfg, &o->control);
  o->cfg.defer_tools = true; /* end starts them, on the caller's thread */
  o->threaded = thread_start_masked(&o->thread, open_gate, o);
  if (!o->threaded)
    open_gate(o);
  return o;
}

int bridge_gate_open_end(struct bridge_gate_opening *o, struct gate **gate,
                         tg_error **err) {
  *gate = NULL;
  if (o->threaded)
    pthread_join(o->thread, NULL);
  int r = 0;
  if (o->gate != NULL && gate_start_tools(o->gate, err) < 0) {
    gate_close(o->gate);
    o->gate = NULL;
    r = -1;
  } else if (o->gate != NULL) {
    *gate = o->gate;
  } else {
    r = -1;
    if (err != NULL && *err == NULL) {
      *err = o->err;
      o->err = NULL;
    }
    if (err == NULL || *err == NULL)
      tg_error_set(err, 0, "the gate did not open");
  }
  tg_error_free(&o->err);
  free(o->control);
  free(o);
  return r;
}

int bridge_serve_in_process(const struct bridge_setup *setup, struct gate *gate,
                            struct bridge_server **out, tg_error **err) {
  struct bridge_server *s = xcalloc(1, sizeof *s);
  s->area_fd = s->req_fd = s->resp_fd = -1;
  s->gate = gate;
  cleanup_free char *control = NULL;
  struct gate_config gcfg;
  bridge_gate_config(setup, &gcfg, &control);
  if ((s->gate == NULL && gate_open(&gcfg, &s->gate, err) < 0) ||
      bridge_area_open(setup->state_dir, &s->area_fd, &s->req_fd, &s->resp_fd,
                       err) < 0 ||
      gate_write_tools_json(s->gate, s->area_fd, "tools.json", err) < 0)
    goto fail;
  struct bridge_service_options o = {
      .area_fd = s->area_fd, .req_fd = s->req_fd, .resp_fd = s->resp_fd,
      .gate = s->gate,
      .request_max_bytes = setup->host ? setup->host->request_max_bytes : 0,
      .stop_fd = -1, .stop_fd2 = -1, .seccomp = true,
      .refused_per_second = setup->host ? (unsigned)setup->host->bridge_refused_per_second : 0,
      .backoff_ms = setup->host ? (unsigned)setup->host->bridge_backoff_ms : 0,
  };
  if (bridge_service_start(&o, &s->svc, err) < 0)
    goto fail;
  *out = s;
  return 0;
fail:
  bridge_stop_in_process(s);
  return -1;
}

static void *close_gate(void *arg) {
  gate_close(arg);
  return NULL;
}

void bridge_stop_in_process_begin(struct bridge_server *s) {
  if (s == NULL)
    return;
  if (s->svc)
    bridge_service_stop(s->svc);
  s->svc = NULL;
  if (s->area_fd >= 0)
    close(s->area_fd);
  if (s->req_fd >= 0)
    close(s->req_fd);
  if (s->resp_fd >= 0)
    close(s->resp_fd);
  s->area_fd = s->req_fd = s->resp_fd = -1;
  if (s->gate == NULL)
    return;
  /* The control socket goes now (it lives in the state directory, which
   * the caller may remove next); closing the gate writes and syncs the
   * audit log's "closed" record (~0.5 ms), on a thread, while the caller
   * tears the container down.  Signals stay the main thread's. */
  gate_stop_control(s->gate);
  s->closer_running = thread_start_masked(&s->closer, close_gate, s->gate);
  if (!s->closer_running)
    gate_close(s->gate);
  s->gate = NULL;
}

void bridge_stop_in_process_end(struct bridge_server *s) {
  if (s == NULL)
    return;
  bridge_stop_in_process_begin(s); /* if it was not called: nothing to overlap */
  if (s->closer_running)
    pthread_join(s->closer, NULL);
  free(s);
}

void bridge_stop_in_process(struct bridge_server *s) {
  bridge_stop_in_process_end(s);
}

int bridge_teardown(const char *state_dir, tg_error **err) {
  if (bridge_sidecar_stop(state_dir, err) < 0)
    return -1;
  if (bridge_area_destroy(state_dir, err) < 0)
    return -1;
  static const char *const leftovers[] = {BRIDGE_SIDECAR_LOCK, BRIDGE_SUPERVISOR_LOCK,
                                          BRIDGE_SIDECAR_STATUS};
  for (size_t i = 0; i < sizeof leftovers / sizeof leftovers[0]; i++) {
    cleanup_free char *path = xasprintf("%s/%s", state_dir, leftovers[i]);
    unlink(path);
  }
  return 0;
}

/* create's steps, in the order container_create() (container_create.c)
 * runs them, and what they hand down to one another: internal to create,
 * whose one entry point for the verbs is container_create() (container.h).
 *
 *   create_backend.c  the backend chosen, state.json recorded, the
 *                     backend's create (and a joined container's waiter),
 *                     runc's network namespace, the container created
 *   create_bundle.c   the bundle: config.json read (or, behind tollgate's
 *                     mark, the user's config.json.orig), the rootfs
 *                     checked, the effective config written
 *   create_pod.c      whose namespaces it joins, its host id range, its
 *                     pod's (CRI's) policy
 *   create_harden.c   the policy (within the host config's ceilings),
 *                     then oci_harden()
 *   create_podnet.c   the pod network: its namespace, egress refused
 *   create_mounts.c   the mount pins and mount points
 *   create_bridge.c   the gate, the bridge area, the sidecar
 *
 * Each step returns 0, or -1 with *err; whatever it did is in struct undo
 * (or owned by struct create_context), and container_create() undoes it. */
#ifndef TOLLGATE_CREATE_STEPS_H
#define TOLLGATE_CREATE_STEPS_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"
#include "oci/harden.h"
#include "oci/podnet.h"
#include "shim/context.h"
#include "shim/lifecycle/backend.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/join.h"

/* Everything create did so far, for the undo. */
struct undo {
  int bundle_fd;
  char *config_before;   /* config.json's bytes before we touched it */
  size_t config_before_len;
  mode_t config_mode;
  bool wrote_config;
  bool wrote_orig;
  bool wrote_mark;       /* the mark is new: removed with the original */
  char *dir;             /* state directory, once claimed */
  bool backend_called;
  int lock_fd;           /* the state directory's lock, or -1 */
  struct bridge_gate_opening *gate_opening; /* run: the gate, opening */
};

/* The thread that pays OpenSSL's initialisation while create works
 * (container_create.c says why). */
struct warm_up {
  pthread_t thread;
  bool running;
};

/* Join the warm-up thread (if it still runs): before the first fork, and
 * before the first SHA-256 of create's own. */
void create_warm_up_wait(struct warm_up *w);

/* The range and user namespace a container shares instead of claiming a
 * range of its own: a pod member under runc joins its sandbox's. */
struct shared_range {
  pid_t owner_pid;
  unsigned long long first, size;
};

/* What the steps share, handed down from one to the next as crun's
 * libcrun_container_run_internal hands its context down.  The strings and
 * trees are owned (create_context_free() in container_create.c); what is
 * undone on a failure is in *u. */
struct create_context {
  struct cli *cli;
  const struct create_request *req;
  const char *id;               /* req->id */
  struct created *out;
  struct undo *u;
  struct warm_up *warm;
  json_t *state;                /* state.json as it is being built */
  struct backend kind_only;     /* the chosen backend's kind, for its id */
  /* the bundle */
  char *bundle;                 /* its real path */
  struct stat config_st;        /* config.json as it was read */
  bool ours;                    /* config.json is an effective config
                                   tollgate wrote: the user's is orig_buf */
  char *orig_buf;
  size_t orig_len;
  json_t *config;               /* the user's config, hardened in place */
  /* joins, policy, hardening */
  struct join jn;
  char *policy;                 /* the policy file, or NULL */
  char *profiles, *seccomp;     /* the host's data directories (ho's) */
  struct harden_options ho;
  pid_t pod_pid;                /* the pod's (or network's) owner, or 0 */
  struct shared_range share;
  char *profile;                /* the profile applied */
  bool passthrough;
  bool joined;                  /* runsc: started inside its owner's sandbox */
  /* the pod network (create_podnet.c) */
  char *podnet_asked;           /* the network namespace path the config
                                   named, when this root gives pods theirs */
  struct podnet_ports podnet_ports;
  bool podnet_pause;            /* a proven CRI pause under a listed root */
  bool podnet;                  /* runs in its pod's namespace, egress refused */
  /* the backend's create */
  long pid;                     /* what the caller's pid file gets */
  pid_t sidecar;
};

/* A step: 0, or -1 with *err. */
typedef int create_step(struct create_context *cx, tg_error **err);

/* create_bundle.c */
int create_read_bundle(struct create_context *cx, tg_error **err);
int create_check_rootfs(struct create_context *cx, tg_error **err);
int create_write_configs(struct create_context *cx, tg_error **err);
/* The rootfs as state.json records it: root.path, under the bundle when
 * relative; "" without one.  Owned. */
char *create_rootfs_path(const char *bundle, const json_t *config);

/* create_pod.c */
int create_decide_join(struct create_context *cx, tg_error **err);
int create_claim_id_range(struct create_context *cx, tg_error **err);
int create_settle_id_range(struct create_context *cx, tg_error **err);
int create_join_pod(struct create_context *cx, tg_error **err);

/* create_podnet.c */
int create_read_pod_network(struct create_context *cx, tg_error **err);
int create_pod_network(struct create_context *cx, tg_error **err);
int create_check_pod_network(struct create_context *cx, tg_error **err);

/* create_harden.c */
int create_resolve_policy(struct create_context *cx, tg_error **err);
int create_check_ceiling(struct create_context *cx, tg_error **err);
int create_harden_options(struct create_context *cx, tg_error **err);
int create_harden(struct create_context *cx, tg_error **err);
int create_check_kept_network(struct create_context *cx, tg_error **err);
/* runc: RLIMIT_AS and RLIMIT_DATA set by the static client, not by runc. */
int create_defer_rlimits(struct create_context *cx, tg_error **err);

/* create_mounts.c */
int create_pin_mounts(struct create_context *cx, tg_error **err);
int create_make_mount_points(struct create_context *cx, tg_error **err);

/* create_bridge.c */
int create_begin_gate(struct create_context *cx, tg_error **err);
int create_prepare_bridge(struct create_context *cx, tg_error **err);
/* Join the gate's opening (if one is under way): the gate goes to
 * out->gate, or its error to err. */
int create_gate_opened(struct undo *u, struct created *out, tg_error **err);
int create_start_sidecar(struct create_context *cx, tg_error **err);

/* create_direct.c: run under runc, one `runc run` when nothing needs
 * the split (out->run_direct). */
int create_choose_direct_run(struct create_context *cx, tg_error **err);

/* create_backend.c */
int create_choose_backend(struct create_context *cx, tg_error **err);
int create_record_state(struct create_context *cx, tg_error **err);
int create_load_container(struct create_context *cx, tg_error **err);
int create_call_backend(struct create_context *cx, tg_error **err);
int create_check_network(struct create_context *cx, tg_error **err);
int create_mark_created(struct create_context *cx, tg_error **err);

#endif

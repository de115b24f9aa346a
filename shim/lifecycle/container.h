/* A container as the lifecycle verbs see it: its state directory, its
 * recorded backend, and the calls that reach that backend.  create and
 * delete live here (not in the cmd_ files) because run uses both. */
#ifndef TOLLGATE_CONTAINER_H
#define TOLLGATE_CONTAINER_H

#include <stdbool.h>
#include <sys/types.h>

#include "bridge/bridge.h"
#include "shim/lifecycle/backend.h"
#include "shim/context.h"
#include "base/json.h"
#include "shim/lifecycle/proc.h"

struct container {
  char *id;
  char *backend_id; /* what the backend calls it (state_backend_id) */
  char *dir;     /* <root>/<id> */
  json_t *state; /* state.json */
  struct backend backend;
};

/* Load an existing container: "container <id> does not exist" if none.
 * A container created in another pid namespace (state.json "pid_ns") is
 * refused: its init, sandbox and sidecar are numbered there, and so are
 * the pids in the backend's own state, so a signal, an exec, a status
 * read or a join from here would reach other processes or none. */
int container_load(const struct cli *cli, const char *id, struct container *c,
                   tg_error **err);
void container_free(struct container *c);

/* container_load() under the state directory's shared lock, returned in
 * *lock (close it when the backend call is over).  kill, state and exec
 * use it so that a concurrent delete (which holds the lock exclusively)
 * either finishes first, and the call says "container <id> does not
 * exist", or waits for the call: never a backend that finds its log or
 * state removed mid-call. */
int container_load_shared(const struct cli *cli, const char *id,
                          struct container *c, int *lock, tg_error **err);

/* Call the container's backend: backend_argv(verb), then args (may be
 * NULL; NULL-terminated), then, unless id_position says otherwise, the
 * id.  The backend's JSON log goes to <dir>/backend.log.  Returns the
 * backend's exit status (>= 0) with res filled, or -1 with *err if it
 * could not be run.  Use container_backend_error() to turn a non-zero
 * status into tollgate's error. */
int container_call(const struct cli *cli, const struct container *c,
                   const char *verb, char *const *args, char *const *after_id,
                   const struct proc_opts *opts, struct proc_result *res,
                   tg_error **err);

/* "<backend> <verb>: <its message, in containerd's wording>".  -1. */
int container_backend_error(const struct container *c, const char *verb,
                            const struct proc_result *res, tg_error **err);

/* container_call that must succeed: 0, or -1 with the backend's message. */
int container_call_ok(const struct cli *cli, const struct container *c,
                      const char *verb, char *const *args,
                      const struct proc_opts *opts, struct proc_result *res,
                      tg_error **err);

/* The effective config kept in the state directory (owned tree). */
json_t *container_effective_config(const struct container *c, tg_error **err);

struct create_request {
  const char *id;
  const char *bundle;         /* NULL: the current directory */
  const char *pid_file;       /* the caller's, or NULL */
  const char *console_socket; /* passed through, or NULL */
  const char *policy_file;    /* --policy, or NULL */
  const char *join;           /* --join OWNER: the caller vouches that this
                                 container may join OWNER (shim/lifecycle/join.h) */
  bool no_pivot, no_new_keyring;
  long preserve_fds;          /* -1 when not given */
  const char *owner_pid;      /* --owner-pid PID, or NULL (lifetime.h) */
  const char *deadline;       /* --deadline SECONDS|RFC3339, or NULL */
  bool owner_self;            /* no --owner-pid: this tollgate owns it
                                 (a foreground run) */
  bool in_process_bridge;     /* run: no sidecar, the caller serves */
  bool prepare_only;          /* stop before the backend's create: the
                                 caller runs the backend itself (run
                                 under runsc uses `runsc run`) and must
                                 container_delete() afterwards */
  bool run_direct_if_eligible; /* run under runc: stop before the backend's
                                  create as prepare_only does when the
                                  container may be run by one `runc run`
                                  (create_direct.c says when) */
  const struct argv *restore; /* restore (shim/lifecycle/checkpoint.h): the
                                 backend's restore flags (--image-path
                                 ...), run detached instead of its create;
                                 everything else is create's */
  /* restore: called with the hardened config and state just before the
   * backend's restore (pid 0), and with the restored init's pid once it
   * runs; -1 refuses the restore (create's undo removes the container). */
  int (*restore_check)(void *arg, const json_t *config, const json_t *state, pid_t pid, tg_error **err);
  void *restore_arg;
};

struct created {
  pid_t init_pid;
  char *dir;
  char *policy_path;            /* NULL when there is no policy */
  bool bridged;                 /* a bridge was set up: false only under
                                   passthrough without a policy */
  struct bridge_setup setup;    /* points into this struct and cli */
  struct gate *gate;            /* in_process_bridge: opened during create,
                                   for bridge_serve_in_process() */
  struct container container;   /* loaded after a successful create */
  bool run_direct;              /* run_direct_if_eligible, and it was:
                                   prepared only, the caller runs `runc run` */
};

/* The whole of create (see docs/architecture.md): check the id, choose
 * the backend (no fall back), read and harden the bundle's config.json
 * (keeping the original as config.json.orig), prepare the bridge, record
 * state.json, run the backend's create, check runc's network namespace,
 * start the sidecar, write the caller's pid file.  On any failure every
 * step is undone: no state directory, backend container, bridge mount or
 * rewritten config.json is left behind. */
int container_create(struct cli *cli, const struct create_request *req,
                     struct created *out, tg_error **err);
void created_free(struct created *c);

/* delete [--force]: the backend's delete, then bridge_teardown() and the
 * state directory.  A container the backend no longer knows is still
 * cleaned up; an unknown id is "container <id> does not exist". */
int container_delete(struct cli *cli, const char *id, bool force,
                     tg_error **err);

/* delete --force after the backend's own `run` returned: the same, except
 * that the backend's delete is skipped when the backend keeps nothing for
 * the id any more (runsc run destroys its container when it ends). */
int container_delete_after_run(struct cli *cli, const char *id,
                               tg_error **err);



/* The container's state as runc prints it (ociVersion, id, pid, status,
 * bundle, rootfs, created, annotations, owner) with the live status and
 * pid from the backend, plus "tollgate": {backend, backend_root,
 * backend_id, profile, policy, sidecar_pid}.  A container whose backend
 * no longer knows it shows as "stopped".  Owned tree. */
json_t *container_query(const struct cli *cli, const struct container *c,
                        tg_error **err);
/* What list shows for a container whose status cannot be had (its
 * backend cannot be run or answers with an error, or its state.json is
 * unreadable): the recorded fields with status "unknown", pid 0, and
 * "tollgate": {"status_reason": reason}.  state may be NULL.  Owned. */
json_t *container_unknown_record(const char *id, const json_t *state,
                                 const char *reason);

/* A verb that is one backend call on ID with nothing printed (start,
 * pause, resume): argv is {verb, ID}. */
int container_simple_verb(struct cli *cli, const char *verb, int argc,
                          char **argv, tg_error **err);

/* start: the backend's start, or for a container inside its pod's
 * sandbox, its waiter's (shim/lifecycle/waiter.h).  0 or -1 with *err. */
int container_start(const struct cli *cli, const struct container *c, tg_error **err);

/* The backend's own error message from its log during the last
 * container_call(), or NULL (owned).  For calls whose stderr is not
 * captured (exec), this tells a failed backend from a process that merely
 * exited non-zero. */
char *container_last_error(void);

/* container_call in two halves, for a backend process that runs while
 * tollgate does something else (run: `runsc run`, `runsc wait`).
 * container_finish() reaps it and returns its exit status like
 * container_call(). */
int container_spawn(const struct cli *cli, const struct container *c,
                    const char *verb, char *const *args, char *const *after_id,
                    const struct proc_opts *opts, struct proc *p,
                    tg_error **err);
int container_finish(const struct container *c, struct proc *p,
                     const struct proc_opts *opts, struct proc_result *res,
                     tg_error **err);

#endif

/* The waiter: the process that stands for a container runsc started inside
 * its pod's sandbox (docs/kubernetes.md, "Pods").
 *
 * runsc reports the *sandbox's* pid for every container of a sandbox, so
 * the pid containerd's runc v2 shim would wait on (and treat as the
 * container's init) is the pause container's, which outlives every app
 * container.  And runsc gives a container inside a sandbox the stdio of
 * whoever calls `runsc start`, which for the shim is a pipe it reads to
 * EOF: `start` would never return.  So create forks one waiter per joined
 * container:
 *
 *   - it stays create's child, so it is re-parented to create's caller
 *     (containerd's shim is a subreaper) and its exit is the container's;
 *     its pid is what the caller's --pid-file and state's init_pid hold;
 *   - it keeps create's stdio, which is the container's, and it is the one
 *     that runs `runsc start` when `tollgate start` asks it over the FIFO
 *     waiter.start in the state directory (answer on waiter.reply);
 *   - then it runs `runsc wait` and exits with the container's status
 *     (128+N for signal N), passing INT, TERM, HUP, QUIT, USR1 and USR2 it
 *     receives on to the container;
 *   - with a memory limit, it holds the container to it: gVisor 20240729
 *     enforces no memory limit per container inside a sandbox (its
 *     memory.limit_in_bytes is a stub, pkg/sentry/fsimpl/cgroupfs/
 *     memory.go), but it accounts each container's memory when the
 *     container mounts /sys/fs/cgroup (CRI's spec does): the waiter reads
 *     that usage from `runsc events` every WAITER_EVENTS_S seconds, and a
 *     container above its limit gets SIGKILL (137) and a line on its
 *     stderr saying so; the pod's cgroup bounds the sandbox in between;
 *   - it exits by itself when the state directory is removed before the
 *     container started (a delete, or a create that failed or was killed).
 */
#ifndef TOLLGATE_WAITER_H
#define TOLLGATE_WAITER_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"
#include "shim/lifecycle/proc.h"

/* Whether state.json records a waiter ("waiter": true). */
bool waiter_recorded(const json_t *state);

/* The backend calls the waiter makes for its container, in the forked
 * waiter: given by create, which knows the container, so that the waiter
 * needs nothing of container.c (the arrow goes one way: container ->
 * waiter).  Each gets arg. */
struct waiter_calls {
  void *arg;
  /* The backend's start, with the waiter's stdio (the container's): 0, or
   * -1 with *err when there is a message to give (the backend's). */
  int (*start)(void *arg, tg_error **err);
  /* The backend's kill with signal signo, its output captured; a failure
   * is nothing to report (not started yet, or gone). */
  void (*kill)(void *arg, int signo);
  /* The backend's wait, its output captured: started (0, or -1 with
   * *err), then reaped by finish, which returns its exit status with res
   * filled (-1 with *err if it could not be had). */
  int (*wait)(void *arg, struct proc *child, tg_error **err);
  int (*finish)(void *arg, struct proc *child, struct proc_result *res, tg_error **err);
  /* The container's memory limit in bytes (0: none, events unused), and
   * the backend's `events --interval=WAITER_EVENTS_S` started with its
   * stdout captured (one JSON object a line): 0, or -1 with *err. */
  long long memory_limit;
  int (*events)(void *arg, struct proc *child, tg_error **err);
};

#define WAITER_EVENTS_S 1

/* create, after the backend's create of a joined container id with state
 * directory dir: make the FIFOs, fork the waiter, return once it listens.
 * *pid is its pid.  The waiter holds none of create's file descriptors
 * but 0, 1 and 2 (create's state lock and bundle lock among them); it
 * uses calls (and what they point to) in its own copy of create's memory.
 * 0 or -1 with *err. */
int waiter_spawn(const char *id, const char *dir, const struct waiter_calls *calls, pid_t *pid,
                 tg_error **err);

/* Record the waiter pid in state: "waiter": true, init_pid, and its
 * start time, so waiter_alive() never mistakes a recycled pid for it. */
void waiter_record(json_t *state, pid_t pid);

/* start: have the waiter of container id (state directory dir, state.json
 * state) run the backend's start and report.  0, or -1 with *err (the
 * backend's message, or that the waiter is gone). */
int waiter_start(const char *id, const char *dir, const json_t *state, tg_error **err);

/* Whether the waiter that state.json records (its init_pid) is still
 * alive. */
bool waiter_alive(const json_t *state);

#endif

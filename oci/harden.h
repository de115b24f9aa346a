/* config.json hardening: the rewrite that only ever tightens.
 *
 * oci_harden() takes the bundle's config.json as a parsed tree and edits it
 * in place into the effective config that the backend runs.  For every
 * axis (capabilities, seccomp, mounts, devices, namespaces, limits, user,
 * annotations) the output is never more permissive than the input.  Known
 * escape shapes are refused with an error that names the field and the fix.
 */
#ifndef TOLLGATE_OCI_HARDEN_H
#define TOLLGATE_OCI_HARDEN_H

#include <stdbool.h>

#include "shim/error.h"
#include "shim/json.h"

struct harden_options {
  const char *profile;      /* profile chosen by the host config ("hardened") */
  const char *profiles_dir; /* directory holding <name>.json profiles */
  const char *seccomp_dir;  /* directory holding the syscall lists */
  bool allow_passthrough;   /* host config permits the passthrough profile */
  const char *backend;      /* "runsc" or "runc" */
  int pod_sandbox_pid;      /* > 0: the container is an app container of a
                               pod whose sandbox (pause) container tollgate
                               runs as this host pid; see oci_harden() */
};

struct harden_result {
  char *profile;    /* name of the profile applied, owned */
  bool passthrough; /* that profile applies nothing: config is untouched */
  char *notice;     /* one line naming what the client asked for that the
                       profile changed (user 0, --cap-add, --pid host,
                       --network host, the client's network), or NULL;
                       owned.  For the runtime log, as a warning. */
};

/* Harden config in place.  Honours the workload annotation
 * dev.tollgate.profile only when it names a profile at least as strict as
 * opts->profile.  Adds nothing to the config's annotations (they reach
 * hooks and the container's state): the applied profile is returned in
 * res for the caller to record in the state directory.  A passthrough
 * profile leaves config exactly as it was.
 * With opts->pod_sandbox_pid under runsc, namespace paths naming that
 * process (/proc/<pid>/ns/...: containerd's way to share the pod's IPC
 * and PID namespaces) are removed before anything is checked: the pause
 * container is a gVisor sandbox of its own, its host-side namespaces are
 * the sandbox process's (the host's PID namespace), and joining them
 * would share nothing the pod means; the container gets new ones in its
 * own sandbox (docs/kubernetes.md, "Pods").  0 or -1 with *err. */
int oci_harden(json_t *config, const struct harden_options *opts,
               struct harden_result *res, tg_error **err);

/* Harden a process spec given to `exec --process FILE` (or built for the
 * runc-style `exec ID CMD...`) against the container's effective config:
 * capabilities no wider than the container's, noNewPrivileges, the same
 * non-root user, cwd checked for escape shapes.  passthrough: the
 * container runs under a passthrough profile, and only the cwd is
 * checked.  0 or -1 with *err. */
int oci_harden_process(json_t *process, const json_t *effective_config,
                       bool passthrough, tg_error **err);

void harden_result_free(struct harden_result *res);

#endif

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

#include "base/error.h"
#include "base/json.h"

struct harden_options {
  const char *profile;      /* profile chosen by the host config ("hardened") */
  const char *profiles_dir; /* directory holding <name>.json profiles */
  const char *seccomp_dir;  /* directory holding the syscall lists */
  bool allow_passthrough;   /* host config permits the passthrough profile */
  const char *backend;      /* "runsc" or "runc" */
  const char *bundle_dir;   /* absolute; relative root.path and bind sources
                               resolve here, as the backend resolves them.
                               NULL: a relative one is refused */
  const char *state_root;   /* tollgate's --root: never a bind source or
                               rootfs (nor above it); NULL = unchecked */
  const char *audit_dir;    /* the audit directory: likewise */
  /* The host id pool (docs/hardening.md "Identities").  A user namespace
   * in the input may map only to host ids in [id_pool_first, id_pool_end)
   * (an empty pool still refuses host id 0).  When id_range_size is not 0,
   * a runc container without mappings gets a user namespace mapping its
   * ids 0..id_range_size-1 to host ids id_range_first.. (the range the
   * caller claimed for it). */
  unsigned long long id_pool_first, id_pool_end;
  unsigned long long id_range_first, id_range_size;
  long long memory_ceiling; /* bytes: a memory limit above it is refused
                               (host_config_memory_ceiling()); 0: none */
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

/* The slots of a pool (slot k: host ids first + k*size, size ids) that the
 * input's user namespace mappings touch, for the caller to claim before
 * oci_harden() checks them.  *slots (owned, *n entries, no duplicates) is
 * NULL when the input maps nothing; *maps says whether it has mappings at
 * all.  Ids outside the pool are skipped here and refused by oci_harden(). */
void oci_userns_slots(const json_t *config, unsigned long long first,
                      unsigned long long size, unsigned long long count,
                      unsigned long long **slots, size_t *n, bool *maps);

/* Add to bind mount m's options the flags of the mount its source is on
 * (st_flags: statvfs's f_flag: ro, nosuid, nodev, noexec and the atime
 * ones), removing their opposites.  Needed for a container with its own
 * user namespace, where the kernel locks them; never loosens. */
void oci_mount_keep_source_flags(json_t *m, unsigned long st_flags);

/* runc: make config join the user namespace of the container whose init
 * is owner_pid (a pod's sandbox container, or the tollgate container whose
 * namespaces it joins), with that container's range as mappings: a new
 * user namespace of its own could not administer the joined ipc/pid/uts
 * namespaces.  Called by create after oci_harden() (which counts any
 * namespace path as a loosening), only for an owner tollgate verified.
 * Refused when config has mappings of its own.  0 or -1 with *err. */
int oci_userns_join_pod(json_t *config, int owner_pid, unsigned long long host_first,
                        unsigned long long size, tg_error **err);

/* Whether config joins an existing ipc/uts/pid/mount/cgroup namespace by
 * path (a pod member, an accepted join): under runc such a container
 * enters its owner's user namespace (oci_userns_join_pod) or, when the
 * owner has none of its own, keeps the host's.  A network path is no such
 * join: runc enters it before it makes the container's user namespace,
 * so a CNI pod's pause and a Podman container keep one of their own. */
bool oci_joins_a_namespace(const json_t *config);

/* The OCI type of the namespace the file at path is ("pid", "network",
 * ...), "" when it is no namespace file, NULL when it cannot be looked at.
 * Opened O_PATH only: no FIFO blocks, no device acts.  Static string. */
const char *oci_namespace_kind(const char *path);

void harden_result_free(struct harden_result *res);

struct oci_profile;
/* The resources object of `tollgate update` (OCI linux.resources), in
 * place: only memory, cpu (no realtime budget), pids and blockIO keys are
 * accepted (anything else is an error naming it); pids and the CPU quota
 * it sets are lowered to the profile's ceilings (an update may tighten,
 * or loosen up to the profile, never beyond); a memory limit stands as
 * asked (unlimited: the profile's) unless it is above memory_ceiling
 * (bytes, 0: none), which is refused; swap follows the memory limit, the
 * OOM killer stays on.  0 or -1 with *err. */
int oci_update_harden(json_t *resources, const struct oci_profile *p,
                      long long memory_ceiling, tg_error **err);

/* All of `tollgate update`'s rules for a running container (oci/update.c):
 * resources (the request, OCI linux.resources) hardened in place by
 * oci_update_harden() unless p is passthrough, then laid over
 * effective_config's linux.resources (the container's effective config,
 * edited in place into what it has once runc applies the request), and
 * proved: the hardened request no looser than the one asked for, and the
 * container's resources no looser than the ceiling create would give
 * under p (passthrough: no proof).  0 or -1 with *err; on -1 both may be
 * partly changed and are for the caller to discard. */
int oci_update_resources(json_t *resources, json_t *effective_config,
                         const struct oci_profile *p, long long memory_ceiling,
                         tg_error **err);

/* The host path a config path names: an absolute path cleaned, a relative
 * one joined to bundle_dir (where runc and runsc resolve it) and cleaned.
 * NULL when it is relative and bundle_dir is NULL.  Owned. */
char *oci_host_path(const char *path, const char *bundle_dir);

/* The host-path rules for a bind source (rootfs false) or root.path
 * (rootfs true), on resolved, the absolute host path it names (as
 * written, or as the kernel reports an opened object): never /, never a
 * host socket, never at or above a sensitive path (docker.sock, /root,
 * /etc/tollgate...), never inside /proc, /sys, /dev, /boot or the kernel
 * modules, never at or above opts->state_root or opts->audit_dir, nor
 * inside a container's state directory or the audit directory.  Both the
 * lexical form and the form with links resolved are checked.  field and
 * written name the config field and its value in the error.  0 or -1. */
int oci_check_host_path(const char *field, const char *written,
                        const char *resolved, bool rootfs,
                        const struct harden_options *opts, tg_error **err);

#endif

/* The per-axis steps of oci_harden(), one file per concern:
 *   refuse_escapes.c  refusals of the known container-escape shapes in
 *             the input config (checked before any rewrite)
 *   caps.c    capability sets, noNewPrivileges, user
 *   mounts.c  root, mounts, tmpfs, masked/read-only paths, device rules
 *   limits.c  rlimits, cgroup memory/pids/cpu, oomScoreAdj
 *   userns.c  user namespace mappings against the host id pool
 *   tighter.c the after-the-fact check that the output is no looser
 *   hostpath.c    which host paths a bind source or root.path may name
 *   path_clean.c  lexical path clean-up, for host and container paths
 * harden.c orders them and handles profiles, namespaces, seccomp and
 * annotations.  Internal to oci/: only harden.h is public.
 */
#ifndef TOLLGATE_OCI_TRANSFORM_H
#define TOLLGATE_OCI_TRANSFORM_H

#include <stdbool.h>

#include "oci/harden.h"
#include "oci/profile.h"
#include "base/error.h"
#include "base/json.h"

/* Refuse a config that carries a known escape shape: cwd, root or a mount
 * source under /proc/<pid|self|thread-self>/fd (or /dev/fd); a namespace
 * type the runtime spec does not know; a namespace path that is the host's
 * own (or cannot be checked); a bind mount of a
 * host socket or of a path holding one; a mount of a filesystem type that
 * is not a pseudo filesystem or bind; a device outside p->devices; a
 * sysctl outside p->sysctls.  0 or -1 with *err naming the field and fix. */
int oci_refuse_escapes(const json_t *config, const struct oci_profile *p,
                       const struct harden_options *o, tg_error **err);

/* The namespace shapes of oci_refuse_escapes() that hold whatever the
 * profile does next: every linux.namespaces type is the runtime spec's,
 * and every path is a namespace of its entry's type.  oci_harden() runs
 * it on the config as it came in, before a profile drops a path (a
 * network path under "network": "none"), so a path of the wrong type is
 * refused rather than dropped unseen.  0 or -1 with *err. */
int oci_check_namespace_kinds(const json_t *config, tg_error **err);

/* The process-level escape shapes, for create and exec alike: a cwd under
 * a /proc fd directory, an unknown capability name in any set.  field
 * names the object in errors ("process").  0 or -1 with *err. */
int oci_check_process_escapes(const json_t *process, const char *field,
                              tg_error **err);

/* Lexically clean an absolute path: collapse "//", drop ".", resolve
 * "..".  Owned result.  (oci/path_clean.c, below both refuse_escapes.c
 * and hostpath.c, so that neither calls back into the other.) */
char *oci_path_clean(const char *path);

/* true when name ("CAP_NET_ADMIN") is a capability libcap-ng knows. */
bool oci_cap_name_known(const char *name);

/* true when path (after lexical clean-up) lies under a /proc/.../fd
 * directory or /dev/fd, the CVE-2024-21626 shape. */
bool oci_path_is_fd_escape(const char *path);

/* Reduce the five capability sets of process to the keep-list (missing
 * sets become empty arrays). */
void oci_caps_restrict(json_t *process, const struct namelist *keep);

/* Reduce every capability set of process to the same set in limit (a
 * process object); a set missing in limit counts as empty. */
void oci_caps_intersect(json_t *process, const json_t *limit);

/* Replace uid/gid 0 by the profile's, drop gid 0 from additionalGids,
 * unless p->allow_root. */
void oci_user_harden(json_t *process, const struct oci_profile *p);

/* User namespace (oci/userns.c): refuse input mappings that reach host
 * ids outside opts' pool (always host id 0), or a user namespace joined by
 * path; give a runc container without mappings its own user namespace
 * with opts' range.  0 or -1 with *err naming the mapping. */
struct harden_options;
int oci_userns_harden(json_t *config, const struct harden_options *opts,
                      tg_error **err);

/* Root read-only, tmpfs per profile, nosuid/nodev/noexec/ro on the pseudo
 * and bind mounts, tmpfs sizes capped, masked and read-only path lists
 * extended, device cgroup rules reduced to the profile's devices. */
void oci_mounts_harden(json_t *config, const struct oci_profile *p);

/* A mount's options as the kernel and runtimes apply them: in order, the
 * last word winning ("ro","rw" is read-write; "defaults" clears all four;
 * runc's recursive forms rro/rnosuid/... count as their plain ones).
 * size: bytes of the last size=/nr_blocks= option, -1 when none or not a
 * fixed bound (a percentage), 0 = unlimited. */
struct oci_mount_flags {
  bool ro, nosuid, nodev, noexec;
  bool rbind;
  long long size;
};
void oci_mount_flags(const json_t *mount, struct oci_mount_flags *out);

/* The tmpfs size the kernel would use: the last size= (bytes, or with a
 * k/m/g suffix) or nr_blocks= option.  -1 when absent or not understood
 * (a percentage, say). */
long long oci_tmpfs_size(const json_t *mount);

/* rlimits, linux.resources pids, cpu, and disableOOMKiller/oomScoreAdj,
 * each lowered to the profile's value when the input is looser or unset;
 * memory (no swap): the input's limit, the profile's where it has none,
 * refused (-1 with *err) when above memory_ceiling (bytes, 0: none).  For
 * runsc the process limit is applied inside the sandbox (RLIMIT_NPROC,
 * which gVisor enforces per sandbox) and the cgroup pids limit becomes a
 * host-side bound on gVisor's own tasks (see docs/hardening.md). */
int oci_limits_harden(json_t *config, const struct oci_profile *p,
                      const char *backend, long long memory_ceiling,
                      tg_error **err);

/* Under runsc a pids limit of L means at most L guest processes
 * (RLIMIT_NPROC) and 64 host tasks of the sandbox per guest process:
 * rewrite config's (a copy of the input, for oci_check_tighter()) so. */
void oci_runsc_pids_meaning(json_t *config);

/* CPU limit of a config in thousandths of a CPU; 0 when unlimited. */
long long oci_cpu_millis(const json_t *config);

/* 0 when out is nowhere more permissive than in (capabilities, privileges,
 * root, user, namespaces, mounts, paths, devices, rlimits, resources,
 * seccomp, sysctls, hooks); -1 with *err naming the first looser axis. */
int oci_check_tighter(const json_t *in, const json_t *out, tg_error **err);

/* The same check for two process objects (exec): out is no looser than
 * in on capabilities, noNewPrivileges, user and groups, LSM labels,
 * rlimits and oomScoreAdj.  0 or -1 with *err. */
int oci_check_process_tighter(const json_t *in, const json_t *out, tg_error **err);

#endif

/* Host cgroups of a pod under runsc (docs/kubernetes.md "Limits and
 * stats"): where its gVisor sandbox goes, and where each member's waiter
 * goes so that what containerd reads of it is the sandbox's real usage.
 *
 * runsc puts a sandbox in the cgroup of its root (pause) container's
 * cgroupsPath, with the pause's resources, and gives each member a host
 * cgroup of its own that holds no process (runsc/container/container.go,
 * setupCgroupForSubcontainer: "subcontainer cgroups on the host have no
 * effect on them").  containerd's runc v2 shim reads a container's stats,
 * and watches its OOM events, in the cgroups of the pid create reports:
 * for a member, its waiter (shim/lifecycle/waiter.h). */
#ifndef TOLLGATE_CGROUP_PLACE_H
#define TOLLGATE_CGROUP_PLACE_H

#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"

/* The pause container of a pod under runsc: when its cgroupsPath (an
 * absolute cgroupfs path) lies in a pod cgroup that already exists with a
 * memory limit (the kubelet's, sized as the sum of its containers' limits
 * plus the RuntimeClass overhead), the sandbox goes there: the
 * annotation dev.gvisor.spec.cgroup-parent names it, and runsc, which
 * sets resources only on cgroups it creates, leaves the kubelet's limits
 * as they are.  Otherwise nothing changes: the sandbox is bounded by the
 * pause's own limits (the profile's).  Returns the parent chosen (owned)
 * or NULL. */
char *cgroup_place_sandbox(json_t *config);

/* Move pid into every host cgroup (v1 hierarchies and the v2 one) that
 * the process like is in: a member's waiter into its pod's sandbox.  0,
 * or -1 with *err naming the cgroup that refused. */
int cgroup_place_like(pid_t pid, pid_t like, tg_error **err);

#endif

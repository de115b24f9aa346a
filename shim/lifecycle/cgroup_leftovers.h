/* The default cgroup a backend killed half-way through its create leaves
 * behind, under either backend.
 *
 * runsc (`runsc run` killed with tollgate, 20240729) and runc (`runc run`
 * killed by the run guard when tollgate dies) make
 * /sys/fs/cgroup/<ctrl>/<backend id> in every v1 hierarchy (and the v2
 * one) before their state names the container.  Their own `delete
 * --force` then says the container does not exist and leaves the empty
 * cgroups: one set per killed start (seen: 14 of 24 kill -9s of `tollgate
 * run --runtime runc` 20-70 ms into its start). */
#ifndef TOLLGATE_CGROUP_LEFTOVERS_H
#define TOLLGATE_CGROUP_LEFTOVERS_H

#include <stdbool.h>

#include "shim/lifecycle/container.h"

/* Remove c's default cgroup (/<backend id>, the one the backend makes when
 * the config names no cgroupsPath and no systemd cgroup manager is in use)
 * from every cgroup hierarchy mounted here, for a container whose backend
 * has deleted it or no longer knows it.  Best effort, and only rmdir: a
 * cgroup that holds a process or a child cgroup stays, so a live
 * container of the same name (another root's) loses nothing. */
void cgroup_clear_default(const struct container *c, bool systemd_cgroup);

#endif

/* Mount points for a container in its own user namespace.
 *
 * runc creates a missing mount destination in the rootfs as the
 * container's root, which in a user namespace is an unprivileged host id.
 * An image rootfs unpacked by containerd is owned by host root, so the
 * mount points of containerd's CRI mounts (/etc/resolv.conf, /etc/hosts,
 * /etc/hostname, /dev/termination-log) cannot be made there ("open
 * .../etc/resolv.conf: permission denied") and the container never
 * starts.  tollgate makes them itself, as host root, before the backend
 * runs: the same empty files and directories runc would make as root
 * without a user namespace, and nothing else. */
#ifndef TOLLGATE_MOUNT_POINTS_H
#define TOLLGATE_MOUNT_POINTS_H

#include "shim/error.h"
#include "shim/json.h"

/* Make each missing mount destination of config inside root.path (an
 * absolute path: the pinned rootfs): an empty file for a bind of a
 * non-directory, a directory otherwise, parents as directories (0755).
 * Every path is resolved with the rootfs as "/" (openat2 RESOLVE_IN_ROOT),
 * so no symlink in the image reaches outside it.  Destinations below an
 * earlier mount's destination are left to runc, which makes them inside
 * that mount.  A read-only rootfs, or a destination that resolves to
 * nothing (a dangling link), is left alone: runc reports it as it would.
 * 0 or -1 with *err naming the mount. */
int mount_points_make(const json_t *config, tg_error **err);

#endif

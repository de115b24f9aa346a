/* Mount points and the working directory for a container in its own
 * user namespace.
 *
 * runc (and runsc's gofer, for a config with its own mappings) creates a
 * missing mount destination, and a missing process.cwd, in the rootfs as
 * the container's root, which in a user namespace is an unprivileged host
 * id.  An image rootfs (unpacked by containerd, Docker,
 * mmdebstrap, a tar) is owned by host root, so none of them can be made
 * there: containerd's CRI mounts (/etc/resolv.conf, /etc/hosts, ...),
 * the bridge's /run/tollgate, a cwd the image lacks ("mkdir
 * .../run/tollgate: permission denied", "chdir to cwd ... permission
 * denied") and the container never starts.  tollgate makes them itself,
 * as host root, before the backend runs: the same empty files and
 * directories (0755, owned by root) runc makes as root without a user
 * namespace, and nothing else.  They stay in the rootfs after delete, as
 * runc's own do (docs/hardening.md "What tollgate makes in a rootfs"). */
#ifndef TOLLGATE_MOUNT_POINTS_H
#define TOLLGATE_MOUNT_POINTS_H

#include "base/error.h"
#include "base/json.h"

/* Make each missing mount destination of config inside root.path (the
 * pinned rootfs, or relative to bundle when it is not absolute): an empty file for a bind of a
 * non-directory, a directory otherwise, parents as directories (0755).
 * With only set, just the destinations at or below that path (under a
 * passthrough profile: tollgate's own mounts, never the user's).  Every
 * path is resolved with the rootfs as "/" (openat2 RESOLVE_IN_ROOT), so no
 * symlink in the image reaches outside it, and nothing is made through a
 * link.  Destinations below an earlier mount's destination are left to
 * runc, which makes them inside that mount.  A read-only filesystem, or a
 * destination that resolves to nothing (a dangling link), is left alone:
 * runc reports it as it would.  Call after the last mount is added (the
 * bridge's included).  0 or -1 with *err naming the mount. */
int mount_points_make(const json_t *config, const char *bundle, const char *only, tg_error **err);

/* Make process.cwd inside root.path when it is missing, the same way
 * (a directory 0755, parents too), unless it lies below a mount's
 * destination (runc makes it inside that mount).  0 or -1 with *err. */
int mount_points_make_cwd(const json_t *config, const char *bundle, tg_error **err);

#endif

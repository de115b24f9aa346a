/* The bridge area: a size-capped host tmpfs at <state_dir>/bridge that the
 * container sees as /run/tollgate (read-only) and /run/tollgate/calls
 * (read-write).  Layout on the host:
 *
 *   bridge/            tmpfs, root 0755, nosuid,nodev,noexec
 *     tools.json       written by the gate when the bridge starts serving
 *     bridge.json      protocol parameters for clients (limits, timeouts)
 *     tollgate.py      the Python client
 *     tollgate-call    empty mount point; the static client is bind-mounted
 *                      over it (the tmpfs itself is noexec)
 *     .reserve         space held back so a full area can still be reported
 *     alive            the sidecar's heartbeat (bridge/heartbeat.h)
 *     cells/           root 0755, read-only inside: the host's session cell
 *                      requests (kernel.py serve reads them; nothing in the
 *                      container can write one)
 *     calls/           root 0755: the container cannot rename req/ or resp/
 *       req/ resp/     owned by the container's uid, 0700
 *       cells/         owned by the container's uid, 0700: the session
 *                      interpreter's answers and cell output (the host reads
 *                      them as untrusted: sdk/tollgate_sdk/_cells.py)
 *
 *   bridge-call        beside the area: the static client bound here on the
 *                      host (a mount of tollgate's own, private, read-only),
 *                      the source of the container's tollgate-call bind, so it
 *                      binds whatever the propagation of the mount the client
 *                      was installed on (rootfsPropagation "unbindable" makes
 *                      the host's "/" unbindable in the container's namespace)
 *
 * The directories are made once and never replaced: gVisor's gofer keeps
 * the directory it opened when the container started.
 */
#ifndef TOLLGATE_BRIDGE_AREA_H
#define TOLLGATE_BRIDGE_AREA_H

#include <stddef.h>
#include <sys/types.h>

#include "base/hostconfig.h"
#include "base/error.h"
#include "base/json.h"

#define BRIDGE_CONTAINER_DIR "/run/tollgate"
#define BRIDGE_CONTAINER_CALLS "/run/tollgate/calls"
#define BRIDGE_CLIENT_MOUNT "bridge-call" /* under the state directory */
#define BRIDGE_CONTAINER_CLIENT BRIDGE_CONTAINER_DIR "/tollgate-call" /* the static client, inside */

struct bridge_area_params {
  size_t tmpfs_bytes;       /* 0: 16 MiB */
  size_t request_max_bytes; /* 0: 64 KiB */
  int approval_timeout_ms;  /* for clients' timeouts; 0: 60000 */
  uid_t uid;                /* owner of req/ and resp/ (host view) */
  gid_t gid;
  const char *python_client; /* tollgate.py to copy in */
  const char *call_client;   /* tollgate-call to bind over the mount point, or NULL */
};

/* Mount and populate <state_dir>/bridge (and bind p->call_client at
 * <state_dir>/bridge-call).  On error nothing stays mounted. */
int bridge_area_create(const char *state_dir, const struct bridge_area_params *p,
                       tg_error **err);

/* Open the area root, calls/req and calls/resp as directory fds (O_PATH is
 * not enough: they are read and watched).  0 or -1 with *err. */
int bridge_area_open(const char *state_dir, int *area_fd, int *req_fd,
                     int *resp_fd, tg_error **err);

/* Unmount and remove <state_dir>/bridge-call and <state_dir>/bridge.
 * Missing is fine. */
int bridge_area_destroy(const char *state_dir, tg_error **err);

/* The uid/gid the container process runs as, seen from the host: the
 * config's process.user mapped through linux.uidMappings/gidMappings when
 * the container has a user namespace.  0 or -1 with *err. */
int bridge_container_owner(const json_t *config, uid_t *uid, gid_t *gid,
                           tg_error **err);

/* Find a client file ("tollgate.py", "tollgate-call"): the host config's
 * data_dir/client/, then next to the running binary (install tree
 * ../lib/tollgate/, the build directory, the source tree bridge/client/).
 * Returns an owned absolute path, or NULL with *err listing where. */
char *bridge_client_path(const struct host_config *host, const char *name,
                         tg_error **err);

/* Append the bridge mounts to config's mounts and point the process at
 * the client (PYTHONPATH, TOLLGATE_DIR). */
int bridge_add_mounts(json_t *config, const char *state_dir,
                      const char *call_client, tg_error **err);

/* Point a process (create's, or one exec'd into a bridged container) at
 * the client: TOLLGATE_DIR unless the process sets its own, and the
 * client's directory appended to PYTHONPATH (added when unset). */
void bridge_process_env(json_t *process);

#endif

/* The sidecar's heartbeat: /run/tollgate/alive (BRIDGE_HEARTBEAT_NAME in
 * the bridge area's root), its mtime renewed every second by a thread of
 * the sidecar.  The clients' last resort: when the sidecar and its
 * supervisor are both gone, nobody answers, and a caller that sees the
 * file's mtime unchanged for BRIDGE_HEARTBEAT_STALE_MS gives up at once
 * instead of waiting for its own timeout (docs/bridge-protocol.md).  The
 * area's root is read-only to the container and owned by host root, so
 * the container cannot renew it; and a heartbeat only ever makes a caller
 * wait (or give up with "may or may not have run"), never a result.
 */
#ifndef TOLLGATE_BRIDGE_HEARTBEAT_H
#define TOLLGATE_BRIDGE_HEARTBEAT_H

#include "base/error.h"

#define BRIDGE_HEARTBEAT_NAME "alive"
#define BRIDGE_HEARTBEAT_PERIOD_MS 1000
#define BRIDGE_HEARTBEAT_STALE_MS 10000 /* the clients' bound: ten periods */

/* Create area_fd/alive and start the thread that renews it for the life
 * of the process (it ends with it).  0 or -1 with *err. */
int bridge_heartbeat_start(int area_fd, tg_error **err);

#endif

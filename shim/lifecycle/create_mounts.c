/* create's mounts: the pins that keep each bind source what hardening
 * checked, and the mount points a mapped root could not make itself
 * (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include "bridge/area.h"
#include "shim/lifecycle/mount_pin.h"
#include "shim/lifecycle/mount_points.h"
#include "shim/lifecycle/mount_reach.h"

int create_pin_mounts(struct create_context *cx, tg_error **err) {
  /* The backend gets sources that cannot change after this check (a
   * passthrough profile applies nothing, this included). */
  if (!cx->passthrough && mount_pin_all(cx->u->dir, cx->config, &cx->ho, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  return 0;
}

int create_make_mount_points(struct create_context *cx, tg_error **err) {
  json_t *config = cx->config;
  const char *bundle = cx->bundle;
  bool passthrough = cx->passthrough;
  /* runc (and runsc's gofer) make missing mount points and the cwd as the
   * container's root, which a user namespace maps to an unprivileged host
   * id: in an image rootfs owned by host root they cannot, so tollgate
   * makes them first, the bridge's included (shim/lifecycle/mount_points.h).  Under
   * passthrough only the bridge's: the user's are the bare backend's to
   * make or refuse. */
  if ((!passthrough || cx->out->bridged) &&
      json_array_len(json_get_path(config, "linux.uidMappings")) > 0 &&
      (mount_points_make(config, bundle, passthrough ? BRIDGE_CONTAINER_DIR : NULL, err) < 0 ||
       (!passthrough && mount_points_make_cwd(config, bundle, err) < 0)))
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  /* The mapped root (runc's, and runsc's gofer with mappings) resolves the
   * pins and the bridge area by path, and no other host user may: the
   * state directory passes its group alone, and when a parent (Docker's
   * 0700 exec root) keeps it out, the config goes through a view only it
   * can reach (shim/lifecycle/mount_reach.h). */
  if (!passthrough && json_array_len(json_get_path(config, "linux.uidMappings")) > 0 &&
      mount_reach_make(cx->u->dir, config, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  return 0;
}

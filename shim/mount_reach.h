/* A path to the state directory that a container's mapped root can walk.
 *
 * In its own user namespace a container's root is an unprivileged host
 * id, and runc resolves root.path and bind sources (the pins and the
 * bridge area under the state directory) as that id.  Every directory on
 * the way needs search permission for "others".  Docker's exec root
 * (/run/docker, and a test's --exec-root) is 0700, so a state directory
 * under it is out of the container's reach and runc's first mount fails
 * (the container exits 126).  Rather than loosen a directory tollgate
 * does not own, the state directory is bind-mounted (recursively, pins and
 * bridge area included) onto /run/tollgate-reach/<hash of its path>, made
 * here 0711 root, and the config names that view instead. */
#ifndef TOLLGATE_MOUNT_REACH_H
#define TOLLGATE_MOUNT_REACH_H

#include "shim/error.h"
#include "shim/json.h"

#define MOUNT_REACH_DIR "/run/tollgate-reach"

/* When a directory above state_dir lacks search permission for others,
 * bind state_dir onto its view and rewrite root.path and every mount
 * source below state_dir to go through it.  Nothing when every parent can
 * be searched.  Call after the last mount under state_dir is made (a
 * recursive bind copies the mounts there at that moment).  0 or -1 with
 * *err. */
int mount_reach_make(const char *state_dir, json_t *config, tg_error **err);

/* Unmount and remove state_dir's view, if it has one.  Call before the
 * state directory's own mounts go (delete, create's undo).  0 or -1 with
 * *err. */
int mount_reach_release(const char *state_dir, tg_error **err);

#endif

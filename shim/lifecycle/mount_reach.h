/* A path to the state directory that a container's mapped root, and no
 * other host user, can walk.
 *
 * In its own user namespace a container's root is an unprivileged host
 * id, and runc resolves root.path and bind sources (the pins and the
 * bridge area under the state directory) as that id.  The pins are the
 * very host objects the config binds, so whoever can walk to them reads
 * them, even when the source itself sits in a private (0700) directory
 * of root's: the walk must be the mapped root's alone.  The state
 * directory and its pins are therefore root's with the group of the
 * container's mapped root (the host gid of its gid 0), mode 0710: host
 * root and that group pass, no one else does.
 *
 * Docker's exec root (/run/docker, and a test's --exec-root) is 0700, so
 * a state directory under it is out of the mapped root's reach
 * altogether, and runc's first mount fails (the container exits 126).
 * Rather than loosen a directory tollgate does not own, the state
 * directory is bind-mounted (recursively, pins and bridge area included)
 * onto MOUNT_REACH_DIR/<name>/state, and the config names that view
 * instead.  <name> is random (recorded in the state directory's
 * REACH_RECORD, so delete finds it), and <name> itself is root's, of the
 * mapped root's group, 0710: the view is neither guessable nor passable
 * for another host user. */
#ifndef TOLLGATE_MOUNT_REACH_H
#define TOLLGATE_MOUNT_REACH_H

#include "base/error.h"
#include "base/json.h"

#define MOUNT_REACH_DIR "/run/tollgate-reach"
#define REACH_RECORD "reach-view"

/* Close state_dir and its pins to everyone but host root and the mapped
 * root's group (the config's user namespace mappings name it).  Then,
 * when a directory above state_dir lacks search permission for others,
 * bind state_dir onto a view of a random name and rewrite root.path and
 * every mount source below state_dir to go through it.  Call after the
 * last mount under state_dir is made (a recursive bind copies the mounts
 * there at that moment).  0 or -1 with *err. */
int mount_reach_make(const char *state_dir, json_t *config, tg_error **err);

/* Unmount and remove state_dir's view, if it has one (its name read from
 * state_dir's REACH_RECORD; a view of an older tollgate is found by its
 * old name).  Call before the
 * state directory's own mounts go (delete, create's undo).  0 or -1 with
 * *err. */
int mount_reach_release(const char *state_dir, tg_error **err);

#endif

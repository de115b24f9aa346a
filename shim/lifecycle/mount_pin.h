/* Mount sources fixed at check time.
 *
 * The backend resolves a bind source (and root.path) by path when it
 * mounts, after tollgate has checked it: a path flipped in between (a
 * directory swapped for a link to /) would reach the host.  Pinning opens
 * each source once, checks the object it opened, and bind-mounts that
 * very object (through /proc/self/fd/N) onto <state dir>/pins/<n>; the
 * effective config names the pin instead, which nothing but root can
 * change.  docs/hardening.md, "Mount sources are pinned", says why this
 * closes the race.
 */
#ifndef TOLLGATE_MOUNT_PIN_H
#define TOLLGATE_MOUNT_PIN_H

#include "oci/harden.h"
#include "base/error.h"
#include "base/json.h"

/* Pin root.path and every bind mount source of config (relative ones
 * against opts->bundle_dir), checking each opened object with
 * oci_check_host_path(), and rewrite config to name the pins.  On error
 * the pins made so far stay for mount_pin_release() (create's undo).
 * 0 or -1 with *err naming the field and the fix. */
int mount_pin_all(const char *state_dir, json_t *config,
                  const struct harden_options *opts, tg_error **err);

/* Unmount and remove every pin under state_dir (none is fine).  Called by
 * delete and by create's undo before the state directory is removed. */
int mount_pin_release(const char *state_dir, tg_error **err);

#endif

/* The bundle the backend is given: a private one under the container's
 * state directory.
 *
 * create writes the effective config into the user's bundle (the user's
 * own kept as config.json.orig), but that file is shared: every create
 * from the bundle rewrites it, and its author may rewrite it at any time
 * (the bundle lock is advisory and held by tollgate alone).  A backend
 * that read it after create decided (`runsc run` in `tollgate run`, which
 * reads it once create has released the lock) ran another container's
 * config: its bridge area, its pins, its gate (issue 38, 30 concurrent
 * runs of one bundle).  So every backend call that reads a config
 * (create, run, restore) is given <state dir>/bundle instead, whose
 * config.json holds the effective config tollgate decided for this very
 * container and which nothing but root can change. */
#ifndef TOLLGATE_BACKEND_BUNDLE_H
#define TOLLGATE_BACKEND_BUNDLE_H

#include <stddef.h>

#include "base/error.h"
#include "base/json.h"

/* The private bundle's path for state_dir.  Owned by the caller. */
char *backend_bundle_path(const char *state_dir);

/* Write state_dir's private bundle: config.json holding eff (the
 * effective config's bytes, config its tree).  A relative root.path or
 * bind source (passthrough applies no pins) is made absolute against
 * user_bundle first, exactly as the backend would resolve it from
 * there, so that it does not resolve inside the private bundle; otherwise
 * the bytes are eff's.  0 or -1 with *err. */
int backend_bundle_write(const char *state_dir, const char *user_bundle,
                         const json_t *config, const char *eff, size_t eff_len,
                         tg_error **err);

#endif

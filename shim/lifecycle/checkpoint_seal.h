/* The seal on a checkpoint image: what lets `tollgate restore` trust one.
 *
 * A checkpoint image is the container's own memory, files and process
 * state, credentials included: runsc's restore (and criu's) brings back
 * the uid, gid and capabilities the process had when it was saved,
 * whatever the restoring bundle's hardened spec says.  An image is hostile
 * data, so restore accepts only an image tollgate itself checkpointed from
 * a container it hardened, on this host.
 *
 * `tollgate checkpoint` writes SEAL_NAME into the image directory: a body
 * (the container id, backend, the effective config's digest and the
 * process credentials of that config: user, capabilities,
 * noNewPrivileges, profile) and an HMAC-SHA256, under the host key
 * (host config checkpoint_key, made 0600 by root on first use, never in
 * an image), over the body and every file of the image directory (names,
 * sizes and contents, in byte order of the names).  A link or special
 * file in the image is refused, as is an image any user but root can
 * change.  The seal travels inside the directory, so containerd's
 * checkpoint tarball carries it. */
#ifndef TOLLGATE_CHECKPOINT_SEAL_H
#define TOLLGATE_CHECKPOINT_SEAL_H

#include "base/hostconfig.h"
#include "base/error.h"
#include "base/json.h"

#define SEAL_NAME "tollgate.seal.json"

/* The process credentials an effective config gives its process, in one
 * fixed form (what the seal records and restore compares): {"profile",
 * "user": {uid, gid, umask, additionalGids (sorted)}, "capabilities":
 * {each of the five sets, sorted}, "noNewPrivileges"}.  Owned. */
json_t *seal_credentials(const json_t *config, const char *profile);

/* Seal image_dir (an image the backend just wrote) for a container:
 * container id, backend name, "sha256:<hex>" of its effective config, and
 * seal_credentials() of it.  0 or -1 with *err. */
int seal_write(const struct host_config *cfg, const char *image_dir, const char *id,
               const char *backend, const char *config_digest, const json_t *credentials,
               tg_error **err);

enum seal_status {
  SEAL_VALID,   /* the MAC verifies: *body is the sealed body */
  SEAL_MISSING, /* the image has no seal */
  SEAL_INVALID, /* a seal that does not verify (or an image that cannot be) */
};

/* Verify image_dir's seal under the host key.  Returns 0 with *status:
 * SEAL_VALID with *body (owned) filled, otherwise *body NULL and *reason
 * (owned) saying what is wrong.  -1 only for an argument error. */
int seal_verify(const struct host_config *cfg, const char *image_dir, enum seal_status *status,
                json_t **body, char **reason, tg_error **err);

#endif

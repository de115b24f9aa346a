/* The starting config.json for `tollgate spec`: the shape `runc spec`
 * writes (so people and tools recognise it), before hardening. */
#ifndef TOLLGATE_OCI_SPEC_H
#define TOLLGATE_OCI_SPEC_H

#include <stddef.h>

#include "base/json.h"

/* A runc-spec-shaped config with root.path = rootfs and process.args =
 * args[0..nargs) (or ["sh"] when nargs is 0).  Owned by the caller; harden
 * it with oci_harden() before use. */
json_t *oci_default_spec(const char *rootfs, char *const *args, size_t nargs);

#endif

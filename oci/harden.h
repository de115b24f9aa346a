/* config.json hardening: the rewrite that only ever tightens.
 *
 * oci_harden() takes the bundle's config.json as a parsed tree and edits it
 * in place into the effective config that the backend runs.  For every
 * axis (capabilities, seccomp, mounts, devices, namespaces, limits, user,
 * annotations) the output is never more permissive than the input.  Known
 * escape shapes are refused with an error that names the field and the fix.
 */
#ifndef TOLLGATE_OCI_HARDEN_H
#define TOLLGATE_OCI_HARDEN_H

#include <stdbool.h>

#include "shim/error.h"
#include "shim/json.h"

struct harden_options {
  const char *profile;      /* profile chosen by the host config ("hardened") */
  const char *profiles_dir; /* directory holding <name>.json profiles */
  const char *seccomp_dir;  /* directory holding the syscall lists */
  bool allow_passthrough;   /* host config permits the passthrough profile */
  const char *backend;      /* "runsc" or "runc" */
  /* The host id pool (docs/hardening.md "Identities").  A user namespace
   * in the input may map only to host ids in [id_pool_first, id_pool_end)
   * (an empty pool still refuses host id 0).  When id_range_size is not 0,
   * a runc container without mappings gets a user namespace mapping its
   * ids 0..id_range_size-1 to host ids id_range_first.. (the range the
   * caller claimed for it). */
  unsigned long long id_pool_first, id_pool_end;
  unsigned long long id_range_first, id_range_size;
};

struct harden_result {
  char *profile; /* name of the profile applied, owned */
};

/* Harden config in place.  Honours the workload annotation
 * dev.tollgate.profile only when it names a profile at least as strict as
 * opts->profile.  Records the applied profile in the annotation
 * dev.tollgate.profile-applied.  0 or -1 with *err. */
int oci_harden(json_t *config, const struct harden_options *opts,
               struct harden_result *res, tg_error **err);

/* Harden a process spec given to `exec --process FILE` (or built for the
 * runc-style `exec ID CMD...`) against the container's effective config:
 * capabilities no wider than the container's, noNewPrivileges, the same
 * non-root user, cwd checked for escape shapes.  0 or -1 with *err. */
int oci_harden_process(json_t *process, const json_t *effective_config,
                       tg_error **err);

/* The slots of a pool (slot k: host ids first + k*size, size ids) that the
 * input's user namespace mappings touch, for the caller to claim before
 * oci_harden() checks them.  *slots (owned, *n entries, no duplicates) is
 * NULL when the input maps nothing; *maps says whether it has mappings at
 * all.  Ids outside the pool are skipped here and refused by oci_harden(). */
void oci_userns_slots(const json_t *config, unsigned long long first,
                      unsigned long long size, unsigned long long count,
                      unsigned long long **slots, size_t *n, bool *maps);

/* Whether config joins an existing namespace by path (a pod member) or
 * is a CRI container: under runc such a container keeps the host's user
 * namespace (docs/hardening.md "Known limits"). */
bool oci_joins_a_namespace(const json_t *config);

void harden_result_free(struct harden_result *res);

#endif

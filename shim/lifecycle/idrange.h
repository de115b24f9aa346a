/* Host id ranges for user namespaces: one range of the host config's pool
 * per container, so that no two containers (and no container and the
 * tools) ever share a host uid.
 *
 * Slot k of the pool is host ids [base + k*size, base + (k+1)*size).  A
 * claim is the file <pool dir>/<k> holding "<owner dir> <token>\n": the
 * container's state directory and a random token written into it
 * (<owner>/.id-claim) before the claim; the owner holding that token is
 * what keeps the claim alive.  Every change happens under flock(<pool dir>/.lock), so concurrent
 * creates never get the same slot.  Crash safety needs no journal: a claim
 * whose owner directory is gone (or is a different directory of the same
 * name, which lacks the token, or whose file a crash left short) is free to take again. */
#ifndef TOLLGATE_IDRANGE_H
#define TOLLGATE_IDRANGE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/hostconfig.h"
#include "base/error.h"
#include "base/json.h"

struct id_pool {
  const char *dir;         /* claim directory (made 0700 if missing) */
  unsigned long long base; /* first host id of slot 0 */
  unsigned long long size; /* ids per slot */
  unsigned long long count; /* number of slots; 0: no pool */
  unsigned long long max_per_owner; /* slots one claim may take; 0 means 1
                                       (host config
                                       max_id_ranges_per_container) */
};

/* Claim slots for owner (an existing directory).  With n == 0, claims the
 * lowest free slot and stores it in *slot; otherwise claims exactly
 * want[0..n-1], all or none, refusing one held by another owner with an
 * error naming it, and refusing more than pool->max_per_owner slots (one
 * container's mappings could otherwise hold the whole pool).  A slot
 * owner already holds counts as claimed.  A full pool's error names the
 * containers that hold it.  0 or -1 with *err. */
int idrange_claim(const struct id_pool *pool, const char *owner,
                  const unsigned long long *want, size_t n,
                  unsigned long long *slot, tg_error **err);

/* Add owner to slot's claim, which holder (a live owner of it) already
 * has: the slot stays claimed until its last owner releases it.  Refused
 * when holder does not hold slot.  0 or -1 with *err. */
int idrange_share(const struct id_pool *pool, const char *owner, const char *holder,
                  unsigned long long slot, tg_error **err);

/* Drop owner's line from every claim (whether or not it still exists),
 * and the claim when no owner is left.  Missing pool directory is fine.  0 or -1 with *err. */
int idrange_release(const struct id_pool *pool, const char *owner,
                    tg_error **err);

/* How much of the pool live claims hold: *held of pool->count slots.
 * 0, or -1 with *err (the claim directory cannot be read, e.g. not
 * root).  A missing directory holds nothing. */
int idrange_usage(const struct id_pool *pool, unsigned long long *held, tg_error **err);

/* Is the pool running low: at most an eighth of it free (at least one
 * slot, at most 64)? */
bool idrange_low(unsigned long long held, unsigned long long count);

/* {"dir", "total", "free", "low"} for the host config's pool, or NULL
 * when there is none or it cannot be read.  Owned. */
json_t *idrange_usage_json(const struct host_config *cfg);

/* The host config's pool (count 0 when it has none). */
struct id_pool idrange_pool(const struct host_config *cfg);

/* idrange_release() for the host config's pool, errors dropped: used on
 * delete and undo paths, after the owner's directory is gone (so that a
 * crash in between leaves a claim that is reclaimable, never one that is
 * freed while its container still runs). */
void idrange_release_owner(const struct host_config *cfg, const char *owner);

#endif

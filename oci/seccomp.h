/* Seccomp: the allowlist in bundles/seccomp/ and its combination with a
 * seccomp profile that the incoming config.json already carries.
 *
 * Both are OCI linux.seccomp objects.  A syscall's verdict under a profile
 * is one of: denied, allowed, or allowed under argument conditions (a list
 * of rules, each an AND of comparisons; the rules are ORed).  Actions
 * SCMP_ACT_ALLOW and SCMP_ACT_LOG allow; every other action counts as a
 * denial: ERRNO, KILL*, TRAP, and TRACE (ENOSYS when no tracer is
 * attached, and none can be from inside the container) deny; NOTIFY hands
 * the call to an agent that may allow it, so an input's NOTIFY rule is
 * treated as a denial and an allowlist may not use NOTIFY at all.
 */
#ifndef TOLLGATE_OCI_SECCOMP_H
#define TOLLGATE_OCI_SECCOMP_H

#include <stdbool.h>

#include "base/error.h"
#include "base/json.h"

/* Read and validate an allowlist file (see oci_seccomp_validate_allowlist).
 * *out is owned by the caller. */
int oci_seccomp_load(const char *path, json_t **out, tg_error **err);

/* An allowlist as tollgate accepts it: defaultAction denies (ERRNO, KILL*,
 * TRAP), every action and comparison operator is known, every architecture
 * is known to libseccomp, and every syscall name resolves with libseccomp
 * on every listed architecture.  An unknown name is an error naming it.
 * source names the file in errors. */
int oci_seccomp_validate_allowlist(const json_t *sc, const char *source,
                                   tg_error **err);

/* The profile the container gets.  input NULL: a copy of ours (minus its
 * "comment").  Otherwise the intersection: a syscall is allowed only when
 * both allow it, under both sets of conditions; conditions that cannot be
 * combined exactly are resolved by denying.  Architectures are ours that
 * the input also covers; input flags other than TSYNC and LOG are dropped
 * (SPEC_ALLOW turns off a mitigation).  *out is owned by the caller. */
int oci_seccomp_intersect(const json_t *ours, const json_t *input,
                          json_t **out, tg_error **err);

/* true when a allows nothing that b does not (a NULL b allows everything,
 * a NULL a allows everything).  When false, *why (optional) gets an owned
 * sentence naming a syscall a allows and b does not. */
bool oci_seccomp_subset(const json_t *a, const json_t *b, char **why);

#endif

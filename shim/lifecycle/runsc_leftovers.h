/* What a killed `runsc run` or `runsc create` can leave behind after
 * runsc's own `delete --force` said the container is gone: the
 * container's lock file and socket in runsc's root (its empty cgroups:
 * cgroup_leftovers.h). */
#ifndef TOLLGATE_RUNSC_LEFTOVERS_H
#define TOLLGATE_RUNSC_LEFTOVERS_H

#include <stdbool.h>

#include "shim/lifecycle/container.h"

/* Remove them for c (a runsc container the backend no longer knows).
 * Best effort and never more than what is named after c's backend id:
 * a lock file goes only when no state file of the same name is beside
 * it. */
void runsc_clear_leftovers(const struct container *c);

/* A `runsc run` killed while it wrote its state leaves a torn state file
 * ("<bid>_sandbox:<bid>.state" that is not JSON): runsc's delete and state
 * then fail on it for ever ("unexpected end of JSON input") while its
 * sandbox may still run.  When c's is torn: kill c's runsc processes,
 * remove the state, lock and socket files, and return true (the backend no
 * longer knows c); otherwise change nothing and return false. */
bool runsc_forget_torn_state(const struct container *c);

#endif

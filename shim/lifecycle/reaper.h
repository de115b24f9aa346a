/* The reaper: deletes the containers of a root whose owner is gone or
 * whose deadline passed (shim/lifecycle/lifetime.h, docs/reliability.md).
 *
 * It runs from `tollgate gc [--all-roots]`, from the SDK when a Sandbox
 * starts (which runs gc), and before the verbs on a root (reaper_
 * implicit), at most once a second per root: the stamp <root>/.reaper
 * (not a valid container id) holds the time of the last sweep, so a verb
 * pays one stat() while a sweep is not due.  `state`, which containerd's
 * shim calls on every task event, never sweeps (shim/cli/main.c).
 *
 * A container is reaped as `delete --force` deletes it (the backend's
 * container killed and deleted, the sidecar stopped, mounts and the id
 * claim released, the state directory removed).  One whose lock is held
 * (a create, delete or another verb on it under way) is left for the
 * next sweep by the sweep before a verb; gc waits busy_wait_ms for it,
 * and counts it as failed when the lock is still held then.  Each reaping is logged at level "warning" with its reason
 * (the --log file, JSON with --log-format json, else stderr). */
#ifndef TOLLGATE_REAPER_H
#define TOLLGATE_REAPER_H

#include <stdbool.h>
#include <stdio.h>

#include "shim/context.h"

/* What one sweep did. */
struct reaper_report {
  unsigned scanned;  /* state directories looked at */
  unsigned reaped;
  unsigned failed;   /* due, but the delete failed (logged) */
  FILE *out;         /* gc: one line per container reaped, or NULL */
  unsigned max_reaps; /* delete at most this many (0: no bound) */
  unsigned busy_wait_ms; /* how long to wait for a due container's lock */
};

/* Sweep root now.  Never fails: what cannot be done is logged. */
void reaper_sweep(const struct cli *cli, const char *root, struct reaper_report *rep);

/* The sweep before a verb: only when root exists and its last sweep is a
 * second old or more (the stamp is touched first, so concurrent verbs do
 * not all sweep), and at most REAPER_IMPLICIT_MAX deletions (a verb is
 * not held up by a thousand leftovers: gc takes them all). */
#define REAPER_IMPLICIT_MAX 8
void reaper_implicit(const struct cli *cli);

#endif

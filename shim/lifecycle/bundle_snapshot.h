/* A bundle's config files as they were before a create, to put back when
 * the container never ran.
 *
 * create rewrites config.json (the effective config, the user's kept as
 * config.json.orig, the mark config.json.tollgate beside them) and its
 * undo puts them back when create fails.  `tollgate run` under runsc
 * prepares the bundle with a create that succeeds, then `runsc run`
 * creates the container: when that fails, nothing ran, and the bundle
 * must be left as the user had it, as a failed create leaves it. */
#ifndef TOLLGATE_BUNDLE_SNAPSHOT_H
#define TOLLGATE_BUNDLE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bundle_snapshot {
  int dir_fd;      /* the bundle directory, or -1: nothing to restore */
  char *config;    /* config.json's bytes (owned) */
  size_t len;
  mode_t mode;
  bool had_orig;   /* config.json.orig was there */
  bool had_mark;   /* the mark was there */
  bool ours;       /* config.json was an effective config tollgate wrote */
};

/* Take the snapshot of bundle (NULL: the working directory).  Never
 * fails: a bundle that cannot be read gives an empty snapshot, and
 * create reports the problem itself. */
void bundle_snapshot_take(const char *bundle, struct bundle_snapshot *s);

/* Put config.json back as it was and remove the original and the mark
 * that were not there, under the bundle's lock (the one create holds).
 * Nothing when config.json was tollgate's effective config: the user's
 * is config.json.orig, untouched.  Best effort: a bundle that changed
 * under us is left as it is. */
void bundle_snapshot_restore(struct bundle_snapshot *s);

void bundle_snapshot_free(struct bundle_snapshot *s);

#endif

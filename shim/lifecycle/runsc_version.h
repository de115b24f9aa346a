/* Which runsc release a binary is, and the flags that follow from it.
 *
 * Debian 12 ships runsc 0.0~20221219 (ptrace platform only); its
 * backports and Debian 13 ship 0.0~20240729 (systrap, gVisor's default
 * since mid-2023, and directfs).  tollgate asks the binary once at create
 * (`runsc --version`, `runsc flags`) and remembers the answer per binary, keyed by its device, inode,
 * size, mtime and ctime, so an upgraded or replaced binary is asked again
 * and an unchanged one costs a stat and a small read.
 */
#ifndef TOLLGATE_RUNSC_VERSION_H
#define TOLLGATE_RUNSC_VERSION_H

#include <stdbool.h>

#include "base/error.h"

struct runsc_version {
  unsigned date; /* the release, as YYYYMMDD (20240729), or 0 when unknown */
  char *text;    /* the first line of `runsc --version`, owned; may be "" */
  /* What the binary itself lists in `runsc flags` (a capability, not a
   * guess from the date): */
  bool systrap;  /* --platform takes systrap (20240729 yes, 20221219 no) */
  bool directfs; /* it has --directfs (on by default where it exists) */
};

/* Parse `runsc --version` output: "runsc version 0.0~20240729.0" (Debian),
 * "runsc version release-20240729.0" (upstream) or anything else (a source
 * build says "VERSION_MISSING": date 0).  Fills date and text; never
 * fails. */
void runsc_version_parse(const char *text, struct runsc_version *v);

/* Parse `runsc flags` output into v's systrap and directfs. */
void runsc_flags_parse(const char *text, struct runsc_version *v);

/* The version of the runsc binary at path (absolute).  The answer is
 * cached in cache_dir (created if its parent exists; NULL = no cache) as
 * one small JSON file per binary.  A binary that cannot say its version
 * is not an error here: *v gets date 0 and the caller stays conservative.
 * Fails only when path cannot be stat'ed. */
int runsc_version_of(const char *path, const char *cache_dir,
                     struct runsc_version *v, tg_error **err);

/* The --platform value for v: "auto" (the default) becomes ptrace (the
 * faster here on every release that has both, docs/performance.md); an
 * explicit value is kept, except systrap on a release that lacks it,
 * which is an error naming the fix.  Returns a
 * static or the configured string (not owned), or NULL with *err set. */
const char *runsc_platform_for(const struct runsc_version *v,
                               const char *configured, tg_error **err);

void runsc_version_free(struct runsc_version *v);

#endif

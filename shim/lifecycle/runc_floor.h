/* The runc version floor: a runc older than the releases that fixed
 * CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 (the data file
 * backend-floor.json lists them per series) is refused at create, or,
 * by default, named in a warning once per tollgate root and runc binary.
 * docs/hardening.md, "The runc version floor", has the Debian result. */
#ifndef TOLLGATE_RUNC_FLOOR_H
#define TOLLGATE_RUNC_FLOOR_H

#include <stdbool.h>

#include "shim/lifecycle/backend.h"
#include "shim/context.h"
#include "base/error.h"
#include "base/json.h"

/* -1, 0 or 1 as version a is older than, equal to, or newer than b, in
 * semver order ("1.4.0-rc.3" < "1.4.0"; "+build" suffixes ignored).
 * Unparseable versions compare as the oldest. */
int runc_version_compare(const char *a, const char *b);

/* Is version below the floor in floor (the "runc" object of
 * backend-floor.json)?  When true, *fix (if not NULL) gets an owned list
 * of the fixed releases ("1.2.8, 1.3.3, 1.4.0-rc.3"). */
bool runc_below_floor(const char *version, const json_t *floor, char **fix);

/* At create with runc: find the binary's version (`runc --version`,
 * cached in the root by inode, size and mtime), compare it with the
 * floor, and refuse (host config "runc_version_floor": "refuse") naming
 * the version, the CVEs and the fix, or warn once.  0 or -1 with *err. */
int runc_floor_check(const struct cli *cli, const struct backend *b,
                     tg_error **err);

#endif

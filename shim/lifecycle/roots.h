/* The registry of state roots: every create registers its --root, so that
 * `tollgate list --all-roots` and `tollgate gc --all-roots` reach the
 * containers of every root on the host, the SDK's temporary ones included
 * (docs/reliability.md).
 *
 * TG_ROOTS_REGISTRY holds one file per root, named by a hash of the
 * root's real path and holding that path.  Only what tollgate (as root)
 * wrote counts: the directory and each entry must be owned by this user
 * and writable by nobody else, an entry's name must be its content's
 * hash, and the root it names must be a real directory (no symbolic
 * link), owned by this user and writable by nobody else.  Entries whose
 * root is gone are removed when read. */
#ifndef TOLLGATE_ROOTS_H
#define TOLLGATE_ROOTS_H

#include <stddef.h>

#ifndef TG_ROOTS_REGISTRY
#define TG_ROOTS_REGISTRY "/run/tollgate-roots"
#endif

/* Register root (an existing directory).  Never fails: a caller that may
 * not write the registry (not root) only goes unlisted. */
void roots_register(const char *root);

/* Every registered root that passes the checks, plus current (when it
 * exists), as real paths, sorted, without duplicates.  Owned array of
 * owned strings; roots_free() frees it. */
char **roots_list(const char *current, size_t *n);
void roots_free(char **roots, size_t n);

#endif

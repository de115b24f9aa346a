/* Which config.json tollgate wrote.
 *
 * create replaces a bundle's config.json with the effective config and
 * keeps the user's as config.json.orig; a second create from the same
 * bundle must harden the user's original again, not the rewritten file.
 * The mark is a file beside config.json holding the SHA-256 of the
 * effective configs tollgate wrote there (the latest two: the mark is
 * written before config.json, so a crash between the two leaves the older
 * one matching).  It is not an annotation: annotations reach hooks and
 * the container's state, which must carry the user's own only.  A
 * config.json that matches no digest is the user's, whatever else is
 * beside it. */
#ifndef TOLLGATE_EFFECTIVE_MARK_H
#define TOLLGATE_EFFECTIVE_MARK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/json.h"

#define EFFECTIVE_MARK "config.json.tollgate"

/* Was config.json (its bytes data, parsed as parsed) written by an
 * earlier create?  Its digest is a whole line of the mark beside it in
 * bundle_fd (untrusted: the bundle is the user's), or it carries the
 * annotation older tollgates put in the effective config instead. */
bool effective_mark_is_ours(int bundle_fd, const char *data, size_t len, const json_t *parsed);

/* Write the mark for a new effective config eff: its digest, and the
 * digest of the config.json it replaces when that one was ours too.
 * bundle names the directory in errors.  0 or -1 with *err. */
int effective_mark_write(int bundle_fd, const char *bundle, const char *eff, size_t eff_len,
                         const char *replaced, size_t replaced_len, bool replaced_ours,
                         tg_error **err);

#endif

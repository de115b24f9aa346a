/* A set of strings with a flag each (FNV-1a, open addressing): the call
 * ids a replay of the audit log must recognise (budget_replay.c).  Its
 * size is what the caller adds, never what a lookup asks for.  Not
 * locked. */
#ifndef TOLLGATE_ID_SET_H
#define TOLLGATE_ID_SET_H

#include <stdbool.h>
#include <stddef.h>

struct id_set;

struct id_set *id_set_new(void);
void id_set_free(struct id_set *s);

/* Add key (copied), its flag clear; adding a key already there is a
 * no-op.  Returns true when it was new. */
bool id_set_add(struct id_set *s, const char *key);

/* Is key in the set?  *flag (may be NULL) gets its flag. */
bool id_set_has(const struct id_set *s, const char *key, bool *flag);

/* Set key's flag, when key is in the set; false when it is not. */
bool id_set_mark(struct id_set *s, const char *key);

size_t id_set_len(const struct id_set *s);

#endif

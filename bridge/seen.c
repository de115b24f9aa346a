/* The set of taken call ids; see seen.h. */
#include "bridge/seen.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bridge/protocol.h"
#include "base/util.h"

/* ---- the set of answered ids (FNV-1a, open addressing) ---- */

static size_t hash_id(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

struct seen_id *seen_find(struct seen_set *set, const char *id) {
  if (set->cap == 0)
    return NULL;
  for (size_t i = hash_id(id) & (set->cap - 1);; i = (i + 1) & (set->cap - 1)) {
    if (set->slots[i] == NULL)
      return NULL;
    if (strcmp(set->slots[i]->id, id) == 0)
      return set->slots[i];
  }
}

static void seen_insert_slot(struct seen_id **slots, size_t cap,
                             struct seen_id *e) {
  size_t i = hash_id(e->id) & (cap - 1);
  while (slots[i] != NULL)
    i = (i + 1) & (cap - 1);
  slots[i] = e;
}

struct seen_id *seen_add(struct seen_set *set, const char *id) {
  if (set->len >= set->max)
    return NULL;
  if ((set->len + 1) * 2 > set->cap) {
    size_t ncap = set->cap ? set->cap * 2 : 1024;
    struct seen_id **n = xcalloc(ncap, sizeof *n);
    for (size_t i = 0; i < set->cap; i++)
      if (set->slots[i])
        seen_insert_slot(n, ncap, set->slots[i]);
    free(set->slots);
    set->slots = n;
    set->cap = ncap;
  }
  size_t len = strlen(id);
  struct seen_id *e = xcalloc(1, sizeof *e + len + 1);
  atomic_init(&e->marker_gone, false);
  memcpy(e->id, id, len + 1);
  seen_insert_slot(set->slots, set->cap, e);
  set->len++;
  atomic_store(&set->count, set->len);
  return e;
}

void seen_purge(struct seen_set *set, int resp_fd) {
  struct seen_id **old = set->slots;
  size_t cap = set->cap;
  set->slots = xcalloc(cap, sizeof *set->slots);
  set->len = 0;
  for (size_t i = 0; i < cap; i++) {
    struct seen_id *e = old[i];
    if (e == NULL)
      continue;
    if (atomic_load(&e->marker_gone)) {
      char name[BRIDGE_ID_MAX + 8];
      struct stat st;
      snprintf(name, sizeof name, "%s.done", e->id);
      bool present = fstatat(resp_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
      snprintf(name, sizeof name, "%s.json", e->id);
      present = present || fstatat(resp_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
      if (!present) {
        free(e);
        continue;
      }
    }
    seen_insert_slot(set->slots, cap, e);
    set->len++;
  }
  atomic_store(&set->count, set->len);
  set->last_purge_freed = set->len <= set->max - set->max / 4;
  free(old);
}

void seen_free(struct seen_set *set) {
  for (size_t i = 0; i < set->cap; i++)
    free(set->slots[i]);
  free(set->slots);
}


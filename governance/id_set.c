/* A set of strings with a flag each; see id_set.h. */
#include "governance/id_set.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct entry {
  char *key; /* NULL: an empty slot */
  bool flag;
};

struct id_set {
  struct entry *slots;
  size_t cap, len; /* cap a power of two, len at most cap / 2 */
};

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

struct id_set *id_set_new(void) {
  struct id_set *s = xcalloc(1, sizeof *s);
  s->cap = 16;
  s->slots = xcalloc(s->cap, sizeof *s->slots);
  return s;
}

void id_set_free(struct id_set *s) {
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->cap; i++)
    free(s->slots[i].key);
  free(s->slots);
  free(s);
}

static struct entry *slot_of(const struct id_set *s, const char *key) {
  size_t mask = s->cap - 1;
  for (size_t i = (size_t)fnv1a(key) & mask;; i = (i + 1) & mask)
    if (s->slots[i].key == NULL || strcmp(s->slots[i].key, key) == 0)
      return &s->slots[i];
}

static void grow(struct id_set *s) {
  struct entry *old = s->slots;
  size_t n = s->cap;
  s->cap *= 2;
  s->slots = xcalloc(s->cap, sizeof *s->slots);
  for (size_t i = 0; i < n; i++)
    if (old[i].key != NULL)
      *slot_of(s, old[i].key) = old[i];
  free(old);
}

bool id_set_add(struct id_set *s, const char *key) {
  if ((s->len + 1) * 2 > s->cap)
    grow(s);
  struct entry *e = slot_of(s, key);
  if (e->key != NULL)
    return false;
  e->key = xstrdup(key);
  e->flag = false;
  s->len++;
  return true;
}

bool id_set_has(const struct id_set *s, const char *key, bool *flag) {
  const struct entry *e = slot_of(s, key);
  if (flag)
    *flag = e->key != NULL && e->flag;
  return e->key != NULL;
}

bool id_set_mark(struct id_set *s, const char *key) {
  struct entry *e = slot_of(s, key);
  if (e->key == NULL)
    return false;
  e->flag = true;
  return true;
}

size_t id_set_len(const struct id_set *s) { return s->len; }

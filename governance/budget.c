/* Budget counters; see budget.h.  The repeat limit keys calls by a SHA-256
 * of the tool name and the canonical arguments, so memory per distinct
 * call is constant whatever the arguments' size. */
#include "governance/budget.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/util.h"

struct repeat_slot {
  unsigned char digest[DIGEST_BYTES];
  long long count;
  bool used;
};

struct budget {
  const struct policy *p;
  long long max_calls; /* the cap */
  long long attempts;
  double cost;
  long long irreversible;
  long long *per_tool;
  size_t nper_tool; /* slots in per_tool: the policy's tools + 1 */
  struct repeat_slot *repeats;
  size_t nrepeats, repeats_size;
};

struct budget *budget_new(const struct policy *p) {
  struct budget *b = xcalloc(1, sizeof *b);
  b->p = p;
  b->max_calls = p ? p->budgets.max_tool_calls : 50;
  b->nper_tool = p ? p->ntools + 1 : 1;
  b->per_tool = xcalloc(b->nper_tool, sizeof *b->per_tool);
  return b;
}

void budget_free(struct budget *b) {
  if (b == NULL)
    return;
  free(b->per_tool);
  free(b->repeats);
  free(b);
}

bool budget_count_attempt(struct budget *b, const char **why) {
  b->attempts++;
  if (b->attempts > b->max_calls) {
    *why = "max_tool_calls reached: this run may make no more tool calls";
    return false;
  }
  return true;
}

/* The canonical form is written straight into a buffer, each object's
 * members in key order through a sorted index: no copy of the arguments'
 * tree and no yajl generator per call. */
static int key_cmp(const void *a, const void *b) {
  return strcmp(**(char **const *)a, **(char **const *)b);
}

static void canonical_value(struct json_buf *b, const json_t *v) {
  if (v->type == JSON_ARRAY) {
    json_buf_lit(b, "[");
    for (size_t i = 0; i < v->u.array.len; i++) {
      if (i)
        json_buf_lit(b, ",");
      canonical_value(b, v->u.array.items[i]);
    }
    json_buf_lit(b, "]");
    return;
  }
  if (v->type != JSON_OBJECT) {
    json_buf_value(b, v);
    return;
  }
  size_t n = v->u.object.len;
  /* Pointers into the key array: sorted, each one's offset from the start
   * is the member's index. */
  cleanup_free char ***order = xmalloc((n ? n : 1) * sizeof *order);
  for (size_t i = 0; i < n; i++)
    order[i] = &v->u.object.keys[i];
  qsort(order, n, sizeof *order, key_cmp);
  json_buf_lit(b, "{");
  for (size_t i = 0; i < n; i++) {
    size_t k = (size_t)(order[i] - v->u.object.keys);
    if (i)
      json_buf_lit(b, ",");
    json_buf_cstr(b, v->u.object.keys[k]);
    json_buf_lit(b, ":");
    canonical_value(b, v->u.object.values[k]);
  }
  json_buf_lit(b, "}");
}

char *json_canonical(const json_t *v, size_t *len) {
  struct json_buf b = {0};
  canonical_value(&b, v);
  if (len)
    *len = b.len;
  return b.s;
}

static void digest_call(const struct tool *t, const json_t *args, unsigned char out[DIGEST_BYTES]) {
  size_t len = 0;
  cleanup_free char *canon = args ? json_canonical(args, &len) : xstrdup("{}");
  if (args == NULL)
    len = 2;
  /* The name with its NUL, then the canonical arguments: no two
   * (name, args) pairs feed the same bytes. */
  cleanup_digest struct digest *md = digest_new();
  if (digest_init(md, NULL) < 0 || digest_update(md, t->name, strlen(t->name) + 1, NULL) < 0 ||
      digest_update(md, canon, len, NULL) < 0 || digest_final(md, out, NULL) < 0)
    abort(); /* libcrypto failing on SHA-256 means memory exhaustion */
}

static struct repeat_slot *repeat_slot(struct budget *b, const unsigned char d[DIGEST_BYTES]) {
  if (b->nrepeats * 2 >= b->repeats_size) {
    size_t nsize = b->repeats_size ? b->repeats_size * 2 : 64;
    struct repeat_slot *n = xcalloc(nsize, sizeof *n);
    for (size_t i = 0; i < b->repeats_size; i++) {
      if (!b->repeats[i].used)
        continue;
      size_t j;
      memcpy(&j, b->repeats[i].digest, sizeof j);
      for (j &= nsize - 1; n[j].used; j = (j + 1) & (nsize - 1))
        ;
      n[j] = b->repeats[i];
    }
    free(b->repeats);
    b->repeats = n;
    b->repeats_size = nsize;
  }
  size_t j;
  memcpy(&j, d, sizeof j);
  for (j &= b->repeats_size - 1;; j = (j + 1) & (b->repeats_size - 1)) {
    struct repeat_slot *s = &b->repeats[j];
    if (!s->used) {
      s->used = true;
      memcpy(s->digest, d, 32);
      b->nrepeats++;
      return s;
    }
    if (memcmp(s->digest, d, DIGEST_BYTES) == 0)
      return s;
  }
}

bool budget_count_repeat(struct budget *b, const struct tool *t, const json_t *args,
                         char **why) {
  *why = NULL;
  if (b->p == NULL || b->p->budgets.repeat_limit < 0)
    return true;
  unsigned char d[DIGEST_BYTES];
  digest_call(t, args, d);
  struct repeat_slot *s = repeat_slot(b, d);
  s->count++;
  if (s->count > b->p->budgets.repeat_limit) {
    *why = xasprintf("repeat_limit reached: %s was already called %lld times with these same arguments",
                     t->name, b->p->budgets.repeat_limit);
    return false;
  }
  return true;
}

bool budget_fits(const struct budget *b, const struct tool *t, char **why) {
  *why = NULL;
  if (b->p == NULL)
    return true;
  const struct budgets *l = &b->p->budgets;
  if (l->max_cost >= 0 && b->cost + t->cost > l->max_cost + 1e-9) {
    *why = xasprintf("max_cost reached: %s costs %g and %g of %g is spent", t->name, t->cost,
                     b->cost, l->max_cost);
    return false;
  }
  if (t->irreversible && l->max_irreversible >= 0 && b->irreversible + 1 > l->max_irreversible) {
    *why = xasprintf("max_irreversible reached: %lld irreversible calls already made",
                     b->irreversible);
    return false;
  }
  if (t->max_calls >= 0 && b->per_tool[t->index] + 1 > t->max_calls) {
    *why = xasprintf("max_calls reached for %s: %lld calls already made", t->name,
                     b->per_tool[t->index]);
    return false;
  }
  return true;
}

void budget_take(struct budget *b, const struct tool *t) {
  b->cost += t->cost;
  if (t->irreversible)
    b->irreversible++;
  b->per_tool[t->index]++;
}

bool budget_reserve(struct budget *b, const struct tool *t, char **why) {
  if (!budget_fits(b, t, why))
    return false;
  budget_take(b, t);
  return true;
}

void budget_reset(struct budget *b) {
  b->attempts = 0;
  b->cost = 0;
  b->irreversible = 0;
  memset(b->per_tool, 0, b->nper_tool * sizeof *b->per_tool);
  free(b->repeats);
  b->repeats = NULL;
  b->nrepeats = b->repeats_size = 0;
}

void budget_tool_added(struct budget *b) {
  size_t n = b->p ? b->p->ntools + 1 : 1;
  if (n <= b->nper_tool)
    return;
  b->per_tool = xrealloc(b->per_tool, n * sizeof *b->per_tool);
  memset(b->per_tool + b->nper_tool, 0, (n - b->nper_tool) * sizeof *b->per_tool);
  b->nper_tool = n;
}

void budget_release(struct budget *b, const struct tool *t) {
  b->cost -= t->cost;
  if (b->cost < 0)
    b->cost = 0;
  if (t->irreversible && b->irreversible > 0)
    b->irreversible--;
  if (b->per_tool[t->index] > 0)
    b->per_tool[t->index]--;
}

static json_t *used_max(double used, double max, bool has_max) {
  json_t *o = json_new_object();
  json_object_set(o, "used", json_new_number(used));
  json_object_set(o, "max", has_max ? json_new_number(max) : json_new_null());
  if (has_max)
    json_object_set(o, "remaining", json_new_number(max - used > 0 ? max - used : 0));
  return o;
}

json_t *budget_to_json(const struct budget *b) {
  json_t *o = json_new_object();
  json_object_set(o, "calls", used_max((double)b->attempts, (double)b->max_calls, true));
  if (b->p) {
    const struct budgets *l = &b->p->budgets;
    json_object_set(o, "cost", used_max(b->cost, l->max_cost, l->max_cost >= 0));
    json_object_set(o, "irreversible",
                    used_max((double)b->irreversible, (double)l->max_irreversible,
                             l->max_irreversible >= 0));
    json_t *tools = json_new_object();
    for (size_t i = 0; i < b->p->ntools; i++) {
      const struct tool *t = b->p->tools[i];
      if (t->max_calls >= 0 || b->per_tool[i] > 0)
        json_object_set(tools, t->name,
                        used_max((double)b->per_tool[i], (double)t->max_calls, t->max_calls >= 0));
    }
    json_object_set(o, "tools", tools);
    json_object_set(o, "repeat_limit",
                    l->repeat_limit >= 0 ? json_new_integer(l->repeat_limit) : json_new_null());
  }
  return o;
}

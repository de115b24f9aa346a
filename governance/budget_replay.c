/* Replaying an audit log's segment into a budget; see budget_replay.h. */
#include "governance/budget_replay.h"

#include <stdlib.h>
#include <string.h>

#include "governance/verify.h"

struct replay {
  struct budget *b;
  const struct policy *p;
};

/* Summary kinds whose attempts count toward the cap (junk and back-off
 * are no call attempts; governance/refusals.c). */
static bool summary_counts(const char *kind) {
  static const char *const counted[] = {"over_cap", "bad_id", "replay", "unremembered",
                                        "withdrawn"};
  for (size_t i = 0; kind && i < sizeof counted / sizeof counted[0]; i++)
    if (strcmp(kind, counted[i]) == 0)
      return true;
  return false;
}

static void attempts(struct budget *b, long long n) {
  const char *why = NULL;
  for (long long i = 0; i < n; i++)
    budget_count_attempt(b, &why);
}

static int replay_record(void *ctx, const json_t *rec) {
  struct replay *r = ctx;
  const char *event = json_string_value(json_object_get(rec, "event"));
  if (event == NULL)
    return 0;
  if (strcmp(event, "open") == 0) {
    budget_reset(r->b); /* a new run: the segment starts here */
    return 0;
  }
  if (strcmp(event, "summary") == 0) {
    long long n = 0;
    if (summary_counts(json_string_value(json_object_get(rec, "kind"))) &&
        json_integer_value(json_object_get(rec, "count"), &n) && n > 0)
      attempts(r->b, n);
    return 0;
  }
  bool governed = strcmp(event, "call") == 0 || strcmp(event, "intent") == 0;
  if (!governed && strcmp(event, "unanswerable") != 0 && strcmp(event, "withdrawn") != 0 &&
      strcmp(event, "unknown") != 0)
    return 0; /* outcome (its intent counted), sidecar_died, junk, ... */
  attempts(r->b, 1);
  const char *tool = json_string_value(json_object_get(rec, "tool"));
  const struct tool *t = governed && tool && r->p ? policy_find(r->p, tool) : NULL;
  if (t == NULL)
    return 0;
  const json_t *args = json_object_get(rec, "args");
  if (json_is(args, JSON_OBJECT)) {
    char *why = NULL;
    budget_count_repeat(r->b, t, args, &why);
    free(why);
  }
  const char *decision = json_string_value(json_object_get(rec, "decision"));
  if (decision && strcmp(decision, "allow") == 0) {
    char *why = NULL;
    if (!budget_reserve(r->b, t, &why))
      budget_take(r->b, t); /* spent is spent, over the limit or not */
    free(why);
  }
  return 0;
}

int budget_replay_log(struct budget *b, const struct policy *p, const char *path, tg_error **err) {
  struct replay r = {.b = b, .p = p};
  return audit_each_record(path, replay_record, &r, err);
}

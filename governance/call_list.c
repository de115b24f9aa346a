/* The calls of one gate's run (call_list.h).  The gate's lock is held
 * around every function here. */
#include "governance/call_list.h"

#include <stdlib.h>

#include "base/util.h"

struct call_entry {
  char *id;
  char *tool;
  const char *decision; /* static */
  const char *status;   /* static: "pending", "running", "ok" or an error code */
  char time[40];
  long long duration_ms;
};

struct call_list {
  struct call_entry *calls; /* room for CALL_LIST_KEPT */
  size_t ncalls;
};

struct call_list *call_list_new(void) {
  struct call_list *l = xcalloc(1, sizeof *l);
  l->calls = xcalloc(CALL_LIST_KEPT, sizeof *l->calls);
  return l;
}

void call_list_free(struct call_list *l) {
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->ncalls; i++) {
    free(l->calls[i].id);
    free(l->calls[i].tool);
  }
  free(l->calls);
  free(l);
}

long call_list_begin(struct call_list *l, const char *id, const char *tool) {
  if (l->ncalls >= CALL_LIST_KEPT)
    return -1;
  struct call_entry *c = &l->calls[l->ncalls];
  c->id = xstrdup(id ? id : "");
  c->tool = xstrdup(tool ? tool : "");
  c->decision = "";
  c->status = "pending";
  c->duration_ms = -1;
  rfc3339_now(c->time, sizeof c->time);
  return (long)l->ncalls++;
}

void call_list_set_tool(struct call_list *l, long idx, const char *tool) {
  if (idx < 0)
    return;
  free(l->calls[idx].tool);
  l->calls[idx].tool = xstrdup(tool);
}

void call_list_update(struct call_list *l, long idx, const char *decision, const char *status,
                      long long duration_ms) {
  if (idx < 0)
    return;
  struct call_entry *c = &l->calls[idx];
  if (decision)
    c->decision = decision;
  if (status)
    c->status = status;
  if (duration_ms >= 0)
    c->duration_ms = duration_ms;
}

size_t call_list_count(const struct call_list *l) { return l->ncalls; }

json_t *call_list_json(const struct call_list *l) {
  json_t *arr = json_new_array();
  for (size_t i = 0; i < l->ncalls; i++) {
    const struct call_entry *c = &l->calls[i];
    json_t *e = json_new_object();
    json_object_set(e, "call", json_new_string(c->id));
    json_object_set(e, "time", json_new_string(c->time));
    json_object_set(e, "tool", json_new_string(c->tool));
    json_object_set(e, "decision", json_new_string(c->decision));
    json_object_set(e, "status", json_new_string(c->status));
    json_object_set(e, "duration_ms",
                    c->duration_ms >= 0 ? json_new_integer(c->duration_ms) : json_new_null());
    json_array_append(arr, e);
  }
  return arr;
}

json_t *call_list_tail_json(const struct call_list *l, size_t max) {
  json_t *calls = json_new_array();
  size_t first = l->ncalls > max ? l->ncalls - max : 0;
  for (size_t i = first; i < l->ncalls; i++) {
    json_t *e = json_new_object();
    json_object_set(e, "call", json_new_string(l->calls[i].id));
    json_object_set(e, "tool", l->calls[i].tool ? json_new_string(l->calls[i].tool) : json_new_null());
    json_object_set(e, "status", json_new_string(l->calls[i].status));
    json_array_append(calls, e);
  }
  return calls;
}

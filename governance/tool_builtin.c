/* Builtin tools, for tests and benchmarks: nothing leaves the process. */
#include <stdlib.h>
#include <string.h>

#include "governance/tools.h"
#include "base/util.h"

void tool_result_clear(struct tool_result *r) {
  free(r->message);
  json_free(r->result);
  json_free(r->audit);
  memset(r, 0, sizeof *r);
}

void tool_builtin_run(const struct tool *t, const json_t *args, struct tool_result *r) {
  memset(r, 0, sizeof *r);
  if (t->backend.name && strcmp(t->backend.name, "echo") == 0) {
    r->result = args ? json_copy(args) : json_new_object();
    return;
  }
  /* The policy checker only accepts known builtins; this is a safety net. */
  r->code = "tool_failed";
  r->message = xasprintf("unknown builtin \"%s\"", t->backend.name ? t->backend.name : "");
}

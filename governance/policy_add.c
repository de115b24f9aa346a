/* One agent-written tool entry checked for a running gate (add_tool,
 * governance/gate_tools.c): the policy loader's own tool parser, then what
 * an addition must be besides (policy.h). */
#include "governance/policy.h"
#include "governance/policy_parse.h"

#include <stdio.h>

#include "base/util.h"

int policy_parse_added_tool(const struct policy *p, const char *name, const json_t *entry,
                            long long ceiling_max, struct tool **out, tg_error **err) {
  *out = NULL;
  if (name == NULL || entry == NULL)
    return tg_error_set(err, 0, "add_tool needs \"name\" (the tool's name) and \"entry\" (its policy entry)");
  /* The loader's own checks, on the entry alone: what a live gate takes is
   * exactly what the same entry in the policy file would be.  The context
   * borrows p only for the directory relative programs resolve against. */
  struct policy_ctx c = {.p = (struct policy *)p, .errs = {.file = "add_tool"}};
  struct tool *t = policy_parse_tool(&c, name, entry);
  if (t != NULL && c.errs.len == 0) {
    cleanup_free char *path = xasprintf("tools.%s", name);
    /* Only an agent-written tool may be added: without this, the control
     * socket would be a way to grow a run's powers with a person's tool
     * that no policy review saw. */
    if (t->source_sha256 == NULL)
      policy_error_add(&c.errs, entry, path,
                       "has no source_sha256: only agent-written tools may be added to a running "
                       "gate; add a person's tool to the policy file instead");
    else if (policy_find(p, name) != NULL)
      policy_error_add(&c.errs, entry, path,
                       "the policy has a tool of that name already; an added tool never replaces "
                       "one (choose another name)");
    else if (t->backend.type == BACKEND_MCP)
      policy_error_add(&c.errs, entry, path,
                       "an added tool cannot use an mcp backend (its server's tools are read as "
                       "the gate starts); use exec, socket, builtin or http");
    size_t have = policy_custom_tools(p);
    long long max = p->budgets.max_custom_tools;
    if (max >= 0 && have + 1 > (size_t)max)
      policy_error_add(&c.errs, NULL, "budgets.max_custom_tools",
                       "the run has %zu agent-written tools, its max_custom_tools is %lld: no "
                       "more may be added (raise the limit in the policy for later runs)",
                       have, max);
    else if (ceiling_max >= 0 && have + 1 > (size_t)ceiling_max)
      policy_error_add(&c.errs, NULL, "budgets.max_custom_tools",
                       "the run has %zu agent-written tools, the host's policy ceiling allows "
                       "%lld: no more may be added",
                       have, ceiling_max);
  }
  if (t == NULL || c.errs.len > 0) {
    cleanup_free char *all = policy_errors_join(&c.errs);
    policy_errors_free(&c.errs);
    policy_tool_free(t);
    return tg_error_set(err, 0, "%s", all ? all : "the tool entry is not valid");
  }
  policy_errors_free(&c.errs);
  *out = t;
  return 0;
}

/* tollgate mcp [--policy FILE] [--rootfs DIR] [--tools FILE.py]...: an MCP
 * server on stdio or Streamable HTTP (--http HOST:PORT) offering governed
 * code execution (docs/mcp.md).
 *
 * The server itself is the host SDK's tollgate_sdk.mcp (Python, on the
 * official `mcp` package): this verb only finds the SDK beside the binary
 * and the Python that has its dependencies, and execs it
 * with the global flags the caller gave (--root, --config, --runtime) and
 * this binary's own path, so every container it starts goes through the
 * same tollgate.  Whether the client may approve parked calls is the host
 * config's decision (mcp_allow_approve), never the client's: the flag is
 * passed from here and the Python side offers pending_approvals, approve
 * and deny only with it; the same holds for elicitation approvals
 * (mcp_elicit_approvals, --allow-elicit) and the session cap
 * (mcp_max_sessions, --host-max-sessions, which a user's --max-sessions
 * may lower, never raise). */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/cli/commands.h"
#include "shim/cli/host_python.h"
#include "base/util.h"

int cmd_mcp(struct cli *cli, int argc, char **argv, tg_error **err) {
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--allow", 7) == 0)
      return tg_error_set(err, 0,
                          "mcp: %s is not a flag: whether the MCP client may approve calls is set "
                          "by \"mcp_allow_approve\" (its approve tools) and \"mcp_elicit_approvals\" "
                          "(asking the person by elicitation) in the host config",
                          argv[i]);
    else if (strncmp(argv[i], "--host", 6) == 0)
      return tg_error_set(err, 0,
                          "mcp: %s is not a flag: the host's session cap is \"mcp_max_sessions\" in "
                          "the host config (--max-sessions N may only lower it)",
                          argv[i]);
  const char *runtime = cli->runtime_override ? cli->runtime_override : cli->config.runtime;
  size_t max = (size_t)argc + 16;
  char **args = xmalloc(max * sizeof *args);
  size_t k = 0;
  args[k++] = "--root";
  args[k++] = (char *)cli->root;
  if (cli->config_path) {
    args[k++] = "--config";
    args[k++] = (char *)cli->config_path;
  }
  if (runtime) {
    args[k++] = "--runtime";
    args[k++] = (char *)runtime;
  }
  if (cli->config.mcp_allow_approve)
    args[k++] = "--allow-approve";
  if (cli->config.mcp_elicit_approvals)
    args[k++] = "--allow-elicit";
  char cap[24];
  snprintf(cap, sizeof cap, "%d", cli->config.mcp_max_sessions);
  args[k++] = "--host-max-sessions";
  args[k++] = cap;
  for (int i = 1; i < argc; i++)
    args[k++] = argv[i];
  args[k] = NULL;
  int r = host_python_exec(cli, "mcp", "tollgate_sdk.mcp", args, k, err);
  free(args);
  return r;
}

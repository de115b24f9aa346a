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
  cleanup_free char *pkg = host_config_data_path(&cli->config, "sdk/tollgate_sdk", err);
  if (pkg == NULL)
    return tg_error_wrap(err, "mcp: the host SDK (tollgate_sdk) is needed");
  cleanup_free char *pkg_parent = xstrdup(pkg);
  char *slash = strrchr(pkg_parent, '/');
  if (slash != NULL)
    *slash = '\0';
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0)
    return tg_error_set(err, errno, "mcp: cannot find tollgate's own binary");
  self[n] = '\0';

  /* The interpreter: TOLLGATE_PYTHON (3.11 or newer, with the pinned `mcp`
   * package), else the project's virtual environment beside the SDK that
   * `make deps` made (.venv in the source tree, lib/tollgate/venv in an
   * install), else the distribution's; never whatever a PATH happens to put
   * first.  The server itself names `make deps` when `mcp` is missing. */
  const char *python = getenv("TOLLGATE_PYTHON");
  cleanup_free char *venv = NULL;
  if (python == NULL || *python == '\0') {
    static const char lib[] = "/lib/tollgate";
    size_t len = strlen(pkg_parent);
    bool installed = len >= sizeof lib - 1 && strcmp(pkg_parent + len - (sizeof lib - 1), lib) == 0;
    venv = xasprintf(installed ? "%s/venv/bin/python3" : "%s/../.venv/bin/python3", pkg_parent);
    if (access(venv, X_OK) == 0)
      python = venv;
    else
      python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  }
  const char *runtime = cli->runtime_override ? cli->runtime_override : cli->config.runtime;
  size_t max = (size_t)argc + 16;
  char **args = xmalloc(max * sizeof *args);
  size_t k = 0;
  args[k++] = (char *)python;
  args[k++] = "-m";
  args[k++] = "tollgate_sdk.mcp";
  args[k++] = "--tollgate";
  args[k++] = self;
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
  const char *old = getenv("PYTHONPATH");
  cleanup_free char *pp = old && *old ? xasprintf("%s:%s", pkg_parent, old) : xstrdup(pkg_parent);
  if (setenv("PYTHONPATH", pp, 1) < 0) {
    free(args);
    return tg_error_set(err, errno, "mcp: setenv PYTHONPATH");
  }
  fflush(NULL);
  execvp(python, args);
  int e = errno;
  free(args);
  return tg_error_set(err, e, "mcp: cannot run %s (set TOLLGATE_PYTHON to a Python 3.11 or newer)",
                      python);
}

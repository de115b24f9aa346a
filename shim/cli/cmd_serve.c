/* tollgate serve --tenants FILE [--listen HOST:PORT] [--socket PATH] ...:
 * the self-hosted sandbox service that the e2b SDKs use (docs/serve.md).
 * The service is the host SDK's tollgate_sdk.serve; this verb execs it
 * with this binary's own path, so every container it makes goes through
 * the same tollgate, and the global --runtime the caller gave. */
#include <stdlib.h>

#include "shim/cli/commands.h"
#include "shim/cli/host_python.h"
#include "base/util.h"

int cmd_serve(struct cli *cli, int argc, char **argv, tg_error **err) {
  char **args = xmalloc(((size_t)argc + 4) * sizeof *args);
  size_t k = 0;
  if (cli->runtime_override) {
    args[k++] = "--runtime";
    args[k++] = (char *)cli->runtime_override;
  }
  for (int i = 1; i < argc; i++)
    args[k++] = argv[i];
  int r = host_python_exec(cli, "serve", "tollgate_sdk.serve", args, k, err);
  free(args);
  return r;
}

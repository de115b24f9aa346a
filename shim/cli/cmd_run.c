/* tollgate run [--detach] [--keep] [create's flags] ID: the work is
 * shim/lifecycle/run.h's. */
#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/run.h"

int cmd_run(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct run_request req;
  if (cli_parse_run(argc, argv, &req, err) < 0)
    return -1;
  if (req.detach)
    return container_run_detached(cli, &req.create, err);
  return container_run(cli, &req.create, req.keep, err);
}

/* tollgate delete [--force] ID.  The bundle keeps the effective config,
 * with the user's original beside it: delete restores nothing there. */
#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"

int cmd_delete(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct delete_request req;
  if (cli_parse_delete(argc, argv, &req, err) < 0)
    return -1;
  return container_delete(cli, req.id, req.force, err);
}

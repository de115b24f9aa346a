/* tollgate create: see container_create() for the steps and the undo. */
#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"

int cmd_create(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct create_request req;
  if (cli_parse_create(argc, argv, &req, err) < 0)
    return -1;
  struct created c;
  if (container_create(cli, &req, &c, err) < 0)
    return -1;
  created_free(&c);
  return 0; /* nothing is printed on success */
}

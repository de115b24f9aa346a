/* tollgate start ID: the recorded backend's start. */
#include "shim/commands.h"
#include "shim/container.h"

int cmd_start(struct cli *cli, int argc, char **argv, tg_error **err) {
  return container_simple_verb(cli, "start", argc, argv, err);
}

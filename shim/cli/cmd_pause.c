/* tollgate pause ID: the recorded backend's pause. */
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"

int cmd_pause(struct cli *cli, int argc, char **argv, tg_error **err) {
  return container_simple_verb(cli, "pause", argc, argv, err);
}

/* tollgate resume ID: the recorded backend's resume. */
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"

int cmd_resume(struct cli *cli, int argc, char **argv, tg_error **err) {
  return container_simple_verb(cli, "resume", argc, argv, err);
}

/* Placeholder until the hardening issue lands. */
#include "shim/commands.h"

int cmd_spec(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)cli; (void)argc; (void)argv;
  return tg_error_set(err, 0, "spec: not built yet (the hardening issue)");
}

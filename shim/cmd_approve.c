/* Placeholder until the governance issue lands. */
#include "shim/commands.h"

int cmd_approve(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)cli; (void)argc; (void)argv;
  return tg_error_set(err, 0, "approve: not built yet (the governance issue)");
}

int cmd_deny(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)cli; (void)argc; (void)argv;
  return tg_error_set(err, 0, "deny: not built yet (the governance issue)");
}

/* Placeholder until the governance issue lands. */
#include "shim/commands.h"

int cmd_audit(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)cli; (void)argc; (void)argv;
  return tg_error_set(err, 0, "audit: not built yet (the governance issue)");
}

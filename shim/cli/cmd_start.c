/* tollgate start ID: the recorded backend's start (through the waiter for
 * a container inside its pod's sandbox: shim/lifecycle/waiter.h). */
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "base/util.h"

int cmd_start(struct cli *cli, int argc, char **argv, tg_error **err) {
  if (argc != 2)
    return tg_error_set(err, 0, "start: usage: tollgate start ID");
  struct container c;
  cleanup_close int lock = -1; /* a delete waits for this call (or it for one) */
  if (container_load_shared(cli, argv[1], &c, &lock, err) < 0)
    return -1;
  int r = container_start(cli, &c, err);
  container_free(&c);
  return r;
}

/* tollgate kill [--all] ID [SIGNAL]: the recorded backend's kill, with
 * the signal already turned into a number (both backends take numbers). */
#include <stdio.h>

#include "shim/cli_parse.h"
#include "shim/commands.h"
#include "shim/container.h"
#include "shim/util.h"

int cmd_kill(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct kill_request req;
  if (cli_parse_kill(argc, argv, &req, err) < 0)
    return -1;
  struct container c;
  cleanup_close int lock = -1; /* a delete waits for this call (or it for one) */
  if (container_load_shared(cli, req.id, &c, &lock, err) < 0)
    return -1;
  char sig[16];
  snprintf(sig, sizeof sig, "%d", req.signal);
  char *args[] = {req.all ? "--all" : NULL, NULL};
  char *after[] = {sig, NULL};
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  int r = container_call(cli, &c, "kill", args, after, &quiet, &res, err);
  if (r > 0)
    r = container_backend_error(&c, "kill", &res, err);
  proc_result_free(&res);
  container_free(&c);
  return r < 0 ? -1 : 0;
}

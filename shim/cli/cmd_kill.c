/* tollgate kill [--all] ID [SIGNAL]: the recorded backend's kill, with
 * the signal already turned into a number (both backends take numbers). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "base/util.h"

/* kill --all of a container whose processes have all exited succeeds
 * under runc (there is nothing left to signal); runsc says "sandbox is
 * not running" and exits 1, which containerd tolerates only by matching
 * that text.  Asked after the backend refused, so the answer is the live
 * state, not a guess from the message: stopped means done. */
static bool all_already_exited(const struct cli *cli, const struct container *c) {
  tg_error *e = NULL;
  json_t *st = container_query(cli, c, &e);
  tg_error_free(&e);
  const char *status = json_string_value(json_object_get(st, "status"));
  bool stopped = status != NULL && strcmp(status, "stopped") == 0;
  json_free(st);
  return stopped;
}

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
  if (r > 0 && req.all && all_already_exited(cli, &c))
    r = 0;
  if (r > 0)
    r = container_backend_error(&c, "kill", &res, err);
  proc_result_free(&res);
  container_free(&c);
  return r < 0 ? -1 : 0;
}

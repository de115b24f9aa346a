/* tollgate kill [--all] ID [SIGNAL]: the recorded backend's kill, with
 * the signal already turned into a number (both backends take numbers). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "base/util.h"

/* The container's live status after the backend refused a kill, or NULL
 * when it cannot be had.  Owned. */
static char *live_status(const struct cli *cli, const struct container *c) {
  tg_error *e = NULL;
  json_t *st = container_query(cli, c, &e);
  tg_error_free(&e);
  const char *status = json_string_value(json_object_get(st, "status"));
  char *copy = status != NULL ? xstrdup(status) : NULL;
  json_free(st);
  return copy;
}

/* runsc's kill reaches the sandbox over its control socket; under load
 * the socket can drop a call ("urpc method ... failed: connection reset
 * by peer") while the sandbox lives on.  That is a failure to deliver,
 * not an answer about the container. */
static bool transport_failed(const struct proc_result *res) {
  const char *t = res->err_text ? res->err_text : "";
  return strstr(t, "urpc method") != NULL &&
         (strstr(t, "connection reset by peer") != NULL || strstr(t, "broken pipe") != NULL);
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
  /* Asked after the backend refused, so the answer is the live state, not
   * a guess from the message. */
  cleanup_free char *status = r > 0 ? live_status(cli, &c) : NULL;
  bool stopped = status != NULL && strcmp(status, "stopped") == 0;
  /* A dropped control call to a sandbox that still runs: once more.  (A
   * signal the first call did deliver arrives twice; a kill lost for
   * good is the worse outcome for containerd, which does not retry.) */
  if (r > 0 && !stopped && status != NULL && transport_failed(&res)) {
    proc_result_free(&res);
    memset(&res, 0, sizeof res);
    r = container_call(cli, &c, "kill", args, after, &quiet, &res, err);
  }
  /* kill --all of a container whose processes have all exited succeeds
   * under runc (there is nothing left to signal); runsc says "sandbox is
   * not running" and exits 1, which containerd tolerates only by matching
   * that text: stopped means done. */
  if (r > 0 && req.all && stopped)
    r = 0;
  if (r > 0 && stopped)
    r = tg_error_set(err, 0, "%s kill: container not running: %s is stopped", c.backend.name, req.id);
  else if (r > 0)
    r = container_backend_error(&c, "kill", &res, err);
  proc_result_free(&res);
  container_free(&c);
  return r < 0 ? -1 : 0;
}

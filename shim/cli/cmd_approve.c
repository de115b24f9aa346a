/* tollgate approve|deny ID CALL [--reason TEXT]: decide a parked call over
 * the container's control socket.  The sidecar checks who we are with
 * SO_PEERCRED; nothing we send can claim another identity. */
#include <stdio.h>
#include <string.h>

#include "governance/control.h"
#include "shim/cli/commands.h"
#include "base/util.h"

static int decide(struct cli *cli, int argc, char **argv, bool approve, tg_error **err) {
  const char *id = NULL, *call = NULL, *reason = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reason") == 0 && i + 1 < argc)
      reason = argv[++i];
    else if (strncmp(argv[i], "--reason=", 9) == 0)
      reason = argv[i] + 9;
    else if (argv[i][0] == '-')
      return tg_error_set(err, 0, "%s: unknown flag %s", argv[0], argv[i]);
    else if (id == NULL)
      id = argv[i];
    else if (call == NULL)
      call = argv[i];
    else
      return tg_error_set(err, 0, "%s: unexpected argument %s", argv[0], argv[i]);
  }
  if (id == NULL || call == NULL)
    return tg_error_set(err, 0, "usage: tollgate %s CONTAINER-ID CALL-ID [--reason TEXT] (see `tollgate pending`)",
                        argv[0]);
  if (!container_id_is_valid(id))
    return tg_error_set(err, 0, "%s: invalid container id \"%s\"", argv[0], id);
  cleanup_free char *sock = xasprintf("%s/%s/control.sock", cli->root, id);
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string(approve ? "approve" : "deny"));
  json_object_set(req, "call", json_new_string(call));
  if (reason)
    json_object_set(req, "reason", json_new_string(reason));
  cleanup_json json_t *reply = NULL;
  if (control_request(sock, req, 10000, &reply, err) < 0)
    return tg_error_wrap(err, "%s %s %s", argv[0], id, call);
  if (!json_is_true(json_object_get(reply, "ok"))) {
    const char *e = json_string_value(json_object_get(reply, "error"));
    return tg_error_set(err, 0, "%s %s %s: %s", argv[0], id, call, e ? e : "refused");
  }
  printf("%s %s\n", approve ? "approved" : "denied", call);
  return 0;
}

int cmd_approve(struct cli *cli, int argc, char **argv, tg_error **err) {
  return decide(cli, argc, argv, true, err);
}

int cmd_deny(struct cli *cli, int argc, char **argv, tg_error **err) {
  return decide(cli, argc, argv, false, err);
}

/* tollgate tool add ID FILE: add one agent-written tool to a running
 * container's gate over its control socket (docs/cli.md; the gate's side
 * is governance/gate_tools.c).  FILE holds {"NAME": ENTRY}, the shape of a
 * policy's "tools" member, with ENTRY carrying source_sha256.  The gate,
 * not this command, decides: it checks who we are with SO_PEERCRED (root
 * or its own uid) and validates the entry as the policy loader does. */
#include <stdio.h>
#include <string.h>

#include "governance/control.h"
#include "shim/cli/commands.h"
#include "base/util.h"

/* Under the control socket's one-request bound (64 KiB) with room for
 * the verb and the name. */
#define TOOL_FILE_MAX (60u << 10)

int cmd_tool(struct cli *cli, int argc, char **argv, tg_error **err) {
  if (argc != 4 || strcmp(argv[1], "add") != 0)
    return tg_error_set(err, 0, "usage: tollgate tool add CONTAINER-ID FILE (FILE: {\"NAME\": "
                                "{...the tool's policy entry, with source_sha256...}})");
  const char *id = argv[2], *file = argv[3];
  if (!container_id_is_valid(id))
    return tg_error_set(err, 0, "tool add: invalid container id \"%s\"", id);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file(file, TOOL_FILE_MAX, &buf, &len, err) < 0)
    return tg_error_wrap(err, "tool add: read %s (at most %u KiB)", file, TOOL_FILE_MAX >> 10);
  cleanup_error tg_error *perr = NULL;
  cleanup_json json_t *doc = json_parse(buf, len, NULL, &perr);
  if (doc == NULL || !json_is(doc, JSON_OBJECT) || doc->u.object.len != 1)
    return tg_error_set(err, 0, "tool add: %s must be one JSON object with one member, "
                                "{\"NAME\": {...the tool's policy entry...}}%s%s",
                        file, perr ? ": " : "", perr ? perr->msg : "");
  const char *name = doc->u.object.keys[0];
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string("add_tool"));
  json_object_set(req, "name", json_new_string(name));
  json_object_set(req, "entry", json_copy(doc->u.object.values[0]));
  cleanup_free char *sock = xasprintf("%s/%s/control.sock", cli->root, id);
  cleanup_json json_t *reply = NULL;
  if (control_request(sock, req, 10000, &reply, err) < 0)
    return tg_error_wrap(err, "tool add %s %s", id, name);
  if (!json_is_true(json_object_get(reply, "ok"))) {
    const char *e = json_string_value(json_object_get(reply, "error"));
    return tg_error_set(err, 0, "tool add %s %s: %s", id, name, e ? e : "refused");
  }
  printf("added %s\n", name);
  return 0;
}

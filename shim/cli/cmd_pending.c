/* tollgate pending [ID] [--format json]: the calls waiting for approval, in
 * one container or in every container under --root. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "governance/control.h"
#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "base/term_escape.h"
#include "base/util.h"

static int query(const struct cli *cli, const char *id, json_t *out, bool quiet, tg_error **err) {
  cleanup_free char *sock = xasprintf("%s/%s/control.sock", cli->root, id);
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string("pending"));
  cleanup_json json_t *reply = NULL;
  cleanup_error tg_error *qerr = NULL;
  if (control_request(sock, req, 5000, &reply, &qerr) < 0) {
    if (quiet)
      return 0;
    *err = qerr;
    qerr = NULL;
    return tg_error_wrap(err, "pending %s", id);
  }
  const json_t *list = json_object_get(reply, "pending");
  for (size_t i = 0; i < json_array_len(list); i++) {
    json_t *e = json_copy(json_array_get(list, i));
    json_object_set(e, "container", json_new_string(id));
    json_array_append(out, e);
  }
  return 0;
}

int cmd_pending(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *id = NULL;
  bool json = false;
  if (args_parse_id_and_format("pending", argc, argv, &id, &json, err) < 0)
    return -1;
  cleanup_json json_t *all = json_new_array();
  if (id) {
    if (!container_id_is_valid(id))
      return tg_error_set(err, 0, "pending: invalid container id \"%s\"", id);
    if (query(cli, id, all, false, err) < 0)
      return -1;
  } else {
    DIR *d = opendir(cli->root);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
      if (!container_id_is_valid(de->d_name))
        continue;
      cleanup_free char *sock = xasprintf("%s/%s/control.sock", cli->root, de->d_name);
      struct stat st;
      if (lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
        query(cli, de->d_name, all, true, err);
    }
    if (d)
      closedir(d);
  }
  if (json) {
    /* JSON's own escapes for what a terminal must not get raw: the same
     * value to a reader, and nothing a person's terminal would reorder */
    cleanup_free char *s = json_dump(all, true, NULL);
    cleanup_free char *shown = escape_for_terminal(s, true);
    printf("%s\n", shown);
    return 0;
  }
  printf("%-20s %-34s %-16s %8s  %s\n", "CONTAINER", "CALL", "TOOL", "WAITING", "REASON / ARGS");
  for (size_t i = 0; i < json_array_len(all); i++) {
    const json_t *e = json_array_get(all, i);
    long long waited = 0, timeout = 0;
    json_integer_value(json_object_get(e, "waiting_ms"), &waited);
    json_integer_value(json_object_get(e, "timeout_ms"), &timeout);
    /* The tool, the reason and the arguments are the container's words,
     * shown to the person who decides: escaped (controls, bidi overrides,
     * zero-width characters), so what they read is what the call holds. */
    cleanup_free char *dump = json_dump(json_object_get(e, "args"), false, NULL);
    cleanup_free char *args = escape_for_terminal(dump, true);
    cleanup_free char *cont = escape_for_terminal(json_string_value(json_object_get(e, "container")), false);
    cleanup_free char *call = escape_for_terminal(json_string_value(json_object_get(e, "call")), false);
    cleanup_free char *tool = escape_for_terminal(json_string_value(json_object_get(e, "tool")), false);
    cleanup_free char *reason = escape_for_terminal(json_string_value(json_object_get(e, "reason")), false);
    char wait[48];
    snprintf(wait, sizeof wait, "%llds/%llds", waited / 1000, timeout / 1000);
    printf("%-20s %-34s %-16s %8s  %s %s\n", cont, call, tool, wait, reason, args);
  }
  return 0;
}

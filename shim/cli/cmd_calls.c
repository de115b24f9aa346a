/* tollgate calls ID [--format json]: the calls so far with their decision
 * and status, and the budget remaining.  Asks the live gate over its
 * control socket; once the container is gone, reads them back from the
 * container's audit log (the latest run in it: governance/call_replay.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/audit.h"
#include "governance/call_replay.h"
#include "governance/control.h"
#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "base/term_escape.h"
#include "base/util.h"

static void print_used(const char *name, const json_t *b) {
  if (b == NULL)
    return;
  const json_t *used = json_object_get(b, "used"), *max = json_object_get(b, "max");
  cleanup_free char *u = json_dump(used, false, NULL);
  if (json_is(max, JSON_NUMBER)) {
    cleanup_free char *m = json_dump(max, false, NULL);
    cleanup_free char *r = json_dump(json_object_get(b, "remaining"), false, NULL);
    printf("  %-14s %s of %s used, %s remaining\n", name, u, m, r);
  } else {
    printf("  %-14s %s used (no limit)\n", name, u);
  }
}

int cmd_calls(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *id = NULL;
  bool json = false;
  if (args_parse_id_and_format("calls", argc, argv, &id, &json, err) < 0)
    return -1;
  if (id == NULL)
    return tg_error_set(err, 0, "usage: tollgate calls CONTAINER-ID [--format json]");
  if (!container_id_is_valid(id))
    return tg_error_set(err, 0, "calls: invalid container id \"%s\"", id);
  cleanup_free char *sock = xasprintf("%s/%s/control.sock", cli->root, id);
  cleanup_json json_t *req = json_new_object();
  json_object_set(req, "verb", json_new_string("calls"));
  cleanup_json json_t *reply = NULL;
  cleanup_error tg_error *qerr = NULL;
  if (control_request(sock, req, 5000, &reply, &qerr) < 0) {
    const char *dir = cli->config.audit_dir ? cli->config.audit_dir : "/var/log/tollgate/audit";
    /* <id>@<hash>.jsonl when this root's run of the id found <id>.jsonl
     * being written under another root (audit_open_named) */
    cleanup_free char *state = xasprintf("%s/%s", cli->root, id);
    cleanup_free char *stem = audit_log_stem_for_state(id, state);
    cleanup_free char *log = audit_log_path(dir, stem);
    if (access(log, F_OK) != 0) {
      free(log);
      log = audit_log_path(dir, id);
    }
    cleanup_error tg_error *lerr = NULL;
    reply = call_replay_log(log, id, &lerr);
    if (reply == NULL)
      return tg_error_set(err, 0, "calls %s: no live gate (%s) and no audit log (%s)", id, qerr->msg,
                          lerr->msg);
  }
  if (json) {
    cleanup_free char *s = json_dump(reply, true, NULL);
    cleanup_free char *shown = escape_for_terminal(s, true); /* the same JSON value */
    printf("%s\n", shown);
    return 0;
  }
  const json_t *calls = json_object_get(reply, "calls");
  printf("%-34s %-16s %-8s %-20s %8s  %s\n", "CALL", "TOOL", "DECISION", "STATUS", "MS", "TIME");
  for (size_t i = 0; i < json_array_len(calls); i++) {
    const json_t *c = json_array_get(calls, i);
    long long ms = -1;
    json_integer_value(json_object_get(c, "duration_ms"), &ms);
    char msbuf[24] = "-";
    if (ms >= 0)
      snprintf(msbuf, sizeof msbuf, "%lld", ms);
    const char *dec = json_string_value(json_object_get(c, "decision"));
    /* the tool name and the rest may be the container's: escaped, one row each */
    cleanup_free char *call = escape_for_terminal(json_string_value(json_object_get(c, "call")), false);
    cleanup_free char *tool = escape_for_terminal(json_string_value(json_object_get(c, "tool")), false);
    cleanup_free char *decision = escape_for_terminal(dec && *dec ? dec : "-", false);
    cleanup_free char *status = escape_for_terminal(json_string_value(json_object_get(c, "status")), false);
    cleanup_free char *time = escape_for_terminal(json_string_value(json_object_get(c, "time")), false);
    printf("%-34s %-16s %-8s %-20s %8s  %s\n", call, tool, decision, status, msbuf, time);
  }
  const json_t *anomalies = json_object_get(reply, "anomalies");
  if (json_array_len(anomalies) > 0)
    printf("anomalies:\n");
  for (size_t i = 0; i < json_array_len(anomalies); i++) {
    const json_t *a = json_array_get(anomalies, i);
    long long limit = 0, observed = 0;
    json_integer_value(json_object_get(a, "limit"), &limit);
    json_integer_value(json_object_get(a, "observed"), &observed);
    const char *call = json_string_value(json_object_get(a, "call"));
    cleanup_free char *cid = escape_for_terminal(call ? call : "-", false);
    cleanup_free char *kind = escape_for_terminal(json_string_value(json_object_get(a, "kind")) ?: "", false);
    cleanup_free char *action = escape_for_terminal(json_string_value(json_object_get(a, "action")) ?: "", false);
    long long calls = 0; /* denials_in_window: the window's size */
    json_integer_value(json_object_get(a, "calls"), &calls);
    if (calls > 0)
      printf("  %-34s %-18s %lld (limit %lld of %lld calls)  action %s\n", cid, kind, observed,
             limit, calls, action);
    else
      printf("  %-34s %-18s %lld (limit %lld)  action %s\n", cid, kind, observed, limit, action);
  }
  const json_t *b = json_object_get(reply, "budget");
  printf("budget%s:\n", json_object_get(reply, "source") ? " (from the audit log)" : "");
  print_used("tool calls", json_object_get(b, "calls"));
  print_used("cost", json_object_get(b, "cost"));
  print_used("irreversible", json_object_get(b, "irreversible"));
  /* anomalies count in the budget used; a run without any says nothing */
  const json_t *an = json_object_get(b, "anomalies");
  long long nan = 0;
  if (json_integer_value(json_object_get(an, "used"), &nan) && nan > 0)
    print_used("anomalies", an);
  const json_t *tools = json_object_get(b, "tools");
  for (size_t i = 0; tools && i < tools->u.object.len; i++) {
    cleanup_free char *n = escape_for_terminal(tools->u.object.keys[i], false);
    print_used(n, tools->u.object.values[i]);
  }
  return 0;
}

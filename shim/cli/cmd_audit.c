/* tollgate audit verify FILE [--key FILE] [--open] [--allow-crashed]
 * tollgate audit show FILE [--format json]
 *
 * verify exits 0 only when the whole chain verifies, ends with a closed
 * record and no earlier run's segment ended without one (--open also
 * accepts a last segment whose gate is running or crashed, --allow-crashed
 * earlier crashed segments); it says where the first break is.  show
 * prints a readable table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/verify.h"
#include "shim/cli/commands.h"
#include "base/term_escape.h"
#include "base/util.h"

static const char *str(const json_t *rec, const char *key) {
  const char *s = json_string_value(json_object_get(rec, key));
  return s ? s : "-";
}

/* One table cell: at most width characters, cut with "~" when longer.
 * The text may be the container's: escaped, so it stays in its cell. */
static void cell(const char *raw, int width) {
  cleanup_free char *s = escape_for_terminal(raw, false);
  int n = (int)strlen(s);
  if (n <= width)
    printf("%-*s ", width, s);
  else
    printf("%.*s~ ", width - 1, s);
}

/* One table row per record; the records stream (a log of any size). */
static int show_row(void *ctx, const json_t *r) {
  (void)ctx;
  long long seq = 0, ms = -1;
  json_integer_value(json_object_get(r, "seq"), &seq);
  json_integer_value(json_object_get(r, "duration_ms"), &ms);
  char time[25];
  snprintf(time, sizeof time, "%s", str(r, "time"));
  printf("%-5lld ", seq);
  cell(time, 24);
  cell(str(r, "event"), 12);
  cell(str(r, "call"), 32);
  cell(str(r, "tool"), 16);
  cell(str(r, "decision"), 8);
  cell(str(r, "approver"), 10);
  /* An anomaly record has no outcome: its action stands there. */
  bool anomaly = strcmp(str(r, "event"), "anomaly") == 0;
  cell(anomaly ? str(r, "action") : str(r, "outcome"), 16);
  if (ms >= 0)
    printf("%6lld  ", ms);
  else
    printf("%6s  ", "-");
  /* Reason, arguments and message are the container's words: one line
   * of printable text each, whatever they hold. */
  const json_t *args = json_object_get(r, "args");
  cleanup_free char *dump = json_is(args, JSON_OBJECT) ? json_dump(args, false, NULL) : NULL;
  cleanup_free char *a = dump ? escape_for_terminal(dump, true) : NULL;
  const char *raw_reason = json_string_value(json_object_get(r, "reason"));
  const char *raw_msg = json_string_value(json_object_get(r, "message"));
  cleanup_free char *reason = raw_reason ? escape_for_terminal(raw_reason, false) : NULL;
  cleanup_free char *msg = raw_msg ? escape_for_terminal(raw_msg, false) : NULL;
  if (anomaly) { /* which limit; the figures are in the reason */
    cleanup_free char *kind = escape_for_terminal(str(r, "kind"), false);
    printf("%s: ", kind);
  }
  printf("%s%s%s%s%s\n", reason ? reason : "", reason && a ? " " : "", a ? a : "",
         msg ? " | " : "", msg ? msg : "");
  return 0;
}

/* One JSON array element per record, streamed too. */
struct json_rows {
  bool first;
};
static int show_json(void *ctx, const json_t *r) {
  struct json_rows *j = ctx;
  cleanup_free char *dump = json_dump(r, false, NULL);
  cleanup_free char *s = escape_for_terminal(dump, true); /* the same JSON value */
  printf("%s\n  %s", j->first ? "" : ",", s);
  j->first = false;
  return 0;
}

static int show(const char *path, bool as_json, tg_error **err) {
  if (as_json) {
    struct json_rows j = {.first = true};
    printf("[");
    int r = audit_each_record(path, show_json, &j, err);
    printf("%s]\n", j.first ? "" : "\n");
    return r;
  }
  printf("%-5s %-24s %-12s %-32s %-16s %-8s %-10s %-16s %6s  %s\n", "SEQ", "TIME", "EVENT",
         "CALL", "TOOL", "DECISION", "APPROVER", "OUTCOME", "MS", "REASON / ARGS");
  return audit_each_record(path, show_row, NULL, err);
}

int cmd_audit(struct cli *cli, int argc, char **argv, tg_error **err) {
  if (argc < 3 || (strcmp(argv[1], "verify") != 0 && strcmp(argv[1], "show") != 0))
    return tg_error_set(err, 0,
                        "usage: tollgate audit verify FILE [--key FILE] [--open] [--allow-crashed] | "
                        "tollgate audit show FILE [--format json]");
  const char *file = NULL, *key = cli->config.audit_key, *format = "table";
  unsigned accept = 0;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
      key = argv[++i];
    else if (strncmp(argv[i], "--key=", 6) == 0)
      key = argv[i] + 6;
    else if (strcmp(argv[i], "--open") == 0)
      accept |= AUDIT_VERIFY_OPEN;
    else if (strcmp(argv[i], "--allow-crashed") == 0)
      accept |= AUDIT_VERIFY_CRASHED;
    else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
      format = argv[++i];
    else if (strncmp(argv[i], "--format=", 9) == 0)
      format = argv[i] + 9;
    else if (argv[i][0] == '-')
      return tg_error_set(err, 0, "audit: unknown flag %s", argv[i]);
    else if (file == NULL)
      file = argv[i];
    else
      return tg_error_set(err, 0, "audit: one FILE at a time (got %s and %s)", file, argv[i]);
  }
  if (file == NULL)
    return tg_error_set(err, 0, "audit %s: name the log FILE", argv[1]);
  if (strcmp(argv[1], "show") == 0) {
    if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
      return tg_error_set(err, 0, "audit show: --format is table or json");
    return show(file, strcmp(format, "json") == 0, err) < 0 ? -1 : 0;
  }
  struct audit_verify_result res;
  if (audit_verify(file, key, accept, &res, err) < 0)
    return tg_error_wrap(err, "audit verify %s", file);
  int status = res.ok ? 0 : 1;
  /* the message can quote a record's container id */
  cleanup_free char *shown = escape_message(res.message);
  fprintf(res.ok ? stdout : stderr, "%s: %s\n", file, shown);
  audit_verify_result_clear(&res);
  return status;
}

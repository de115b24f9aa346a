/* tollgate ps [--format table|json] ID [PS-ARGS...]: the backend's table,
 * escaped for the terminal. */
#include <stdio.h>
#include <string.h>

#include "shim/cli/args.h"
#include "shim/lifecycle/backend.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "base/term_escape.h"
#include "base/util.h"

int cmd_ps(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *format = "table";
  struct opt opts[] = {{"format", 'f', OPT_STRING, &format}, {0}};
  int i = args_parse("ps", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0)
    return tg_error_set(err, 0, "ps: --format %s: give table or json", format);
  if (i >= argc)
    return tg_error_set(err, 0, "ps: usage: tollgate ps [--format table|json] ID");
  struct container c;
  if (container_load(cli, argv[i], &c, err) < 0)
    return -1;
  if (c.backend.kind == BACKEND_RUNSC && i + 1 < argc) {
    container_free(&c);
    return tg_error_set(err, 0,
                        "ps: runsc takes no ps options after the id: drop them");
  }
  struct argv args = {0};
  argv_addf(&args, "--format=%s", format);
  /* The table holds the container's process names and arguments, which
   * the container chose (an escape sequence, a bidi override): escaped,
   * lines and columns kept.  stderr is kept for the error. */
  struct proc_opts o = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  int r = container_call(cli, &c, "ps", args.v, argv + i + 1, &o, &res, err);
  if (r == 0 && res.out != NULL) {
    cleanup_free char *shown = escape_message(res.out);
    fputs(shown, stdout);
  }
  if (r > 0)
    r = container_backend_error(&c, "ps", &res, err);
  argv_free(&args);
  proc_result_free(&res);
  container_free(&c);
  return r < 0 ? -1 : 0;
}

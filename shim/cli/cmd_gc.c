/* tollgate gc [--all-roots]: reap now (shim/lifecycle/reaper.h): every
 * container of this root (or of every registered root) whose owner is
 * gone or whose deadline passed is deleted as `delete --force` would.
 * Prints one line per container deleted: ROOT, ID and why, tab-separated. */
#include <stdio.h>

#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/reaper.h"
#include "shim/lifecycle/roots.h"

int cmd_gc(struct cli *cli, int argc, char **argv, tg_error **err) {
  bool all = false;
  struct opt opts[] = {{"all-roots", 0, OPT_BOOL, &all}, {0}};
  int i = args_parse("gc", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (i != argc)
    return tg_error_set(err, 0, "gc: takes no arguments: usage: tollgate gc [--all-roots]");
  /* A due container's lock is held only while a verb runs on it (the
   * dead owner's last `state`, say): wait for it rather than report a
   * sweep that left the container behind. */
  struct reaper_report rep = {.out = stdout, .busy_wait_ms = 10000};
  if (!all) {
    reaper_sweep(cli, cli->root, &rep);
  } else {
    size_t n = 0;
    char **roots = roots_list(cli->root, &n);
    for (size_t k = 0; k < n; k++)
      reaper_sweep(cli, roots[k], &rep);
    roots_free(roots, n);
  }
  fflush(stdout);
  return rep.failed > 0 ? 1 : 0;
}

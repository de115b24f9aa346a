/* tollgate update: runc's update, passed through.  runsc cannot change a
 * running sandbox's limits, so it is refused there rather than ignored. */
#include "shim/args.h"
#include "shim/backend.h"
#include "shim/commands.h"
#include "shim/container.h"

int cmd_update(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *resources = NULL, *memory = NULL, *memory_swap = NULL,
             *pids = NULL, *quota = NULL, *period = NULL, *shares = NULL,
             *cpus = NULL, *mems = NULL;
  struct opt opts[] = {
      {"resources", 'r', OPT_STRING, &resources},
      {"memory", 'm', OPT_STRING, &memory},
      {"memory-swap", 0, OPT_STRING, &memory_swap},
      {"pids-limit", 0, OPT_STRING, &pids},
      {"cpu-quota", 0, OPT_STRING, &quota},
      {"cpu-period", 0, OPT_STRING, &period},
      {"cpu-shares", 0, OPT_STRING, &shares},
      {"cpuset-cpus", 0, OPT_STRING, &cpus},
      {"cpuset-mems", 0, OPT_STRING, &mems},
      {0},
  };
  int i = args_parse("update", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (argc - i != 1)
    return tg_error_set(err, 0,
                        "update: usage: tollgate update [--resources FILE|-] ID");
  struct container c;
  if (container_load(cli, argv[i], &c, err) < 0)
    return -1;
  if (c.backend.kind == BACKEND_RUNSC) {
    container_free(&c);
    return tg_error_set(err, 0,
                        "update: runsc (gVisor) cannot change the limits of a "
                        "running sandbox: recreate the container with new "
                        "limits in its config.json");
  }
  struct argv args = {0};
  const char *names[] = {"resources", "memory", "memory-swap", "pids-limit",
                         "cpu-quota", "cpu-period", "cpu-shares",
                         "cpuset-cpus", "cpuset-mems"};
  const char *vals[] = {resources, memory, memory_swap, pids, quota,
                        period, shares, cpus, mems};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (vals[k] != NULL)
      argv_addf(&args, "--%s=%s", names[k], vals[k]);
  /* stdin stays the caller's, for --resources -. */
  struct proc_opts o = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  int r = container_call_ok(cli, &c, "update", args.v, &o, &res, err);
  argv_free(&args);
  proc_result_free(&res);
  container_free(&c);
  return r;
}

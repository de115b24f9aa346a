/* tollgate checkpoint / restore: runc's CLI shape (what containerd's runc
 * shim v2 and podman pass), delegated to the backend recorded at create:
 * runsc's checkpoint/restore (the sentry saves the whole sandbox), or
 * runc's with criu.  The flags are parsed here; what checkpoint and
 * restore do, and why, is shim/lifecycle/checkpoint.h. */
#include <stdio.h>
#include <stdlib.h>

#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/checkpoint.h"
#include "base/util.h"

/* The criu options both verbs take (struct criu_flags); --empty-ns goes
 * to a list of the caller's. */
#define CRIU_OPTS(f)                                                     \
  {"image-path", 0, OPT_STRING, &(f)->image_path},                       \
      {"work-path", 0, OPT_STRING, &(f)->work_path},                     \
      {"manage-cgroups-mode", 0, OPT_STRING, &(f)->manage_cgroups_mode}, \
      {"empty-ns", 0, OPT_LIST, &empty_ns},                         \
      {"tcp-established", 0, OPT_BOOL, &(f)->tcp_established},           \
      {"ext-unix-sk", 0, OPT_BOOL, &(f)->ext_unix_sk},                   \
      {"shell-job", 0, OPT_BOOL, &(f)->shell_job},                       \
      {"file-locks", 0, OPT_BOOL, &(f)->file_locks},                     \
      {"lazy-pages", 0, OPT_BOOL, &(f)->lazy_pages},                     \
      {"status-fd", 0, OPT_STRING, &(f)->status_fd}

int cmd_checkpoint(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct criu_flags f = {0};
  struct strlist empty_ns = {0};
  struct opt opts[] = {CRIU_OPTS(&f),
                       {"leave-running", 0, OPT_BOOL, &f.leave_running},
                       {"parent-path", 0, OPT_STRING, &f.parent_path},
                       {"page-server", 0, OPT_STRING, &f.page_server},
                       {"pre-dump", 0, OPT_BOOL, &f.pre_dump},
                       {"auto-dedup", 0, OPT_BOOL, &f.auto_dedup},
                       {0}};
  int i = args_parse("checkpoint", argc, argv, 1, opts, err);
  if (i >= 0 && argc - i != 1)
    i = tg_error_set(err, 0, "checkpoint: %s: usage: tollgate checkpoint "
                     "--image-path DIR [--leave-running] ID",
                     argc - i < 1 ? "no container id given"
                                  : "too many arguments");
  if (i >= 0) {
    f.empty_ns = empty_ns.items;
    f.n_empty_ns = empty_ns.len;
    i = container_checkpoint(cli, argv[i], &f, err);
  }
  strlist_free(&empty_ns);
  return i < 0 ? -1 : 0;
}

int cmd_restore(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct criu_flags f = {0};
  struct strlist empty_ns = {0};
  struct create_request req = {.preserve_fds = -1};
  bool detach = false;
  struct opt opts[] = {CRIU_OPTS(&f),
                       {"bundle", 'b', OPT_STRING, &req.bundle},
                       {"pid-file", 0, OPT_STRING, &req.pid_file},
                       {"console-socket", 0, OPT_STRING, &req.console_socket},
                       {"no-pivot", 0, OPT_BOOL, &req.no_pivot},
                       {"no-new-keyring", 0, OPT_BOOL, &req.no_new_keyring},
                       {"policy", 0, OPT_STRING, &req.policy_file},
                       {"owner-pid", 0, OPT_STRING, &req.owner_pid},
                       {"deadline", 0, OPT_STRING, &req.deadline},
                       {"detach", 'd', OPT_BOOL, &detach},
                       {"no-subreaper", 0, OPT_IGNORE_BOOL, NULL},
                       {0}};
  int i = args_parse("restore", argc, argv, 1, opts, err);
  if (i >= 0 && argc - i != 1)
    i = tg_error_set(err, 0, "restore: %s: usage: tollgate restore "
                     "--image-path DIR [--bundle DIR] [--pid-file FILE] "
                     "--detach ID",
                     argc - i < 1 ? "no container id given"
                                  : "too many arguments");
  /* Without --detach runc would stay the restored process's parent and
   * relay its stdio; tollgate's restore returns once the process runs
   * (containerd and podman always pass --detach). */
  if (i >= 0 && !detach)
    i = tg_error_set(err, 0, "restore: only --detach is supported: add "
                     "--detach, and use `tollgate state` / `kill` on the "
                     "restored container");
  if (i >= 0) {
    req.id = argv[i];
    f.empty_ns = empty_ns.items;
    f.n_empty_ns = empty_ns.len;
    i = container_restore(cli, &req, &f, err);
  }
  strlist_free(&empty_ns);
  return i < 0 ? -1 : 0;
}

/* tollgate checkpoint / restore: runc's CLI shape (what containerd's runc
 * shim v2 and podman pass), delegated to the backend recorded at create:
 * runsc's checkpoint/restore (the sentry saves the whole sandbox), or
 * runc's with criu.
 *
 * What survives, and why (docs/cli.md, "checkpoint and restore"): restore
 * is create with the backend's restore in place of its create.  The
 * bundle's config.json is hardened again exactly as create hardens it, a
 * new state directory and bridge are made, the policy is resolved again
 * from the host's side, and a new sidecar serves the restored process,
 * writing a new audit log segment (<id>@<n>.jsonl when <id>.jsonl
 * exists).  Nothing governance-related is read from the checkpoint image:
 * it is written by the container's own memory and files, so it is
 * hostile data; budgets and call counts start again from the policy, as
 * for a new run, and the previous segment stays verifiable on its own. */
#include <string.h>

#include "shim/args.h"
#include "shim/commands.h"
#include "shim/container.h"
#include "shim/util.h"

/* The criu options runc takes on both verbs.  gVisor saves the whole
 * sandbox (its TCP stack, unix sockets, file locks and terminals are the
 * sentry's own), so under runsc these ask for nothing more and are
 * dropped; the criu-only modes that change what is saved (incremental,
 * lazy, page server) are refused under runsc with the reason. */
struct criu_flags {
  const char *image_path, *work_path, *parent_path, *manage_cgroups_mode;
  const char *page_server, *status_fd;
  struct strlist empty_ns;
  bool tcp_established, ext_unix_sk, shell_job, file_locks, lazy_pages,
      pre_dump, auto_dedup, leave_running;
};

#define CRIU_OPTS(f)                                                     \
  {"image-path", 0, OPT_STRING, &(f)->image_path},                       \
      {"work-path", 0, OPT_STRING, &(f)->work_path},                     \
      {"manage-cgroups-mode", 0, OPT_STRING, &(f)->manage_cgroups_mode}, \
      {"empty-ns", 0, OPT_LIST, &(f)->empty_ns},                         \
      {"tcp-established", 0, OPT_BOOL, &(f)->tcp_established},           \
      {"ext-unix-sk", 0, OPT_BOOL, &(f)->ext_unix_sk},                   \
      {"shell-job", 0, OPT_BOOL, &(f)->shell_job},                       \
      {"file-locks", 0, OPT_BOOL, &(f)->file_locks},                     \
      {"lazy-pages", 0, OPT_BOOL, &(f)->lazy_pages},                     \
      {"status-fd", 0, OPT_STRING, &(f)->status_fd}

/* The backend's flags for f, into out.  verb names the caller in errors. */
static int criu_args(const struct backend *b, const char *verb,
                     const struct criu_flags *f, struct argv *out,
                     tg_error **err) {
  if (f->image_path == NULL || f->image_path[0] == '\0')
    return tg_error_set(err, 0, "%s: --image-path DIR is required (the "
                        "directory of the checkpoint image)", verb);
  argv_addf(out, "--image-path=%s", f->image_path);
  if (f->work_path)
    argv_addf(out, "--work-path=%s", f->work_path);
  if (f->leave_running)
    argv_add(out, "--leave-running");
  if (b->kind != BACKEND_RUNC) {
    const char *criu_only = f->parent_path   ? "--parent-path"
                            : f->pre_dump    ? "--pre-dump"
                            : f->lazy_pages  ? "--lazy-pages"
                            : f->page_server ? "--page-server"
                            : f->status_fd   ? "--status-fd"
                            : f->auto_dedup  ? "--auto-dedup"
                                             : NULL;
    if (criu_only)
      return tg_error_set(err, 0, "%s: %s is a criu option: runsc saves the "
                          "whole sandbox in one image; leave it out, or "
                          "create the container with --runtime runc",
                          verb, criu_only);
    return 0;
  }
  if (f->parent_path)
    argv_addf(out, "--parent-path=%s", f->parent_path);
  if (f->manage_cgroups_mode)
    argv_addf(out, "--manage-cgroups-mode=%s", f->manage_cgroups_mode);
  if (f->page_server)
    argv_addf(out, "--page-server=%s", f->page_server);
  if (f->status_fd)
    argv_addf(out, "--status-fd=%s", f->status_fd);
  for (size_t i = 0; i < f->empty_ns.len; i++)
    argv_addf(out, "--empty-ns=%s", f->empty_ns.items[i]);
  static const struct {
    size_t offset;
    const char *flag;
  } bools[] = {
      {offsetof(struct criu_flags, tcp_established), "--tcp-established"},
      {offsetof(struct criu_flags, ext_unix_sk), "--ext-unix-sk"},
      {offsetof(struct criu_flags, shell_job), "--shell-job"},
      {offsetof(struct criu_flags, file_locks), "--file-locks"},
      {offsetof(struct criu_flags, lazy_pages), "--lazy-pages"},
      {offsetof(struct criu_flags, pre_dump), "--pre-dump"},
      {offsetof(struct criu_flags, auto_dedup), "--auto-dedup"},
  };
  for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
    if (*(const bool *)((const char *)f + bools[i].offset))
      argv_add(out, bools[i].flag);
  return 0;
}

int cmd_checkpoint(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct criu_flags f = {0};
  struct opt opts[] = {CRIU_OPTS(&f),
                       {"leave-running", 0, OPT_BOOL, &f.leave_running},
                       {"parent-path", 0, OPT_STRING, &f.parent_path},
                       {"page-server", 0, OPT_STRING, &f.page_server},
                       {"pre-dump", 0, OPT_BOOL, &f.pre_dump},
                       {"auto-dedup", 0, OPT_BOOL, &f.auto_dedup},
                       {0}};
  int i = args_parse("checkpoint", argc, argv, 1, opts, err);
  if (i < 0)
    goto out;
  if (argc - i != 1) {
    i = tg_error_set(err, 0, "checkpoint: %s: usage: tollgate checkpoint "
                     "--image-path DIR [--leave-running] ID",
                     argc - i < 1 ? "no container id given"
                                  : "too many arguments");
    goto out;
  }
  struct container c;
  cleanup_close int lock = -1;
  if (container_load_shared(cli, argv[i], &c, &lock, err) < 0) {
    i = -1;
    goto out;
  }
  struct argv args = {0};
  i = criu_args(&c.backend, "checkpoint", &f, &args, err);
  if (i >= 0) {
    struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
    struct proc_result res = {0};
    i = container_call_ok(cli, &c, "checkpoint", args.v, &quiet, &res, err);
    proc_result_free(&res);
  }
  argv_free(&args);
  container_free(&c);
out:
  strlist_free(&f.empty_ns);
  return i < 0 ? -1 : 0;
}

int cmd_restore(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct criu_flags f = {0};
  struct create_request req = {.preserve_fds = -1};
  bool detach = false;
  struct opt opts[] = {CRIU_OPTS(&f),
                       {"bundle", 'b', OPT_STRING, &req.bundle},
                       {"pid-file", 0, OPT_STRING, &req.pid_file},
                       {"console-socket", 0, OPT_STRING, &req.console_socket},
                       {"no-pivot", 0, OPT_BOOL, &req.no_pivot},
                       {"no-new-keyring", 0, OPT_BOOL, &req.no_new_keyring},
                       {"policy", 0, OPT_STRING, &req.policy_file},
                       {"detach", 'd', OPT_BOOL, &detach},
                       {"no-subreaper", 0, OPT_IGNORE_BOOL, NULL},
                       {0}};
  int i = args_parse("restore", argc, argv, 1, opts, err);
  if (i < 0)
    goto out;
  if (argc - i != 1) {
    i = tg_error_set(err, 0, "restore: %s: usage: tollgate restore "
                     "--image-path DIR [--bundle DIR] [--pid-file FILE] "
                     "--detach ID",
                     argc - i < 1 ? "no container id given"
                                  : "too many arguments");
    goto out;
  }
  /* Without --detach runc would stay the restored process's parent and
   * relay its stdio; tollgate's restore returns once the process runs
   * (containerd and podman always pass --detach). */
  if (!detach) {
    i = tg_error_set(err, 0, "restore: only --detach is supported: add "
                     "--detach, and use `tollgate state` / `kill` on the "
                     "restored container");
    goto out;
  }
  req.id = argv[i];
  /* The backend to restore with is the one create would choose (host
   * config, --runtime), never one named by the image. */
  struct backend chosen;
  if (backend_choose(cli, &chosen, err) < 0) {
    i = -1;
    goto out;
  }
  struct argv flags = {0};
  i = criu_args(&chosen, "restore", &f, &flags, err);
  backend_free(&chosen);
  if (i >= 0) {
    req.restore = &flags;
    struct created c;
    i = container_create(cli, &req, &c, err);
    if (i >= 0)
      created_free(&c);
  }
  argv_free(&flags);
out:
  strlist_free(&f.empty_ns);
  return i < 0 ? -1 : 0;
}

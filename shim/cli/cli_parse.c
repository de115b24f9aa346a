#include "shim/cli/cli_parse.h"

#include <signal.h>
#include <string.h>

#include "base/util.h"

int cli_parse_global(int argc, char **argv, struct cli *cli, bool *help,
                     bool *version, tg_error **err) {
  const char *log_format = NULL;
  *help = *version = false;
  struct opt opts[] = {
      {"root", 0, OPT_STRING, &cli->root},
      {"log", 0, OPT_STRING, &cli->log_path},
      {"log-format", 0, OPT_STRING, &log_format},
      {"debug", 0, OPT_BOOL, &cli->debug},
      {"systemd-cgroup", 0, OPT_BOOL, &cli->systemd_cgroup},
      {"runtime", 0, OPT_STRING, &cli->runtime_override},
      {"config", 0, OPT_STRING, &cli->config_path},
      {"help", 'h', OPT_BOOL, help},
      {"version", 'v', OPT_BOOL, version},
      /* runc's other global flags, accepted so a caller written for runc
       * works; neither backend needs them from tollgate. */
      {"criu", 0, OPT_IGNORE, NULL},
      {"rootless", 0, OPT_IGNORE, NULL},
      {0},
  };
  int i = args_parse("tollgate", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (log_format != NULL) {
    if (strcmp(log_format, "json") == 0)
      cli->log_json = true;
    else if (strcmp(log_format, "text") == 0)
      cli->log_json = false;
    else
      return tg_error_set(err, 0,
                          "--log-format %s: give text or json", log_format);
  }
  if (cli->root == NULL || cli->root[0] == '\0')
    cli->root = TG_DEFAULT_ROOT;
  return i;
}

static int one_id(const char *verb, int argc, char **argv, int i,
                  const char **id, const char *usage, tg_error **err) {
  if (argc - i != 1)
    return tg_error_set(err, 0, "%s: %s: usage: tollgate %s",
                        verb, argc - i < 1 ? "no container id given"
                                            : "too many arguments",
                        usage);
  *id = argv[i];
  return 0;
}

#define CREATE_OPTS(r)                                                   \
  {"bundle", 'b', OPT_STRING, &(r)->bundle},                             \
      {"pid-file", 0, OPT_STRING, &(r)->pid_file},                       \
      {"console-socket", 0, OPT_STRING, &(r)->console_socket},           \
      {"no-pivot", 0, OPT_BOOL, &(r)->no_pivot},                         \
      {"no-new-keyring", 0, OPT_BOOL, &(r)->no_new_keyring},             \
      {"preserve-fds", 0, OPT_INT, &(r)->preserve_fds},                  \
      {"policy", 0, OPT_STRING, &(r)->policy_file},                     \
      {"join", 0, OPT_STRING, &(r)->join},                               \
      {"owner-pid", 0, OPT_STRING, &(r)->owner_pid},                     \
      {"deadline", 0, OPT_STRING, &(r)->deadline}

int cli_parse_create(int argc, char **argv, struct create_request *req,
                     tg_error **err) {
  memset(req, 0, sizeof *req);
  req->preserve_fds = -1;
  struct opt opts[] = {CREATE_OPTS(req), {0}};
  int i = args_parse("create", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  return one_id("create", argc, argv, i, &req->id,
                "create [--bundle DIR] [--pid-file FILE] [--join OWNER] [--owner-pid PID] [--deadline T] ID", err);
}

int cli_parse_run(int argc, char **argv, struct run_request *req,
                  tg_error **err) {
  memset(req, 0, sizeof *req);
  req->create.preserve_fds = -1;
  struct opt opts[] = {CREATE_OPTS(&req->create),
                       {"keep", 0, OPT_BOOL, &req->keep},
                       {"detach", 'd', OPT_BOOL, &req->detach},
                       {0}};
  int i = args_parse("run", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  return one_id("run", argc, argv, i, &req->create.id,
                "run [--bundle DIR] [--keep] [--join OWNER] [--owner-pid PID] [--deadline T] ID", err);
}

int cli_parse_kill(int argc, char **argv, struct kill_request *req,
                   tg_error **err) {
  memset(req, 0, sizeof *req);
  req->signal = SIGTERM;
  struct opt opts[] = {{"all", 'a', OPT_BOOL, &req->all}, {0}};
  int i = args_parse("kill", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (argc - i < 1 || argc - i > 2)
    return tg_error_set(err, 0, "kill: %s: usage: tollgate kill [--all] ID "
                        "[SIGNAL]",
                        argc - i < 1 ? "no container id given"
                                     : "too many arguments");
  req->id = argv[i];
  if (argc - i == 2) {
    int s = args_parse_signal(argv[i + 1], err);
    if (s < 0)
      return tg_error_wrap(err, "kill");
    req->signal = s;
  }
  return 0;
}

int cli_parse_delete(int argc, char **argv, struct delete_request *req,
                     tg_error **err) {
  memset(req, 0, sizeof *req);
  struct opt opts[] = {{"force", 'f', OPT_BOOL, &req->force}, {0}};
  int i = args_parse("delete", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  return one_id("delete", argc, argv, i, &req->id, "delete [--force] ID", err);
}

int cli_parse_exec(int argc, char **argv, struct exec_request *req,
                   tg_error **err) {
  memset(req, 0, sizeof *req);
  req->preserve_fds = -1;
  bool ignored = false;
  struct opt opts[] = {
      {"process", 'p', OPT_STRING, &req->process},
      {"detach", 'd', OPT_BOOL, &req->detach},
      {"pid-file", 0, OPT_STRING, &req->pid_file},
      {"console-socket", 0, OPT_STRING, &req->console_socket},
      {"tty", 't', OPT_BOOL, &req->tty},
      {"cwd", 0, OPT_STRING, &req->cwd},
      {"env", 'e', OPT_LIST, &req->env},
      {"user", 'u', OPT_STRING, &req->user},
      {"cap", 'c', OPT_LIST, &req->caps},
      {"preserve-fds", 0, OPT_INT, &req->preserve_fds},
      /* Always on for tollgate: the hardened process has it anyway. */
      {"no-new-privs", 0, OPT_BOOL, &ignored},
      {0},
  };
  int i = args_parse("exec", argc, argv, 1, opts, err);
  if (i < 0) {
    exec_request_free(req);
    return -1;
  }
  if (i >= argc) {
    exec_request_free(req);
    return tg_error_set(err, 0,
                        "exec: no container id given: usage: tollgate exec "
                        "--process FILE ID, or tollgate exec ID CMD...");
  }
  req->id = argv[i++];
  req->args = argv + i;
  req->nargs = argc - i;
  if (req->process != NULL && req->nargs > 0) {
    exec_request_free(req);
    return tg_error_set(err, 0,
                        "exec: give either --process FILE or a command after "
                        "the id, not both");
  }
  if (req->process == NULL && req->nargs == 0) {
    exec_request_free(req);
    return tg_error_set(err, 0,
                        "exec: no command given: usage: tollgate exec ID "
                        "CMD..., or tollgate exec --process FILE ID");
  }
  if (req->nargs == 0)
    req->args = NULL;
  return 0;
}

void exec_request_free(struct exec_request *req) {
  strlist_free(&req->env);
  strlist_free(&req->caps);
}

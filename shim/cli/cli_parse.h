/* The argv forms of the lifecycle verbs, parsed into plain structs so that
 * the exact command lines containerd's runc.v2 shim produces can be unit
 * tested without running anything.  Strings point into argv. */
#ifndef TOLLGATE_CLI_PARSE_H
#define TOLLGATE_CLI_PARSE_H

#include <stdbool.h>

#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"

/* Global flags (before the verb) into cli.  Returns the verb's index in
 * argv (argc when there is none); *help / *version are set by --help and
 * --version.  cli->config is not loaded here. */
int cli_parse_global(int argc, char **argv, struct cli *cli, bool *help,
                     bool *version, tg_error **err);

/* create [--bundle DIR] [--pid-file F] [--console-socket P] [--no-pivot]
 *        [--no-new-keyring] [--preserve-fds N] [--policy FILE] ID
 * argv[0] is the verb. */
int cli_parse_create(int argc, char **argv, struct create_request *req,
                     tg_error **err);

struct run_request {
  struct create_request create;
  bool keep;   /* --keep: no delete afterwards */
  bool detach; /* --detach: create + start, no wait */
};
/* run: create's flags plus --keep and --detach. */
int cli_parse_run(int argc, char **argv, struct run_request *req,
                  tg_error **err);

struct kill_request {
  const char *id;
  int signal; /* default SIGTERM */
  bool all;
};
/* kill [--all] ID [SIGNAL] */
int cli_parse_kill(int argc, char **argv, struct kill_request *req,
                   tg_error **err);

struct delete_request {
  const char *id;
  bool force;
};
/* delete [--force] ID */
int cli_parse_delete(int argc, char **argv, struct delete_request *req,
                     tg_error **err);

struct exec_request {
  const char *id;
  const char *process;        /* --process FILE, or NULL */
  const char *pid_file;
  const char *console_socket;
  const char *cwd;
  const char *user;           /* uid[:gid] */
  bool detach, tty;
  long preserve_fds;          /* -1 when not given */
  struct strlist env;         /* --env K=V, repeated */
  struct strlist caps;        /* --cap CAP, repeated */
  char **args;                /* the command after ID (runc style), or NULL */
  int nargs;
};
/* exec --process FILE [--detach] [--pid-file F] [--console-socket P] ID
 * or exec [--tty] [--cwd D] [--env K=V] [--user U] [--detach] ID CMD...
 * The caller frees with exec_request_free(). */
int cli_parse_exec(int argc, char **argv, struct exec_request *req,
                   tg_error **err);
void exec_request_free(struct exec_request *req);

#endif

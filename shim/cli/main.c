/* tollgate: argv -> global flags -> host config -> one cmd_<verb>().
 * Only this file turns an error into a log line and an exit status. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/tool_identity.h"
#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/cli/help.h"
#include "base/log.h"
#include "base/util.h"
#include "shim/lifecycle/reaper.h"

/* The verbs that act on a root sweep it first (at most once a second,
 * shim/lifecycle/reaper.h): a container whose owner died or whose
 * deadline passed goes at the next command on its root.  Not `state`:
 * containerd's shim calls it on every task event, and a sweep that
 * deletes a container takes a backend call or more.  Not `lifetime`:
 * a restarted service re-adopts its containers with it (a new owner)
 * before anything may reap them. */
static bool verb_reaps(const char *verb) {
  static const char *const reaping[] = {"create", "start", "run", "kill", "delete", "exec",
                                        "ps", "list", "pause", "resume", "checkpoint", "restore",
                                        "update", "calls", "pending", "approve", "deny", "tool", NULL};
  for (size_t i = 0; reaping[i] != NULL; i++)
    if (strcmp(reaping[i], verb) == 0)
      return true;
  return false;
}

/* A caller may start tollgate with stdin, stdout or stderr closed
 * (`tollgate run ID <&- >&-`).  Left so, the first files tollgate or the
 * backend open take those numbers, and the container's process inherits
 * them as its stdio: under runc its stdin was the backend's log, its
 * stdout an epoll fd, its stderr a pipe of runc's, and tollgate's own
 * messages went into a signalfd.  Each closed one becomes /dev/null
 * before anything is opened, as a shell's `>/dev/null` would make it.
 * false when one cannot be opened (nothing can then be said). */
static bool std_fds_open(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
      continue;
    /* The lowest free number is fd: the ones below it are open now. */
    int null = open("/dev/null", O_RDWR);
    if (null != fd) {
      if (null >= 0)
        close(null);
      return false;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  if (!std_fds_open())
    return 1;
  struct cli cli = {0};
  tg_error *err = NULL;
  bool help = false, version = false;
  /* No OpenSSL clean-up at exit: freeing every provider and algorithm
   * table cost ~0.2 ms of each `tollgate run`'s exit, for memory the
   * kernel takes back anyway.  Cheap: the library's base set-up only. */
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
  int status = 1;
  int v = cli_parse_global(argc, argv, &cli, &help, &version, &err);
  if (v < 0)
    goto fail;
  char *version_argv[] = {"version", NULL};
  if (version) { /* --version is the version verb */
    argc = 1;
    argv = version_argv;
    v = 0;
  } else if (help || v >= argc) {
    help_print(stdout, NULL);
    return v >= argc && !help ? 1 : 0;
  }
  const char *verb = argv[v];
  const struct verb *entry = help_find_verb(verb);
  if (entry == NULL) {
    tg_error_set(&err, 0,
                 "unknown command \"%s\": run 'tollgate help' for the list",
                 verb);
    goto fail;
  }
  if (entry->fn == NULL) { /* help */
    help_print(stdout, v + 1 < argc ? argv[v + 1] : NULL);
    return 0;
  }
  if (v + 1 < argc &&
      (strcmp(argv[v + 1], "--help") == 0 || strcmp(argv[v + 1], "-h") == 0)) {
    help_print(stdout, verb);
    return 0;
  }
  /* The host config: a broken one stops the verbs that read it (create,
   * run, spec, the governance verbs).  The verbs that act on an existing
   * container use what state.json recorded, so they still work and a
   * container can always be deleted. */
  if (host_config_load(cli.config_path, &cli.config, &err) < 0) {
    if (entry->needs_config)
      goto fail;
    tg_error_free(&err);
    host_config_defaults(&cli.config);
  }
  /* Before any policy is checked or tool started (the sidecar is a fork). */
  sandbox_set_identity((uid_t)cli.config.tool_uid, (gid_t)cli.config.tool_gid);
  if (verb_reaps(verb))
    reaper_implicit(&cli);
  status = entry->fn(&cli, argc - v, argv + v, &err);
  host_config_free(&cli.config);
  if (status >= 0 && err == NULL)
    return status;
fail:
  log_line(cli.log_path, cli.log_json, "error",
           err ? err->msg : "unknown error");
  tg_error_free(&err);
  host_config_free(&cli.config);
  return 1;
}

/* Argument parsing for the exact argv forms containerd's runc.v2 shim and
 * people use (go-runc builds them: global flags, verb, verb flags, id). */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "shim/cli/cli_parse.h"
#include "shim/lifecycle/state.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

Test(cli, containerd_create_argv) {
  char *argv[] = {"tollgate", "--root", "/run/containerd/runc/k8s.io",
                  "--log", "/run/x/log.json", "--log-format", "json",
                  "create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid",
                  "ctr1"};
  struct cli cli = {0};
  bool help, version;
  tg_error *err = NULL;
  int v = cli_parse_global(ARGC(argv), argv, &cli, &help, &version, &err);
  cr_assert_eq(v, 7, "%s", err ? err->msg : "");
  cr_assert_str_eq(argv[v], "create");
  cr_assert_str_eq(cli.root, "/run/containerd/runc/k8s.io");
  cr_assert_str_eq(cli.log_path, "/run/x/log.json");
  cr_assert(cli.log_json);
  cr_assert_not(help);
  struct create_request req;
  cr_assert_eq(cli_parse_create(ARGC(argv) - v, argv + v, &req, &err), 0);
  cr_assert_str_eq(req.bundle, "/run/b");
  cr_assert_str_eq(req.pid_file, "/run/b/init.pid");
  cr_assert_str_eq(req.id, "ctr1");
  cr_assert_null(req.console_socket);
  cr_assert_eq(req.preserve_fds, -1);
}

Test(cli, create_with_console_socket_and_runc_only_flags) {
  char *argv[] = {"create", "--bundle=/b", "--console-socket", "/s.sock",
                  "--no-pivot", "--no-new-keyring", "--preserve-fds", "2",
                  "-pid-file", "/p", "id"};
  struct create_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_create(ARGC(argv), argv, &req, &err), 0);
  cr_assert_str_eq(req.bundle, "/b");
  cr_assert_str_eq(req.console_socket, "/s.sock");
  cr_assert_str_eq(req.pid_file, "/p");
  cr_assert(req.no_pivot);
  cr_assert(req.no_new_keyring);
  cr_assert_eq(req.preserve_fds, 2);
}

Test(cli, systemd_cgroup_debug_and_defaults) {
  char *argv[] = {"tollgate", "--debug", "--systemd-cgroup", "state", "x"};
  struct cli cli = {0};
  bool help, version;
  tg_error *err = NULL;
  int v = cli_parse_global(ARGC(argv), argv, &cli, &help, &version, &err);
  cr_assert_eq(v, 3);
  cr_assert(cli.debug);
  cr_assert(cli.systemd_cgroup);
  cr_assert_str_eq(cli.root, TG_DEFAULT_ROOT);
  cr_assert_null(cli.log_path);
  cr_assert_not(cli.log_json);
}

Test(cli, runtime_and_config_flags) {
  char *argv[] = {"tollgate", "--runtime", "runc", "--config=/c.json",
                  "--log-format=text", "list"};
  struct cli cli = {0};
  bool help, version;
  tg_error *err = NULL;
  int v = cli_parse_global(ARGC(argv), argv, &cli, &help, &version, &err);
  cr_assert_eq(v, 5);
  cr_assert_str_eq(cli.runtime_override, "runc");
  cr_assert_str_eq(cli.config_path, "/c.json");
}

Test(cli, help_and_version) {
  char *a[] = {"tollgate", "--help"};
  char *b[] = {"tollgate", "--version"};
  struct cli cli = {0};
  bool help, version;
  tg_error *err = NULL;
  cli_parse_global(2, a, &cli, &help, &version, &err);
  cr_assert(help);
  cli_parse_global(2, b, &cli, &help, &version, &err);
  cr_assert(version);
}

Test(cli, bad_global_flags) {
  char *a[] = {"tollgate", "--frob", "list"};
  char *b[] = {"tollgate", "--log-format", "xml", "list"};
  char *c[] = {"tollgate", "--root"};
  struct cli cli = {0};
  bool help, version;
  tg_error *err = NULL;
  cr_assert_lt(cli_parse_global(3, a, &cli, &help, &version, &err), 0);
  cr_assert(strstr(err->msg, "unknown flag --frob"));
  tg_error_free(&err);
  cr_assert_lt(cli_parse_global(4, b, &cli, &help, &version, &err), 0);
  cr_assert(strstr(err->msg, "text or json"));
  tg_error_free(&err);
  cr_assert_lt(cli_parse_global(2, c, &cli, &help, &version, &err), 0);
  cr_assert(strstr(err->msg, "needs a value"));
  tg_error_free(&err);
}

Test(cli, kill_all_with_number) {
  char *argv[] = {"kill", "--all", "ctr1", "9"};
  struct kill_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_kill(ARGC(argv), argv, &req, &err), 0);
  cr_assert(req.all);
  cr_assert_str_eq(req.id, "ctr1");
  cr_assert_eq(req.signal, 9);
}

Test(cli, kill_signal_names_and_default) {
  char *a[] = {"kill", "c"};
  char *b[] = {"kill", "c", "SIGKILL"};
  char *c[] = {"kill", "c", "hup"};
  char *d[] = {"kill", "c", "NOPE"};
  struct kill_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_kill(2, a, &req, &err), 0);
  cr_assert_eq(req.signal, SIGTERM);
  cr_assert_not(req.all);
  cr_assert_eq(cli_parse_kill(3, b, &req, &err), 0);
  cr_assert_eq(req.signal, SIGKILL);
  cr_assert_eq(cli_parse_kill(3, c, &req, &err), 0);
  cr_assert_eq(req.signal, SIGHUP);
  cr_assert_lt(cli_parse_kill(3, d, &req, &err), 0);
  cr_assert(strstr(err->msg, "unknown signal"));
  tg_error_free(&err);
}

Test(cli, delete_force) {
  char *argv[] = {"delete", "--force", "ctr1"};
  struct delete_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_delete(ARGC(argv), argv, &req, &err), 0);
  cr_assert(req.force);
  cr_assert_str_eq(req.id, "ctr1");
  char *none[] = {"delete"};
  cr_assert_lt(cli_parse_delete(1, none, &req, &err), 0);
  cr_assert(strstr(err->msg, "no container id"));
  tg_error_free(&err);
}

Test(cli, exec_process_detach_pid_file) {
  char *argv[] = {"exec", "--process", "/tmp/p.json", "--detach",
                  "--pid-file", "/run/e.pid", "ctr1"};
  struct exec_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_exec(ARGC(argv), argv, &req, &err), 0);
  cr_assert_str_eq(req.process, "/tmp/p.json");
  cr_assert(req.detach);
  cr_assert_str_eq(req.pid_file, "/run/e.pid");
  cr_assert_str_eq(req.id, "ctr1");
  cr_assert_null(req.args);
  exec_request_free(&req);
}

Test(cli, exec_runc_style_keeps_command_flags) {
  char *argv[] = {"exec", "-t", "-e", "A=1", "--env", "B=2", "--cwd", "/tmp",
                  "ctr1", "sh", "-c", "echo --detach"};
  struct exec_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_exec(ARGC(argv), argv, &req, &err), 0);
  cr_assert(req.tty);
  cr_assert_not(req.detach);
  cr_assert_eq(req.env.len, 2);
  cr_assert_str_eq(req.env.items[1], "B=2");
  cr_assert_str_eq(req.cwd, "/tmp");
  cr_assert_eq(req.nargs, 3);
  cr_assert_str_eq(req.args[0], "sh");
  cr_assert_str_eq(req.args[2], "echo --detach");
  exec_request_free(&req);
}

Test(cli, exec_needs_exactly_one_source) {
  char *both[] = {"exec", "--process", "p", "c", "ls"};
  char *neither[] = {"exec", "c"};
  struct exec_request req;
  tg_error *err = NULL;
  cr_assert_lt(cli_parse_exec(ARGC(both), both, &req, &err), 0);
  tg_error_free(&err);
  cr_assert_lt(cli_parse_exec(ARGC(neither), neither, &req, &err), 0);
  cr_assert(strstr(err->msg, "no command"));
  tg_error_free(&err);
}

Test(cli, run_keep_and_detach) {
  char *argv[] = {"run", "-b", "/b", "--keep", "-d", "--policy", "/p.json", "x"};
  struct run_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_run(ARGC(argv), argv, &req, &err), 0);
  cr_assert(req.keep);
  cr_assert(req.detach);
  cr_assert_str_eq(req.create.bundle, "/b");
  cr_assert_str_eq(req.create.policy_file, "/p.json");
  cr_assert_str_eq(req.create.id, "x");
}

Test(cli, flag_values_are_checked) {
  char *a[] = {"create", "--preserve-fds", "x", "id"};
  char *b[] = {"create", "--no-pivot=maybe", "id"};
  char *c[] = {"create", "--bundle"};
  char *d[] = {"create", "a", "b"};
  struct create_request req;
  tg_error *err = NULL;
  cr_assert_lt(cli_parse_create(4, a, &req, &err), 0);
  cr_assert(strstr(err->msg, "non-negative number"));
  tg_error_free(&err);
  cr_assert_lt(cli_parse_create(3, b, &req, &err), 0);
  tg_error_free(&err);
  cr_assert_lt(cli_parse_create(2, c, &req, &err), 0);
  tg_error_free(&err);
  cr_assert_lt(cli_parse_create(3, d, &req, &err), 0);
  cr_assert(strstr(err->msg, "too many arguments"));
  tg_error_free(&err);
}

Test(cli, double_dash_ends_flags) {
  char *argv[] = {"delete", "--", "-x"};
  struct delete_request req;
  tg_error *err = NULL;
  cr_assert_eq(cli_parse_delete(3, argv, &req, &err), 0);
  cr_assert_str_eq(req.id, "-x");
}

Test(cli, container_ids) {
  tg_error *err = NULL;
  cr_assert_eq(state_check_id("abc", &err), 0);
  cr_assert_eq(state_check_id("k8s_pod-1.2_x", &err), 0);
  cr_assert_eq(state_check_id("0abc", &err), 0);
  const char *bad[] = {"", ".", "..", "../x", "a/b", "-x", "_x", ".x",
                       "a b", "a\nb", "backend"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_assert_lt(state_check_id(bad[i], &err), 0, "accepted [%s]", bad[i]);
    tg_error_free(&err);
  }
  char long_id[130];
  memset(long_id, 'a', 128);
  long_id[128] = '\0';
  cr_assert_eq(state_check_id(long_id, &err), 0);
  long_id[128] = 'a';
  long_id[129] = '\0';
  cr_assert_lt(state_check_id(long_id, &err), 0);
  tg_error_free(&err);
}

/* `calls ID --format json`, `calls --format json ID` and `pending` with no
 * id all parse; two ids or an unknown format are errors. */
Test(args, id_and_format_in_either_order) {
  const char *id = NULL;
  bool json = false;
  tg_error *err = NULL;
  char *a1[] = {"calls", "c1", "--format", "json"};
  cr_assert_eq(args_parse_id_and_format("calls", 4, a1, &id, &json, &err), 0);
  cr_assert_str_eq(id, "c1");
  cr_assert(json);
  char *a2[] = {"calls", "--format=table", "c2"};
  cr_assert_eq(args_parse_id_and_format("calls", 3, a2, &id, &json, &err), 0);
  cr_assert_str_eq(id, "c2");
  cr_assert_not(json);
  char *a3[] = {"pending"};
  cr_assert_eq(args_parse_id_and_format("pending", 1, a3, &id, &json, &err), 0);
  cr_assert_null(id);
  char *a4[] = {"calls", "c1", "c2"};
  cr_assert_lt(args_parse_id_and_format("calls", 3, a4, &id, &json, &err), 0);
  cr_assert_not_null(strstr(err->msg, "one container id at most"), "%s", err->msg);
  tg_error_free(&err);
  char *a5[] = {"calls", "c1", "--format", "xml"};
  cr_assert_lt(args_parse_id_and_format("calls", 4, a5, &id, &json, &err), 0);
  cr_assert_not_null(strstr(err->msg, "give table or json"), "%s", err->msg);
  tg_error_free(&err);
  char *a6[] = {"calls", "c1", "--frob"};
  cr_assert_lt(args_parse_id_and_format("calls", 3, a6, &id, &json, &err), 0);
  tg_error_free(&err);
}

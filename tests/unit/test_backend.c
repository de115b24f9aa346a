/* Flag translation per backend, and turning backend messages into the
 * wording containerd matches. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/lifecycle/backend.h"
#include "shim/lifecycle/container.h"
#include "base/util.h"

static bool has(const struct argv *a, const char *s) {
  for (size_t i = 0; i < a->len; i++)
    if (strcmp(a->v[i], s) == 0)
      return true;
  return false;
}

static int index_of(const struct argv *a, const char *s) {
  for (size_t i = 0; i < a->len; i++)
    if (strcmp(a->v[i], s) == 0)
      return (int)i;
  return -1;
}

/* A stand-in runsc that only answers --version as the given release does
 * (the platform choice depends on it; the real binaries are exercised by
 * the integration suite under both releases). */
static char *fake_runsc(const char *version_line) {
  /* `flags` as the release lists it: 20221219 has no systrap and no
   * directfs; anything newer here has both. */
  bool old = strstr(version_line, "20221219") || strstr(version_line, "MISSING");
  char dir[] = "/tmp/tg-unit-runsc.XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char *path = xasprintf("%s/runsc", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "#!/bin/sh\n"
          "if [ \"$1\" = flags ]; then exec >&2  # as runsc does\n"
          "  echo '  -platform string'\n"
          "  echo '    \tspecifies which platform to use: %s'\n"
          "  %s\n"
          "  exit 0\n"
          "fi\n"
          "echo '%s'\necho 'spec: 1.0.2-dev'\n",
          old ? "ptrace (default), kvm." : "systrap (default), ptrace, kvm.",
          old ? ":" : "echo '  -directfs'; echo '    \tdirectly access ...'",
          version_line);
  fclose(f);
  chmod(path, 0755);
  return path;
}

static void remove_fake(char *path) {
  unlink(path);
  *strrchr(path, '/') = '\0';
  rmdir(path);
  free(path);
}

static struct cli cli_for(const char *runtime, const char *override) {
  struct cli cli = {.root = "/run/tg", .runtime_override = override};
  host_config_defaults(&cli.config);
  free(cli.config.runtime);
  cli.config.runtime = xstrdup(runtime);
  return cli;
}

Test(backend, runsc_always_gets_network_none_oci_seccomp_platform) {
  struct cli cli = cli_for("runsc", NULL);
  char *runsc = fake_runsc("runsc version 0.0~20221219.0");
  cli.config.runtime_path = xstrdup(runsc);
  struct backend b;
  tg_error *err = NULL;
  cr_assert_eq(backend_choose(&cli, &b, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(b.kind, BACKEND_RUNSC);
  cr_assert_str_eq(b.root, "/run/tg/backend/runsc");
  struct backend_call call = {.log_path = "/l", .debug = true,
                              .systemd_cgroup = true};
  struct argv a = {0};
  backend_argv(&b, &call, "start", &a);
  cr_assert_str_eq(a.v[0], b.path);
  cr_assert(has(&a, "--root=/run/tg/backend/runsc"));
  cr_assert(has(&a, "--network=none"));
  cr_assert(has(&a, "--oci-seccomp"));
  cr_assert(has(&a, "--platform=ptrace"));
  cr_assert(has(&a, "--debug"));
  cr_assert(has(&a, "--systemd-cgroup"));
  cr_assert(has(&a, "--log=/l"));
  cr_assert(has(&a, "--log-format=json"));
  /* global flags come before the verb */
  cr_assert_str_eq(a.v[a.len - 1], "start");
  argv_free(&a);
  backend_free(&b);
  host_config_free(&cli.config);
  remove_fake(runsc);
}

/* "auto" (the default): ptrace on every release, systrap or not. */
Test(backend, default_platform_follows_the_runsc_release) {
  const struct {
    const char *version, *flag;
  } cases[] = {
      {"runsc version 0.0~20221219.0", "--platform=ptrace"},
      {"runsc version 0.0~20240729.0", "--platform=ptrace"},
      {"runsc version release-20250512.0", "--platform=ptrace"},
      {"runsc version VERSION_MISSING", "--platform=ptrace"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct cli cli = cli_for("runsc", NULL);
    char *runsc = fake_runsc(cases[i].version);
    cli.config.runtime_path = xstrdup(runsc);
    struct backend b;
    tg_error *err = NULL;
    cr_assert_eq(backend_choose(&cli, &b, &err), 0, "%s", err ? err->msg : "");
    struct argv a = {0};
    backend_argv(&b, NULL, "create", &a);
    cr_assert(has(&a, cases[i].flag), "%s: want %s", cases[i].version, cases[i].flag);
    /* directfs off wherever the release has it, after the host's flags */
    bool directfs = strstr(cases[i].version, "0.0~2024") != NULL || strstr(cases[i].version, "release-") != NULL;
    cr_assert_eq(has(&a, "--directfs=false"), directfs, "%s", cases[i].version);
    argv_free(&a);
    backend_free(&b);
    host_config_free(&cli.config);
    remove_fake(runsc);
  }
}

/* systrap asked of a release without it: refused at create with the fix,
 * instead of runsc's "unknown platform" from inside the sandbox start. */
Test(backend, systrap_on_an_old_runsc_is_an_error_naming_the_fix) {
  struct cli cli = cli_for("runsc", NULL);
  char *runsc = fake_runsc("runsc version 0.0~20221219.0");
  cli.config.runtime_path = xstrdup(runsc);
  free(cli.config.platform);
  cli.config.platform = xstrdup("systrap");
  struct backend b;
  tg_error *err = NULL;
  cr_assert_lt(backend_choose(&cli, &b, &err), 0);
  cr_assert(strstr(err->msg, "20221219"), "%s", err->msg);
  cr_assert(strstr(err->msg, "\"ptrace\""), "%s", err->msg);
  cr_assert(strstr(err->msg, "make deps"), "%s", err->msg);
  tg_error_free(&err);
  host_config_free(&cli.config);
  remove_fake(runsc);
}

Test(backend, configured_platform_and_extra_args) {
  struct cli cli = cli_for("runsc", NULL);
  char *runsc = fake_runsc("runsc version 0.0~20240729.0");
  cli.config.runtime_path = xstrdup(runsc);
  free(cli.config.platform);
  cli.config.platform = xstrdup("systrap");
  cli.config.runtime_args = xcalloc(2, sizeof(char *));
  cli.config.runtime_args[0] = xstrdup("--watchdog-action=panic");
  struct backend b;
  cr_assert_eq(backend_choose(&cli, &b, NULL), 0);
  struct argv a = {0};
  backend_argv(&b, NULL, "state", &a);
  cr_assert(has(&a, "--platform=systrap"));
  cr_assert(has(&a, "--watchdog-action=panic"));
  cr_assert_not(has(&a, "--platform=ptrace"));
  cr_assert_gt(index_of(&a, "--directfs=false"), index_of(&a, "--watchdog-action=panic"));
  argv_free(&a);
  backend_free(&b);
  host_config_free(&cli.config);
  remove_fake(runsc);
}

Test(backend, runtime_args_cannot_turn_the_network_back_on) {
  struct cli cli = cli_for("runsc", NULL);
  cli.config.runtime_args = xcalloc(3, sizeof(char *));
  cli.config.runtime_args[0] = xstrdup("--network=host");
  cli.config.runtime_args[1] = xstrdup("--oci-seccomp=false");
  struct backend b;
  cr_assert_eq(backend_choose(&cli, &b, NULL), 0);
  struct argv a = {0};
  backend_argv(&b, NULL, "create", &a);
  /* runsc keeps a flag's last value: ours must come after the host's */
  cr_assert_gt(index_of(&a, "--network=none"), index_of(&a, "--network=host"));
  cr_assert_gt(index_of(&a, "--oci-seccomp"), index_of(&a, "--oci-seccomp=false"));
  argv_free(&a);
  backend_free(&b);
  host_config_free(&cli.config);
}

Test(backend, runc_gets_no_runsc_flags) {
  struct cli cli = cli_for("runsc", "runc");
  struct backend b;
  cr_assert_eq(backend_choose(&cli, &b, NULL), 0);
  cr_assert_eq(b.kind, BACKEND_RUNC);
  cr_assert_str_eq(b.root, "/run/tg/backend/runc");
  struct argv a = {0};
  backend_argv(&b, NULL, "kill", &a);
  cr_assert_not(has(&a, "--network=none"));
  cr_assert_not(has(&a, "--oci-seccomp"));
  cr_assert_not(has(&a, "--platform=ptrace"));
  argv_free(&a);
  backend_free(&b);
  host_config_free(&cli.config);
}

Test(backend, create_flags_translated_per_backend) {
  struct create_flags f = {.bundle = "/b", .pid_file = "/p",
                           .console_socket = "/s", .no_pivot = true,
                           .no_new_keyring = true, .preserve_fds = 3};
  struct backend runsc = {.kind = BACKEND_RUNSC};
  struct backend runc = {.kind = BACKEND_RUNC};
  struct argv a = {0}, b = {0};
  backend_create_args(&runsc, &f, &a);
  backend_create_args(&runc, &f, &b);
  const char *common[] = {"--bundle=/b", "--pid-file=/p", "--console-socket=/s"};
  for (size_t i = 0; i < 3; i++) {
    cr_assert(has(&a, common[i]), "runsc lacks %s", common[i]);
    cr_assert(has(&b, common[i]), "runc lacks %s", common[i]);
  }
  /* runsc rejects these; runc takes them */
  cr_assert_not(has(&a, "--no-pivot"));
  cr_assert_not(has(&a, "--no-new-keyring"));
  cr_assert_not(has(&a, "--preserve-fds=3"));
  cr_assert(has(&b, "--no-pivot"));
  cr_assert(has(&b, "--no-new-keyring"));
  cr_assert(has(&b, "--preserve-fds=3"));
  argv_free(&a);
  argv_free(&b);
}

Test(backend, exec_flags_translated_per_backend) {
  struct exec_flags f = {.process = "/p.json", .pid_file = "/pid",
                         .detach = true, .preserve_fds = 1};
  struct backend runsc = {.kind = BACKEND_RUNSC};
  struct backend runc = {.kind = BACKEND_RUNC};
  struct argv a = {0}, b = {0};
  backend_exec_args(&runsc, &f, &a);
  backend_exec_args(&runc, &f, &b);
  cr_assert(has(&a, "--process=/p.json"));
  cr_assert(has(&a, "--detach"));
  cr_assert(has(&a, "--pid-file=/pid"));
  cr_assert_not(has(&a, "--preserve-fds=1"));
  cr_assert(has(&b, "--preserve-fds=1"));
  cr_assert_lt(index_of(&a, "--console-socket"), 0);
  argv_free(&a);
  argv_free(&b);
}

Test(backend, missing_runsc_is_an_error_naming_the_fix) {
  struct cli cli = cli_for("runsc", NULL);
  cli.config.runtime_path = xstrdup("/nonexistent/runsc");
  struct backend b;
  tg_error *err = NULL;
  cr_assert_lt(backend_choose(&cli, &b, &err), 0);
  cr_assert(strstr(err->msg, "make deps"), "%s", err->msg);
  cr_assert(strstr(err->msg, "--runtime runc"), "%s", err->msg);
  tg_error_free(&err);
  host_config_free(&cli.config);
}

Test(backend, runtime_override_by_path) {
  struct cli cli = cli_for("runsc", "/usr/sbin/runc");
  struct backend b;
  tg_error *err = NULL;
  if (access("/usr/sbin/runc", X_OK) == 0) {
    cr_assert_eq(backend_choose(&cli, &b, &err), 0);
    cr_assert_eq(b.kind, BACKEND_RUNC);
    backend_free(&b);
  }
  cli.runtime_override = "/bin/true";
  cr_assert_lt(backend_choose(&cli, &b, &err), 0);
  cr_assert(strstr(err->msg, "cannot tell"));
  tg_error_free(&err);
  cli.runtime_override = "crun";
  cr_assert_lt(backend_choose(&cli, &b, &err), 0);
  tg_error_free(&err);
  host_config_free(&cli.config);
}

Test(backend, state_round_trip) {
  struct backend b = {.kind = BACKEND_RUNSC, .name = xstrdup("runsc"),
                      .path = xstrdup("/usr/bin/runsc"),
                      .root = xstrdup("/r/backend/runsc"),
                      .args = xcalloc(2, sizeof(char *))};
  b.args[0] = xstrdup("--network=none");
  json_t *s = json_new_object();
  backend_to_state(&b, s);
  struct backend c;
  cr_assert_eq(backend_from_state(s, &c, NULL), 0);
  cr_assert_eq(c.kind, BACKEND_RUNSC);
  cr_assert_str_eq(c.path, "/usr/bin/runsc");
  cr_assert_str_eq(c.root, "/r/backend/runsc");
  cr_assert_str_eq(c.args[0], "--network=none");
  cr_assert_null(c.args[1]);
  backend_free(&b);
  backend_free(&c);
  json_free(s);
}

Test(backend, message_from_json_log_or_logrus_stderr) {
  char *m = backend_message(
      "{\"level\":\"info\",\"msg\":\"x\"}\n"
      "{\"level\":\"error\",\"msg\":\"container does not exist\",\"time\":\"t\"}\n",
      "ignored");
  cr_assert_str_eq(m, "container does not exist");
  free(m);
  /* runsc: objects back to back, no newline; braces inside strings */
  m = backend_message("{\"msg\":\"a {x\",\"level\":\"error\"}"
                      "{\"msg\":\"creating container: EOF\",\"level\":\"error\"}",
                      NULL);
  cr_assert_str_eq(m, "creating container: EOF");
  free(m);
  m = backend_message(NULL, "time=\"2026\" level=error msg=\"cannot \\\"x\\\" go\"\n\n");
  cr_assert_str_eq(m, "cannot \"x\" go");
  free(m);
  m = backend_message("", "first\nsandbox is not running\n");
  cr_assert_str_eq(m, "sandbox is not running");
  free(m);
  cr_assert_null(backend_message(NULL, "\n \n"));
}

/* runc's own words, as bare runc says them: under a hardened profile the
 * address-space rlimits no longer reach runc's init (oci/rlimits_defer.h),
 * and under passthrough, the bare backend, runc's message is the one. */
Test(backend, seccomp_out_of_memory_is_runcs_message) {
  const char *runc = "runc create failed: unable to start container process: unable to "
                     "init seccomp: error adding seccomp filter rule for syscall "
                     "socketpair: cannot allocate memory";
  char *m = backend_normalize_message("c1", runc);
  cr_assert_str_eq(m, runc);
  free(m);
  m = backend_normalize_message("c1", "cannot allocate memory");
  cr_assert_str_eq(m, "cannot allocate memory");
  free(m);
}

Test(backend, messages_in_containerd_wording) {
  char *m = backend_normalize_message("c1", "loading container \"c1\": file does not exist");
  cr_assert_str_eq(m, "container c1 does not exist");
  free(m);
  m = backend_normalize_message("c1", "container does not exist");
  cr_assert_str_eq(m, "container c1 does not exist");
  free(m);
  m = backend_normalize_message("c1", "sandbox is not running");
  cr_assert(strstr(m, "container not running"));
  free(m);
  m = backend_normalize_message("c1", "cannot signal container \"c1\" in state stopped");
  cr_assert(strstr(m, "container not running"));
  free(m);
  m = backend_normalize_message("c1", "connecting to control server at PID 7: connection refused");
  cr_assert(strstr(m, "container not running"));
  free(m);
  m = backend_normalize_message("c1", "container not running");
  cr_assert_str_eq(m, "container not running");
  free(m);
  /* runsc's sentry during concurrent kills (issue 28: 4 of 60 kills) */
  m = backend_normalize_message("c1", "signaling container \"c1\": no such process");
  cr_assert_str_eq(m, "container not running: signaling container \"c1\": no such process");
  free(m);
  m = backend_normalize_message("c1", "os: process already finished");
  cr_assert_str_eq(m, "os: process already finished");
  free(m);
}

/* The "not found" forms seen racing kill against delete (issue 20), as
 * the backends printed them. */
Test(backend, every_not_found_form_is_does_not_exist) {
  static const char *const seen[] = {
      /* runsc, its state file removed by a concurrent delete */
      "loading container: open /tmp/tollgate-root.Ab12/backend/runsc/"
      "tg-0123456789abcdef0123456789abcdef_sandbox:"
      "tg-0123456789abcdef0123456789abcdef.state: no such file or directory",
      /* runsc, the container already gone */
      "loading container: file does not exist",
      "loading container \"c1\": file does not exist",
      /* runc */
      "container does not exist",
      "open /run/tg/backend/runc/c1/state.json: no such file or directory",
  };
  for (size_t i = 0; i < sizeof seen / sizeof *seen; i++) {
    char *m = backend_normalize_message("c1", seen[i]);
    cr_assert_str_eq(m, "container c1 does not exist", "from: %s", seen[i]);
    free(m);
  }
  /* Not a "not found": kept as the backend said it. */
  char *m = backend_normalize_message(
      "x-1", "loading container: id \"x-1\" is ambiguous and could refer to "
             "multiple containers");
  cr_assert(strstr(m, "ambiguous") != NULL);
  free(m);
  m = backend_normalize_message("c1", "open /etc/x.conf: no such file or directory");
  cr_assert_str_eq(m, "open /etc/x.conf: no such file or directory");
  free(m);
}

/* runc's log removed under `runc kill` by a concurrent delete: the
 * container's own state directory is gone, so it does not exist. */
Test(backend, a_file_of_the_state_directory_gone_is_does_not_exist) {
  struct container c = {.id = "c1", .backend_id = "c1",
                        .dir = "/tmp/tollgate-root.Ab12/c1",
                        .backend = {.name = "runc"}};
  struct proc_result res = {
      .status = 1,
      .err_text = "time=\"2026-12-03T09:00:00Z\" level=error msg=\"open "
                  "/tmp/tollgate-root.Ab12/c1/backend.log: no such file or "
                  "directory\"\n"};
  tg_error *err = NULL;
  cr_assert_eq(container_backend_error(&c, "kill", &res, &err), -1);
  cr_assert_str_eq(err->msg, "runc kill: container c1 does not exist");
  tg_error_free(&err);
  /* runsc's messages name the backend id: users see tollgate's id. */
  struct container r = {.id = "x-1", .backend_id = "tg-00ff",
                        .dir = "/tmp/r/x-1", .backend = {.name = "runsc"}};
  res.err_text = "cannot signal container \"tg-00ff\" in state paused\n";
  cr_assert_eq(container_backend_error(&r, "kill", &res, &err), -1);
  cr_assert_str_eq(err->msg,
                   "runsc kill: cannot signal container \"x-1\" in state paused");
  tg_error_free(&err);
}

/* runsc finds containers by id prefix: the hashed form has one fixed form
 * and length, so none is a prefix of another (no root: always hashed). */
Test(backend, runsc_ids_are_fixed_form_and_prefix_free) {
  struct backend runsc = {.kind = BACKEND_RUNSC}, runc = {.kind = BACKEND_RUNC};
  char *ids[20];
  for (int i = 0; i < 20; i++) {
    char id[16];
    snprintf(id, sizeof id, "x-%d", i + 1);
    ids[i] = backend_container_id(&runsc, NULL, id);
    cr_assert_eq(strlen(ids[i]), 35, "%s", ids[i]);
    cr_assert(strncmp(ids[i], "tg-", 3) == 0);
    cr_assert(container_id_is_valid(ids[i]));
    char *again = backend_container_id(&runsc, NULL, id);
    cr_assert_str_eq(again, ids[i], "the same id maps to the same backend id");
    free(again);
    char *plain = backend_container_id(&runc, "/nonexistent", id);
    cr_assert_str_eq(plain, id, "runc keeps tollgate's id");
    free(plain);
  }
  for (int i = 0; i < 20; i++)
    for (int j = 0; j < 20; j++)
      if (i != j)
        cr_assert(strncmp(ids[i], ids[j], strlen(ids[i])) != 0);
  for (int i = 0; i < 20; i++)
    free(ids[i]);
}

/* In a root, runsc gets the container's own id (what its hooks and state
 * show, as the bare backend's would) unless another container's state
 * directory there is a prefix of it or has it as a prefix; either way no
 * backend id of the root is a prefix of another.  Created one by one as
 * 20 creates would claim their directories, in both orders. */
Test(backend, runsc_keeps_the_own_id_where_no_prefix_can_clash) {
  struct backend runsc = {.kind = BACKEND_RUNSC};
  for (int order = 0; order < 2; order++) {
    char root[] = "/tmp/tg-bid-XXXXXX";
    cr_assert(mkdtemp(root) != NULL);
    char *bids[20];
    for (int k = 0; k < 20; k++) {
      int i = order ? 19 - k : k;
      char *id = xasprintf("x-%d", i + 1);
      char *dir = xasprintf("%s/%s", root, id);
      cr_assert_eq(mkdir(dir, 0700), 0);
      bids[i] = backend_container_id(&runsc, root, id);
      char *again = backend_container_id(&runsc, root, id);
      cr_expect_str_eq(again, bids[i], "asked twice, the same answer");
      free(again);
      free(dir);
      free(id);
    }
    for (int i = 0; i < 20; i++)
      for (int j = 0; j < 20; j++)
        if (i != j)
          cr_assert(strncmp(bids[i], bids[j], strlen(bids[i])) != 0, "%s is a prefix of %s", bids[i], bids[j]);
    /* x-3 .. x-9 are nobody's prefix and have none: their own ids */
    for (int i = 2; i < 9; i++) {
      char want[16];
      snprintf(want, sizeof want, "x-%d", i + 1);
      cr_expect_str_eq(bids[i], want);
    }
    /* x-1 first: x-10 .. x-19 find it, a prefix of theirs, and are hashed.
     * x-20 first: x-10 .. x-20 keep their ids, and x-1, x-2 are hashed. */
    for (int i = 9; i < 19; i++)
      cr_expect(order ? strncmp(bids[i], "x-", 2) == 0 : strncmp(bids[i], "tg-", 3) == 0, "%s", bids[i]);
    if (order)
      cr_expect(strncmp(bids[0], "tg-", 3) == 0 && strncmp(bids[1], "tg-", 3) == 0);
    for (int i = 0; i < 20; i++)
      free(bids[i]);
    remove_tree(root, NULL);
  }
  /* a lone container, whatever its form: its own id */
  char root[] = "/tmp/tg-bid-XXXXXX";
  cr_assert(mkdtemp(root) != NULL);
  const char *own[] = {"web", "5a0e11e5-0b1c-4e5d-8f9a-1234567890ab",
                       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
  for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
    char *dir = xasprintf("%s/%s", root, own[i]);
    cr_assert_eq(mkdir(dir, 0700), 0);
    char *bid = backend_container_id(&runsc, root, own[i]);
    cr_expect_str_eq(bid, own[i]);
    free(bid);
    rmdir(dir);
    free(dir);
  }
  /* files in the root (a caller's output beside it) and the reserved
   * backend directory are no container: they clash with nothing */
  char *file = xasprintf("%s/web.out", root), *bk = xasprintf("%s/backend", root);
  close(open(file, O_CREAT | O_WRONLY, 0600));
  cr_assert_eq(mkdir(bk, 0700), 0);
  const char *beside[] = {"web", "back"};
  for (size_t i = 0; i < 2; i++) {
    char *bid = backend_container_id(&runsc, root, beside[i]);
    cr_expect_str_eq(bid, beside[i]);
    free(bid);
  }
  /* a directory is a container's: "web" beside "web2" is hashed */
  char *web2 = xasprintf("%s/web2", root);
  cr_assert_eq(mkdir(web2, 0700), 0);
  char *wbid = backend_container_id(&runsc, root, "web");
  cr_expect(strncmp(wbid, "tg-", 3) == 0, "%s", wbid);
  free(wbid), free(web2), free(file), free(bk);
  /* ids in the hashed form's namespace (or a prefix of it) are hashed */
  const char *hashed[] = {"t", "tg", "tg-", "tg-0123456789abcdef0123456789abcdef", "tg-x"};
  for (size_t i = 0; i < sizeof hashed / sizeof *hashed; i++) {
    char *bid = backend_container_id(&runsc, root, hashed[i]);
    cr_expect(strncmp(bid, "tg-", 3) == 0 && strlen(bid) == 35, "%s -> %s", hashed[i], bid);
    free(bid);
  }
  remove_tree(root, NULL);
}

/* A backend call held at the open of its log (shim/lifecycle/backend_hold.h),
 * with a stand-in backend: a shell script that does what runc does first
 * (open its --log), then leaves a mark, writes a log line and exits 3. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/backend_hold.h"
#include "shim/lifecycle/container.h"

static char dir[] = "/tmp/tg-hold-XXXXXX";
static char *script;

/* The stand-in: --log=PATH among its arguments. */
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  script = xasprintf("%s/fake-runc", dir);
  FILE *f = fopen(script, "w");
  cr_assert_not_null(f);
  fprintf(f, "#!/bin/sh\n"
             "for a in \"$@\"; do case $a in --log=*) log=${a#--log=} ;; esac; done\n"
             "exec 3>>\"$log\"\n"
             "touch \"%s/went-on\"\n"
             "echo '{\"level\":\"error\",\"msg\":\"stand-in: refused\"}' >&3\n"
             "exit 3\n",
             dir);
  fclose(f);
  cr_assert_eq(chmod(script, 0755), 0);
}

static void teardown(void) {
  tg_error *err = NULL;
  remove_tree(dir, &err);
  tg_error_free(&err);
  free(script);
}

static struct container stand_in(void) {
  static char *args[] = {NULL};
  struct container c = {.id = "c1", .backend_id = "c1", .dir = dir,
                        .backend = {.kind = BACKEND_RUNC, .name = "runc", .path = script,
                                    .root = dir, .args = args}};
  return c;
}

static bool went_on(void) {
  cleanup_free char *mark = xasprintf("%s/went-on", dir);
  return access(mark, F_OK) == 0;
}

TestSuite(backend_hold, .init = setup, .fini = teardown);

Test(backend_hold, held_until_released_then_its_log_is_the_error) {
  struct cli cli = {0};
  struct container c = stand_in();
  struct backend_hold h;
  char *args[] = {"--detach", NULL};
  backend_hold_prepare(&h, "run", args);
  tg_error *err = NULL;
  cr_assert_eq(backend_hold_spawn(&cli, &c, &h, &err), 0);
  cr_assert_gt(h.proc.pid, 0, "spawned now");
  cr_assert_not_null(h.fifo, "held at a FIFO");
  usleep(300 * 1000);
  cr_expect(!went_on(), "nothing of the call happens before the release");
  cr_expect_eq(kill(h.proc.pid, 0), 0, "it waits, alive");
  cr_assert_eq(backend_hold_start(&cli, &c, &h, &err), 0, "a held call is started already");
  cr_assert_eq(backend_hold_release(&c, &h, &err), 0);
  struct proc_result res = {0};
  int st = backend_hold_finish(&c, &h, &res, &err);
  cr_expect_eq(st, 3);
  cr_expect(went_on());
  tg_error *be = NULL;
  container_backend_error(&c, "run", &res, &be);
  cr_assert_not_null(be);
  cr_expect_not_null(strstr(be->msg, "stand-in: refused"), "%s", be->msg);
  cleanup_free char *fifo = xasprintf("%s/backend.hold", dir);
  struct stat sb;
  cr_expect(lstat(fifo, &sb) < 0 && errno == ENOENT, "the FIFO is gone once the call ended");
  tg_error_free(&be);
  proc_result_free(&res);
  backend_hold_free(&h);
}

Test(backend_hold, cancelled_before_release_it_never_goes_on) {
  struct cli cli = {0};
  struct container c = stand_in();
  struct backend_hold h;
  backend_hold_prepare(&h, "run", NULL);
  tg_error *err = NULL;
  cr_assert_eq(backend_hold_spawn(&cli, &c, &h, &err), 0);
  pid_t pid = h.proc.pid;
  backend_hold_cancel(&h);
  cr_expect(kill(pid, 0) < 0 && errno == ESRCH, "killed and reaped");
  cr_expect(!went_on());
}

Test(backend_hold, debug_is_not_held_and_starts_at_its_moment) {
  struct cli cli = {.debug = true, .log_path = "/dev/null"};
  struct container c = stand_in();
  struct backend_hold h;
  backend_hold_prepare(&h, "run", NULL);
  tg_error *err = NULL;
  cr_assert_eq(backend_hold_spawn(&cli, &c, &h, &err), 0);
  cr_expect_eq(h.proc.pid, -1, "nothing spawned");
  cr_assert_eq(backend_hold_start(&cli, &c, &h, &err), 0);
  cr_assert_eq(backend_hold_release(&c, &h, &err), 0);
  struct proc_result res = {0};
  cr_expect_eq(backend_hold_finish(&c, &h, &res, &err), 3);
  tg_error *be = NULL;
  container_backend_error(&c, "run", &res, &be);
  cr_expect_not_null(strstr(be->msg, "stand-in: refused"), "%s", be->msg);
  tg_error_free(&be);
  proc_result_free(&res);
  backend_hold_free(&h);
}

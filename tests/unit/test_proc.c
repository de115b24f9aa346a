/* Starting backend processes (shim/lifecycle/proc.h), as posix_spawn,
 * as a child that dies with tollgate, and as PID 1 of a pid namespace of
 * its own: output, exit status, exec failures. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "shim/lifecycle/proc.h"

static const struct proc_opts kinds[] = {
    {.capture_stdout = true, .capture_stderr = true},
    {.capture_stdout = true, .capture_stderr = true, .die_with_parent = true},
    {.capture_stdout = true, .capture_stderr = true, .fresh_pid_ns = true},
};

static int sh(const struct proc_opts *o, const char *script, struct proc_result *res) {
  char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
  tg_error *err = NULL;
  int r = proc_run(argv, o, res, &err);
  cr_assert(r == 0, "proc_run: %s", err ? err->msg : "?");
  return res->status;
}

Test(proc, output_and_status_of_every_kind) {
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    struct proc_result res = {0};
    cr_assert_eq(sh(&kinds[i], "echo out; echo err >&2; exit 3", &res), 3, "kind %zu", i);
    cr_assert_str_eq(res.out, "out\n");
    cr_assert_str_eq(res.err_text, "err\n");
    proc_result_free(&res);
  }
}

Test(proc, an_exec_failure_comes_back_as_its_errno) {
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    char *argv[] = {"/nonexistent/backend", NULL};
    struct proc_result res = {0};
    tg_error *err = NULL;
    cr_assert(proc_run(argv, &kinds[i], &res, &err) < 0, "kind %zu", i);
    cr_assert(strstr(err->msg, "/nonexistent/backend") != NULL, "%s", err->msg);
    cr_assert_eq(err->errnum, ENOENT, "kind %zu: %s", i, err->msg);
    tg_error_free(&err);
  }
}

/* The reason for the kind: the numbers of this namespace name nothing
 * there.  The child is PID 1, and this test's own pid is not there. */
Test(proc, a_fresh_pid_namespace_holds_nothing_but_the_child) {
  if (geteuid() != 0)
    cr_skip_test("a pid namespace needs root");
  char script[96];
  snprintf(script, sizeof script, "echo $$; kill -0 %d 2>/dev/null && echo seen || echo unseen", (int)getpid());
  struct proc_result res = {0};
  cr_assert_eq(sh(&kinds[2], script, &res), 0);
  cr_assert_str_eq(res.out, "1\nunseen\n");
  proc_result_free(&res);
}

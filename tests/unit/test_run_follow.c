/* Following `runc run`'s pid file to its init (shim/lifecycle/run_follow.c):
 * the parsers, the trust rule, and the file's checks on real files. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/run_follow.h"
#include "file_util.h"

static int parse_stat(const char *text, struct proc_stat_fields *f) {
  return run_follow_parse_stat(text, strlen(text), f);
}

#define TAIL " 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 "

Test(run_follow, stat_fields_after_the_last_paren) {
  struct proc_stat_fields f = {0};
  cr_assert_eq(parse_stat("4242 (sh) S 4000" TAIL "987654 1000 10", &f), 0);
  cr_expect_eq(f.ppid, 4000);
  cr_expect_eq(f.start, 987654ULL);
  /* A command name is the process's own choice: spaces, parentheses and
   * digits in it must not shift the fields. */
  cr_assert_eq(parse_stat("4242 (a) S 1 (b c) 7) R 4001" TAIL "55 1000 10", &f), 0);
  cr_expect_eq(f.ppid, 4001);
  cr_expect_eq(f.start, 55ULL);
  cr_expect_eq(parse_stat("4242 (x) S 1" TAIL "99\n", &f), 0, "a trailing newline");
}

Test(run_follow, broken_stat_is_refused) {
  struct proc_stat_fields f = {0};
  cr_expect_eq(parse_stat("", &f), -1);
  cr_expect_eq(parse_stat("4242 sh S 4000" TAIL "1", &f), -1, "no parenthesis");
  cr_expect_eq(parse_stat("4242 (sh) S 4000 1 1", &f), -1, "cut before starttime");
  cr_expect_eq(parse_stat("4242 (sh) S x" TAIL "1", &f), -1, "ppid not a number");
  cr_expect_eq(parse_stat("4242 (sh) S 99999999999" TAIL "1", &f), -1, "ppid out of range");
  cr_expect_eq(parse_stat("4242 (sh) S 1" TAIL "99999999999999999999999", &f), -1, "overflow");
}

Test(run_follow, pid_file_text) {
  pid_t p = 0;
  cr_expect_eq(run_follow_parse_pid("12345", 5, &p), 0);
  cr_expect_eq(p, 12345);
  cr_expect_eq(run_follow_parse_pid("77\n", 3, &p), 0);
  cr_expect_eq(p, 77);
  const char *bad[] = {"", "\n", "1", "0", "-5", "12 ", " 12", "12x", "1\n2", "99999999999", "+3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_expect_eq(run_follow_parse_pid(bad[i], strlen(bad[i]), &p), -1, "[%s]", bad[i]);
}

Test(run_follow, trusted_only_as_the_runners_later_child) {
  struct proc_stat_fields child = {.ppid = 500, .start = 1000};
  cr_expect(run_follow_trusts(&child, 500, 1000));
  cr_expect(run_follow_trusts(&child, 500, 900));
  cr_expect(!run_follow_trusts(&child, 501, 900), "another parent");
  cr_expect(!run_follow_trusts(&child, 500, 1001), "started before the runner");
  struct proc_stat_fields orphan = {.ppid = 1, .start = 2000};
  cr_expect(!run_follow_trusts(&orphan, 1, 0), "no runner at all");
}

static char *temp_dir(void) {
  char tmpl[] = "/tmp/tg-run-follow.XXXXXX";
  cr_assert_not_null(mkdtemp(tmpl));
  return strdup(tmpl);
}

static void remove_dir(const char *d, const char *const *names) {
  for (; *names; names++) {
    cleanup_free char *p = xasprintf("%s/%s", d, *names);
    unlink(p);
  }
  rmdir(d);
}

/* A child of this process (the runner here) that waits to be killed. */
static pid_t sleeping_child(void) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

static void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

Test(run_follow, the_runners_child_is_followed) {
  cleanup_free char *d = temp_dir();
  cleanup_close int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(dfd, 0);
  struct proc_stat_fields me;
  cr_assert_eq(run_follow_read_stat(getpid(), &me), 0);
  pid_t child = sleeping_child();
  cleanup_free char *text = xasprintf("%d", (int)child);
  int fd = -1;
  pid_t got = 0;
  cr_expect_eq(run_follow_try(dfd, "pid", getpid(), me.start, &fd, &got), 0, "no file yet");
  cr_expect_eq(fd, -1);
  write_text_in(d, "pid", text, 0644);
  cr_expect_eq(run_follow_try(dfd, "pid", getpid(), me.start, &fd, &got), 1);
  cr_assert_geq(fd, 0);
  cr_expect_eq(pidfd_signal(fd, 0), 0, "the pidfd names the live child");
  cr_expect_eq(got, child);
  close(fd);
  /* The same pid, but the runner named is another process: refused. */
  cr_expect_eq(run_follow_try(dfd, "pid", getppid(), 0, &fd, &got), 0);
  /* A process that started after the child cannot be its runner. */
  struct proc_stat_fields cs;
  cr_assert_eq(run_follow_read_stat(child, &cs), 0);
  cr_expect_eq(run_follow_try(dfd, "pid", getpid(), cs.start + 1, &fd, &got), 0);
  /* Gone and reaped: nothing to follow. */
  reap(child);
  cr_expect_eq(run_follow_try(dfd, "pid", getpid(), me.start, &fd, &got), 0);
  const char *names[] = {"pid", NULL};
  remove_dir(d, names);
}

Test(run_follow, links_fifos_and_foreign_text_are_not_followed, .timeout = 10) {
  cleanup_free char *d = temp_dir();
  cleanup_close int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(dfd, 0);
  struct proc_stat_fields me;
  cr_assert_eq(run_follow_read_stat(getpid(), &me), 0);
  pid_t child = sleeping_child();
  cleanup_free char *text = xasprintf("%d", (int)child);
  write_text_in(d, "real", text, 0644);
  int fd = -1;
  pid_t got = 0;
  /* A symlink to a file that would pass: never followed. */
  cr_assert_eq(symlinkat("real", dfd, "link"), 0);
  cr_expect_eq(run_follow_try(dfd, "link", getpid(), me.start, &fd, &got), 0);
  /* A FIFO with no writer: refused at once, not waited on (the test's
   * timeout catches a block). */
  cr_assert_eq(mkfifoat(dfd, "fifo", 0600), 0);
  cr_expect_eq(run_follow_try(dfd, "fifo", getpid(), me.start, &fd, &got), 0);
  /* A directory, a long text, garbage. */
  cr_assert_eq(mkdirat(dfd, "dir", 0700), 0);
  cr_expect_eq(run_follow_try(dfd, "dir", getpid(), me.start, &fd, &got), 0);
  cleanup_free char *longer = xasprintf("%d%040d", (int)child, 0);
  write_text_in(d, "long", longer, 0644);
  cr_expect_eq(run_follow_try(dfd, "long", getpid(), me.start, &fd, &got), 0);
  write_text_in(d, "junk", "pid=1234", 0644);
  cr_expect_eq(run_follow_try(dfd, "junk", getpid(), me.start, &fd, &got), 0);
  cr_expect_eq(fd, -1);
  reap(child);
  const char *names[] = {"real", "link", "fifo", "long", "junk", NULL};
  remove_dir(d, names);
  cleanup_free char *dir = xasprintf("%s/dir", d);
  rmdir(dir);
  rmdir(d);
}

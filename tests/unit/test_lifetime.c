/* A container's owner and deadline (shim/lifecycle/lifetime.h): --deadline's
 * forms, --owner-pid's checks, the record's round trip, and the verdict
 * (an owner whose pid was reused, a zombie, another pid namespace). */
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/lifetime.h"

#define NOW ((time_t)1765000000) /* 2025-12-06T05:46:40Z */

static long long deadline_of(const char *s) {
  long long d = 0;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(lifetime_parse_deadline(s, NOW, &d, &err), 0, "%s: %s", s, err ? err->msg : "");
  return d;
}

static void deadline_refused(const char *s, const char *want) {
  long long d = 0;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(lifetime_parse_deadline(s, NOW, &d, &err), -1, "%s accepted", s);
  cr_assert(strstr(err->msg, want) != NULL, "%s: %s", s, err->msg);
}

Test(lifetime, deadline_seconds_and_rfc3339) {
  /* whole seconds, never sooner than asked: NOW is cut down to one */
  cr_assert_eq(deadline_of("3"), (long long)NOW + 4);
  cr_assert_eq(deadline_of("2025-12-06T06:00:00Z"), 1765000800LL);
  cr_assert_eq(deadline_of("2025-12-06T07:00:00+01:00"), 1765000800LL);
  cr_assert_eq(deadline_of("2025-12-06T05:00:00.123-01:00"), 1765000800LL);
}

Test(lifetime, deadline_refusals_name_the_form) {
  deadline_refused("soon", "give SECONDS");
  deadline_refused("0", "give 1 to");
  deadline_refused("-5", "give SECONDS");
  deadline_refused("99999999999", "give 1 to");
  deadline_refused("2025-12-06T06:00:00", "give SECONDS");   /* no zone */
  deadline_refused("2025-13-06T06:00:00Z", "give SECONDS");
  deadline_refused("2001-01-01T00:00:00Z", "has passed");
  deadline_refused("", "give SECONDS");
}

Test(lifetime, owner_must_be_a_live_pid) {
  struct lifetime lt = {0};
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(lifetime_parse_owner("abc", &lt, &err), -1);
  tg_error_free(&err);
  cr_assert_eq(lifetime_parse_owner("0", &lt, &err), -1);
  tg_error_free(&err);
  cr_assert_eq(lifetime_parse_owner("999999999", &lt, &err), -1);
  tg_error_free(&err);
  char me[16];
  snprintf(me, sizeof me, "%d", (int)getpid());
  cr_assert_eq(lifetime_parse_owner(me, &lt, &err), 0);
  cr_assert_eq(lt.owner_pid, getpid());
  cr_assert_eq(lt.owner_start, process_start_time(getpid()));
  cr_assert_eq(lt.owner_pidns, lifetime_self_pidns());
  cr_assert_null(lifetime_verdict(&lt, time(NULL)));
}

Test(lifetime, record_round_trip) {
  char dir[] = "/tmp/tg-lifetime.XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  struct lifetime lt = {0}, back;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(lifetime_read(dir, &back, &err), 0); /* none: never reaped */
  lifetime_owner_self(&lt);
  lt.deadline = 1765000800LL;
  cr_assert_eq(lifetime_write(dir, &lt, &err), 0);
  cr_assert_eq(lifetime_read(dir, &back, &err), 1);
  cr_assert_eq(back.owner_pid, lt.owner_pid);
  cr_assert_eq(back.owner_start, lt.owner_start);
  cr_assert_eq(back.deadline, lt.deadline);
  cr_assert_eq(lifetime_set_deadline(dir, 0, &err), 0);
  cr_assert_eq(lifetime_read(dir, &back, &err), 1);
  cr_assert_eq(back.deadline, 0);
  cr_assert_eq(back.owner_pid, lt.owner_pid);
  remove_tree(dir, &err);
}

Test(lifetime, verdicts) {
  struct lifetime lt = {0};
  cr_assert_null(lifetime_verdict(&lt, NOW)); /* no owner, no deadline: never */
  lt.deadline = NOW + 1;
  cr_assert_null(lifetime_verdict(&lt, NOW));
  char *why = lifetime_verdict(&lt, NOW + 1);
  cr_assert(why && strstr(why, "deadline"), "%s", why ? why : "(null)");
  free(why);
  lt.deadline = 0;
  lifetime_owner_self(&lt);
  lt.owner_start += 1; /* the pid names another process now */
  why = lifetime_verdict(&lt, NOW);
  cr_assert(why && strstr(why, "another process"), "%s", why ? why : "(null)");
  free(why);
  lt.owner_pidns += 1; /* read in another pid namespace: cannot be judged here */
  cr_assert_null(lifetime_verdict(&lt, NOW));
}

Test(lifetime, zombie_and_gone_owners) {
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  char s[16];
  snprintf(s, sizeof s, "%d", (int)child);
  struct lifetime lt = {0};
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(lifetime_parse_owner(s, &lt, &err), 0);
  cr_assert_null(lifetime_verdict(&lt, time(NULL)));
  kill(child, SIGKILL);
  for (int i = 0; i < 200; i++) { /* a zombie until we reap it */
    char *why = lifetime_verdict(&lt, time(NULL));
    if (why != NULL) {
      cr_assert(strstr(why, "zombie") || strstr(why, "gone"), "%s", why);
      free(why);
      break;
    }
    usleep(5000);
  }
  waitpid(child, NULL, 0);
  char *why = lifetime_verdict(&lt, time(NULL));
  cr_assert(why && strstr(why, "is gone"), "%s", why ? why : "(null)");
  free(why);
}

/* A pid namespace is "ended" only once no process has it: a child
 * namespace's init alive, then killed and reaped. */
Test(lifetime, pid_namespace_ended_only_when_no_process_has_it) {
  if (!lifetime_sees_every_pidns())
    cr_skip_test("not in the initial pid namespace: nothing can be told here");
  cr_assert(!lifetime_pidns_ended(lifetime_self_pidns()), "our own namespace has not ended");
  cr_assert(!lifetime_pidns_ended(0), "an unrecorded namespace proves nothing");
  int ready[2];
  cr_assert(pipe(ready) == 0);
  pid_t middle = fork();
  cr_assert(middle >= 0);
  if (middle == 0) {
    if (unshare(CLONE_NEWPID) < 0)
      _exit(2);
    pid_t init = fork(); /* PID 1 of the new namespace */
    if (init == 0) {
      close(ready[0]);
      (void)!write(ready[1], "x", 1);
      pause();
      _exit(0);
    }
    int ws;
    waitpid(init, &ws, 0);
    _exit(0);
  }
  close(ready[1]);
  char c;
  cr_assert(read(ready[0], &c, 1) == 1, "the namespace's init started");
  close(ready[0]);
  /* The init is the middle process's only child. */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)middle, (int)middle);
  FILE *f = fopen(path, "r");
  cr_assert(f != NULL);
  int init = 0;
  cr_assert(fscanf(f, "%d", &init) == 1);
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/ns/pid", init);
  struct stat st;
  cr_assert(stat(path, &st) == 0);
  unsigned long long ns = (unsigned long long)st.st_ino;
  cr_assert(lifetime_pidns_elsewhere(ns));
  cr_assert(!lifetime_pidns_ended(ns), "its init lives");
  kill(init, SIGKILL);
  int ws;
  cr_assert(waitpid(middle, &ws, 0) == middle);
  cr_assert(lifetime_pidns_ended(ns), "no process has it any more");
}

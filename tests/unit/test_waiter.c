/* The waiter (shim/lifecycle/waiter.h) with a backend of real processes:
 * the calls it is handed run /bin/sh and touch files, as runsc's start,
 * kill and wait would act on a container inside its pod's sandbox. */
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
#include "shim/lifecycle/waiter.h"

struct backend_of_processes {
  char dir[64];       /* the state directory */
  const char *refuse; /* start fails with this message, or NULL */
  const char *wait_sh; /* what `wait` runs (sh -c), in dir */
};

static void write_flag(const char *dir, const char *name, const char *text) {
  char path[128], tmp[140];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return;
  fputs(text, f);
  fclose(f);
  rename(tmp, path);
}

static int call_start(void *arg, tg_error **err) {
  struct backend_of_processes *b = arg;
  if (b->refuse != NULL)
    return tg_error_set(err, 0, "%s", b->refuse);
  write_flag(b->dir, "started", "yes");
  return 0;
}

static void call_kill(void *arg, int signo) {
  struct backend_of_processes *b = arg;
  char num[16];
  snprintf(num, sizeof num, "%d", signo);
  write_flag(b->dir, "killed", num);
}

static const struct proc_opts captured = {.capture_stdout = true, .capture_stderr = true};

static int call_wait(void *arg, struct proc *child, tg_error **err) {
  struct backend_of_processes *b = arg;
  char *argv[] = {"/bin/sh", "-c", (char *)b->wait_sh, "wait", b->dir, NULL};
  return proc_spawn(argv, &captured, child, err);
}

static int call_finish(void *arg, struct proc *child, struct proc_result *res, tg_error **err) {
  (void)arg;
  if (proc_finish(child, &captured, res, err) < 0)
    return -1;
  return res->status;
}

static void backend_init(struct backend_of_processes *b, const char *wait_sh) {
  memset(b, 0, sizeof *b);
  strcpy(b->dir, "/tmp/tg-waiter-XXXXXX");
  cr_assert_not_null(mkdtemp(b->dir));
  b->wait_sh = wait_sh;
}

static void backend_remove(struct backend_of_processes *b) {
  tg_error *e = NULL;
  remove_tree(b->dir, &e);
  tg_error_free(&e);
}

static pid_t spawn(struct backend_of_processes *b, json_t *state) {
  struct waiter_calls calls = {.arg = b, .start = call_start, .kill = call_kill, .wait = call_wait,
                               .finish = call_finish};
  pid_t pid = 0;
  tg_error *err = NULL;
  cr_assert_eq(waiter_spawn("c1", b->dir, &calls, &pid, &err), 0, "%s", err ? err->msg : "");
  cr_assert_gt(pid, 0);
  waiter_record(state, pid);
  cr_assert(waiter_recorded(state));
  cr_assert(waiter_alive(state));
  return pid;
}

static int exit_status_of(pid_t pid) {
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st));
  return WEXITSTATUS(st);
}

static char *flag(const struct backend_of_processes *b, const char *name) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", b->dir, name);
  char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file(path, 64, &buf, &len, &e) < 0) {
    tg_error_free(&e);
    return NULL;
  }
  return buf;
}

Test(waiter, alive_only_while_the_recorded_process_lives) {
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  json_t *state = json_new_object();
  waiter_record(state, child);
  cr_expect(waiter_alive(state));
  /* A recycled pid (another start time) is not the waiter. */
  json_t *other = json_copy(state);
  long long started = 0;
  json_integer_value(json_object_get(other, "waiter_start_time"), &started);
  json_object_set(other, "waiter_start_time", json_new_integer(started + 1));
  cr_expect(!waiter_alive(other));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  cr_expect(!waiter_alive(state));
  json_t *none = json_new_object();
  cr_expect(!waiter_recorded(none));
  cr_expect(!waiter_alive(none));
  json_free(none);
  json_free(other);
  json_free(state);
}

Test(waiter, starts_the_container_and_exits_with_its_status) {
  struct backend_of_processes b;
  backend_init(&b, "echo '{\"id\":\"c1\",\"exitStatus\":7}'");
  json_t *state = json_new_object();
  pid_t pid = spawn(&b, state);
  tg_error *err = NULL;
  cr_expect_eq(waiter_start("c1", b.dir, state, &err), 0, "%s", err ? err->msg : "");
  char *started = flag(&b, "started");
  cr_expect_str_eq(started ? started : "", "yes");
  free(started);
  cr_expect_eq(exit_status_of(pid), 7);
  cr_expect(!waiter_alive(state));
  json_free(state);
  backend_remove(&b);
}

Test(waiter, a_refused_start_is_the_backends_message_and_a_removed_container_ends_it) {
  struct backend_of_processes b;
  backend_init(&b, "echo '{\"exitStatus\":0}'");
  b.refuse = "runsc start: the sandbox is gone";
  json_t *state = json_new_object();
  pid_t pid = spawn(&b, state);
  tg_error *err = NULL;
  cr_expect_eq(waiter_start("c1", b.dir, state, &err), -1);
  cr_expect_str_eq(err ? err->msg : "", "runsc start: the sandbox is gone");
  tg_error_free(&err);
  /* A delete removes the state directory: the waiter, still listening
   * for a start, goes with it. */
  backend_remove(&b);
  cr_expect_eq(exit_status_of(pid), 255);
  json_free(state);
}

Test(waiter, passes_the_signals_it_gets_on_to_the_container) {
  struct backend_of_processes b;
  /* The container runs until the waiter passed it a signal (9 if it
   * never came: a bound, so that a broken waiter fails, not hangs). */
  backend_init(&b, "i=0; while [ ! -e \"$1/killed\" ]; do i=$((i+1)); [ $i -lt 3000 ] || "
                   "{ echo '{\"exitStatus\":9}'; exit; }; sleep 0.02; done; echo '{\"exitStatus\":0}'");
  json_t *state = json_new_object();
  pid_t pid = spawn(&b, state);
  tg_error *err = NULL;
  cr_assert_eq(waiter_start("c1", b.dir, state, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(kill(pid, SIGUSR2), 0);
  cr_expect_eq(exit_status_of(pid), 0);
  char *killed = flag(&b, "killed");
  char want[16];
  snprintf(want, sizeof want, "%d", SIGUSR2);
  cr_expect_str_eq(killed ? killed : "", want);
  free(killed);
  json_free(state);
  backend_remove(&b);
}

Test(waiter, start_without_a_waiter_names_the_fix) {
  char dir[] = "/tmp/tg-waiter-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  json_t *state = json_new_object();
  tg_error *err = NULL;
  cr_expect_eq(waiter_start("c1", dir, state, &err), -1);
  cr_expect(err && strstr(err->msg, "has no waiter to start it") && strstr(err->msg, "tollgate delete --force c1"),
            "%s", err ? err->msg : "");
  tg_error_free(&err);
  json_free(state);
  rmdir(dir);
}

/* A container above its memory limit (waiter.h): the usage `runsc events`
 * prints goes past the limit, the waiter kills the container with SIGKILL
 * and exits 137, whatever status the backend's wait then gives. */
static int call_events(void *arg, struct proc *child, tg_error **err) {
  (void)arg;
  char *argv[] = {"/bin/sh", "-c",
                  "for u in 1048576 2097152 9999999999; do "
                  "echo '{\"type\":\"stats\",\"id\":\"c1\",\"data\":{\"memory\":{\"usage\":{\"usage\":'$u'}}}}'; "
                  "sleep 0.05; done; sleep 30",
                  NULL};
  return proc_spawn(argv, &captured, child, err);
}

Test(waiter, a_container_above_its_memory_limit_is_killed_137) {
  struct backend_of_processes b;
  backend_init(&b, "i=0; while [ ! -e \"$1/killed\" ]; do i=$((i+1)); [ $i -lt 3000 ] || "
                   "{ echo '{\"exitStatus\":3}'; exit; }; sleep 0.02; done; echo '{\"exitStatus\":0}'");
  struct waiter_calls calls = {.arg = &b, .start = call_start, .kill = call_kill, .wait = call_wait,
                               .finish = call_finish, .events = call_events, .memory_limit = 128LL << 20};
  pid_t pid = 0;
  tg_error *err = NULL;
  cr_assert_eq(waiter_spawn("c1", b.dir, &calls, &pid, &err), 0, "%s", err ? err->msg : "");
  json_t *state = json_new_object();
  waiter_record(state, pid);
  cr_assert_eq(waiter_start("c1", b.dir, state, &err), 0, "%s", err ? err->msg : "");
  cr_expect_eq(exit_status_of(pid), 137);
  char *killed = flag(&b, "killed");
  cr_expect_str_eq(killed ? killed : "", "9");
  free(killed);
  json_free(state);
  backend_remove(&b);
}

/* The sidecar's supervisor on the host: a real tmpfs bridge area, the real
 * sidecar (double fork, supervisor, worker), real SIGKILLs.  A worker is
 * frozen with SIGSTOP while requests arrive, so they are surely in flight
 * (taken by nobody) when it is killed.  The in-container runs are in
 * tests/integration/test_bridge_faults.sh. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bridge/area.h"
#include "bridge/bridge.h"
#include "bridge/protocol.h"
#include "bridge/respond.h"
#include "bridge/sidecar.h"
#include "governance/verify.h"
#include "base/util.h"

static char state[] = "/tmp/tg-superv-XXXXXX";
static int afd = -1, rfd = -1, qfd = -1;
static char *audit_dir;

static void setup(void) {
  cr_assert_not_null(mkdtemp(state));
  tg_error *err = NULL;
  char *py = bridge_client_path(NULL, "tollgate.py", &err);
  cr_assert_not_null(py, "%s", err ? err->msg : "");
  struct bridge_area_params p = {.approval_timeout_ms = 2000, .python_client = py};
  cr_assert_eq(bridge_area_create(state, &p, &err), 0, "%s", err ? err->msg : "");
  free(py);
  cr_assert_eq(bridge_area_open(state, &afd, &rfd, &qfd, &err), 0);
  audit_dir = xasprintf("%s/audit", state);
  mkdir(audit_dir, 0700);
}

static void teardown(void) {
  bridge_teardown(state, NULL);
  close(afd);
  close(rfd);
  close(qfd);
  remove_tree(state, NULL);
  free(audit_dir);
}

TestSuite(supervisor, .init = setup, .fini = teardown, .timeout = 60);

static void put_request(const char *id) {
  char name[128];
  snprintf(name, sizeof name, "%s.json", id);
  int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  cr_assert_geq(fd, 0);
  const char *body = "{\"v\":1,\"tool\":\"echo\",\"args\":{}}";
  cr_assert_eq(write_all(fd, body, strlen(body)), 0);
  close(fd);
  snprintf(name, sizeof name, "%s.done", id);
  fd = openat(rfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  cr_assert_geq(fd, 0);
  close(fd);
}

/* The response body for id within wait_ms, consumed; NULL without one. */
static char *get_response(const char *id, int wait_ms) {
  char marker[128], name[128];
  snprintf(marker, sizeof marker, "%s.done", id);
  snprintf(name, sizeof name, "%s.json", id);
  struct stat st;
  for (int i = 0; i < wait_ms; i++) {
    if (fstatat(qfd, marker, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      char *buf = NULL;
      cr_assert_eq(read_file_untrusted(qfd, name, 1 << 20, &buf, NULL, NULL), 0);
      unlinkat(qfd, marker, 0);
      unlinkat(qfd, name, 0);
      return buf;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static bool req_exists(const char *name) {
  struct stat st;
  return fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Test(supervisor, orphans_are_answered_once_and_nothing_is_followed) {
  /* a victim outside the area, linked from resp/ by the "container" */
  char victim[PATH_MAX];
  snprintf(victim, sizeof victim, "%s/victim", state);
  int v = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  cr_assert_geq(v, 0);
  close(v);
  put_request("a1");
  put_request("a2");
  cr_assert_eq(symlinkat(victim, qfd, "a2.json"), 0);
  put_request("b1");
  cr_assert_eq(mknodat(qfd, "b1.done", S_IFREG | 0644, 0), 0); /* answered already */
  /* a body without a marker, a bad id, a FIFO named like a marker */
  int fd = openat(rfd, "c1.json", O_WRONLY | O_CREAT, 0600);
  close(fd);
  fd = openat(rfd, "..x.done", O_WRONLY | O_CREAT, 0600);
  close(fd);
  cr_assert_eq(mkfifoat(rfd, "f1.done", 0600), 0);
  const char *body = "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"outcome_unknown\",\"message\":\"m\"}}";
  struct bridge_orphans o;
  unsigned long long n = bridge_answer_orphans(rfd, qfd, body, strlen(body), 2, &o);
  /* a1, a2 and the FIFO's id are answered (the FIFO is removed, never
   * opened); b1 is listed but its response left alone */
  cr_assert_eq(n, 3);
  cr_assert_eq(o.nids, 2);
  cr_assert_eq(o.unlisted, 2);
  cr_assert_eq(o.already, 1);
  bridge_orphans_free(&o);
  for (const char *const *id = (const char *const[]){"a1", "a2", "f1", NULL}; *id; id++) {
    char *r = get_response(*id, 10);
    cr_assert_not_null(r, "no answer for %s", *id);
    cr_assert(strstr(r, "outcome_unknown") != NULL, "%s", r);
    free(r);
  }
  struct stat st;
  cr_assert_eq(stat(victim, &st), 0);
  cr_assert_eq(st.st_size, 0, "the symlink's target was written through");
  cr_assert(!req_exists("a1.done") && !req_exists("a1.json") && !req_exists("f1.done"));
  cr_assert(!req_exists("b1.done") && !req_exists("b1.json"));
  struct stat b1;
  cr_assert_eq(fstatat(qfd, "b1.done", &b1, AT_SYMLINK_NOFOLLOW), 0, "b1's response was replaced");
  cr_assert(req_exists("c1.json"), "a body without a marker is the next sidecar's");
  cr_assert(req_exists("..x.done"), "a bad id is never answered");
}

static pid_t fake_init(void) {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

static bool process_exits(pid_t pid, int ms) {
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0)
    return errno == ESRCH;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  bool gone = poll(&p, 1, ms) > 0;
  close(fd);
  return gone;
}

/* The worker serving now, once it differs from not and its supervisor
 * has seen it ready. */
static pid_t worker_other_than(pid_t not, int ms) {
  for (int i = 0; i < ms; i++) {
    json_t *st = bridge_sidecar_status(state);
    long long w = 0;
    json_integer_value(json_object_get(st, "pid"), &w);
    const char *status = json_string_value(json_object_get(st, "status"));
    bool ready = status && strcmp(status, "running") == 0 && w > 0 && w != not;
    json_free(st);
    if (ready)
      return (pid_t)w;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

static struct host_config host(const char *on_death, int max_restarts) {
  return (struct host_config){.audit_dir = audit_dir, .approval_timeout_ms = 2000,
                              .sidecar_on_death = (char *)on_death,
                              .sidecar_max_restarts = max_restarts};
}

/* Wait until every thread of pid is stopped: SIGSTOP takes effect when
 * each thread next passes through the kernel, not when kill() returns. */
static void wait_stopped(pid_t pid) {
  for (int i = 0; i < 5000; i++) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    bool all = true;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && all) {
      if (de->d_name[0] == '.')
        continue;
      char stat[384], *buf = NULL;
      snprintf(stat, sizeof stat, "%s/%s/stat", path, de->d_name);
      if (read_file(stat, 4096, &buf, NULL, NULL) < 0)
        continue;
      char *close_paren = strrchr(buf, ')');
      all = close_paren && (close_paren[2] == 'T' || close_paren[2] == 't');
      free(buf);
    }
    closedir(d);
    if (all)
      return;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  cr_assert_fail("the sidecar %d did not stop", (int)pid);
}

/* Kill the worker with SIGKILL while ids are in flight (it is frozen
 * when they arrive, so nothing has taken them); every one is answered
 * outcome_unknown within 2 s. */
static void kill_with_calls_in_flight(pid_t worker, const char *prefix, int ncalls) {
  cr_assert_eq(kill(worker, SIGSTOP), 0);
  wait_stopped(worker);
  char id[32];
  for (int i = 0; i < ncalls; i++) {
    snprintf(id, sizeof id, "%s%d", prefix, i);
    put_request(id);
  }
  unsigned long long t0 = monotonic_ns();
  cr_assert_eq(kill(worker, SIGKILL), 0);
  for (int i = 0; i < ncalls; i++) {
    snprintf(id, sizeof id, "%s%d", prefix, i);
    char *r = get_response(id, 2000);
    cr_assert_not_null(r, "%s: no answer within 2 s of the sidecar's death", id);
    cr_assert(strstr(r, "\"outcome_unknown\"") != NULL, "%s", r);
    cr_assert(strstr(r, "killed by signal 9") != NULL, "%s", r);
    cr_assert(strstr(r, "may or may not have run") != NULL, "%s", r);
    free(r);
  }
  cr_assert_lt(monotonic_ns() - t0, 2000000000ull);
}

static char *audit_log(void) {
  char *path = xasprintf("%s/unit.jsonl", audit_dir);
  char *buf = NULL;
  cr_assert_eq(read_file(path, 1 << 20, &buf, NULL, NULL), 0);
  free(path);
  return buf;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

Test(supervisor, a_killed_sidecar_is_restarted_and_its_calls_answered) {
  struct host_config h = host("restart", 3);
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), first = 0;
  tg_error *err = NULL;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &first, &err), 0, "%s", err ? err->msg : "");
  pid_t sup = bridge_supervisor_pid(state);
  cr_assert_gt(sup, 0);
  cr_assert_neq(sup, first);
  kill_with_calls_in_flight(first, "k", 8);
  pid_t second = worker_other_than(first, 5000);
  cr_assert_gt(second, 0, "no new sidecar");
  /* later calls work: no policy, so denied, by the new sidecar */
  put_request("after");
  char *r = get_response("after", 5000);
  cr_assert_not_null(r);
  cr_assert(strstr(r, "\"denied\"") != NULL, "%s", r);
  free(r);
  json_t *st = bridge_sidecar_status(state);
  cr_assert_str_eq(json_string_value(json_object_get(st, "status")), "running");
  long long restarts = -1;
  json_integer_value(json_object_get(st, "restarts"), &restarts);
  cr_assert_eq(restarts, 1);
  json_free(st);
  /* the log: one sidecar_died record, eight unknown outcomes, one open */
  char *log = audit_log();
  cr_assert_eq(count(log, "\"event\":\"sidecar_died\""), 1, "%s", log);
  cr_assert_eq(count(log, "\"event\":\"unknown\""), 8, "%s", log);
  cr_assert_eq(count(log, "\"event\":\"open\""), 1, "%s", log);
  cr_assert(strstr(log, "\"unknown_calls\":8") != NULL, "%s", log);
  free(log);
  cr_assert_eq(bridge_teardown(state, &err), 0, "%s", err ? err->msg : "");
  cr_assert(process_exits(sup, 100) && process_exits(second, 100));
  /* closed by the second sidecar, and the chain verifies across the crash */
  char *path = xasprintf("%s/unit.jsonl", audit_dir);
  struct audit_verify_result res;
  cr_assert_eq(audit_verify(path, NULL, false, &res, &err), 0);
  cr_assert(res.ok, "%s", res.message);
  audit_verify_result_clear(&res);
  free(path);
  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
}

Test(supervisor, on_death_stop_kills_the_container_and_says_why) {
  struct host_config h = host("stop", 3);
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), first = 0;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &first, NULL), 0);
  pid_t sup = bridge_supervisor_pid(state);
  kill_with_calls_in_flight(first, "s", 2);
  int status = 0;
  cr_assert_eq(waitpid(init, &status, 0), init);
  cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the container was not killed");
  cr_assert(process_exits(sup, 5000), "the supervisor stayed");
  json_t *st = bridge_sidecar_status(state);
  cr_assert_str_eq(json_string_value(json_object_get(st, "status")), "dead");
  cr_assert(strstr(json_string_value(json_object_get(st, "last_death")), "\"stop\"") != NULL);
  json_free(st);
  char *log = audit_log();
  cr_assert(strstr(log, "\"event\":\"sidecar_died\"") != NULL, "%s", log);
  cr_assert(strstr(log, "the container was killed") != NULL, "%s", log);
  cr_assert_eq(count(log, "\"event\":\"unknown\""), 2, "%s", log);
  cr_assert(strstr(log, "\"event\":\"closed\"") != NULL, "%s", log);
  free(log);
}

Test(supervisor, restarts_are_bounded_then_the_container_stops) {
  struct host_config h = host("restart", 1);
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), first = 0;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &first, NULL), 0);
  pid_t sup = bridge_supervisor_pid(state);
  kill_with_calls_in_flight(first, "x", 1);
  pid_t second = worker_other_than(first, 5000);
  cr_assert_gt(second, 0);
  kill_with_calls_in_flight(second, "y", 1);
  int status = 0;
  cr_assert_eq(waitpid(init, &status, 0), init);
  cr_assert(WIFSIGNALED(status), "the second death within a minute must stop the container");
  cr_assert(process_exits(sup, 5000), "the supervisor stayed");
  char *log = audit_log();
  cr_assert_eq(count(log, "\"event\":\"sidecar_died\""), 2, "%s", log);
  cr_assert(strstr(log, "sidecar_max_restarts") != NULL, "%s", log);
  free(log);
}

Test(supervisor, a_killed_supervisor_leaves_the_sidecar_serving) {
  struct host_config h = host("restart", 3);
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), worker = 0;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &worker, NULL), 0);
  pid_t sup = bridge_supervisor_pid(state);
  cr_assert_eq(kill(sup, SIGKILL), 0);
  cr_assert(process_exits(sup, 5000));
  put_request("still");
  char *r = get_response("still", 5000);
  cr_assert_not_null(r, "the sidecar stopped serving with its supervisor");
  free(r);
  json_t *st = bridge_sidecar_status(state);
  cr_assert_str_eq(json_string_value(json_object_get(st, "status")), "unsupervised");
  json_free(st);
  /* delete still stops it */
  tg_error *err = NULL;
  cr_assert_eq(bridge_teardown(state, &err), 0, "%s", err ? err->msg : "");
  cr_assert(process_exits(worker, 100));
  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
}

/* put_request with a body of our own. */
static void put_call(const char *id, const char *body) {
  char name[128];
  snprintf(name, sizeof name, "%s.json", id);
  int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write_all(fd, body, strlen(body)), 0);
  close(fd);
  snprintf(name, sizeof name, "%s.done", id);
  fd = openat(rfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  cr_assert_geq(fd, 0);
  close(fd);
}

Test(supervisor, a_restart_carries_the_budgets_on) {
  char *policy = xasprintf("%s/policy.json", state);
  const char *text =
      "{\"version\": 1, \"tools\": {"
      " \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"}, \"cost\": 1,"
      "          \"rules\": [{\"effect\": \"allow\"}]}},"
      " \"budgets\": {\"max_tool_calls\": 4, \"max_cost\": 2}}";
  int fd = open(policy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  cr_assert_eq(write_all(fd, text, strlen(text)), 0);
  close(fd);
  struct host_config h = host("restart", 3);
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h,
                               .policy_path = policy};
  pid_t init = fake_init(), first = 0;
  tg_error *err = NULL;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &first, &err), 0, "%s", err ? err->msg : "");
  /* two calls spend the cost budget (2); one more is in flight at the death */
  put_call("b1", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"n\":1}}");
  char *r = get_response("b1", 5000);
  cr_assert(r && strstr(r, "\"ok\":true"), "%s", r ? r : "none");
  free(r);
  put_call("b2", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"n\":2}}");
  r = get_response("b2", 5000);
  cr_assert(r && strstr(r, "\"ok\":true"), "%s", r ? r : "none");
  free(r);
  kill_with_calls_in_flight(first, "b3-", 1);
  pid_t second = worker_other_than(first, 5000);
  cr_assert_gt(second, 0);
  /* the new sidecar knows the cost is spent: no fresh budget */
  put_call("b4", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"n\":4}}");
  r = get_response("b4", 5000);
  cr_assert(r && strstr(r, "\"budget_exhausted\"") && strstr(r, "max_cost"), "%s", r ? r : "none");
  free(r);
  /* and the attempts: b1, b2, b3-0 (unknown), b4 make 4 of 4 */
  put_call("b5", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"n\":5}}");
  r = get_response("b5", 5000);
  cr_assert(r && strstr(r, "max_tool_calls"), "%s", r ? r : "none");
  free(r);
  cr_assert_eq(bridge_teardown(state, &err), 0, "%s", err ? err->msg : "");
  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
  free(policy);
}

/* Start a client on the area with a 60 s timeout; its output goes to fd. */
static pid_t start_client(const char *const argv[], int fd) {
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    char *dir = xasprintf("%s/bridge", state);
    setenv("TOLLGATE_DIR", dir, 1);
    setenv("TOLLGATE_TIMEOUT", "60", 1);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static int exit_within(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; i++) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

/* Nobody renews the heartbeat (the sidecar and its supervisor both gone):
 * the clients give up after it stood still for 10 s, not after their 60 s
 * timeout, and say the call may or may not have run. */
Test(supervisor, a_stopped_heartbeat_ends_the_clients_wait, .timeout = 90) {
  int hb = openat(afd, "alive", O_WRONLY | O_CREAT, 0644);
  cr_assert_geq(hb, 0);
  close(hb);
  tg_error *err = NULL;
  char *client = bridge_client_path(NULL, "tollgate-call", &err);
  cr_assert_not_null(client, "%s", err ? err->msg : "");
  char *code = xasprintf("import sys; sys.path.insert(0, '%s/bridge')\n"
                         "import tollgate\n"
                         "try:\n"
                         "    tollgate.call('echo')\n"
                         "except tollgate.BridgeTimeout as e:\n"
                         "    print('timeout', e.message)\n"
                         "    sys.exit(12)\n",
                         state);
  int c_out[2], py_out[2];
  cr_assert_eq(pipe(c_out), 0);
  cr_assert_eq(pipe(py_out), 0);
  const char *c_argv[] = {client, "echo", NULL};
  const char *py_argv[] = {"python3", "-c", code, NULL};
  pid_t c = start_client(c_argv, c_out[1]), py = start_client(py_argv, py_out[1]);
  close(c_out[1]);
  close(py_out[1]);
  cr_assert_eq(exit_within(c, 30), 12, "tollgate-call did not give up on the heartbeat");
  cr_assert_eq(exit_within(py, 30), 12, "tollgate.py did not give up on the heartbeat");
  char buf[2048];
  for (int *fd = (int[]){c_out[0], py_out[0], -1}; *fd >= 0; fd++) {
    ssize_t n = read(*fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    cr_assert(strstr(buf, "heartbeat") && strstr(buf, "may or may not have run"), "%s", buf);
    close(*fd);
  }
  free(client);
  free(code);
}

/* A sidecar keeps its heartbeat: a call longer than the staleness bound
 * is answered, not given up on. */
Test(supervisor, a_live_heartbeat_keeps_a_long_wait, .timeout = 90) {
  struct host_config h = host("restart", 3);
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), worker = 0;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &worker, NULL), 0);
  struct stat a, b;
  cr_assert_eq(fstatat(afd, "alive", &a, 0), 0, "no heartbeat file");
  struct timespec ts = {1, 500000000};
  nanosleep(&ts, NULL);
  cr_assert_eq(fstatat(afd, "alive", &b, 0), 0);
  cr_assert(b.st_mtim.tv_sec != a.st_mtim.tv_sec || b.st_mtim.tv_nsec != a.st_mtim.tv_nsec,
            "the heartbeat is not renewed");
  /* frozen: no answer, but a heartbeat only the host can renew; renew it
   * by hand (as the live thread would) while a client waits past 10 s */
  cr_assert_eq(kill(worker, SIGSTOP), 0);
  wait_stopped(worker);
  int out[2];
  cr_assert_eq(pipe(out), 0);
  tg_error *err = NULL;
  char *client = bridge_client_path(NULL, "tollgate-call", &err);
  const char *argv[] = {client, "echo", NULL};
  pid_t c = start_client(argv, out[1]);
  close(out[1]);
  int hb = openat(afd, "alive", O_WRONLY | O_CLOEXEC);
  cr_assert_geq(hb, 0);
  for (int i = 0; i < 13; i++) {
    cr_assert_eq(futimens(hb, NULL), 0);
    struct timespec sec = {1, 0};
    nanosleep(&sec, NULL);
  }
  int status;
  if (waitpid(c, &status, WNOHANG) != 0) {
    char buf[2048];
    ssize_t n = read(out[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    cr_assert_fail("the client gave up on a live heartbeat (status %d): %s", status, buf);
  }
  cr_assert_eq(kill(worker, SIGCONT), 0);
  cr_assert_eq(exit_within(c, 10), 3, "the call was not answered (denied) after the wait");
  close(hb);
  close(out[0]);
  free(client);
  cr_assert_eq(bridge_teardown(state, &err), 0, "%s", err ? err->msg : "");
  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
}

/* The bridge server, sidecar and clients on the host: a real tmpfs bridge
 * area, the real gate, the real clients (build/tollgate-call and
 * tollgate.py pointed at the area with TOLLGATE_DIR).  The in-container
 * runs are in tests/integration/test_bridge*.sh. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bridge/area.h"
#include "bridge/bridge.h"
#include "bridge/heartbeat.h"
#include "bridge/server.h"
#include "bridge/sidecar.h"
#include "base/util.h"

static char state[] = "/tmp/tg-bridge-XXXXXX";
static char area[PATH_MAX];
static struct gate *gate;
static struct bridge_service *svc;
static int afd = -1, rfd = -1, qfd = -1;

static void make_area(size_t bytes) {
  cr_assert_not_null(mkdtemp(state));
  snprintf(area, sizeof area, "%s/bridge", state);
  tg_error *err = NULL;
  char *py = bridge_client_path(NULL, "tollgate.py", &err);
  cr_assert_not_null(py, "%s", err ? err->msg : "");
  struct bridge_area_params p = {.tmpfs_bytes = bytes, .uid = 0, .gid = 0,
                                 .approval_timeout_ms = 2000, .python_client = py};
  cr_assert_eq(bridge_area_create(state, &p, &err), 0, "%s", err ? err->msg : "");
  free(py);
  cr_assert_eq(bridge_area_open(state, &afd, &rfd, &qfd, &err), 0);
}

static void start_service(void) {
  tg_error *err = NULL;
  char *audit = xasprintf("%s/audit", state);
  mkdir(audit, 0700);
  struct gate_config gc = {.container_id = "unit", .audit_dir = audit};
  cr_assert_eq(gate_open(&gc, &gate, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(gate_write_tools_json(gate, afd, "tools.json", &err), 0);
  struct bridge_service_options o = {.area_fd = afd, .req_fd = rfd, .resp_fd = qfd,
                                     .gate = gate, .stop_fd = -1, .stop_fd2 = -1,
                                     .seccomp = true};
  cr_assert_eq(bridge_service_start(&o, &svc, &err), 0, "%s", err ? err->msg : "");
  free(audit);
}

static void setup(void) {
  make_area(0);
  start_service();
}

static void teardown(void) {
  if (svc)
    bridge_service_stop(svc);
  svc = NULL;
  if (gate)
    gate_close(gate);
  gate = NULL;
  close(afd);
  close(rfd);
  close(qfd);
  bridge_teardown(state, NULL);
  remove_tree(state, NULL);
}

/* Write a request the way a client does; body or marker may be left out. */
static void put_request(const char *id, const char *body, bool marker) {
  char name[128];
  if (body) {
    char tmp[128];
    snprintf(tmp, sizeof tmp, ".%s.tmp", id);
    snprintf(name, sizeof name, "%s.json", id);
    int fd = openat(rfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write_all(fd, body, strlen(body)), 0);
    close(fd);
    cr_assert_eq(renameat(rfd, tmp, rfd, name), 0);
  }
  if (marker) {
    snprintf(name, sizeof name, "%s.done", id);
    int fd = openat(rfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
  }
}

/* The response body for id, or NULL after wait_ms without one.  Consumes it. */
static char *get_response(const char *id, int wait_ms) {
  char marker[128], name[128];
  snprintf(marker, sizeof marker, "%s.done", id);
  snprintf(name, sizeof name, "%s.json", id);
  struct stat st;
  for (int i = 0; i < wait_ms; i++) {
    if (fstatat(qfd, marker, &st, 0) == 0) {
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

static void assert_error_response(const char *id, const char *body_part) {
  char *r = get_response(id, 5000);
  cr_assert_not_null(r, "no response for %s", id);
  cr_assert(strstr(r, "\"ok\":false") != NULL, "%s", r);
  if (body_part)
    cr_assert(strstr(r, body_part) != NULL, "%s lacks %s", r, body_part);
  free(r);
}

/* Whether the request area's name is gone within ms: the worker removes
 * a request's files right after it writes the response, so a caller that
 * has the response may still see them for a moment on a loaded machine. */
static bool gone_within(const char *name, int ms) {
  struct stat st;
  for (int i = 0; i < ms && fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0; i++)
    usleep(1000);
  return fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0;
}

static struct bridge_service_stats stats(void) {
  struct bridge_service_stats s;
  bridge_service_get_stats(svc, &s);
  return s;
}

static int run_client(const char *const argv[], const char *dir, char *out,
                      size_t outlen) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    setenv("TOLLGATE_DIR", dir, 1);
    setenv("TOLLGATE_TIMEOUT", "10", 1);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < outlen && (r = read(p[0], out + n, outlen - n - 1)) > 0)
    n += (size_t)r;
  out[n] = '\0';
  close(p[0]);
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TestSuite(bridge, .init = setup, .fini = teardown, .timeout = 60);

Test(bridge, area_layout) {
  struct stat st;
  cr_assert_eq(fstatat(afd, "calls", &st, 0), 0);
  cr_assert_eq(st.st_mode & 07777, 0755);
  cr_assert_eq(st.st_uid, 0u);
  cr_assert_eq(fstatat(rfd, ".", &st, 0), 0);
  cr_assert_eq(st.st_mode & 07777, 0700);
  cr_assert_eq(fstatat(afd, "tollgate.py", &st, 0), 0);
  cr_assert_eq(fstatat(afd, "tools.json", &st, 0), 0);
  cr_assert_eq(fstatat(afd, "bridge.json", &st, 0), 0);
  /* nosuid,nodev,noexec tmpfs */
  char *mounts = NULL;
  cr_assert_eq(read_file("/proc/self/mounts", 1 << 20, &mounts, NULL, NULL), 0);
  char *line = strstr(mounts, area);
  cr_assert_not_null(line);
  cr_assert(strstr(line, "tmpfs") != NULL);
  cr_assert(strstr(line, "nosuid,nodev,noexec") != NULL, "%.200s", line);
  free(mounts);
}

Test(bridge, no_policy_denies_every_call) {
  put_request("abc", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  assert_error_response("abc", "\"code\":\"denied\"");
  cr_assert_eq(stats().requests, 1);
  /* the request files are gone */
  cr_assert(gone_within("abc.json", 3000));
  cr_assert(gone_within("abc.done", 3000));
}

Test(bridge, c_client_reports_denial_with_its_exit_status) {
  tg_error *err = NULL;
  char *client = bridge_client_path(NULL, "tollgate-call", &err);
  cr_assert_not_null(client, "build/tollgate-call is missing: run make all");
  char out[4096];
  const char *argv[] = {client, "echo", "{\"text\":\"hi\"}", NULL};
  int rc = run_client(argv, area, out, sizeof out);
  cr_assert_eq(rc, 3, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "denied") != NULL, "%s", out);
  const char *bad[] = {client, "echo", "[1]", NULL};
  cr_assert_eq(run_client(bad, area, out, sizeof out), 1);
  free(client);
}

Test(bridge, python_client_raises_tool_denied) {
  char out[4096];
  char *code = xasprintf(
      "import sys; sys.path.insert(0, '%s')\n"
      "import tollgate\n"
      "try:\n"
      "    tollgate.call('echo', text='h\\u00e9')\n"
      "except tollgate.ToolDenied as e:\n"
      "    print('denied', e.code, e.message)\n",
      area);
  const char *argv[] = {"python3", "-c", code, NULL};
  int rc = run_client(argv, area, out, sizeof out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "denied denied") != NULL, "%s", out);
  free(code);
}

Test(bridge, hostile_requests_are_refused_and_nothing_is_followed) {
  char secret[] = "/tmp/tg-secret-XXXXXX";
  int sfd = mkstemp(secret);
  cr_assert_geq(sfd, 0);
  cr_assert_eq(write(sfd, "host secret", 11), 11);
  close(sfd);

  cr_assert_eq(symlinkat(secret, rfd, "link.json"), 0);
  put_request("link", NULL, true);
  assert_error_response("link", NULL);

  cr_assert_eq(mkfifoat(rfd, "fifo.json", 0600), 0);
  put_request("fifo", NULL, true);
  assert_error_response("fifo", NULL);

  cr_assert_eq(mkdirat(rfd, "dir.json", 0700), 0);
  cr_assert_eq(mkdirat(rfd, "dir.json/sub", 0700), 0);
  put_request("dir", NULL, true);
  assert_error_response("dir", NULL);

  /* a symlink as the marker itself: still only a marker, nothing followed;
   * no body behind it: withdrawn, and no response for nobody to collect */
  cr_assert_eq(symlinkat(secret, rfd, "mlink.done"), 0);
  cr_assert_null(get_response("mlink", 500));

  char *big = xmalloc(70 * 1024 + 64);
  int n = sprintf(big, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"t\":\"");
  memset(big + n, 'x', 70 * 1024);
  strcpy(big + n + 70 * 1024, "\"}}");
  put_request("big", big, true);
  assert_error_response("big", NULL);
  free(big);

  char deep[8192];
  n = sprintf(deep, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"a\":");
  for (int i = 0; i < 3000; i++)
    deep[n++] = '[';
  deep[n] = '\0';
  put_request("deep", deep, true);
  assert_error_response("deep", NULL);

  put_request("malformed", "{\"v\":1,\"tool\":", true);
  assert_error_response("malformed", NULL);

  put_request("nobody", NULL, true);
  cr_assert_null(get_response("nobody", 500));
  cr_assert_eq(stats().withdrawn, 2);

  /* a body without its marker is never read or answered */
  put_request("nomarker", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", false);
  cr_assert_null(get_response("nomarker", 300));
  struct stat st;
  cr_assert_eq(fstatat(rfd, "nomarker.json", &st, 0), 0);

  /* markers whose names are not ids: counted, removed, never a path */
  put_request("x.y", NULL, true);
  int fd = openat(rfd, "..%2f..%2fetc%2fpasswd.done", O_CREAT | O_WRONLY, 0600);
  cr_assert_geq(fd, 0);
  close(fd);

  struct bridge_service_stats s;
  for (int i = 0; i < 5000; i++) {
    s = stats();
    if (s.bad_ids >= 2)
      break;
    usleep(1000);
  }
  cr_assert_eq(s.bad_ids, 2);
  cr_assert_eq(s.bad, 8, "bad %llu", s.bad);
  cr_assert_eq(s.answered, 6); /* the two withdrawn calls get none */

  char *content = NULL;
  cr_assert_eq(read_file(secret, 100, &content, NULL, NULL), 0);
  cr_assert_str_eq(content, "host secret");
  free(content);
  unlink(secret);

  /* and a legitimate call still works */
  put_request("after", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  assert_error_response("after", "\"denied\"");
}

Test(bridge, each_id_is_answered_once) {
  put_request("once", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  assert_error_response("once", NULL);
  /* The worker removes the request's marker right after the response; a
   * replay is a new marker for the answered id. */
  cr_assert(gone_within("once.done", 3000), "the answered call's marker is removed");
  put_request("once", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  cr_assert_null(get_response("once", 300));
  struct bridge_service_stats s = stats();
  cr_assert_eq(s.replays, 1);
  cr_assert_eq(s.answered, 1);
}

Test(bridge, junk_flood_is_cleared_and_calls_still_work) {
  char name[64];
  for (int i = 0; i < 10000; i++) {
    snprintf(name, sizeof name, "junk-%d", i);
    int fd = openat(rfd, name, O_CREAT | O_WRONLY, 0600);
    cr_assert_geq(fd, 0, "junk %d: %s", i, strerror(errno));
    close(fd);
  }
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  put_request("legit", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  /* The legit call is answered however long the 10,000 junk entries take
   * on a loaded machine (CI ran this beside a compile on 2 cores and took
   * more than 5 s): the claim is that junk never keeps a call from an
   * answer, not how fast it is cleared (that is the flood bench's). */
  char *r = get_response("legit", 45000);
  cr_assert_not_null(r, "no response for legit within 45 s of the junk flood (the suite allows 60)");
  cr_assert(strstr(r, "\"ok\":false") != NULL && strstr(r, "\"denied\"") != NULL, "%s", r);
  free(r);
  /* And every junk entry is cleared in the end, within 55 s of the
   * call (the suite allows 60; the CI's check-side chain, beside three
   * integration lanes, once needed more than the 10 s this gave it after
   * the answer). */
  do {
    if (stats().junk >= 10000)
      break;
    usleep(1000);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (t.tv_sec - t0.tv_sec < 55);
  cr_assert_eq(stats().junk, 10000);
}

Test(bridge, requests_from_before_the_watch_are_served) {
  bridge_service_stop(svc);
  svc = NULL;
  put_request("early", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  struct bridge_service_options o = {.area_fd = afd, .req_fd = rfd, .resp_fd = qfd,
                                     .gate = gate, .stop_fd = -1, .stop_fd2 = -1,
                                     .seccomp = true};
  cr_assert_eq(bridge_service_start(&o, &svc, NULL), 0);
  assert_error_response("early", NULL);
}

Test(bridge, many_concurrent_calls_answered_exactly_once) {
  char id[32];
  for (int i = 0; i < 1600; i++) {
    snprintf(id, sizeof id, "c%d", i);
    put_request(id, "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  }
  for (int i = 0; i < 1600; i++) {
    snprintf(id, sizeof id, "c%d", i);
    assert_error_response(id, NULL);
  }
  /* A worker counts its answer just after the response appears: the
   * last one may still be counting when the caller has read it.  Wait,
   * bounded, then make sure no call is answered twice after that. */
  for (int i = 0; i < 5000 && stats().answered < 1600; i++)
    usleep(1000);
  cr_assert_eq(stats().answered, 1600);
  usleep(100 * 1000);
  cr_assert_eq(stats().answered, 1600, "a call answered twice");
}

/* ---- a call that blocks does not hold up the calls behind it ---- */

/* One running slot (run_limit 1), so only the block hook can let the echo
 * call past the slow one: the slow tool is an exec tool (sleep 3), and the
 * echo call sent after it must be answered while it still runs. */
static void blocking_setup(void) {
  make_area(0);
  tg_error *err = NULL;
  char *audit = xasprintf("%s/audit", state);
  mkdir(audit, 0700);
  char *policy = xasprintf("%s/policy.json", state);
  const char *text =
      "{\"version\": 1, \"budgets\": {\"max_tool_calls\": 100},"
      " \"tools\": {\"slow\": {\"backend\": {\"type\": \"exec\", \"argv\": [\"/bin/sleep\", \"3\"]},"
      "                        \"timeout\": 10, \"rules\": [{\"effect\": \"allow\"}]},"
      "            \"echo\": {\"backend\": {\"type\": \"builtin\", \"name\": \"echo\"},"
      "                        \"rules\": [{\"effect\": \"allow\"}]}}}";
  cr_assert_eq(write_file_atomic(AT_FDCWD, policy, text, strlen(text), 0600, false, &err), 0,
               "%s", err ? err->msg : "");
  struct gate_config gc = {.container_id = "unit", .audit_dir = audit, .policy_path = policy};
  cr_assert_eq(gate_open(&gc, &gate, &err), 0, "%s", err ? err->msg : "");
  struct bridge_service_options o = {.area_fd = afd, .req_fd = rfd, .resp_fd = qfd,
                                     .gate = gate, .stop_fd = -1, .stop_fd2 = -1,
                                     .seccomp = true, .run_limit = 1};
  cr_assert_eq(bridge_service_start(&o, &svc, &err), 0, "%s", err ? err->msg : "");
  free(audit);
  free(policy);
}

TestSuite(bridge_pool, .init = blocking_setup, .fini = teardown, .timeout = 60);

Test(bridge_pool, a_slow_tool_does_not_hold_up_the_next_call) {
  put_request("slow1", "{\"v\":1,\"tool\":\"slow\",\"args\":{}}", true);
  /* Let the slow call reach its tool before the next one arrives. */
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  put_request("fast1", "{\"v\":1,\"tool\":\"echo\",\"args\":{\"n\":1}}", true);
  char *fast = get_response("fast1", 2000);
  cr_assert_not_null(fast, "the echo call waited behind the slow exec tool");
  cr_assert(strstr(fast, "\"ok\":true") != NULL, "%s", fast);
  char marker[64];
  snprintf(marker, sizeof marker, "slow1.done");
  struct stat st;
  cr_assert_neq(fstatat(qfd, marker, &st, 0), 0, "the slow call was answered first");
  free(fast);
  char *slow = get_response("slow1", 10000);
  cr_assert_not_null(slow, "the slow call was never answered");
  free(slow);
}

/* ---- a full bridge area ---- */

static void small_setup(void) {
  make_area(1024 * 1024);
  start_service();
}

TestSuite(bridge_full, .init = small_setup, .fini = teardown, .timeout = 60);

static void fill_area(void) {
  int fd = openat(rfd, ".fill", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  cr_assert_geq(fd, 0);
  char block[4096];
  memset(block, 'f', sizeof block);
  while (write(fd, block, sizeof block) > 0 || write(fd, block, 1) > 0)
    ;
  cr_assert_eq(errno, ENOSPC);
  close(fd);
}

Test(bridge_full, full_area_gives_a_clear_error_and_recovers) {
  tg_error *err = NULL;
  char *client = bridge_client_path(NULL, "tollgate-call", &err);
  cr_assert_not_null(client);
  put_request("empty", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", false);
  fill_area();
  char *r;
  /* a marker frees nothing: the answer comes out of the reserve */
  put_request("empty", NULL, true);
  r = get_response("empty", 5000);
  cr_assert_not_null(r, "no response in a full area");
  cr_assert(strstr(r, "\"ok\":false") != NULL, "%s", r);
  free(r);
  cr_assert_eq(stats().no_space, 1);

  /* the client cannot even write its request: it says so */
  fill_area(); /* what the released reserve gave back */
  char out[4096];
  const char *argv[] = {client, "echo", "{\"text\":\"hi\"}", NULL};
  int rc = run_client(argv, area, out, sizeof out);
  cr_assert_eq(rc, 11, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "full") != NULL, "%s", out);

  /* space freed: calls work again */
  cr_assert_eq(unlinkat(rfd, ".fill", 0), 0);
  rc = run_client(argv, area, out, sizeof out);
  cr_assert_eq(rc, 3, "exit %d: %s", rc, out);
  free(client);
}

/* ---- the sidecar ---- */

static void plain_setup(void) { make_area(0); }

static void plain_teardown(void) {
  close(afd);
  close(rfd);
  close(qfd);
  bridge_teardown(state, NULL);
  remove_tree(state, NULL);
}

TestSuite(sidecar, .init = plain_setup, .fini = plain_teardown, .timeout = 60);

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

static struct host_config host_for_tests(void) {
  char *audit = xasprintf("%s/audit", state);
  mkdir(audit, 0700);
  return (struct host_config){.audit_dir = audit, .approval_timeout_ms = 2000};
}

Test(sidecar, serves_and_exits_when_the_init_exits) {
  struct host_config h = host_for_tests();
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), sidecar = 0;
  tg_error *err = NULL;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &sidecar, &err), 0, "%s",
               err ? err->msg : "");
  cr_assert_gt(sidecar, 0);
  cr_assert_eq(bridge_sidecar_pid(state), sidecar);
  /* the sidecar is not our child (double fork) and holds none of our fds */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/4", (int)sidecar);
  put_request("sc1", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  assert_error_response("sc1", "\"denied\"");
  /* a dropped capability set: no CAP_SYS_ADMIN left */
  char *status = NULL, *line;
  snprintf(path, sizeof path, "/proc/%d/status", (int)sidecar);
  cr_assert_eq(read_file(path, 1 << 16, &status, NULL, NULL), 0);
  line = strstr(status, "CapEff:");
  cr_assert_not_null(line);
  unsigned long long eff = strtoull(line + 7, NULL, 16);
  cr_assert_eq(eff & (1ull << 21), 0ull, "CAP_SYS_ADMIN kept: %llx", eff);
  cr_assert_neq(eff & (1ull << 1), 0ull, "CAP_DAC_OVERRIDE dropped: %llx", eff);
  free(status);

  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
  cr_assert(process_exits(sidecar, 5000), "sidecar still running after init exit");
  cr_assert_eq(bridge_sidecar_pid(state), 0);
  free(h.audit_dir);
}

Test(sidecar, teardown_stops_it_and_removes_the_area) {
  struct host_config h = host_for_tests();
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), sidecar = 0;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &sidecar, NULL), 0);
  tg_error *err = NULL;
  cr_assert_eq(bridge_teardown(state, &err), 0, "%s", err ? err->msg : "");
  cr_assert(process_exits(sidecar, 100));
  struct stat st;
  cr_assert_neq(stat(area, &st), 0);
  char *mounts = NULL;
  cr_assert_eq(read_file("/proc/self/mounts", 1 << 20, &mounts, NULL, NULL), 0);
  cr_assert_null(strstr(mounts, area));
  free(mounts);
  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
  free(h.audit_dir);
}

Test(sidecar, dead_init_is_a_clear_error) {
  struct host_config h = host_for_tests();
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  pid_t init = fake_init(), sidecar = 0;
  kill(init, SIGKILL);
  waitpid(init, NULL, 0);
  tg_error *err = NULL;
  cr_assert_eq(bridge_spawn_sidecar(&setup, init, &sidecar, &err), -1);
  cr_assert(strstr(err->msg, "pidfd") != NULL, "%s", err->msg);
  tg_error_free(&err);
  free(h.audit_dir);
}

Test(sidecar, in_process_bridge_for_run) {
  struct host_config h = host_for_tests();
  struct bridge_setup setup = {.container_id = "unit", .state_dir = state, .host = &h};
  struct bridge_server *s = NULL;
  tg_error *err = NULL;
  cr_assert_eq(bridge_serve_in_process(&setup, NULL, &s, &err), 0, "%s", err ? err->msg : "");
  put_request("ip1", "{\"v\":1,\"tool\":\"echo\",\"args\":{}}", true);
  assert_error_response("ip1", "\"denied\"");
  bridge_stop_in_process(s);
  free(h.audit_dir);
}

static void *wait_on_pipe(void *fd) {
  char c;
  while (read((int)(intptr_t)fd, &c, 1) != 0)
    ;
  return NULL;
}

/* In a child: deny every new thread (how: see below), start the heartbeat
 * in dir and exit 0 when its error names pthread_create's own error
 * (EAGAIN), whatever errno holds. */
static void heartbeat_without_threads(const char *dir, bool by_memory) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    _exit(2);
  if (by_memory) {
    /* Room for no thread stack: the stack's mmap fails with ENOMEM (in
     * errno), and pthread_create returns EAGAIN.  Threads that wait for
     * ever first take the stacks the C library keeps from threads that
     * ended, so the heartbeat's needs a new mapping. */
    int p[2];
    if (pipe(p) < 0)
      _exit(2);
    for (int k = 0; k < 16; k++) {
      pthread_t t;
      if (pthread_create(&t, NULL, wait_on_pipe, (void *)(intptr_t)p[0]) != 0)
        _exit(2);
    }
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%lu", &pages) != 1)
      _exit(2);
    fclose(f);
    rlim_t room = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (1 << 20);
    struct rlimit as = {room, room};
    if (setrlimit(RLIMIT_AS, &as) < 0)
      _exit(2);
  } else {
    /* No process for an unprivileged uid (root is exempt): clone fails. */
    struct rlimit none = {0, 0};
    if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0 ||
        setrlimit(RLIMIT_NPROC, &none) < 0)
      _exit(2);
  }
  errno = ENOTTY; /* not the cause */
  tg_error *err = NULL;
  if (bridge_heartbeat_start(fd, &err) == 0)
    _exit(3);
  fprintf(stderr, "heartbeat (%s): %s\n", by_memory ? "RLIMIT_AS" : "RLIMIT_NPROC", err->msg);
  _exit(err->errnum == EAGAIN && strstr(err->msg, strerror(EAGAIN)) ? 0 : 4);
}

/* pthread_create returns its error and need not set errno (it leaves
 * ENOMEM there when the stack cannot be mapped): a heartbeat thread that
 * cannot start is an error naming the returned cause.  Real failures: no
 * memory for a stack, and no process left for the uid. */
Test(heartbeat, a_thread_that_cannot_start_names_its_cause) {
  char dir[] = "/tmp/tg-heartbeat-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cr_assert_eq(chmod(dir, 0777), 0);
  char alive[64];
  snprintf(alive, sizeof alive, "%s/" BRIDGE_HEARTBEAT_NAME, dir);
  for (int by_memory = 0; by_memory < 2; by_memory++) {
#ifdef __SANITIZE_ADDRESS__
    if (by_memory)
      continue; /* the sanitizer cannot run without address space to map */
#endif
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
      heartbeat_without_threads(dir, by_memory);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    unlink(alive);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s: exit %d: the error must name pthread_create's EAGAIN (stderr above)",
              by_memory ? "RLIMIT_AS" : "RLIMIT_NPROC",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  rmdir(dir);
}

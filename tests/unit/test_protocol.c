#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/protocol.h"

Test(protocol, call_ids) {
  cr_assert(bridge_id_is_valid("abc", 3));
  cr_assert(bridge_id_is_valid("0123456789abcdef0123456789abcdef", 32));
  cr_assert(bridge_id_is_valid("A-b_c", 5));
  cr_assert_not(bridge_id_is_valid("", 0));
  cr_assert_not(bridge_id_is_valid("..", 2));
  cr_assert_not(bridge_id_is_valid("a/b", 3));
  cr_assert_not(bridge_id_is_valid("a.b", 3));
  cr_assert_not(bridge_id_is_valid("a b", 3));
  cr_assert_not(bridge_id_is_valid("a\0b", 3));
  char long_id[66];
  memset(long_id, 'a', 65);
  long_id[65] = '\0';
  cr_assert_not(bridge_id_is_valid(long_id, 65));
  cr_assert(bridge_id_is_valid(long_id, 64));
}

Test(protocol, names) {
  char id[BRIDGE_ID_MAX + 1];
  cr_assert_eq(bridge_classify_name("abc.done", id), BRIDGE_NAME_MARKER);
  cr_assert_str_eq(id, "abc");
  cr_assert_eq(bridge_classify_name("abc.json", id), BRIDGE_NAME_BODY);
  cr_assert_str_eq(id, "abc");
  cr_assert_eq(bridge_classify_name(".abc.tmp", id), BRIDGE_NAME_TEMP);
  cr_assert_eq(bridge_classify_name("..done", id), BRIDGE_NAME_BAD_MARKER);
  cr_assert_eq(bridge_classify_name(".done", id), BRIDGE_NAME_BAD_MARKER);
  cr_assert_eq(bridge_classify_name("..%2fetc.done", id), BRIDGE_NAME_BAD_MARKER);
  cr_assert_eq(bridge_classify_name("a b.done", id), BRIDGE_NAME_BAD_MARKER);
  cr_assert_eq(bridge_classify_name("x.y.done", id), BRIDGE_NAME_BAD_MARKER);
  cr_assert_eq(bridge_classify_name("done", id), BRIDGE_NAME_JUNK);
  cr_assert_eq(bridge_classify_name("a b.json", id), BRIDGE_NAME_JUNK);
  cr_assert_eq(bridge_classify_name("junk", id), BRIDGE_NAME_JUNK);
  char long_marker[80];
  memset(long_marker, 'a', 65);
  strcpy(long_marker + 65, ".done");
  cr_assert_eq(bridge_classify_name(long_marker, id), BRIDGE_NAME_BAD_MARKER);
}

static void assert_bad(const char *body, const char *reason_part) {
  char *why = NULL;
  json_t *r = bridge_parse_request(body, strlen(body), &why);
  cr_assert_null(r, "accepted %s", body);
  cr_assert_not_null(why);
  cr_assert(strstr(why, reason_part) != NULL, "reason for %s: %s", body, why);
  free(why);
}

Test(protocol, requests) {
  char *why = NULL;
  const char *ok = "{\"v\":1,\"tool\":\"echo\",\"args\":{\"text\":\"h\\u00e9\"}}";
  json_t *r = bridge_parse_request(ok, strlen(ok), &why);
  cr_assert_not_null(r, "%s", why);
  cr_assert_str_eq(json_string_value(json_object_get(r, "tool")), "echo");
  cr_assert_str_eq(json_string_value(json_get_path(r, "args.text")), "h\xc3\xa9");
  json_free(r);
  const char *noargs = "{\"v\":1,\"tool\":\"now\"}";
  r = bridge_parse_request(noargs, strlen(noargs), &why);
  cr_assert_not_null(r);
  cr_assert(json_is(json_object_get(r, "args"), JSON_OBJECT));
  json_free(r);

  assert_bad("", "not valid JSON");
  assert_bad("{", "not valid JSON");
  assert_bad("[]", "must be a JSON object");
  assert_bad("{\"tool\":\"echo\",\"args\":{}}", "\"v\":1");
  assert_bad("{\"v\":2,\"tool\":\"echo\",\"args\":{}}", "\"v\":1");
  assert_bad("{\"v\":\"1\",\"tool\":\"echo\",\"args\":{}}", "\"v\":1");
  assert_bad("{\"v\":1,\"args\":{}}", "\"tool\"");
  assert_bad("{\"v\":1,\"tool\":7,\"args\":{}}", "\"tool\"");
  assert_bad("{\"v\":1,\"tool\":\"../x\",\"args\":{}}", "must match");
  assert_bad("{\"v\":1,\"tool\":\"\",\"args\":{}}", "must match");
  assert_bad("{\"v\":1,\"tool\":\"a\\u0000b\",\"args\":{}}", "must match");
  assert_bad("{\"v\":1,\"tool\":\"echo\",\"args\":[1]}", "\"args\" must be");
  assert_bad("{\"v\":1,\"tool\":\"echo\",\"args\":{},\"x\":1}", "unknown fields");
  assert_bad("{\"v\":1,\"tool\":\"echo\",\"tool\":\"rm\",\"args\":{}}", "not valid JSON");
  assert_bad("{\"v\":1,\"tool\":\"echo\",\"args\":{}} trailing", "not valid JSON");
  /* nesting past the limit */
  char deep[4096];
  size_t n = 0;
  n += (size_t)sprintf(deep, "{\"v\":1,\"tool\":\"echo\",\"args\":{\"a\":");
  for (int i = 0; i < 1000; i++)
    deep[n++] = '[';
  for (int i = 0; i < 1000; i++)
    deep[n++] = ']';
  strcpy(deep + n, "}}");
  assert_bad(deep, "not valid JSON");
}

Test(protocol, error_body) {
  size_t len;
  char *b = bridge_error_body("denied", "no \"policy\"", &len);
  cr_assert_str_eq(b, "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"denied\","
                      "\"message\":\"no \\\"policy\\\"\"}}");
  cr_assert_eq(len, strlen(b));
  free(b);
}

/* ---- the watcher's seccomp filter ---- */
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bridge/seccomp.h"

/* Run fn in a confined child; return its wait status. */
static int confined(int (*fn)(void)) {
  pid_t pid = fork();
  if (pid == 0) {
    if (bridge_seccomp_confine_watcher(NULL) < 0)
      _exit(100);
    _exit(fn());
  }
  int status;
  waitpid(pid, &status, 0);
  return status;
}

static int reads_a_file(void) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  char buf[64];
  return fd >= 0 && read(fd, buf, sizeof buf) > 0 ? 0 : 1;
}
static int creates_a_file(void) {
  open("/tmp/tg-seccomp-should-not-exist", O_WRONLY | O_CREAT, 0600);
  return 0;
}
static int execs(void) {
  char *argv[] = {"/bin/true", NULL};
  execv("/bin/true", argv);
  return 0;
}
static int opens_a_socket(void) {
  socket(AF_INET, SOCK_STREAM, 0);
  return 0;
}
static int forks(void) {
  fork();
  return 0;
}

Test(seccomp, watcher_filter_allows_reading_and_kills_the_rest) {
  int st = confined(reads_a_file);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
  int (*bad[])(void) = {creates_a_file, execs, opens_a_socket, forks};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    st = confined(bad[i]);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "case %zu: status %x", i, st);
  }
  cr_assert_neq(access("/tmp/tg-seccomp-should-not-exist", F_OK), 0);
}

/* ---- the mounts and the owner bridge_prepare adds to config.json ---- */
#include "bridge/area.h"

static json_t *parse(const char *s) {
  json_t *v = json_parse(s, strlen(s), NULL, NULL);
  cr_assert_not_null(v, "%s", s);
  return v;
}

Test(area, owner_follows_process_user_and_uid_mappings) {
  uid_t u;
  gid_t g;
  json_t *c = parse("{\"process\":{\"user\":{\"uid\":65534,\"gid\":65534}}}");
  cr_assert_eq(bridge_container_owner(c, &u, &g, NULL), 0);
  cr_assert_eq(u, 65534u);
  cr_assert_eq(g, 65534u);
  json_free(c);
  c = parse("{\"process\":{\"user\":{\"uid\":1000,\"gid\":5}},\"linux\":{"
            "\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}],"
            "\"gidMappings\":[{\"containerID\":0,\"hostID\":200000,\"size\":65536}]}}");
  cr_assert_eq(bridge_container_owner(c, &u, &g, NULL), 0);
  cr_assert_eq(u, 101000u);
  cr_assert_eq(g, 200005u);
  json_free(c);
  c = parse("{\"process\":{\"user\":{\"uid\":70000}},\"linux\":{"
            "\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]}}");
  tg_error *err = NULL;
  cr_assert_eq(bridge_container_owner(c, &u, &g, &err), -1);
  cr_assert(strstr(err->msg, "not mapped") != NULL, "%s", err->msg);
  tg_error_free(&err);
  json_free(c);
  c = parse("{\"process\":{\"user\":{\"uid\":-1}}}");
  cr_assert_eq(bridge_container_owner(c, &u, &g, NULL), -1);
  json_free(c);
  c = parse("{\"process\":{}}"); /* no user: root */
  cr_assert_eq(bridge_container_owner(c, &u, &g, NULL), 0);
  cr_assert_eq(u, 0u);
  json_free(c);
}

Test(area, mounts_replace_anything_at_run_tollgate) {
  json_t *c = parse(
      "{\"process\":{\"env\":[\"PATH=/bin\",\"PYTHONPATH=/app\"]},\"mounts\":["
      "{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
      "{\"destination\":\"/run/tollgate/calls\",\"type\":\"bind\",\"source\":\"/etc\"},"
      "{\"destination\":\"/run/tollgate\",\"type\":\"bind\",\"source\":\"/\"},"
      "{\"destination\":\"/run/tollgatex\",\"type\":\"tmpfs\",\"source\":\"t\"}]}");
  cr_assert_eq(bridge_add_mounts(c, "/state/x", "/usr/lib/tollgate/tollgate-call", NULL), 0);
  /* twice: an effective config hardened again stays the same */
  cr_assert_eq(bridge_add_mounts(c, "/state/x", "/usr/lib/tollgate/tollgate-call", NULL), 0);
  json_t *m = json_object_get(c, "mounts");
  cr_assert_eq(json_array_len(m), 5);
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 0), "destination")), "/proc");
  cr_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 1), "destination")), "/run/tollgatex");
  json_t *ro = json_array_get(m, 2), *rw = json_array_get(m, 3), *cl = json_array_get(m, 4);
  cr_assert_str_eq(json_string_value(json_object_get(ro, "destination")), "/run/tollgate");
  cr_assert_str_eq(json_string_value(json_object_get(ro, "source")), "/state/x/bridge");
  char *ros = json_dump(json_object_get(ro, "options"), false, NULL);
  cr_assert_str_eq(ros, "[\"bind\",\"ro\",\"nosuid\",\"nodev\",\"noexec\"]");
  free(ros);
  cr_assert_str_eq(json_string_value(json_object_get(rw, "source")), "/state/x/bridge/calls");
  char *rws = json_dump(json_object_get(rw, "options"), false, NULL);
  cr_assert_str_eq(rws, "[\"bind\",\"rw\",\"nosuid\",\"nodev\",\"noexec\"]");
  free(rws);
  cr_assert_str_eq(json_string_value(json_object_get(cl, "destination")), "/run/tollgate/tollgate-call");
  char *cls = json_dump(json_object_get(cl, "options"), false, NULL);
  cr_assert_str_eq(cls, "[\"bind\",\"ro\",\"nosuid\",\"nodev\"]");
  free(cls);
  json_t *env = json_get_path(c, "process.env");
  char *envs = json_dump(env, false, NULL);
  cr_assert_str_eq(envs, "[\"PATH=/bin\",\"PYTHONPATH=/app:/run/tollgate\",\"TOLLGATE_DIR=/run/tollgate\"]");
  free(envs);
  json_free(c);
}

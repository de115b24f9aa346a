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

/* The mcp and socket backends through the gate, with the test servers in
 * tests/fixtures: tools imported from an MCP server are listed in
 * tools.json and governed like any other; isError becomes tool_failed. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "governance/gate.h"
#include "base/util.h"

static char dir[] = "/tmp/tg-backends-XXXXXX";
static pid_t server = -1;
static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  chmod(dir, 0755);
}
static void teardown(void) {
  if (server > 0) {
    kill(server, SIGKILL);
    waitpid(server, NULL, 0);
    server = -1;
  }
  remove_tree(dir, NULL);
}
TestSuite(backends, .init = setup, .fini = teardown);

static char *fixture(const char *name) {
  char cwd[PATH_MAX];
  cr_assert_not_null(getcwd(cwd, sizeof cwd));
  return xasprintf("%s/tests/fixtures/%s", cwd, name);
}

static struct gate *open_gate(const char *policy) {
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(policy, f);
  fclose(f);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "be", .policy_path = pp, .audit_dir = audit};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), 0, "%s", err ? err->msg : "");
  return g;
}

static char *call(struct gate *g, const char *req) {
  cleanup_json json_t *r = json_parse(req, strlen(req), NULL, NULL);
  cr_assert_not_null(r);
  return gate_handle(g, "x1", r, NULL, NULL);
}

Test(backends, mcp_tools_are_imported_listed_and_governed) {
  cleanup_free char *srv = fixture("mcp_server.py");
  cleanup_free char *pol = xasprintf(
      "{\"version\": 1,"
      " \"mcp_servers\": {\"shop\": {\"argv\": [\"/usr/bin/python3\", \"%s\"]}},"
      " \"tools\": {"
      "  \"lookup_order\": {\"backend\": {\"type\": \"mcp\", \"server\": \"shop\"}, \"rules\": [{\"effect\": \"allow\"}]},"
      "  \"add\": {\"backend\": {\"type\": \"mcp\", \"server\": \"shop\"},"
      "           \"rules\": [{\"if\": {\"arg\": \"a\", \"op\": \">\", \"value\": 100}, \"effect\": \"deny\", \"reason\": \"too big\"},"
      "                     {\"effect\": \"allow\"}]},"
      "  \"broken\": {\"backend\": {\"type\": \"mcp\", \"server\": \"shop\", \"tool\": \"fail_always\"},"
      "              \"description\": \"our own words\", \"rules\": [{\"effect\": \"allow\"}]},"
      "  \"whoami\": {\"backend\": {\"type\": \"mcp\", \"server\": \"shop\"}, \"rules\": [{\"effect\": \"allow\"}]}}}",
      srv);
  struct gate *g = open_gate(pol);
  cleanup_free char *r1 = call(g, "{\"v\":1,\"tool\":\"lookup_order\",\"args\":{\"order_id\":\"A-7\"}}");
  cr_assert_str_eq(r1, "{\"v\":1,\"ok\":true,\"result\":{\"order_id\":\"A-7\",\"status\":\"shipped\",\"amount\":42}}");
  /* the imported schema is enforced before the server sees anything */
  cleanup_free char *r2 = call(g, "{\"v\":1,\"tool\":\"lookup_order\",\"args\":{\"order_id\":\"../etc\"}}");
  cr_assert(strstr(r2, "\"bad_request\"") && strstr(r2, "pattern"), "%s", r2);
  cleanup_free char *r3 = call(g, "{\"v\":1,\"tool\":\"add\",\"args\":{\"a\":2,\"b\":3}}");
  cr_assert_str_eq(r3, "{\"v\":1,\"ok\":true,\"result\":\"5\"}");
  cleanup_free char *r4 = call(g, "{\"v\":1,\"tool\":\"add\",\"args\":{\"a\":200,\"b\":3}}");
  cr_assert(strstr(r4, "denied: too big"), "%s", r4);
  cleanup_free char *r5 = call(g, "{\"v\":1,\"tool\":\"broken\",\"args\":{}}");
  cr_assert(strstr(r5, "\"tool_failed\"") && strstr(r5, "the warehouse is on fire"), "%s", r5);
  cleanup_free char *r6 = call(g, "{\"v\":1,\"tool\":\"whoami\",\"args\":{}}");
  if (geteuid() == 0)
    cr_assert(strstr(r6, "\"uid\":65533"), "the MCP server must run unprivileged: %s", r6);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert_eq(gate_write_tools_json(g, dfd, "tools.json", NULL), 0);
  cleanup_free char *tj = NULL;
  cr_assert_eq(read_file_untrusted(dfd, "tools.json", 1 << 20, &tj, NULL, NULL), 0);
  close(dfd);
  cleanup_json json_t *v = json_parse(tj, strlen(tj), NULL, NULL);
  const json_t *lookup = json_array_get(json_object_get(v, "tools"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(lookup, "description")), "Look up an order by its id.");
  cr_assert_str_eq(json_string_value(json_get_path(lookup, "args.properties.order_id.pattern")), "^[A-Z]-[0-9]+$");
  const json_t *broken = json_array_get(json_object_get(v, "tools"), 2);
  cr_assert_str_eq(json_string_value(json_object_get(broken, "description")), "our own words");
  gate_close(g);
}

Test(backends, mcp_server_without_the_named_tool_stops_open) {
  cleanup_free char *srv = fixture("mcp_server.py");
  cleanup_free char *pol = xasprintf(
      "{\"version\": 1, \"mcp_servers\": {\"shop\": {\"argv\": [\"/usr/bin/python3\", \"%s\"]}},"
      " \"tools\": {\"refund\": {\"backend\": {\"type\": \"mcp\", \"server\": \"shop\"}, \"rules\": [{\"effect\": \"allow\"}]}}}",
      srv);
  cleanup_free char *pp = xasprintf("%s/policy.json", dir);
  FILE *f = fopen(pp, "w");
  fputs(pol, f);
  fclose(f);
  cleanup_free char *audit = xasprintf("%s/audit", dir);
  struct gate_config cfg = {.container_id = "be", .policy_path = pp, .audit_dir = audit};
  struct gate *g = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(gate_open(&cfg, &g, &err), -1);
  cr_assert(strstr(err->msg, "has no tool \"refund\"") && strstr(err->msg, "lookup_order, add, fail_always, whoami"),
            "%s", err->msg);
}

Test(backends, socket_backend_exchanges_one_json_line_each_way) {
  cleanup_free char *srv = fixture("socket_tool_server.py");
  cleanup_free char *sock = xasprintf("%s/agent.sock", dir);
  int p[2];
  cr_assert_eq(pipe(p), 0);
  server = fork();
  if (server == 0) {
    dup2(p[1], 1);
    execl("/usr/bin/python3", "python3", srv, sock, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char ready[16] = "";
  cr_assert_gt(read(p[0], ready, sizeof ready - 1), 0);
  close(p[0]);
  cleanup_free char *pol = xasprintf(
      "{\"version\": 1, \"tools\": {"
      " \"greet\": {\"backend\": {\"type\": \"socket\", \"path\": \"%s\"}, \"rules\": [{\"effect\": \"allow\"}]},"
      " \"boom\": {\"backend\": {\"type\": \"socket\", \"path\": \"%s\"}, \"rules\": [{\"effect\": \"allow\"}]},"
      " \"gone\": {\"backend\": {\"type\": \"socket\", \"path\": \"%s/nobody.sock\"}, \"rules\": [{\"effect\": \"allow\"}]}}}",
      sock, sock, dir);
  struct gate *g = open_gate(pol);
  cleanup_free char *r1 = call(g, "{\"v\":1,\"tool\":\"greet\",\"args\":{\"name\":\"ada\"}}");
  cr_assert_str_eq(r1, "{\"v\":1,\"ok\":true,\"result\":{\"greeting\":\"hello ada\",\"call\":\"x1\"}}");
  cleanup_free char *r2 = call(g, "{\"v\":1,\"tool\":\"boom\",\"args\":{}}");
  cr_assert(strstr(r2, "\"tool_failed\"") && strstr(r2, "boom: the agent's tool failed"), "%s", r2);
  cleanup_free char *r3 = call(g, "{\"v\":1,\"tool\":\"gone\",\"args\":{}}");
  cr_assert(strstr(r3, "\"tool_failed\"") && strstr(r3, "is the agent's tool server running"), "%s", r3);
  gate_close(g);
}

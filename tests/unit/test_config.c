#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/config.h"
#include "shim/util.h"

static char dir[] = "/tmp/tg-config-XXXXXX";
static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(config, .init = setup, .fini = teardown);

static char *write_cfg(const char *text) {
  char *p = xasprintf("%s/config.json", dir);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
  return p;
}

Test(config, defaults) {
  struct host_config c;
  host_config_defaults(&c);
  cr_assert_str_eq(c.runtime, "runsc");
  cr_assert_str_eq(c.platform, "auto");
  cr_assert_str_eq(c.profile, "hardened");
  cr_assert_not(c.allow_passthrough);
  cr_assert_null(c.runtime_path);
  cr_assert_eq(c.approval_timeout_ms, 60000);
  cr_assert_eq(c.bridge_tmpfs_bytes, 16u * 1024 * 1024);
  cr_assert_eq(c.request_max_bytes, 64u * 1024);
  host_config_free(&c);
}

Test(config, every_key_loads) {
  char *p = write_cfg(
      "{\"runtime\":\"runc\",\"runtime_path\":\"/usr/sbin/runc\","
      "\"runtime_args\":[\"--a\",\"--b\"],\"platform\":\"systrap\","
      "\"profile\":\"strict\",\"allow_passthrough\":true,\"data_dir\":\"/d\","
      "\"policy_dir\":\"/p\",\"audit_dir\":\"/a\",\"audit_key\":\"/k\","
      "\"approval_hook\":\"/h\",\"approval_timeout_ms\":5,"
      "\"approver_group\":\"ops\",\"bridge_tmpfs_bytes\":1048576,"
      "\"request_max_bytes\":4096}");
  struct host_config c;
  tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(c.runtime, "runc");
  cr_assert_str_eq(c.runtime_path, "/usr/sbin/runc");
  cr_assert_str_eq(c.runtime_args[1], "--b");
  cr_assert_null(c.runtime_args[2]);
  cr_assert_str_eq(c.platform, "systrap");
  cr_assert_str_eq(c.profile, "strict");
  cr_assert(c.allow_passthrough);
  cr_assert_str_eq(c.policy_dir, "/p");
  cr_assert_str_eq(c.approver_group, "ops");
  cr_assert_eq(c.approval_timeout_ms, 5);
  cr_assert_eq(c.bridge_tmpfs_bytes, 1048576);
  cr_assert_eq(c.request_max_bytes, 4096);
  host_config_free(&c);
  free(p);
}

Test(config, missing_default_is_fine_missing_explicit_is_not) {
  struct host_config c;
  tg_error *err = NULL;
  char *p = xasprintf("%s/none.json", dir);
  cr_assert_lt(host_config_load(p, &c, &err), 0);
  cr_assert(strstr(err->msg, "does not exist"), "%s", err->msg);
  tg_error_free(&err);
  free(p);
}

static void expect_error(const char *text, const char *want) {
  char *p = write_cfg(text);
  struct host_config c;
  tg_error *err = NULL;
  cr_assert_lt(host_config_load(p, &c, &err), 0, "accepted %s", text);
  cr_assert(strstr(err->msg, want), "[%s] lacks [%s]", err->msg, want);
  cr_assert(strstr(err->msg, p), "[%s] does not name the file", err->msg);
  tg_error_free(&err);
  free(p);
}

Test(config, errors_name_the_key_and_file) {
  expect_error("{\"runtme\":\"runc\"}", "unknown key \"runtme\"");
  expect_error("{\"runtime\":\"crun\"}", "\"runsc\" or \"runc\"");
  expect_error("{\"runtime_args\":\"--x\"}", "runtime_args");
  expect_error("{\"runtime_args\":[1]}", "runtime_args");
  expect_error("{\"allow_passthrough\":\"yes\"}", "allow_passthrough");
  expect_error("{\"approval_timeout_ms\":-1}", "approval_timeout_ms");
  expect_error("{\"bridge_tmpfs_bytes\":0}", "bridge_tmpfs_bytes");
  expect_error("{\"platform\":3}", "platform");
  expect_error("{\"runtime\":\"runc\",}", "fix the JSON");
  expect_error("{\"a\":1,\"a\":2}", "duplicate");
  expect_error("[]", "JSON object");
}

Test(config, data_path_prefers_data_dir) {
  struct host_config c;
  host_config_defaults(&c);
  c.data_dir = xstrdup(dir);
  char *sub = xasprintf("%s/profiles", dir);
  cr_assert_eq(mkdir_p(sub, 0755, NULL), 0);
  tg_error *err = NULL;
  char *p = host_config_data_path(&c, "profiles", &err);
  cr_assert_str_eq(p, sub);
  free(p);
  cr_assert_null(host_config_data_path(&c, "seccomp", &err));
  cr_assert(strstr(err->msg, "data_dir"));
  tg_error_free(&err);
  free(sub);
  host_config_free(&c);
}

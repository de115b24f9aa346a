#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hostconfig.h"
#include "base/util.h"

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
  cr_assert_not(c.mcp_allow_approve);
  cr_assert_not(c.mcp_elicit_approvals);
  cr_assert_eq(c.mcp_max_sessions, 16);
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
      "\"request_max_bytes\":4096,\"mcp_allow_approve\":true,"
      "\"mcp_elicit_approvals\":true,\"mcp_max_sessions\":3}");
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
  cr_assert(c.mcp_allow_approve);
  cr_assert(c.mcp_elicit_approvals);
  cr_assert_eq(c.mcp_max_sessions, 3);
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
  expect_error("{\"mcp_allow_approve\":1}", "mcp_allow_approve");
  expect_error("{\"mcp_elicit_approvals\":\"yes\"}", "mcp_elicit_approvals");
  expect_error("{\"mcp_max_sessions\":-1}", "mcp_max_sessions");
  expect_error("{\"approval_timeout_ms\":-1}", "approval_timeout_ms");
  expect_error("{\"bridge_tmpfs_bytes\":0}", "bridge_tmpfs_bytes");
  expect_error("{\"platform\":3}", "platform");
  expect_error("{\"runtime\":\"runc\",}", "fix the JSON");
  expect_error("{\"a\":1,\"a\":2}", "duplicate");
  expect_error("[]", "JSON object");
  expect_error("{\"sidecar_on_death\":\"ignore\"}", "\"restart\" (start a new sidecar) or \"stop\"");
  expect_error("{\"sidecar_max_restarts\":-1}", "sidecar_max_restarts");
  expect_error("{\"trusted_join_callers\":\"/usr/bin/conmon\"}", "trusted_join_callers");
  expect_error("{\"trusted_join_callers\":[\"conmon\"]}", "trusted_join_callers[0] \"conmon\" is not an absolute");
  expect_error("{\"trusted_join_callers\":[\"/usr/bin/../bin/conmon\"]}", "not an absolute, normal path");
  expect_error("{\"pod_network_roots\":[\"run/tollgate/net\"]}", "pod_network_roots[0] \"run/tollgate/net\" is not an absolute, normal path");
  expect_error("{\"pod_network_roots\":[\"/run/tollgate/net/\"]}", "as --root gets it");
}

Test(config, pod_network_roots_loads) {
  char *p = write_cfg("{\"pod_network_roots\":[\"/run/tollgate/net/k8s.io\"]}");
  struct host_config c;
  tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(c.pod_network_roots[0], "/run/tollgate/net/k8s.io");
  cr_assert_null(c.pod_network_roots[1]);
  host_config_free(&c);
  free(p);
}

Test(config, sidecar_supervision_defaults_and_loads) {
  struct host_config c;
  host_config_defaults(&c);
  cr_assert_str_eq(c.sidecar_on_death, "restart");
  cr_assert_eq(c.sidecar_max_restarts, 3);
  host_config_free(&c);
  char *p = write_cfg("{\"sidecar_on_death\":\"stop\",\"sidecar_max_restarts\":0}");
  tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(c.sidecar_on_death, "stop");
  cr_assert_eq(c.sidecar_max_restarts, 0);
  host_config_free(&c);
  free(p);
}

/* trusted_join_callers is compared with a resolved /proc/PID/exe: an
 * entry through a link would never match, so it is refused naming the
 * file it points at. */
Test(config, trusted_join_callers_resolved) {
  cleanup_free char *target = xasprintf("%s/caller", dir);
  cleanup_free char *link = xasprintf("%s/caller-link", dir);
  FILE *f = fopen(target, "w");
  cr_assert_not_null(f);
  fclose(f);
  cr_assert_eq(symlink(target, link), 0);
  cleanup_free char *real = realpath(target, NULL);
  cleanup_free char *text = xasprintf("{\"trusted_join_callers\":[\"%s\"]}", link);
  cleanup_free char *want = xasprintf("is a link to %s", real);
  expect_error(text, want);
  cleanup_free char *ok = xasprintf("{\"trusted_join_callers\":[\"%s\", \"/usr/bin/conmon\"]}", real);
  cleanup_free char *p = write_cfg(ok);
  struct host_config c;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(c.trusted_join_callers[1], "/usr/bin/conmon");
  cr_assert_null(c.trusted_join_callers[2]);
  host_config_free(&c);
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

/* The flood limits (issue 13): per-container audit quota and attempt budget. */
Test(config, flood_limits_default_and_load) {
  struct host_config c;
  host_config_defaults(&c);
  cr_assert_eq(c.audit_max_bytes, 256u * 1024 * 1024);
  cr_assert_eq(c.bridge_refused_per_second, 200);
  cr_assert_eq(c.bridge_backoff_ms, 1000);
  host_config_free(&c);
  char *p = write_cfg("{\"audit_max_bytes\": 1048576, \"bridge_refused_per_second\": 50,"
                      " \"bridge_backoff_ms\": 250}");
  cr_assert_eq(host_config_load(p, &c, NULL), 0);
  cr_assert_eq(c.audit_max_bytes, 1048576u);
  cr_assert_eq(c.bridge_refused_per_second, 50);
  cr_assert_eq(c.bridge_backoff_ms, 250);
  host_config_free(&c);
  free(p);
  p = write_cfg("{\"audit_max_bytes\": 0}");
  tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), -1);
  cr_assert(strstr(err->msg, "audit_max_bytes"), "%s", err->msg);
  tg_error_free(&err);
  free(p);
}

/* Policy bindings (issue 16): a workload selects only a policy bound to its
 * namespace or runtime root, a namespace gets its default, and a refusal
 * says what is allowed. */
Test(config, policy_bindings_decide_who_may_select_what) {
  cleanup_free char *p = write_cfg(
      "{\"policy_bindings\": {\"strict\": {\"namespaces\": [\"a\"]},"
      "                       \"open\": {\"namespaces\": [\"b\"], \"roots\": [\"/run/dev\"]}},"
      " \"namespace_policies\": {\"a\": \"strict\"}}");
  struct host_config c;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  char *out = NULL;
  cr_assert_eq(policy_binding_resolve(&c, "strict", "a", "/run/tollgate", &out, &err), 0);
  cr_assert_str_eq(out, "strict");
  free(out);
  cr_assert_eq(policy_binding_resolve(&c, NULL, "a", "/run/tollgate", &out, &err), 0);
  cr_assert_str_eq(out, "strict", "the namespace's default");
  free(out);
  cr_assert_eq(policy_binding_resolve(&c, NULL, "c", "/run/tollgate", &out, &err), 0);
  cr_assert_null(out, "no default, no annotation: no policy");
  cr_assert_eq(policy_binding_resolve(&c, "open", "b", "/run/tollgate", &out, &err), 0);
  free(out);
  cr_assert_eq(policy_binding_resolve(&c, "open", NULL, "/run/dev", &out, &err), 0, "bound by root");
  free(out);
  cr_assert_lt(policy_binding_resolve(&c, "open", "a", "/run/tollgate", &out, &err), 0);
  cr_assert(strstr(err->msg, "policy \"open\" may not be used by namespace \"a\"") &&
            strstr(err->msg, "may use: strict") && strstr(err->msg, "default is \"strict\""),
            "%s", err->msg);
  tg_error_free(&err);
  cr_assert_lt(policy_binding_resolve(&c, "nosuch", "a", "/run/tollgate", &out, &err), 0);
  cr_assert(strstr(err->msg, "does not list it"), "%s", err->msg);
  tg_error_free(&err);
  cr_assert_lt(policy_binding_resolve(&c, "strict", NULL, "/run/tollgate", &out, &err), 0);
  cr_assert(strstr(err->msg, "outside Kubernetes") && strstr(err->msg, "may use: none"), "%s", err->msg);
  tg_error_free(&err);
  host_config_free(&c);
  /* no bindings: every policy may be selected, as before */
  host_config_defaults(&c);
  cr_assert_eq(policy_binding_resolve(&c, "open", "a", "/run/tollgate", &out, &err), 0);
  cr_assert_str_eq(out, "open");
  free(out);
  host_config_free(&c);
  /* a default the bindings do not allow, or a bad shape, fails the load */
  cleanup_free char *p2 = write_cfg("{\"policy_bindings\": {\"strict\": {\"namespaces\": [\"a\"]}},"
                                    " \"namespace_policies\": {\"b\": \"strict\"}}");
  cr_assert_lt(host_config_load(p2, &c, &err), 0);
  cr_assert(strstr(err->msg, "does not bind \"strict\" to namespace \"b\""), "%s", err->msg);
  tg_error_free(&err);
  cleanup_free char *p3 = write_cfg("{\"policy_bindings\": {\"strict\": {\"namespace\": [\"a\"]}}}");
  cr_assert_lt(host_config_load(p3, &c, &err), 0);
  cr_assert(strstr(err->msg, "policy_bindings.strict must be"), "%s", err->msg);
}

/* Policy ceilings (issue 33): absolute paths of files that exist, checked
 * at load; the node's ceiling and a namespace's both apply. */
Test(config, policy_ceilings_load_and_apply) {
  cleanup_free char *ceiling = write_cfg("{}"); /* any existing file */
  cleanup_free char *ok = xasprintf("{\"policy_ceiling\": \"%s\", \"namespace_ceilings\": {\"shop\": \"%s\"}}",
                                    ceiling, ceiling);
  cleanup_free char *p = xasprintf("%s/ceilings.json", dir);
  FILE *f = fopen(p, "w");
  fputs(ok, f);
  fclose(f);
  struct host_config c;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  const char *out[2];
  cr_assert_eq(policy_ceilings_for(&c, "shop", out), 2);
  cr_assert_str_eq(out[0], ceiling);
  cr_assert_str_eq(out[1], ceiling);
  cr_assert_eq(policy_ceilings_for(&c, "other", out), 1);
  cr_assert_eq(policy_ceilings_for(&c, NULL, out), 1);
  host_config_free(&c);
  host_config_defaults(&c);
  cr_assert_eq(policy_ceilings_for(&c, "shop", out), 0, "no ceiling by default");
  host_config_free(&c);
  static const char *const bad[][2] = {
      {"{\"policy_ceiling\": \"ceiling.json\"}", "policy_ceiling must be the absolute path"},
      {"{\"policy_ceiling\": \"/nonexistent/ceiling.json\"}", "which cannot be read"},
      {"{\"policy_ceiling\": \"/tmp\"}", "not a regular file"},
      {"{\"policy_ceiling\": 3}", "\"policy_ceiling\" must be a string"},
      {"{\"namespace_ceilings\": [\"/x\"]}", "\"namespace_ceilings\" must be an object"},
      {"{\"namespace_ceilings\": {\"shop\": \"x.json\"}}", "namespace_ceilings.shop must be the absolute path"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cleanup_free char *bp = write_cfg(bad[i][0]);
    cr_assert_lt(host_config_load(bp, &c, &err), 0, "%s loaded", bad[i][0]);
    cr_assert(strstr(err->msg, bad[i][1]), "%s: %s", bad[i][0], err->msg);
    tg_error_free(&err);
  }
}

Test(config, restore_and_pool_keys) {
  struct host_config c;
  host_config_defaults(&c);
  cr_expect_str_eq(c.checkpoint_key, "/var/lib/tollgate/checkpoint.key");
  cr_expect_not(c.allow_unsealed_restore);
  cr_expect_eq(c.max_id_ranges_per_container, 1);
  host_config_free(&c);
  tg_error *err = NULL;
  char *p = write_cfg("{\"checkpoint_key\":\"/k/ck\",\"allow_unsealed_restore\":true,"
                      "\"max_id_ranges_per_container\":3}");
  cr_assert_eq(host_config_load(p, &c, &err), 0, "%s", err ? err->msg : "");
  cr_expect_str_eq(c.checkpoint_key, "/k/ck");
  cr_expect(c.allow_unsealed_restore);
  cr_expect_eq(c.max_id_ranges_per_container, 3);
  host_config_free(&c);
  free(p);
  p = write_cfg("{\"max_id_ranges_per_container\":0}");
  cr_expect_eq(host_config_load(p, &c, &err), -1);
  cr_expect(err && strstr(err->msg, "max_id_ranges_per_container"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  free(p);
  p = write_cfg("{\"checkpoint_key\":\"relative.key\"}");
  cr_expect_eq(host_config_load(p, &c, &err), -1);
  cr_expect(err && strstr(err->msg, "checkpoint_key"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  free(p);
}

/* The CRI pod policy (oci/cri.c) on configs annotated the way containerd's
 * CRI plugin and CRI-O annotate a pod's pause and app containers. */
#include <criterion/criterion.h>
#include <string.h>

#include "oci/cri.h"
#include "base/json.h"
#include "base/util.h"

#define POD "5f2b1d9c0e7a4b3f8d6c2a1e9b7f4d3c5a8e1b2c3d4f5a6b7c8d9e0f1a2b3c4d"

/* A config like the ones containerd writes, cut to what the policy may
 * touch and what it must leave alone. */
static json_t *config_with(const char *annotations_json) {
  cleanup_free char *text = xasprintf(
      "{\"ociVersion\":\"1.0.2\","
      "\"process\":{\"args\":[\"/pause\"],\"user\":{\"uid\":65535,\"gid\":65535},"
      "\"noNewPrivileges\":true,\"capabilities\":{\"bounding\":[]}},"
      "\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
      "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},"
      "{\"type\":\"network\",\"path\":\"/proc/4242/ns/net\"}]}%s%s}",
      annotations_json ? ",\"annotations\":" : "", annotations_json ? annotations_json : "");
  cleanup_error tg_error *err = NULL;
  json_t *c = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(c, "%s", err ? err->msg : "");
  return c;
}

static const char *ann(const json_t *config, const char *key) {
  return json_string_value(json_object_get(json_object_get(config, "annotations"), key));
}

/* Everything outside "annotations" must come out exactly as it went in:
 * the policy never loosens (or otherwise edits) the hardened config. */
static void assert_only_annotations_changed(const json_t *before, const json_t *after) {
  cleanup_json json_t *b = json_copy(before);
  cleanup_json json_t *a = json_copy(after);
  json_object_del(b, "annotations");
  json_object_del(a, "annotations");
  cr_assert(json_equal(a, b), "the policy changed more than the annotations");
}

/* What the last apply_ok() returned: the record create keeps in the
 * state directory (never in the config). */
static struct cri_record rec;

static void apply_ok(json_t *c) {
  cleanup_error tg_error *err = NULL;
  cri_record_free(&rec);
  cr_assert_eq(oci_apply_cri_policy(c, &rec, &err), 0, "%s", err ? err->msg : "");
  /* Nothing of tollgate's goes into the annotations: they reach hooks. */
  const json_t *a = json_object_get(c, "annotations");
  for (size_t i = 0; json_is(a, JSON_OBJECT) && i < a->u.object.len; i++)
    cr_assert(strncmp(a->u.object.keys[i], "dev.tollgate.cri.", 17) != 0, "added %s", a->u.object.keys[i]);
}

static void apply_fails(json_t *c, const char *needle) {
  cleanup_error tg_error *err = NULL;
  struct cri_record r = {0};
  cr_assert_eq(oci_apply_cri_policy(c, &r, &err), -1);
  cri_record_free(&r);
  cr_assert_not_null(err);
  cr_assert_not_null(strstr(err->msg, needle), "message: %s", err->msg);
}

Test(cri, plain_container_is_untouched) {
  cleanup_json json_t *c = config_with("{\"dev.tollgate.policy\":\"orders\"}");
  cleanup_json json_t *before = json_copy(c);
  apply_ok(c);
  cr_assert(json_equal(c, before));
}

Test(cri, config_without_annotations_is_fine) {
  cleanup_json json_t *c = config_with(NULL);
  apply_ok(c);
  cr_assert_null(json_object_get(c, "annotations"));
}

Test(cri, app_container_gets_its_own_sandbox) {
  cleanup_json json_t *c = config_with(
      "{\"io.kubernetes.cri.container-type\":\"container\","
      "\"io.kubernetes.cri.sandbox-id\":\"" POD "\","
      "\"io.kubernetes.cri.container-name\":\"agent\","
      "\"dev.tollgate.policy\":\"orders\"}");
  cleanup_json json_t *before = json_copy(c);
  apply_ok(c);
  /* runsc would join the sandbox for "container"; with neither type nor
   * id it starts a new sandbox named after this container. */
  cr_assert_null(ann(c, "io.kubernetes.cri.container-type"));
  cr_assert_null(ann(c, "io.kubernetes.cri.sandbox-id"));
  cr_assert_str_eq(rec.role, "container");
  cr_assert_str_eq(rec.pod, POD);
  /* An app container keeps its policy, and so its bridge. */
  cr_assert_str_eq(ann(c, "dev.tollgate.policy"), "orders");
  cr_assert_str_eq(ann(c, "io.kubernetes.cri.container-name"), "agent");
  assert_only_annotations_changed(before, c);
}

Test(cri, pause_container_stays_hardened) {
  cleanup_json json_t *c = config_with(
      "{\"io.kubernetes.cri.container-type\":\"sandbox\","
      "\"io.kubernetes.cri.sandbox-id\":\"" POD "\","
      "\"dev.tollgate.policy\":\"orders\"}");
  cleanup_json json_t *before = json_copy(c);
  apply_ok(c);
  cr_assert_null(ann(c, "io.kubernetes.cri.container-type"));
  cr_assert_null(ann(c, "io.kubernetes.cri.sandbox-id"));
  cr_assert_str_eq(rec.role, "sandbox");
  cr_assert_str_eq(rec.pod, POD);
  /* Governed like any container of the pod: the policy stays. */
  cr_assert_str_eq(ann(c, "dev.tollgate.policy"), "orders");
  /* user, capabilities, noNewPrivileges, readonly root, namespaces: same. */
  assert_only_annotations_changed(before, c);
}

Test(cri, crio_annotations_get_the_same_treatment) {
  cleanup_json json_t *c = config_with(
      "{\"io.kubernetes.cri-o.ContainerType\":\"container\","
      "\"io.kubernetes.cri-o.SandboxID\":\"" POD "\"}");
  apply_ok(c);
  cr_assert_null(ann(c, "io.kubernetes.cri-o.ContainerType"));
  cr_assert_null(ann(c, "io.kubernetes.cri-o.SandboxID"));
  cr_assert_str_eq(rec.role, "container");
  cr_assert_str_eq(rec.pod, POD);
}

Test(cri, sandbox_id_alone_is_removed) {
  /* No type: runsc already treats it as a root container, but the id
   * still must not survive to name a sandbox. */
  cleanup_json json_t *c = config_with("{\"io.kubernetes.cri.sandbox-id\":\"" POD "\"}");
  apply_ok(c);
  cr_assert_null(ann(c, "io.kubernetes.cri.sandbox-id"));
  cr_assert_null(ann(c, "io.kubernetes.cri.container-type"));
  cr_assert_str_eq(rec.pod, POD);
}

Test(cri, workload_dev_tollgate_cri_keys_are_only_annotations) {
  /* tollgate keeps its record in the state directory, so a workload's
   * own dev.tollgate.cri.* keys are plain user annotations: kept as they
   * are, and never taken for the record. */
  cleanup_json json_t *c = config_with(
      "{\"dev.tollgate.cri.role\":\"sandbox\",\"dev.tollgate.cri.pod\":\"forged\","
      "\"io.kubernetes.cri.container-type\":\"container\","
      "\"io.kubernetes.cri.sandbox-id\":\"" POD "\"}");
  struct cri_record r = {0};
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(oci_apply_cri_policy(c, &r, &err), 0);
  cr_assert_str_eq(r.role, "container");
  cr_assert_str_eq(r.pod, POD);
  cr_assert_str_eq(ann(c, "dev.tollgate.cri.pod"), "forged");
  cri_record_free(&r);
}

Test(cri, unknown_type_is_refused) {
  cleanup_json json_t *c = config_with("{\"io.kubernetes.cri.container-type\":\"podman\"}");
  apply_fails(c, "expected \"sandbox\" or \"container\"");
}

Test(cri, non_string_type_is_refused) {
  cleanup_json json_t *c = config_with("{\"io.kubernetes.cri.container-type\":1}");
  apply_fails(c, "not a string");
}

Test(cri, sandbox_id_shaped_like_a_path_is_refused) {
  cleanup_json json_t *c = config_with(
      "{\"io.kubernetes.cri.container-type\":\"container\","
      "\"io.kubernetes.cri.sandbox-id\":\"../../run/other\"}");
  apply_fails(c, "not a valid sandbox id");
}

Test(cri, disagreeing_managers_are_refused) {
  cleanup_json json_t *c = config_with(
      "{\"io.kubernetes.cri.container-type\":\"sandbox\","
      "\"io.kubernetes.cri-o.ContainerType\":\"container\"}");
  apply_fails(c, "disagree");
  cleanup_json json_t *d = config_with(
      "{\"io.kubernetes.cri.sandbox-id\":\"a1\",\"io.kubernetes.cri-o.SandboxID\":\"b2\"}");
  apply_fails(d, "different sandboxes");
}

Test(cri, annotations_that_are_not_an_object_are_refused) {
  cleanup_json json_t *c = config_with("[\"io.kubernetes.cri.container-type\"]");
  apply_fails(c, "not an object");
}

Test(cri, a_second_pass_never_reopens_anything) {
  /* A second pass over an effective config finds no CRI keys: it has
   * nothing to record, but it must not bring back a sandbox to join or touch anything else. */
  cleanup_json json_t *c = config_with(
      "{\"io.kubernetes.cri.container-type\":\"container\","
      "\"io.kubernetes.cri.sandbox-id\":\"" POD "\",\"dev.tollgate.policy\":\"orders\"}");
  apply_ok(c);
  cleanup_json json_t *once = json_copy(c);
  apply_ok(c);
  cr_assert_null(ann(c, "io.kubernetes.cri.container-type"));
  cr_assert_null(ann(c, "io.kubernetes.cri.sandbox-id"));
  cr_assert_str_eq(ann(c, "dev.tollgate.policy"), "orders");
  cr_assert_null(rec.role);
  assert_only_annotations_changed(once, c);
  cri_record_free(&rec);
}

/* runsc pods: the join writes exactly the two annotations runsc reads,
 * with the verified pause container's backend id, and a pid path only
 * when the pod shares its PID namespace. */
Test(cri, join_sandbox_sets_runsc_annotations) {
  cleanup_json json_t *c = config_with(NULL);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(oci_cri_join_sandbox(c, "tg-pause1", false, 4242, &err), 0, "%s", err ? err->msg : "");
  cr_expect_str_eq(ann(c, "io.kubernetes.cri.container-type"), "container");
  cr_expect_str_eq(ann(c, "io.kubernetes.cri.sandbox-id"), "tg-pause1");
  cr_expect_null(json_object_get(json_array_get(json_get_path(c, "linux.namespaces"), 0), "path"),
                 "no shared pid asked: the pid namespace keeps no path");
}

Test(cri, join_sandbox_with_shared_pid_names_the_pause_pid_namespace) {
  cleanup_json json_t *c = config_with(NULL);
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(oci_cri_join_sandbox(c, "tg-pause1", true, 4242, &err), 0, "%s", err ? err->msg : "");
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_get_path(c, "linux.namespaces"), 0), "path")),
                   "/proc/4242/ns/pid");
}

Test(cri, join_sandbox_refuses_an_id_that_is_not_one) {
  cleanup_json json_t *c = config_with(NULL);
  cleanup_error tg_error *err = NULL;
  cr_expect_eq(oci_cri_join_sandbox(c, "../x", false, 4242, &err), -1);
  cr_expect_null(ann(c, "io.kubernetes.cri.sandbox-id"));
}

Test(cri, shares_pod_pid_only_for_the_sandbox_pid_path) {
  cleanup_json json_t *c = config_with(NULL);
  cr_expect(!oci_cri_shares_pod_pid(c, 4242), "no path: not shared");
  json_object_set(json_array_get(json_get_path(c, "linux.namespaces"), 0), "path",
                  json_new_string("/proc/4242/ns/pid"));
  cr_expect(oci_cri_shares_pod_pid(c, 4242));
  cr_expect(!oci_cri_shares_pod_pid(c, 4243), "another process's pid namespace is not the pod's");
  cr_expect(!oci_cri_shares_pod_pid(c, 0));
}

/* A runsc joiner has no network of its own: Docker's libnetwork-setkey
 * hook goes, every other hook stays (issue 40.4). */
Test(cri, drop_network_hooks_removes_only_dockers) {
  const char *text =
      "{\"hooks\":{\"prestart\":[{\"path\":\"/proc/77/exe\",\"args\":[\"libnetwork-setkey\",\"-exec-root=/x\",\"id\",\"n\"]},"
      "{\"path\":\"/usr/bin/other-hook\",\"args\":[\"other-hook\",\"libnetwork-setkey\"]}],"
      "\"createRuntime\":[{\"path\":\"/proc/77/exe\",\"args\":[\"libnetwork-setkey\"]}],"
      "\"poststop\":[{\"path\":\"/usr/bin/p\"}]}}";
  cleanup_error tg_error *err = NULL;
  json_t *c = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(c);
  cr_expect_eq(oci_cri_drop_network_hooks(c), 2);
  const json_t *pre = json_get_path(c, "hooks.prestart");
  cr_expect_eq(json_array_len(pre), 1);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(pre, 0), "path")), "/usr/bin/other-hook");
  cr_expect_null(json_get_path(c, "hooks.createRuntime"), "an emptied stage goes");
  cr_expect_not_null(json_get_path(c, "hooks.poststop"));
  cr_expect_eq(oci_cri_drop_network_hooks(c), 0);
  json_free(c);
}

/* The join rule (shim/lifecycle/join.h): its decision table, the pod identity, the
 * caller tollgate reads from /proc, and join_decide() on a root with no
 * container to join (every claim then fails). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/lifecycle/join.h"
#include "base/util.h"

static struct join_caller caller(pid_t pid, unsigned long long start, const char *exe, bool shim,
                                 const char *ns) {
  return (struct join_caller){
      .pid = pid, .start = start, .exe = (char *)exe, .containerd_shim = shim, .containerd_ns = (char *)ns};
}

static json_t *parse(const char *text) {
  cleanup_error tg_error *err = NULL;
  json_t *v = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(v, "%s", err ? err->msg : "");
  return v;
}

#define SHIM "/usr/bin/containerd-shim-runc-v2"
#define CONMON "/usr/bin/conmon"

Test(join, proof_same_containerd_shim) {
  struct join_caller shim = caller(100, 5000, SHIM, true, "k8s.io");
  struct join_caller same = caller(100, 5000, SHIM, true, "k8s.io");
  cr_assert_str_eq(join_proof(&same, &shim, NULL, "pause", NULL), "the same containerd shim");
  /* pid reused by another process since: a different start time */
  struct join_caller reused = caller(100, 5001, SHIM, true, "k8s.io");
  cr_assert_null(join_proof(&reused, &shim, NULL, "pause", NULL));
  /* another shim (another pod) */
  struct join_caller other = caller(101, 5000, SHIM, true, "k8s.io");
  cr_assert_null(join_proof(&other, &shim, NULL, "pause", NULL));
  /* the same process, but no containerd shim: a shell creating both */
  struct join_caller sh1 = caller(200, 7, "/usr/bin/bash", false, NULL);
  struct join_caller sh2 = caller(200, 7, "/usr/bin/bash", false, NULL);
  cr_assert_null(join_proof(&sh2, &sh1, NULL, "owner", NULL));
}

Test(join, proof_caller_vouches) {
  struct join_caller a = caller(200, 7, "/usr/bin/bash", false, NULL);
  struct join_caller b = caller(300, 9, "/usr/bin/python3.11", false, NULL);
  cr_assert_str_eq(join_proof(&a, &b, "owner", "owner", NULL), "--join");
  cr_assert_null(join_proof(&a, &b, "other", "owner", NULL), "--join names another container");
  /* vouching works even when the owner's caller is unknown (created
   * before callers were recorded): it is the caller's word */
  struct join_caller none = {0};
  cr_assert_str_eq(join_proof(&a, &none, "owner", "owner", NULL), "--join");
}

Test(join, proof_trusted_callers) {
  char *trusted[] = {CONMON, NULL};
  struct join_caller c1 = caller(400, 11, CONMON, false, NULL);
  struct join_caller c2 = caller(401, 12, CONMON, false, NULL);
  cr_assert_str_eq(join_proof(&c2, &c1, NULL, "infra", trusted), "trusted_join_callers");
  /* both callers must be trusted */
  struct join_caller sh = caller(402, 13, "/usr/bin/bash", false, NULL);
  cr_assert_null(join_proof(&sh, &c1, NULL, "infra", trusted));
  cr_assert_null(join_proof(&c1, &sh, NULL, "infra", trusted));
  /* an owner whose caller was never recorded proves nothing */
  struct join_caller none = {0};
  cr_assert_null(join_proof(&c1, &none, NULL, "infra", trusted));
  /* empty by default */
  cr_assert_null(join_proof(&c2, &c1, NULL, "infra", NULL));
}

Test(join, pod_identity_every_recorded_key) {
  cleanup_json json_t *pause = parse("{\"annotations\":{\"io.kubernetes.cri.sandbox-namespace\":\"payments\","
                                     "\"io.kubernetes.cri.sandbox-uid\":\"u1\"}}");
  cleanup_json json_t *same = parse("{\"annotations\":{\"io.kubernetes.cri.sandbox-namespace\":\"payments\","
                                    "\"io.kubernetes.cri.sandbox-uid\":\"u1\",\"x\":\"y\"}}");
  cleanup_json json_t *missing = parse("{\"annotations\":{\"io.kubernetes.cri.sandbox-uid\":\"u1\"}}");
  cleanup_json json_t *none = parse("{}");
  cleanup_json json_t *wrong = parse("{\"annotations\":{\"io.kubernetes.cri.sandbox-namespace\":\"shop\","
                                     "\"io.kubernetes.cri.sandbox-uid\":\"u1\"}}");
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(join_pod_identity(same, pause, "p", &err), 0);
  cr_assert_lt(join_pod_identity(missing, pause, "p", &err), 0, "a key left out is no longer skipped");
  cr_assert(strstr(err->msg, "records io.kubernetes.cri.sandbox-namespace=\"payments\""), "%s", err->msg);
  tg_error_free(&err);
  cr_assert_lt(join_pod_identity(none, pause, "p", &err), 0);
  tg_error_free(&err);
  cr_assert_lt(join_pod_identity(wrong, pause, "p", &err), 0);
  cr_assert(strstr(err->msg, "belongs to another pod"), "%s", err->msg);
  tg_error_free(&err);
  /* a pause that recorded no identity asks for none */
  cr_assert_eq(join_pod_identity(none, none, "p", &err), 0);
}

Test(join, caller_self_and_record) {
  struct join_caller me;
  join_caller_self(&me);
  cr_assert_eq(me.pid, getppid());
  cr_assert_gt(me.start, 0);
  cr_assert_not_null(me.exe);
  cr_assert_eq(me.exe[0], '/');
  cr_assert(!me.containerd_shim, "the test runner is no containerd shim");
  cleanup_json json_t *state = json_new_object();
  join_caller_record(&me, state);
  struct join_caller back;
  join_caller_recorded(state, &back);
  cr_assert_eq(back.pid, me.pid);
  cr_assert_eq(back.start, me.start);
  cr_assert_str_eq(back.exe, me.exe);
  cr_assert_str_eq(join_proof(&me, &back, NULL, "x", (char *[]){me.exe, NULL}), "trusted_join_callers");
  join_caller_free(&back);
  join_caller_free(&me);
  cleanup_json json_t *empty = json_new_object();
  join_caller_recorded(empty, &back);
  cr_assert_eq(back.pid, 0);
}

/* join_decide on an empty root: every claim fails, with the rule named. */
static char root[] = "/tmp/tg-join-XXXXXX";
static void setup(void) { cr_assert_not_null(mkdtemp(root)); }
static void teardown(void) { remove_tree(root, NULL); }

static void decide(const char *config_text, const char *vouched, const struct join_caller *c, struct join *j) {
  struct cli cli = {.root = root};
  cleanup_json json_t *config = parse(config_text);
  cleanup_json json_t *state = parse("{\"backend\":\"runc\",\"backend_path\":\"/usr/bin/runc\"}");
  struct join_request req = {.id = "me", .config = config, .state = state, .vouched = vouched, .caller = c};
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(join_decide(&cli, &req, j, &err), 0, "%s", err ? err->msg : "");
}

Test(join, decide_refusals, .init = setup, .fini = teardown) {
  struct join_caller sh = caller(200, 7, "/usr/bin/bash", false, NULL);
  struct join j;
  decide("{\"linux\":{\"namespaces\":[{\"type\":\"ipc\",\"path\":\"/nonexistent/ipc\"}]}}", NULL, &sh, &j);
  cr_assert_not_null(j.refused);
  cr_assert(strstr(j.refused->msg, "the ipc namespace /nonexistent/ipc belongs to no running container"), "%s",
            j.refused->msg);
  cr_assert_null(j.owner);
  join_free(&j);
  decide("{\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
         "\"io.kubernetes.cri.sandbox-id\":\"victim\"}}",
         "victim", &sh, &j);
  cr_assert_not_null(j.refused);
  cr_assert(strstr(j.refused->msg, "pod sandbox victim, which is not a container of this tollgate root"), "%s",
            j.refused->msg);
  join_free(&j);
  decide("{}", "someone", &sh, &j);
  cr_assert_not_null(j.refused);
  cr_assert(strstr(j.refused->msg, "--join someone: this container's config joins no container"), "%s", j.refused->msg);
  join_free(&j);
  /* a network path is the client's (CNI, Podman): no join, no refusal */
  decide("{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/var/run/netns/cni-1\"}]}}", NULL, &sh, &j);
  cr_assert_null(j.refused);
  cr_assert_null(j.owner);
  join_free(&j);
}

/* 27.5: a Kubernetes namespace only from containerd's CRI (a k8s.io
 * containerd shim's sandbox), never from the annotation alone. */
Test(join, kubernetes_namespace_needs_the_cri, .init = setup, .fini = teardown) {
  const char *pause = "{\"annotations\":{\"io.kubernetes.cri.container-type\":\"sandbox\","
                      "\"io.kubernetes.cri.sandbox-id\":\"me\",\"io.kubernetes.cri.sandbox-namespace\":\"payments\"}}";
  const char *cli_workload = "{\"annotations\":{\"dev.tollgate.policy\":\"payments\","
                             "\"io.kubernetes.cri.sandbox-namespace\":\"payments\"}}";
  struct join_caller k8s = caller(100, 5, SHIM, true, "k8s.io");
  struct join_caller moby = caller(100, 5, SHIM, true, "moby");
  struct join_caller sh = caller(200, 7, "/usr/bin/bash", false, NULL);
  struct join_caller fake = caller(300, 8, "/tmp/containerd-shim-runc-v2", false, "k8s.io");
  struct join j;
  decide(pause, NULL, &k8s, &j);
  cr_assert_str_eq(j.kube_namespace, "payments");
  join_free(&j);
  decide(pause, NULL, &moby, &j);
  cr_assert_null(j.kube_namespace, "Docker's containerd namespace is no Kubernetes one");
  join_free(&j);
  decide(pause, NULL, &sh, &j);
  cr_assert_null(j.kube_namespace, "the CLI");
  join_free(&j);
  decide(pause, NULL, &fake, &j);
  cr_assert_null(j.kube_namespace, "a shim tollgate did not find root-owned");
  join_free(&j);
  decide(cli_workload, NULL, &k8s, &j);
  cr_assert_null(j.kube_namespace, "no CRI sandbox: the annotation alone");
  join_free(&j);
  decide(cli_workload, NULL, &sh, &j);
  cr_assert_null(j.kube_namespace);
  join_free(&j);
}

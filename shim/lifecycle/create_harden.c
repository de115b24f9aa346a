/* create's policy and hardening: the policy file the container gets, then
 * oci_harden() with the host's profile (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hostconfig.h"
#include "base/log.h"
#include "base/util.h"
#include "bridge/area.h"
#include "governance/ceiling.h"
#include "oci/rlimits_defer.h"
#include "shim/lifecycle/state.h"

#define POLICY_ANNOTATION "dev.tollgate.policy"

/* --policy FILE, or the annotation dev.tollgate.policy=NAME, which can
 * only name a file in the host's policy directory: the workload chooses
 * among the host's policies, it never gives a path. */
static int resolve_policy(const struct cli *cli, const char *policy_file,
                          const json_t *source, const char *kube_ns, char **out, tg_error **err) {
  *out = NULL;
  if (policy_file != NULL) {
    char *p = realpath(policy_file, NULL);
    if (p == NULL)
      return tg_error_set(err, errno,
                          "--policy %s cannot be used: give the path of an "
                          "existing policy file",
                          policy_file);
    *out = p;
    return 0;
  }
  const json_t *ann = json_object_get(json_object_get(source, "annotations"),
                                      POLICY_ANNOTATION);
  const char *requested = json_string_value(ann);
  if (ann != NULL && (requested == NULL || !container_id_is_valid(requested)))
    return tg_error_set(err, 0,
                        "annotation %s must be a policy name "
                        "([A-Za-z0-9][A-Za-z0-9_.-]*, no path): it selects "
                        "<policy_dir>/NAME.json",
                        POLICY_ANNOTATION);
  /* The host config's binding decides what the workload may select, and
   * gives a namespace its default policy.  The namespace is only one that
   * containerd's CRI proved (shim/lifecycle/join.h), never an annotation alone. */
  cleanup_free char *name = NULL;
  if (policy_binding_resolve(&cli->config, requested, kube_ns,
                             cli->root ? cli->root : TG_DEFAULT_ROOT, &name, err) < 0)
    return -1;
  if (name == NULL)
    return 0;
  if (!container_id_is_valid(name))
    return tg_error_set(err, 0, "the host config's default policy \"%s\" is not a policy name",
                        name);
  const char *dir = cli->config.policy_dir;
  char *p = xasprintf("%s/%s.json", dir ? dir : "/etc/tollgate/policies", name);
  if (access(p, R_OK) < 0) {
    int e = errno;
    tg_error_set(err, e,
                 "annotation %s=%s names policy %s, which cannot be read: "
                 "install that policy or remove the annotation",
                 POLICY_ANNOTATION, name, p);
    free(p);
    return -1;
  }
  *out = p;
  return 0;
}

int create_resolve_policy(struct create_context *cx, tg_error **err) {
  /* Policy (from the user's config, before hardening touches it). */
  return resolve_policy(cx->cli, cx->req->policy_file, cx->config, cx->jn.kube_namespace, &cx->policy, err);
}

/* The policy the container gets, whoever chose it (--policy, the
 * annotation, a binding's default), must be within every ceiling the host
 * config names for it: the node's policy_ceiling and its namespace's.  The
 * ceiling comes from the host config alone (trusted), never the bundle.
 * No policy: no bridge, no tool, nothing a ceiling bounds. */
int create_check_ceiling(struct create_context *cx, tg_error **err) {
  const struct host_config *cfg = &cx->cli->config;
  const char *ceilings[2];
  size_t n = policy_ceilings_for(cfg, cx->jn.kube_namespace, ceilings);
  cleanup_free char *ns_key = cx->jn.kube_namespace
                                  ? xasprintf("namespace_ceilings.%s", cx->jn.kube_namespace)
                                  : NULL;
  const char *keys[2];
  for (size_t i = 0; i < n; i++)
    keys[i] = i == 0 && cfg->policy_ceiling != NULL ? "policy_ceiling" : ns_key;
  return ceiling_enforce(cx->policy, ceilings, keys, n, err);
}

int create_harden_options(struct create_context *cx, tg_error **err) {
  (void)err; /* it cannot fail */
  struct cli *cli = cx->cli;
  const struct join *jn = &cx->jn;
  /* Hardening, then the pod policy. */
  cx->profiles = host_config_data_path(&cli->config, "profiles", NULL);
  cx->seccomp = host_config_data_path(&cli->config, "seccomp", NULL);
  cx->ho = (struct harden_options){
      .profile = cli->config.profile,
      .profiles_dir = cx->profiles,
      .seccomp_dir = cx->seccomp,
      .allow_passthrough = cli->config.allow_passthrough,
      .backend = json_string_value(json_object_get(cx->state, "backend")),
      .bundle_dir = cx->bundle,
      .state_root = cli->root,
      .audit_dir = cli->config.audit_dir,
      .memory_ceiling = host_config_memory_ceiling(&cli->config),
  };
  /* A container that joins another (a pod member, a namespace path of a
   * tollgate container) shares its namespaces, its user namespace and
   * range under runc, and under runsc its sandbox (docs/kubernetes.md
   * "Pods"), once the join rule accepted it (shim/lifecycle/join.h).  A refusal
   * waits for the profile: passthrough is the bare backend. */
  cx->pod_pid = jn->pod || jn->net ? jn->owner_pid : 0;
  cx->ho.pod_sandbox_pid = jn->owner_pid;
  return 0;
}

int create_harden(struct create_context *cx, tg_error **err) {
  struct cli *cli = cx->cli;
  struct join *jn = &cx->jn;
  const char *bundle = cx->bundle;
  struct harden_result hr = {0};
  /* A refused join is the reason whatever hardening says of its paths
   * (runsc's sandbox pid namespace is the host's, say): passthrough,
   * which alone would take it, checks nothing and cannot fail here. */
  if (oci_harden(cx->config, &cx->ho, &hr, err) < 0) {
    if (jn->refused != NULL) {
      tg_error_free(err);
      *err = jn->refused;
      jn->refused = NULL;
    }
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  if (jn->refused != NULL && !hr.passthrough) {
    harden_result_free(&hr);
    *err = jn->refused;
    jn->refused = NULL;
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  cx->profile = hr.profile ? xstrdup(hr.profile) : xstrdup("");
  cx->passthrough = hr.passthrough;
  /* Into the runtime log (--log, which Docker, Podman and containerd
   * give), never onto a person's terminal: there the effective config
   * says it all, and stderr stays the container's. */
  if (hr.notice != NULL && cli->log_path != NULL) {
    cleanup_free char *msg = xasprintf("container %s: %s", cx->id, hr.notice);
    log_line(cli->log_path, cli->log_json, "warning", msg);
  }
  harden_result_free(&hr);
  return 0;
}

int create_check_kept_network(struct create_context *cx, tg_error **err) {
  json_t *config = cx->config;
  bool own_userns = strcmp(cx->ho.backend ?: "", "runc") == 0 && cx->share.size == 0 &&
                    json_array_len(json_get_path(config, "linux.uidMappings")) > 0;
  if (!cx->passthrough && join_check_kept_network(cx->cli, config, &cx->jn, own_userns, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  /* passthrough is the bare backend: the user's config byte for byte, no
   * pod policy, and no bridge unless a policy was given explicitly (the
   * bridge's mounts then go in, and nothing else). */
  cx->out->bridged = !cx->passthrough || cx->policy != NULL;
  return 0;
}

int create_defer_rlimits(struct create_context *cx, tg_error **err) {
  /* runc applies process.rlimits to its own init before that loads the
   * seccomp filter, and the init's ~1 GiB of address space made an
   * RLIMIT_AS or RLIMIT_DATA below it fail the start: the static client
   * sets them instead, once runc has exec'd it (oci/rlimits_defer.h).
   * Not under runsc, whose Sentry applies process.rlimits to the
   * container's processes alone, nor under passthrough, which is the bare
   * backend (and may have no client to run). */
  if (cx->passthrough || !cx->out->bridged || strcmp(cx->ho.backend ?: "", "runc") != 0)
    return 0;
  if (oci_rlimits_defer(json_object_get(cx->config, "process"), BRIDGE_CONTAINER_CLIENT, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  return 0;
}

/* The CRI pod policy: one gVisor sandbox per pod, joined only by name of
 * a pause container tollgate verified.
 *
 * containerd's CRI plugin marks each container of a pod with
 *   io.kubernetes.cri.container-type = "sandbox" (the pause container) or
 *                                      "container" (an app container)
 *   io.kubernetes.cri.sandbox-id     = the pause container's id
 * (CRI-O uses io.kubernetes.cri-o.ContainerType / io.kubernetes.cri-o.SandboxID).
 * runsc reads them to start an app container *inside* the pause
 * container's sandbox, as gVisor's own containerd shim does.  That is what
 * makes a pod a pod under gVisor: one Sentry, so one loopback (the
 * sandbox's netstack), one IPC namespace (the sandbox kernel's) and, for
 * containers whose pid namespace paths are equal, one PID namespace.
 * Separate sandboxes cannot give any of the three: each has its own
 * kernel.  So tollgate joins, with three rules:
 *
 *   - the annotations as the container manager wrote them are removed
 *     (oci_apply_cri_policy), whatever they say: they name containerd's
 *     id, not the one runsc knows (shim/lifecycle/backend.h, backend_container_id),
 *     and anyone who can write a config.json can forge them;
 *   - create writes them back (oci_cri_join_sandbox) only after checking
 *     that the sandbox id names a pause container of the same tollgate
 *     root: recorded with role "sandbox", under runsc, alive, of the same
 *     pod, by the join rule (shim/lifecycle/join.h).
 *     Anything else is refused with an error naming the problem, never
 *     downgraded to a sandbox of its own: the pod would silently lose
 *     what Kubernetes promises it;
 *   - what stays per container stays so: each joined container has its
 *     own hardened config, state directory, bridge mounts, policy,
 *     budgets and audit log.  runsc reports the sandbox's pid for a joined
 *     container, so create gives it a waiter process of its own
 *     (shim/lifecycle/waiter.h) whose pid containerd's shim waits on.
 *
 * What the container manager asked for is kept, for logs and audit, in
 * the state directory (dev.tollgate.cri role and pod, not in the config).
 * Removing rather than keeping the manager's values keeps a second pass
 * over an effective config harmless: it finds only what create verified.
 *
 * The pause container is treated exactly like an app container: hardened
 * with the same profile, given the same bridge, and governed by the pod's
 * policy (containerd copies pod annotations to every container of the pod,
 * pause included).  It never calls a tool, so its audit log holds only its
 * open and close records.  Nothing here loosens any container.
 *
 * Unknown type values and malformed sandbox ids are refused, not guessed
 * at: an older runsc treats any type other than "sandbox" as "join".
 */
#include "oci/cri.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define CRI_TYPE "io.kubernetes.cri.container-type"
#define CRI_SANDBOX_ID "io.kubernetes.cri.sandbox-id"
#define CRIO_TYPE "io.kubernetes.cri-o.ContainerType"
#define CRIO_SANDBOX_ID "io.kubernetes.cri-o.SandboxID"


/* Read annotation key as a string.  *out is NULL when absent. */
static int annotation_string(const json_t *annotations, const char *key,
                             const char **out, tg_error **err) {
  const json_t *v = json_object_get(annotations, key);
  *out = NULL;
  if (v == NULL)
    return 0;
  if (!json_is(v, JSON_STRING))
    return tg_error_set(err, EINVAL,
                        "config.json annotation %s is a %s, not a string; "
                        "OCI annotations are strings: fix the container manager's spec",
                        key, json_type_name(v->type));
  *out = json_string_value(v);
  return 0;
}

/* The role ("sandbox" or "container") from one type annotation. */
static int read_type(const json_t *annotations, const char *key,
                     const char **role, tg_error **err) {
  const char *value;
  if (annotation_string(annotations, key, &value, err) < 0)
    return -1;
  if (value == NULL)
    return 0;
  if (strcmp(value, "sandbox") != 0 && strcmp(value, "container") != 0)
    return tg_error_set(err, EINVAL,
                        "config.json annotation %s=\"%s\" is not a CRI container type: "
                        "expected \"sandbox\" or \"container\"; fix or remove the annotation",
                        key, value);
  if (*role != NULL && strcmp(*role, value) != 0)
    return tg_error_set(err, EINVAL,
                        "config.json annotations %s and %s disagree (\"%s\" vs \"%s\"); "
                        "set only the one your container manager uses",
                        CRI_TYPE, CRIO_TYPE, *role, value);
  *role = value;
  return 0;
}

static int read_sandbox_id(const json_t *annotations, const char *key,
                           const char **pod, tg_error **err) {
  const char *value;
  if (annotation_string(annotations, key, &value, err) < 0)
    return -1;
  if (value == NULL)
    return 0;
  /* The id ends up in logs and audit records: hold it to the same shape
   * as a container id so it can never smuggle a path or a newline. */
  if (!container_id_is_valid(value))
    return tg_error_set(err, EINVAL,
                        "config.json annotation %s is not a valid sandbox id "
                        "([A-Za-z0-9][A-Za-z0-9_.-]{0,127}); fix or remove the annotation",
                        key);
  if (*pod != NULL && strcmp(*pod, value) != 0)
    return tg_error_set(err, EINVAL,
                        "config.json annotations %s and %s name different sandboxes; "
                        "set only the one your container manager uses",
                        CRI_SANDBOX_ID, CRIO_SANDBOX_ID);
  *pod = value;
  return 0;
}

int oci_cri_read(const json_t *config, struct cri_record *rec, tg_error **err) {
  rec->role = rec->pod = NULL;
  const json_t *annotations = json_object_get(config, "annotations");
  if (annotations == NULL)
    return 0;
  if (!json_is(annotations, JSON_OBJECT))
    return tg_error_set(err, EINVAL,
                        "config.json \"annotations\" is a %s, not an object of strings; "
                        "fix the bundle's config.json",
                        json_type_name(annotations->type));
  const char *role = NULL, *pod = NULL;
  if (read_type(annotations, CRI_TYPE, &role, err) < 0 ||
      read_type(annotations, CRIO_TYPE, &role, err) < 0 ||
      read_sandbox_id(annotations, CRI_SANDBOX_ID, &pod, err) < 0 ||
      read_sandbox_id(annotations, CRIO_SANDBOX_ID, &pod, err) < 0)
    return -1;
  if (role == NULL && pod == NULL)
    return 0; /* not started by a CRI runtime: nothing to decide */
  rec->role = xstrdup(role ? role : "container");
  rec->pod = pod ? xstrdup(pod) : NULL;
  return 0;
}

int oci_apply_cri_policy(json_t *config, struct cri_record *rec, tg_error **err) {
  if (oci_cri_read(config, rec, err) < 0)
    return -1;
  if (rec->role == NULL)
    return 0;
  /* Nothing the manager wrote reaches runsc: with no type runsc makes
   * this the root container of a new sandbox, and with no sandbox id
   * there is nothing to join unless create writes a verified one back. */
  json_t *annotations = json_object_get(config, "annotations");
  json_object_del(annotations, CRI_TYPE);
  json_object_del(annotations, CRIO_TYPE);
  json_object_del(annotations, CRI_SANDBOX_ID);
  json_object_del(annotations, CRIO_SANDBOX_ID);
  return 0;
}

bool oci_cri_is_pod_member(const struct cri_record *rec) {
  return rec->role != NULL && strcmp(rec->role, "container") == 0 && rec->pod != NULL;
}

int oci_cri_join_pod_network(json_t *config, pid_t sandbox_pid, tg_error **err) {
  if (sandbox_pid <= 0)
    return tg_error_set(err, 0, "the pod's sandbox has no running process to share its network with");
  json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type"));
    if (type != NULL && strcmp(type, "network") == 0) {
      char path[64];
      snprintf(path, sizeof path, "/proc/%d/ns/net", (int)sandbox_pid);
      json_object_set(ns, "path", json_new_string(path));
      return 0;
    }
  }
  return tg_error_set(err, 0, "internal error: the hardened config has no network namespace to point at the pod's; this is a tollgate bug");
}

/* The namespace entry of type in a config, or NULL. */
static json_t *namespace_of(const json_t *config, const char *type) {
  json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    json_t *ns = json_array_get(nss, i);
    const char *t = json_string_value(json_object_get(ns, "type"));
    if (t != NULL && strcmp(t, type) == 0)
      return ns;
  }
  return NULL;
}

bool oci_cri_shares_pod_pid(const json_t *config, pid_t sandbox_pid) {
  if (sandbox_pid <= 0)
    return false;
  const char *path = json_string_value(json_object_get(namespace_of(config, "pid"), "path"));
  char want[64];
  snprintf(want, sizeof want, "/proc/%d/ns/pid", (int)sandbox_pid);
  return path != NULL && strcmp(path, want) == 0;
}

int oci_cri_join_sandbox(json_t *config, const char *sandbox_backend_id, bool share_pid,
                         pid_t sandbox_pid, tg_error **err) {
  if (sandbox_backend_id == NULL || !container_id_is_valid(sandbox_backend_id))
    return tg_error_set(err, 0, "internal error: joining a sandbox without a valid backend id; this is a tollgate bug");
  json_t *annotations = json_object_ensure_object(config, "annotations");
  json_object_set(annotations, CRI_TYPE, json_new_string("container"));
  json_object_set(annotations, CRI_SANDBOX_ID, json_new_string(sandbox_backend_id));
  if (!share_pid)
    return 0;
  json_t *pid = namespace_of(config, "pid");
  if (pid == NULL || sandbox_pid <= 0)
    return tg_error_set(err, 0, "internal error: the hardened config has no PID namespace to share with the pod's; this is a tollgate bug");
  /* A label inside the sandbox, never opened on the host: runsc's
   * startSubcontainer puts a container into the PID namespace of the
   * first container whose spec names the same path. */
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)sandbox_pid);
  json_object_set(pid, "path", json_new_string(path));
  return 0;
}

void oci_cri_join_root_pid(json_t *config) {
  json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = json_array_len(nss); i-- > 0;) {
    const char *t = json_string_value(json_object_get(json_array_get(nss, i), "type"));
    if (t != NULL && strcmp(t, "pid") == 0)
      json_array_remove(nss, i);
  }
}

void oci_cri_mark_sandbox(json_t *config) {
  json_t *annotations = json_object_ensure_object(config, "annotations");
  json_object_set(annotations, CRI_TYPE, json_new_string("sandbox"));
}

void cri_record_free(struct cri_record *rec) {
  free(rec->role);
  free(rec->pod);
  rec->role = rec->pod = NULL;
}

size_t oci_cri_drop_network_hooks(json_t *config) {
  static const char *const stages[] = {"prestart", "createRuntime"};
  json_t *hooks = json_object_get(config, "hooks");
  size_t dropped = 0;
  for (size_t k = 0; k < sizeof stages / sizeof stages[0]; k++) {
    json_t *list = json_object_get(hooks, stages[k]);
    for (size_t i = json_array_len(list); i-- > 0;) {
      const char *argv0 = json_string_value(json_array_get(json_object_get(json_array_get(list, i), "args"), 0));
      if (argv0 != NULL && strcmp(argv0, "libnetwork-setkey") == 0) {
        json_array_remove(list, i);
        dropped++;
      }
    }
    if (list != NULL && json_array_len(list) == 0)
      json_object_del(hooks, stages[k]);
  }
  return dropped;
}

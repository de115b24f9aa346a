/* The CRI pod policy: every container of a pod gets its own gVisor sandbox.
 *
 * containerd's CRI plugin marks each container of a pod with
 *   io.kubernetes.cri.container-type = "sandbox" (the pause container) or
 *                                      "container" (an app container)
 *   io.kubernetes.cri.sandbox-id     = the pause container's id
 * (CRI-O uses io.kubernetes.cri-o.ContainerType / io.kubernetes.cri-o.SandboxID).
 * runsc reads them to start a second container *inside* the pause
 * container's sandbox.  tollgate does not let it, because:
 *
 *   - tollgate's unit is the container: its state directory, backend root,
 *     hardened config, bridge, policy, budgets and audit log are per
 *     container.  A container joining another sandbox would run under the
 *     sandbox's (the pause container's) gVisor instance and its flags, and
 *     its lifecycle would be tied to a container tollgate tracks separately;
 *   - under containerd's runc.v2 shim, a container joined to a runsc
 *     sandbox reports the sandbox's pid, so the shim would wait on and
 *     signal the wrong process;
 *   - the sandbox id comes from the container manager, and a join is the
 *     one place where one container's spec can reach into another's
 *     isolation boundary.
 *
 * So the type and sandbox-id annotations are removed: without them runsc
 * (old and new) treats the container as the root of a new sandbox named
 * after the container itself.  What the container manager asked for is
 * kept, for logs and audit, as dev.tollgate.cri.role and
 * dev.tollgate.cri.pod.  Removing (rather than rewriting the type to
 * "sandbox") keeps a second pass over an effective config harmless: it
 * finds no CRI keys and cannot mistake an app container for a pause one.
 * Namespace paths in the spec (the pod's network namespace) are left as
 * they are: joining a network namespace is how a pod shares its network,
 * and under runsc --network=none it exposes nothing.
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

#include "shim/util.h"

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
  /* One sandbox per container: with no type runsc makes this the root
   * container of a new sandbox, and with no sandbox id there is nothing
   * left to join. */
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

void cri_record_free(struct cri_record *rec) {
  free(rec->role);
  free(rec->pod);
  rec->role = rec->pod = NULL;
}

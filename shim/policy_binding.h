/* Which workload may use which policy.
 *
 * A pod's dev.tollgate.policy annotation is written by whoever may create
 * pods; without a binding it could select the most permissive policy on
 * the node.  The host config binds policies to Kubernetes namespaces (the
 * pod's namespace, from the CRI annotations io.kubernetes.cri.sandbox-
 * namespace (containerd) or io.kubernetes.pod.namespace (CRI-O)) and to
 * tollgate runtime roots (--root), and names a default policy per
 * namespace:
 *
 *   "policy_bindings": {"orders": {"namespaces": ["shop"], "roots": ["/run/tollgate"]}},
 *   "namespace_policies": {"shop": "orders"}
 *
 * With no "policy_bindings" in the host config every policy may be
 * selected (the behaviour before bindings existed).
 */
#ifndef TOLLGATE_POLICY_BINDING_H
#define TOLLGATE_POLICY_BINDING_H

#include "shim/config.h"
#include "shim/error.h"
#include "shim/json.h"

/* Check the shapes of the two host config keys (NULL: absent); path names
 * the config file in messages.  Returns 0 or -1 with *err. */
int policy_binding_validate(const char *path, const json_t *bindings,
                            const json_t *namespace_policies, tg_error **err);

/* Decide the policy name for a workload in namespace ns (NULL: none) under
 * runtime root, which asked for requested (NULL: no annotation).  *out gets
 * the owned name to use (NULL: no policy).  A selection outside the binding
 * fails with a message saying what this namespace and root may use. */
int policy_binding_resolve(const struct host_config *cfg, const char *requested, const char *ns,
                           const char *root, char **out, tg_error **err);

#endif

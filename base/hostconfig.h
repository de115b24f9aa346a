/* The host configuration: /etc/tollgate/config.json, or --config FILE.
 *
 * containerd's runc.v2 shim cannot pass extra arguments to the runtime
 * binary, so every per-node setting lives here.  A missing default file
 * means built-in defaults; a missing file named with --config is an error.
 * Only the host config can loosen hardening (choose a weaker profile,
 * allow passthrough); a workload's annotations can only tighten.
 */
#ifndef TOLLGATE_CONFIG_H
#define TOLLGATE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/json.h"

#define TG_DEFAULT_CONFIG "/etc/tollgate/config.json"
#define TG_DEFAULT_ROOT "/run/tollgate"

struct host_config {
  char *runtime;          /* "runsc" (default) or "runc" */
  char *runtime_path;     /* backend binary; NULL = look up runtime in PATH */
  char **runtime_args;    /* extra global flags for the backend, NULL-terminated
                             (e.g. {"--platform=ptrace", NULL}) */
  char *platform;         /* runsc --platform value, or "auto" (the default):
                             ptrace, the faster here (docs/performance.md) */
  char *profile;          /* default hardening profile; "hardened" */
  bool allow_passthrough; /* may the passthrough profile be used at all */
  char *data_dir;         /* where profiles/, seccomp/, client/ live; NULL =
                             found next to the binary */
  char *policy_dir;       /* dev.tollgate.policy=NAME -> <policy_dir>/NAME.json;
                             default /etc/tollgate/policies */
  char *audit_dir;        /* default /var/log/tollgate/audit */
  char *audit_key;        /* HMAC key file for the audit chain, or NULL */
  char *approval_hook;    /* command run for approve-effect calls, or NULL */
  int approval_timeout_ms; /* default 60000 */
  char *approver_group;   /* group allowed to approve besides root, or NULL */
  size_t bridge_tmpfs_bytes; /* default 16 MiB */
  size_t request_max_bytes;  /* default 64 KiB */
  bool mcp_allow_approve; /* may `tollgate mcp`'s client list, approve and deny
                             parked calls (its pending_approvals/approve/deny
                             tools); default false */
  bool mcp_elicit_approvals; /* may `tollgate mcp` put parked calls to the
                                person at an MCP client that declares
                                elicitation (elicitation/create); default
                                false */
  int mcp_max_sessions;      /* sessions one `tollgate mcp` keeps open at
                                once (and programs it runs at once outside
                                them); default 16 */
  size_t audit_max_bytes;    /* each container's audit log quota; default
                                256 MiB; past it its calls get audit_full */
  int bridge_refused_per_second; /* the attempt budget per container; default
                                    200 (0 in the file: the default) */
  int bridge_backoff_ms;     /* the pause past it; default 1000 */
  char *sidecar_on_death;    /* "restart" (default) or "stop": what the
                                sidecar's supervisor does when the sidecar
                                dies (bridge/supervisor.h) */
  int sidecar_max_restarts;  /* restarts allowed within a minute before the
                                supervisor stops the container; default 3 */
  json_t *policy_bindings;    /* {"POLICY": {"namespaces": [], "roots": []}}, or
                                 NULL: any policy may be selected
                                 (base/hostconfig.h) */
  json_t *namespace_policies; /* {"NAMESPACE": "POLICY"}: the default, or NULL */
  char *policy_ceiling;       /* absolute path of a ceiling policy every
                                 container's policy must be within
                                 (governance/ceiling.h), or NULL */
  json_t *namespace_ceilings; /* {"NAMESPACE": "/abs/ceiling.json"}: a
                                 namespace's own ceiling (besides
                                 policy_ceiling), or NULL */
  char **trusted_join_callers; /* absolute executable paths whose word a
                                  join is taken on (shim/lifecycle/join.h, proof 3);
                                  NULL-terminated, NULL (the default): none */
  char **pod_network_roots; /* runtime roots (--root, absolute) whose CRI
                               pods run in the pod's network namespace with
                               egress refused (oci/podnet.h); NULL-terminated,
                               NULL (the default): none, each container gets
                               a loopback-only namespace */
  char *runc_version_floor;  /* "warn" (default: once per root and binary)
                                or "refuse": what create does with a runc
                                older than data file backend-floor.json */
  /* Host id ranges for user namespaces (shim/lifecycle/idrange.h, docs/hardening.md):
   * container k of the pool maps to host ids
   * [id_range_base + k*id_range_size, +id_range_size).  Claims live in
   * id_range_dir, shared by every tollgate root on the host. */
  long long id_range_base;   /* default 1<<28 (268435456); >= 100000 */
  long long id_range_size;   /* default 65536 */
  long long id_range_count;  /* default 4096; 0 disables the pool */
  char *id_range_dir;        /* default /run/tollgate-ids */
  long long max_id_ranges_per_container; /* ranges one container (or pod)
                                            may hold; default 1 */
  long long tool_uid;        /* host tools, hooks, MCP servers; default 65533 */
  long long tool_gid;        /* default 65533 */
  /* checkpoint / restore (shim/lifecycle/checkpoint_seal.h, docs/hardening.md). */
  char *checkpoint_key;      /* HMAC key sealing checkpoint images; made 0600
                                on first checkpoint; default
                                /var/lib/tollgate/checkpoint.key */
  long long memory_ceiling_mib; /* the highest memory limit a container may
                                   ask for (MiB): a config or update above
                                   it is refused, never lowered; 0 (the
                                   default): the host's physical memory */
  bool allow_unsealed_restore; /* restore an image with no valid seal, when
                                  the restored process is shown to run with
                                  the hardened credentials (runc only);
                                  default false */
};

/* Load path (NULL = TG_DEFAULT_CONFIG, where a missing file is fine).
 * Unknown keys and wrong types are errors that name the key and the file. */
int host_config_load(const char *path, struct host_config *cfg, tg_error **err);
void host_config_free(struct host_config *cfg);

/* Fill cfg with the built-in defaults (what a missing file means). */
void host_config_defaults(struct host_config *cfg);

/* The memory ceiling in bytes: memory_ceiling_mib, or the host's
 * physical memory when it is 0 (a limit above that bounds nothing). */
long long host_config_memory_ceiling(const struct host_config *cfg);

/* Resolve a data file shipped with tollgate ("profiles/hardened.json",
 * "client/tollgate.py", ...): cfg->data_dir if set, else the install tree
 * (<exe>/../share/tollgate) or the source tree (<exe>/../bundles, and for
 * client/ the build directory itself; sdk/NAME is the host SDK's package:
 * <exe>/../lib/tollgate/NAME or sdk/NAME in the source tree).  Returns an owned path or NULL with
 * *err listing where it looked. */
char *host_config_data_path(const struct host_config *cfg, const char *rel,
                            tg_error **err);

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

/* Policy ceilings: "policy_ceiling": "/etc/tollgate/ceiling.json" for every
 * container on the node, and "namespace_ceilings": {"shop": PATH} for a
 * Kubernetes namespace's; a policy must be within each that applies.  Only
 * the host config names a ceiling (never a bundle or an annotation).
 * Validate their shapes: absolute paths of existing regular files. */
int policy_ceiling_validate(const char *path, const struct host_config *cfg, tg_error **err);

/* The ceilings for a workload in ns (NULL: none): up to two borrowed paths
 * in out (the node's, then the namespace's); returns how many. */
size_t policy_ceilings_for(const struct host_config *cfg, const char *ns, const char *out[2]);

#endif

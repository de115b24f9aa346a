/* create's pod network (oci/podnet.h, docs/kubernetes.md "Reaching a
 * pod"): which container runs in its pod's network namespace, with egress
 * refused, instead of a loopback-only namespace of its own.
 *
 * The decision is tollgate's records', never the config's:
 *   - a pod's sandbox (pause) gets it when the host config lists this
 *     --root in pod_network_roots and the join rule proved the pause came
 *     from containerd's CRI (jn.kube_namespace: a containerd shim serving
 *     the k8s.io namespace).  Its namespace is the one containerd named
 *     (the CNI plugin's), which tollgate then makes refuse egress and
 *     records in its state ("pod_network");
 *   - a member gets it when its proven sandbox recorded it (whatever this
 *     root's setting says now), and checks the refusal is still in place;
 *   - anything else keeps the default. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "oci/podnet.h"
#include "shim/lifecycle/create_steps.h"
#include "shim/lifecycle/state.h"

static bool root_listed(const struct cli *cli) {
  char *const *roots = cli->config.pod_network_roots;
  for (size_t i = 0; cli->root != NULL && roots && roots[i]; i++)
    if (strcmp(roots[i], cli->root) == 0)
      return true;
  return false;
}

int create_read_pod_network(struct create_context *cx, tg_error **err) {
  /* Before the id range and hardening, which replaces the network
   * namespace the config names with a new one: the path containerd gave
   * the pause.  A pause proven to come from containerd's CRI (no owner, a
   * Kubernetes namespace) under a listed root is to get the pod network. */
  if (!root_listed(cx->cli))
    return 0;
  cx->podnet_asked = oci_podnet_netns_path(cx->config);
  cx->podnet_pause = cx->jn.owner == NULL && cx->jn.kube_namespace != NULL;
  if (oci_podnet_ports(cx->config, &cx->podnet_ports, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  return 0;
}

/* runsc: the sandbox uses the pod namespace's own sockets, so that its
 * filter table sees every packet (gVisor's netstack would send its own
 * frames past it).  Replaces --network=none, where it stands (last). */
static void runsc_network_host(json_t *state) {
  json_t *args = json_object_get(state, "backend_args");
  for (size_t i = 0; i < json_array_len(args); i++) {
    const char *a = json_string_value(json_array_get(args, i));
    if (a != NULL && strcmp(a, "--network=none") == 0) {
      json_free(args->u.array.items[i]);
      args->u.array.items[i] = json_new_string("--network=host");
    }
  }
}

static int sandbox_pod_network(struct create_context *cx, tg_error **err) {
  if (cx->podnet_asked == NULL)
    return tg_error_set(err, 0, "this root gives pods their network (host config pod_network_roots), but the pod sandbox's config names no network namespace: give the pod a network (not hostNetwork), or use a RuntimeClass whose handler root is not listed");
  cleanup_close int nsfd = -1;
  cleanup_free char *listing = NULL;
  if (oci_podnet_open(cx->podnet_asked, &nsfd, err) < 0 ||
      oci_podnet_refuse_egress(nsfd, &cx->podnet_ports, &listing, err) < 0)
    return -1;
  oci_podnet_apply(cx->config, cx->podnet_asked);
  json_t *rec = json_new_object();
  json_object_set(rec, "netns", json_new_string(cx->podnet_asked));
  json_object_set(rec, "refusal", json_new_string(listing));
  json_object_set(cx->state, "pod_network", rec);
  cx->podnet = true;
  return 0;
}

static int member_pod_network(struct create_context *cx, bool runc, tg_error **err) {
  json_t *owner = NULL;
  char *dir = NULL;
  if (state_load(cx->cli->root, cx->jn.owner, &owner, &dir, err) < 0)
    return tg_error_wrap(err, "the pod sandbox %s", cx->jn.owner);
  free(dir);
  const json_t *rec = json_object_get(owner, "pod_network");
  const char *refusal = json_string_value(json_object_get(rec, "refusal"));
  if (rec == NULL || refusal == NULL) {
    json_free(owner);
    return 0;
  }
  /* The namespace the member enters: its sandbox's (runc joins the
   * pause's, runsc starts inside the pause's sandbox). */
  cleanup_free char *ns = xasprintf("/proc/%d/ns/net", (int)cx->jn.owner_pid);
  cleanup_close int nsfd = -1;
  int r = oci_podnet_open(ns, &nsfd, err);
  if (r == 0)
    r = oci_podnet_check(nsfd, refusal, err);
  if (r == 0) {
    if (runc)
      oci_podnet_apply(cx->config, ns);
    json_object_set(cx->state, "pod_network", json_copy(rec));
    cx->podnet = true;
  }
  json_free(owner);
  return r;
}

int create_pod_network(struct create_context *cx, tg_error **err) {
  if (cx->passthrough)
    return 0;
  bool runc = strcmp(cx->ho.backend ?: "", "runc") == 0;
  const char *role = json_string_value(json_get_path(cx->state, "cri.role"));
  int r = 0;
  if (cx->jn.pod && cx->jn.owner != NULL)
    r = member_pod_network(cx, runc, err);
  else if (cx->podnet_pause && role != NULL && strcmp(role, "sandbox") == 0)
    r = sandbox_pod_network(cx, err);
  if (r < 0)
    return tg_error_wrap(err, "bundle %s: the pod network", cx->bundle);
  if (cx->podnet && !runc)
    runsc_network_host(cx->state);
  return 0;
}

int create_check_pod_network(struct create_context *cx, tg_error **err) {
  /* After the backend's create, before the container's process runs:
   * the namespace it is in still refuses egress as recorded. */
  const char *refusal = json_string_value(json_get_path(cx->state, "pod_network.refusal"));
  /* runsc: a member's init is its waiter (in the host's namespace): the
   * sandbox process is its owner's. */
  pid_t in_ns = cx->joined ? cx->jn.owner_pid : cx->out->init_pid;
  cleanup_free char *ns = xasprintf("/proc/%d/ns/net", (int)in_ns);
  cleanup_close int nsfd = -1;
  if (refusal == NULL || oci_podnet_open(ns, &nsfd, err) < 0 || oci_podnet_check(nsfd, refusal, err) < 0)
    return tg_error_wrap(err, "the pod network");
  return 0;
}

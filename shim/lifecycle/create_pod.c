/* create's pods and id ranges: whose namespaces the container joins (the
 * join rule, shim/lifecycle/join.h), the host id range it claims or shares
 * with its pod, and its pod's (CRI's) policy (create_steps.h). */
#include "shim/lifecycle/create_steps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "oci/cri.h"
#include "shim/lifecycle/cgroup_place.h"
#include "shim/lifecycle/idrange.h"
#include "shim/lifecycle/state.h"

int create_decide_join(struct create_context *cx, tg_error **err) {
  /* Whose namespaces it joins, by the join rule (shim/lifecycle/join.h): decided
   * from tollgate's records and the caller, before the policy (whose
   * Kubernetes namespace only a proven CRI container has). */
  struct join_caller caller;
  join_caller_self(&caller);
  struct join_request jr = {.id = cx->id, .config = cx->config, .state = cx->state, .vouched = cx->req->join, .caller = &caller};
  int jrc = join_decide(cx->cli, &jr, &cx->jn, err);
  join_caller_record(&caller, cx->state);
  join_caller_free(&caller);
  if (jrc < 0)
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  return 0;
}

/* A runc pod member shares the range of its pod's sandbox container (pid
 * pod_pid, accepted by the join rule, shim/lifecycle/join.h): one user namespace per pod,
 * which owns the ipc/uts/pid namespaces the member joins.  Its claim file
 * gets this container's line too, so the range outlives the pause until
 * the pod's last container is deleted.  0 with *share unset when the
 * sandbox has no range (created without a pool): the member then keeps
 * the host user namespace as its sandbox does. */
static int share_pod_range(struct cli *cli, const struct id_pool *pool, const char *pod, pid_t pod_pid,
                           const char *dir, json_t *state, struct shared_range *share, tg_error **err) {
  cleanup_json json_t *pst = NULL;
  cleanup_free char *pdir = NULL;
  tg_error *e = NULL;
  if (state_load(cli->root, pod, &pst, &pdir, &e) < 0) {
    tg_error_free(&e);
    return 0;
  }
  const json_t *r = json_object_get(pst, "id_range");
  const json_t *one = json_array_get(json_object_get(r, "ranges"), 0);
  long long first = 0, size = 0;
  if (one == NULL || !json_integer_value(json_object_get(one, "host_first"), &first) ||
      !json_integer_value(json_object_get(one, "size"), &size))
    return 0;
  const char *pdir_pool = json_string_value(json_object_get(r, "pool"));
  unsigned long long f = (unsigned long long)first;
  if (pdir_pool == NULL || strcmp(pdir_pool, pool->dir) != 0 || first < 0 || f < pool->base ||
      (unsigned long long)size != pool->size || (f - pool->base) % pool->size != 0 ||
      json_array_len(json_object_get(r, "ranges")) != 1)
    return tg_error_set(err, 0, "the pod's sandbox container %s holds host ids that are not one range of this "
                        "host's pool %s: recreate the pod", pod, pool->dir);
  if (idrange_share(pool, dir, pdir, (f - pool->base) / pool->size, err) < 0)
    return -1;
  json_t *mine = json_copy(r);
  json_object_set(mine, "pod", json_new_string(pod));
  json_object_set(state, "id_range", mine);
  share->owner_pid = pod_pid;
  share->first = f;
  share->size = pool->size;
  return 0;
}

/* Claim the container's host id range before hardening: the slots its
 * own user namespace mappings touch, or (runc without mappings) a free
 * one, which oci_harden() then maps.  Recorded in state as "id_range";
 * freed by delete (idrange_release_owner). */
static int claim_id_range(struct cli *cli, const json_t *config, const char *dir,
                          json_t *state, struct harden_options *ho, const char *pod, pid_t pod_pid,
                          struct shared_range *share, tg_error **err) {
  struct id_pool pool = idrange_pool(&cli->config);
  if (pool.count == 0)
    return 0;
  ho->id_pool_first = pool.base;
  ho->id_pool_end = pool.base + pool.size * pool.count;
  cleanup_free unsigned long long *slots = NULL;
  size_t n = 0;
  bool maps = false;
  oci_userns_slots(config, pool.base, pool.size, pool.count, &slots, &n, &maps);
  bool runc = strcmp(json_string_value(json_object_get(state, "backend")) ?: "", "runc") == 0;
  if (n == 0 && !maps && runc && pod_pid > 0 && pod != NULL) {
    if (share_pod_range(cli, &pool, pod, pod_pid, dir, state, share, err) < 0)
      return -1;
    if (share->size == 0)
      return 0;
    if (chmod(dir, 0711) < 0)
      return tg_error_set(err, errno, "chmod %s", dir);
    return 0;
  }
  if (n == 0 && (maps || !runc || oci_joins_a_namespace(config)))
    return 0; /* nothing to claim (out-of-pool mappings are refused by oci_harden) */
  unsigned long long slot = 0;
  if (idrange_claim(&pool, dir, slots, n, &slot, err) < 0)
    return -1;
  json_t *r = json_new_object();
  json_t *list = json_new_array();
  for (size_t i = 0; i < (n ? n : 1); i++) {
    unsigned long long k = n ? slots[i] : slot;
    json_t *one = json_new_object();
    json_object_set(one, "host_first", json_new_integer((long long)(pool.base + k * pool.size)));
    json_object_set(one, "size", json_new_integer((long long)pool.size));
    json_array_append(list, one);
  }
  json_object_set(r, "ranges", list);
  json_object_set(r, "pool", json_new_string(pool.dir));
  json_object_set(state, "id_range", r);
  if (n == 0) {
    ho->id_range_first = pool.base + slot * pool.size;
    ho->id_range_size = pool.size;
  }
  /* runc mounts, and runsc's gofer opens mounts, as the container's root:
   * an unprivileged host id of the range.  It must be able to walk into
   * the state directory to reach the bridge area (its files stay 0600
   * root, and it cannot list it). */
  if (chmod(dir, 0711) < 0)
    return tg_error_set(err, errno, "chmod %s", dir);
  return 0;
}

int create_claim_id_range(struct create_context *cx, tg_error **err) {
  /* runc, the pause of a pod given the pod network: the host's user
   * namespace owns that network namespace, and runc joins a container's
   * user namespace before its other namespaces (exec does too), after
   * which a namespace the host owns is out of reach.  So the pod keeps
   * the host's user namespace, as a joiner of a container without one
   * does; its members then claim none either (docs/kubernetes.md). */
  if (cx->podnet_pause && strcmp(json_string_value(json_object_get(cx->state, "backend")) ?: "", "runc") == 0)
    return 0;
  if (claim_id_range(cx->cli, cx->config, cx->u->dir, cx->state, &cx->ho, cx->jn.owner, cx->jn.owner_pid,
                     &cx->share, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  return 0;
}

/* After hardening: the range given back when nothing maps it, or the pod's
 * user namespace joined when it is shared. */
int create_settle_id_range(struct create_context *cx, tg_error **err) {
  struct cli *cli = cx->cli;
  json_t *config = cx->config;
  /* passthrough maps nothing: its range would be held for no one. */
  if ((cx->ho.id_range_size != 0 && json_get_path(config, "linux.uidMappings") == NULL) ||
      (cx->share.size != 0 && cx->passthrough)) {
    idrange_release_owner(&cli->config, cx->u->dir);
    json_object_del(cx->state, "id_range");
  } else if (cx->share.size != 0 &&
             oci_userns_join_pod(config, cx->share.owner_pid, cx->share.first, cx->share.size, err) < 0) {
    return tg_error_wrap(err, "bundle %s: config.json", cx->bundle);
  }
  return 0;
}

/* The pod's policy (oci_apply_cri_policy), and the container placed in its
 * pod: its sandbox's network namespace under runc, its sandbox under runsc;
 * the join and the pod recorded in state. */
int create_join_pod(struct create_context *cx, tg_error **err) {
  json_t *config = cx->config;
  json_t *state = cx->state;
  const struct join *jn = &cx->jn;
  const char *bundle = cx->bundle;
  bool passthrough = cx->passthrough;
  struct cri_record cri = {0};
  if (!passthrough && oci_apply_cri_policy(config, &cri, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  /* passthrough hands the manager's annotations on as they are: only read
   * them, and checks nothing (malformed ones are the bare backend's). */
  tg_error *ignored = NULL;
  if (passthrough && oci_cri_read(config, &cri, &ignored) < 0)
    tg_error_free(&ignored);
  /* runc: the pod's loopback is its sandbox's network namespace (checked
   * loopback-only after the backend's create, like any other).  runsc:
   * the pause container is the root of the pod's sandbox and an app
   * container starts inside it (oci/cri.c says why). */
  bool runsc = cx->ho.backend != NULL && strcmp(cx->ho.backend, "runsc") == 0;
  bool joined = false;
  if (cx->pod_pid > 0 && !passthrough && !runsc &&
      oci_cri_join_pod_network(config, cx->pod_pid, err) < 0) {
    cri_record_free(&cri);
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  /* A config naming itself as its sandbox (Podman's infra container) is
   * its pod's sandbox. */
  if (cri.role != NULL && cri.pod != NULL && strcmp(cri.pod, cx->id) == 0) {
    free(cri.role);
    cri.role = xstrdup("sandbox");
  }
  if (runsc && !passthrough) {
    if (cri.role != NULL && strcmp(cri.role, "sandbox") == 0) {
      oci_cri_mark_sandbox(config);
      /* The sandbox in the pod's cgroup, bounded by what the kubelet
       * sized for the pod, when there is one (cgroup_place.h). */
      cleanup_free char *pod_cgroup = cgroup_place_sandbox(config);
      if (pod_cgroup != NULL)
        json_object_set(state, "sandbox_cgroup", json_new_string(pod_cgroup));
    } else if (jn->owner != NULL) {
      /* A pod member, and as well any other accepted join (Podman's
       * --pid=container:): gVisor shares a namespace only inside one
       * sandbox, so the joiner starts in its owner's. */
      if (oci_cri_join_sandbox(config, jn->owner_backend_id, jn->share_pid && jn->pod, jn->owner_pid, err) < 0) {
        cri_record_free(&cri);
        return tg_error_wrap(err, "bundle %s: config.json", bundle);
      }
      if (jn->share_pid && !jn->pod)
        oci_cri_join_root_pid(config);
      /* Docker's network hook would move the joiner's veth into the
       * owner's sandbox, which has its eth0 already, and fail the create
       * ("renaming interface ... to eth0: file exists").  The joiner has
       * no network of its own to set up: it has the sandbox's (lo only). */
      if (!jn->pod)
        oci_cri_drop_network_hooks(config);
      joined = true;
    }
  } else if (runsc && oci_cri_is_pod_member(&cri)) {
    /* passthrough: runsc itself starts a pod member inside the sandbox
     * its annotations name (the config goes on as given, no join is
     * checked), and reports that sandbox's pid and gives the container
     * the stdio of whoever runs `runsc start`, as for a hardened member.
     * So it needs its waiter as much: without one containerd's shim
     * waits on the sandbox, never sees the container exit, loses its
     * output, and its kill and removal hang. */
    joined = true;
  }
  if (!passthrough)
    join_record(jn, state);
  if (cri.role != NULL) {
    json_t *pod = json_new_object();
    json_object_set(pod, "role", json_new_string(cri.role));
    json_object_set(pod, "sandbox", cri.pod ? json_new_string(cri.pod) : json_new_null());
    if (joined)
      json_object_set(pod, "joined", json_new_string(passthrough ? cri.pod : jn->owner_backend_id));
    json_object_set(state, "cri", pod);
  }
  cri_record_free(&cri);
  cx->joined = joined;
  return 0;
}

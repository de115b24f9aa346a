/* How tollgate treats the CRI annotations that containerd's CRI plugin
 * (and CRI-O) put on each container of a pod: under runsc one gVisor
 * sandbox per pod, which the app containers join only when create has
 * verified the pause container they name; the pause container is
 * hardened like any other.  The reasons are in oci/cri.c and
 * docs/kubernetes.md ("Pods").  Called by create right after oci_harden(). */
#ifndef TOLLGATE_OCI_CRI_H
#define TOLLGATE_OCI_CRI_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"

/* What the container manager asked for: role "sandbox" (the pause
 * container) or "container", and the pod's sandbox id (NULL if none).
 * Both NULL for a config without CRI annotations.  Owned. */
struct cri_record {
  char *role;
  char *pod;
};

/* Apply tollgate's pod policy to config in place: remove
 * io.kubernetes.cri.container-type / io.kubernetes.cri.sandbox-id (and
 * CRI-O's ContainerType / SandboxID), so no backend joins a sandbox the
 * container manager named (create then writes back only what it verified:
 * oci_cri_join_sandbox, oci_cri_mark_sandbox), and return what was asked in *rec (the caller
 * records it in the state directory; nothing is added to the config).
 * Touches nothing outside "annotations".  0, or -1 with *err for an
 * unknown container type, a sandbox id that is not id-shaped, two
 * managers' annotations that disagree, or annotations that are not an
 * object of strings. */
int oci_apply_cri_policy(json_t *config, struct cri_record *rec, tg_error **err);

/* The same reading, changing nothing (create asks before hardening which
 * pod a container belongs to).  Same errors. */
int oci_cri_read(const json_t *config, struct cri_record *rec, tg_error **err);

/* An app container ("container") that names its pod's sandbox. */
bool oci_cri_is_pod_member(const struct cri_record *rec);

/* runc: point the (hardened, new) network namespace of an app container
 * at its pod sandbox's: /proc/<sandbox_pid>/ns/net, the loopback-only
 * namespace tollgate made for the pause container.  Containers of a pod
 * then share 127.0.0.1, as Kubernetes promises; create still checks that
 * namespace holds nothing but lo before the process starts.  Called after
 * oci_harden() (whose own check would count a joined path as a loosening:
 * it is the pod's, which is what the pod asked for).  0 or -1 with *err. */
int oci_cri_join_pod_network(json_t *config, pid_t sandbox_pid, tg_error **err);

/* Whether config (the user's, before hardening) asks for its pod's PID
 * namespace: a "pid" namespace whose path is /proc/<sandbox_pid>/ns/pid,
 * which is how containerd says shareProcessNamespace. */
bool oci_cri_shares_pod_pid(const json_t *config, pid_t sandbox_pid);

/* runsc: make the (hardened) config of an app container start inside its
 * pod's gVisor sandbox: io.kubernetes.cri.container-type=container and
 * io.kubernetes.cri.sandbox-id=sandbox_backend_id, the id runsc knows the
 * verified pause container by.  With share_pid, the "pid" namespace gets
 * the path /proc/<sandbox_pid>/ns/pid: runsc never opens it for a
 * container inside a sandbox, it puts containers whose paths are equal in
 * one PID namespace of the sandbox's kernel.  Only for a pause container
 * create verified (the join rule, shim/lifecycle/join.h).  0 or -1
 * with *err. */
int oci_cri_join_sandbox(json_t *config, const char *sandbox_backend_id, bool share_pid,
                         pid_t sandbox_pid, tg_error **err);

/* runsc: a container joining a sandbox's root container's PID namespace
 * (`--pid=container:ROOT`, accepted by the join rule) has no "pid"
 * namespace entry: runsc puts a container without one in its sandbox
 * kernel's root PID namespace, where the root container's init runs, and
 * a container with one (with or without a path) anywhere else.  Call after
 * oci_cri_join_sandbox(); the host never sees this entry for a container
 * inside a sandbox. */
void oci_cri_join_root_pid(json_t *config);

/* runsc: the pause container is the root of its pod's sandbox:
 * io.kubernetes.cri.container-type=sandbox (and no sandbox id). */
void oci_cri_mark_sandbox(json_t *config);

/* runsc: a container started inside another's sandbox (a Docker
 * `--pid=container:` or `--ipc=container:` joiner) has no network of its
 * own: the hooks a container manager added to set one up would act on the
 * owner's sandbox process, whose namespace already holds the owner's
 * interface.  Removes Docker's (a prestart or createRuntime hook whose
 * argv[0] is libnetwork-setkey, dockerd itself: the one that moves the endpoint's
 * veth in and renames it eth0); every other hook stays.  Returns how many
 * were removed. */
size_t oci_cri_drop_network_hooks(json_t *config);

void cri_record_free(struct cri_record *rec);

#endif

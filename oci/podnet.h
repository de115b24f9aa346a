/* The pod network with egress refused (docs/kubernetes.md "Reaching a
 * pod"): a host config that names a runtime root in pod_network_roots lets
 * the containers of a CRI pod under that root run in the pod's own network
 * namespace (the one the CNI plugin set up), so that Services, port-forward
 * and probes reach them; tollgate first makes that namespace refuse every
 * new outbound connection.
 *
 * The refusal is the filter table of iptables and ip6tables in the pod's
 * network namespace, loaded by tollgate as root from the host: every packet
 * out is dropped but those on lo and the replies of a TCP connection that
 * came in to one of the declared ports (pod annotation dev.tollgate.ports).
 * A container cannot change it: the namespace belongs to the host's user
 * namespace (containerd made it) and no container holds CAP_NET_ADMIN
 * there; under runsc the sandbox uses the namespace's own sockets
 * (--network=host inside it), so the same table sees its traffic.
 *
 * Which container gets the pod network is create's decision from what it
 * recorded (shim/lifecycle/create_podnet.c), never this config's word. */
#ifndef TOLLGATE_OCI_PODNET_H
#define TOLLGATE_OCI_PODNET_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/json.h"

#define PODNET_PORTS_ANNOTATION "dev.tollgate.ports"
#define PODNET_MAX_PORTS 15 /* what iptables' multiport takes */

struct podnet_ports {
  unsigned short port[PODNET_MAX_PORTS];
  size_t n;
};

/* The declared ports: dev.tollgate.ports, "8080" or "8080,9090" (at most
 * PODNET_MAX_PORTS, each 1-65535).  None (n = 0) when the annotation is
 * absent: then nothing from outside is answered.  0, or -1 with *err
 * naming the bad value and the fix. */
int oci_podnet_ports(const json_t *config, struct podnet_ports *out, tg_error **err);

/* The network namespace path the config asks for, or NULL.  Owned. */
char *oci_podnet_netns_path(const json_t *config);

/* Open path as a network namespace that is not the host's (this
 * process's): *fd, 0; or -1 with *err. */
int oci_podnet_open(const char *path, int *fd, tg_error **err);

/* Load the refusal into the namespace nsfd (replacing its filter tables
 * whole, atomically per family), then read it back: 0 with *listing (owned,
 * what `iptables -S; ip6tables -S` print) when it is what was loaded, or
 * -1 with *err. */
int oci_podnet_refuse_egress(int nsfd, const struct podnet_ports *ports, char **listing, tg_error **err);

/* Read the namespace's filter tables again: 0 when they are still want
 * (a listing from oci_podnet_refuse_egress), -1 with *err otherwise. */
int oci_podnet_check(int nsfd, const char *want, tg_error **err);

/* Point config's network namespace at path. */
void oci_podnet_apply(json_t *config, const char *path);

#endif

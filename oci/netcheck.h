/* Network confinement check for backends that use a network namespace
 * (runc): before the container's process starts, list the interfaces in
 * its network namespace over rtnetlink (libmnl) and refuse anything but
 * "lo".  runsc runs with --network=none and needs no check. */
#ifndef TOLLGATE_OCI_NETCHECK_H
#define TOLLGATE_OCI_NETCHECK_H

#include <sys/types.h>

#include "base/error.h"

/* 0 when the network namespace of pid holds only the loopback interface;
 * -1 with *err naming each other interface found. */
int oci_check_netns_loopback_only(pid_t pid, tg_error **err);

/* For a network namespace that was created for this container alone
 * (never a joined one): delete every interface but lo (a client such as
 * Docker moves its veth in from a prestart hook), then check as above.
 * *removed gets the names removed, comma separated (owned), or NULL when
 * there were none.  0, or -1 with *err (the host's namespace, an
 * interface that could not be removed). */
int oci_netns_strip_to_loopback(pid_t pid, char **removed, tg_error **err);

#endif

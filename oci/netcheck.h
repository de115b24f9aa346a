/* Network confinement check for backends that use a network namespace
 * (runc): before the container's process starts, list the interfaces in
 * its network namespace over rtnetlink (libmnl) and refuse anything but
 * "lo".  runsc runs with --network=none and needs no check. */
#ifndef TOLLGATE_OCI_NETCHECK_H
#define TOLLGATE_OCI_NETCHECK_H

#include <sys/types.h>

#include "shim/error.h"

/* 0 when the network namespace of pid holds only the loopback interface;
 * -1 with *err naming each other interface found. */
int oci_check_netns_loopback_only(pid_t pid, tg_error **err);

#endif

/* Placeholder until the hardening issue lands (it must fail closed then). */
#include "oci/netcheck.h"

int oci_check_netns_loopback_only(pid_t pid, tg_error **err) {
  (void)pid; (void)err;
  return 0;
}

/* How tollgate treats the CRI annotations that containerd's CRI plugin
 * puts on each container of a pod (io.kubernetes.cri.container-type,
 * io.kubernetes.cri.sandbox-id).  Decided and documented by the
 * containerd/Kubernetes issue; called by create right after oci_harden(). */
#ifndef TOLLGATE_OCI_CRI_H
#define TOLLGATE_OCI_CRI_H

#include "shim/error.h"
#include "shim/json.h"

/* Apply tollgate's pod policy to config in place.  0 or -1 with *err. */
int oci_apply_cri_policy(json_t *config, tg_error **err);

#endif

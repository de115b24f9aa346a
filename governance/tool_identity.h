/* The host identity that tools, approval hooks and MCP servers run as
 * (host config tool_uid/tool_gid, docs/hardening.md "Identities"): one no
 * container has. */
#ifndef TOLLGATE_TOOL_IDENTITY_H
#define TOLLGATE_TOOL_IDENTITY_H

#include <sys/types.h>

/* The default: not 65534, which gVisor's sandbox processes and many host
 * workloads run as. */
#define SANDBOX_UID 65533
#define SANDBOX_GID 65533

/* Set the identity every later sandbox_run/sandbox_spawn child runs as
 * (main calls it once from the host config; the sidecar is a fork). */
void sandbox_set_identity(uid_t uid, gid_t gid);
uid_t sandbox_uid(void);
gid_t sandbox_gid(void);

#endif

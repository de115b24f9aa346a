/* The tools' host identity (tool_identity.h): set once by main from the
 * host config, read by every tool, hook and MCP server spawn. */
#include "governance/tool_identity.h"

/* The identity tools run as (host config tool_uid/tool_gid): one that no
 * container has, so that a tool shares no uid with any container's
 * processes, gVisor's sandbox (65534) or another tenant's workload. */
static uid_t tool_uid = SANDBOX_UID;
static gid_t tool_gid = SANDBOX_GID;

void sandbox_set_identity(uid_t uid, gid_t gid) {
  tool_uid = uid;
  tool_gid = gid;
}

uid_t sandbox_uid(void) { return tool_uid; }
gid_t sandbox_gid(void) { return tool_gid; }

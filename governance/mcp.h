/* The mcp backend: an MCP server spawned over stdio (JSON-RPC 2.0, one
 * message per line).  tollgate sends initialize, notifications/initialized
 * and tools/list at start, then tools/call per allowed call. */
#ifndef TOLLGATE_MCP_H
#define TOLLGATE_MCP_H

#include "governance/policy.h"
#include "governance/tools.h"
#include "base/error.h"
#include "base/json.h"

struct mcp_client;

/* Spawn the server (sandboxed like exec tools), initialize it and list its
 * tools.  *out is owned by the caller (mcp_stop). */
int mcp_start(const struct mcp_server_config *cfg, struct mcp_client **out, tg_error **err);

/* The server's tools/list entry for name ({"name", "description",
 * "inputSchema"}), borrowed; NULL when it has no such tool. */
const json_t *mcp_find_tool(const struct mcp_client *c, const char *name);

/* A comma-separated list of the server's tool names (owned). */
char *mcp_tool_names(const struct mcp_client *c);

/* tools/call.  Thread-safe (calls to one server are serialized).  An
 * isError result becomes tool_failed with the result's text. */
void mcp_call(struct mcp_client *c, const char *remote, const json_t *args, int timeout_ms,
              struct tool_result *r);

/* Close its stdin, give it a moment, then kill it. */
void mcp_stop(struct mcp_client *c);

#endif

/* One function per CLI verb, each in shim/cli/cmd_<verb>.c (after crun's
 * src/<verb>.c).  A verb parses its own flags and calls into oci/, bridge/
 * and governance/; the logic lives there, not here.
 *
 * argv[0] is the verb itself.  A verb returns the process exit status
 * (>= 0), or -1 with *err set, which main() logs runc-style and turns
 * into exit status 1.
 */
#ifndef TOLLGATE_COMMANDS_H
#define TOLLGATE_COMMANDS_H

#include <stdbool.h>

#include "base/error.h"
#include "shim/context.h"

typedef int (*cmd_fn)(struct cli *cli, int argc, char **argv, tg_error **err);

/* runc's surface (shim/, the CLI issue) */
int cmd_create(struct cli *, int, char **, tg_error **);
int cmd_start(struct cli *, int, char **, tg_error **);
int cmd_run(struct cli *, int, char **, tg_error **);
int cmd_state(struct cli *, int, char **, tg_error **);
int cmd_kill(struct cli *, int, char **, tg_error **);
int cmd_delete(struct cli *, int, char **, tg_error **);
int cmd_exec(struct cli *, int, char **, tg_error **);
int cmd_ps(struct cli *, int, char **, tg_error **);
int cmd_list(struct cli *, int, char **, tg_error **);
int cmd_gc(struct cli *, int, char **, tg_error **);     /* gc [--all-roots] */
int cmd_lifetime(struct cli *, int, char **, tg_error **); /* lifetime [FLAGS] ID */
int cmd_pause(struct cli *, int, char **, tg_error **);
int cmd_resume(struct cli *, int, char **, tg_error **);
int cmd_checkpoint(struct cli *, int, char **, tg_error **);
int cmd_restore(struct cli *, int, char **, tg_error **);
int cmd_update(struct cli *, int, char **, tg_error **);
int cmd_features(struct cli *, int, char **, tg_error **);
int cmd_version(struct cli *, int, char **, tg_error **);

/* hardening (shim/cli/cmd_spec.c, the hardening issue) */
int cmd_spec(struct cli *, int, char **, tg_error **);

/* governance (the governance issue) */
int cmd_policy(struct cli *, int, char **, tg_error **);  /* policy check FILE */
int cmd_calls(struct cli *, int, char **, tg_error **);   /* calls ID */
int cmd_pending(struct cli *, int, char **, tg_error **); /* pending [ID] */
int cmd_approve(struct cli *, int, char **, tg_error **); /* approve ID CALL */
int cmd_deny(struct cli *, int, char **, tg_error **);    /* deny ID CALL */
int cmd_audit(struct cli *, int, char **, tg_error **);   /* audit verify|show */
int cmd_tool(struct cli *, int, char **, tg_error **);    /* tool add ID FILE */

/* agents (shim/cli/cmd_mcp.c): exec the host SDK's MCP server */
int cmd_mcp(struct cli *, int, char **, tg_error **);
int cmd_serve(struct cli *, int, char **, tg_error **);   /* serve [FLAGS]: the e2b-compatible service */

#endif

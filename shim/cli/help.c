#include "shim/cli/help.h"

#include <string.h>

static const struct verb verbs[] = {
    {"create", cmd_create, true,
     "create [--bundle DIR] [--pid-file FILE] [--console-socket PATH] "
     "[--no-pivot] [--no-new-keyring] [--preserve-fds N] [--policy FILE] [--join OWNER]\n"
     "       [--owner-pid PID] [--deadline SECONDS|RFC3339] ID",
     "harden the bundle's config.json and create the container"},
    {"start", cmd_start, false, "start ID", "start a created container"},
    {"run", cmd_run, true,
     "run [--bundle DIR] [--pid-file FILE] [--console-socket PATH] "
     "[--policy FILE] [--join OWNER] [--keep] [--detach]\n"
     "       [--owner-pid PID] [--deadline SECONDS|RFC3339] ID",
     "create + start + wait; exits with the container's status"},
    {"state", cmd_state, false, "state ID",
     "print the container's state as JSON"},
    {"kill", cmd_kill, false, "kill [--all] ID [SIGNAL]",
     "send a signal (name or number, default TERM)"},
    {"delete", cmd_delete, false, "delete [--force] ID",
     "delete the container, its bridge and its state"},
    {"exec", cmd_exec, false,
     "exec --process FILE [--detach] [--pid-file FILE] [--console-socket "
     "PATH] ID\n       tollgate exec [--tty] [--detach] [--cwd DIR] "
     "[--env K=V]... [--user UID[:GID]] [--cap CAP]... ID CMD...",
     "run another process in the container"},
    {"ps", cmd_ps, false, "ps [--format table|json] ID [PS-ARGS...]",
     "list the container's processes"},
    {"list", cmd_list, false, "list [--format table|json] [--quiet|-q] [--all-roots]",
     "list tollgate's containers (of this root, or of every registered root)"},
    {"gc", cmd_gc, false, "gc [--all-roots]",
     "delete the containers whose owner is gone or whose deadline passed"},
    {"lifetime", cmd_lifetime, false, "lifetime [--owner-pid PID|none] [--deadline SECONDS|RFC3339|none] ID",
     "show or change a container's owner and deadline"},
    {"pause", cmd_pause, false, "pause ID", "freeze every process"},
    {"resume", cmd_resume, false, "resume ID", "thaw a paused container"},
    {"checkpoint", cmd_checkpoint, false,
     "checkpoint --image-path DIR [--work-path DIR] [--leave-running] "
     "[criu flags] ID",
     "save the container to an image (runsc, or runc with criu), sealed "
     "with this host's checkpoint key"},
    {"restore", cmd_restore, false,
     "restore --image-path DIR --detach [--bundle DIR] [--pid-file FILE] "
     "[--console-socket PATH] [--owner-pid PID] [--deadline SECONDS|RFC3339] ID",
     "create the container from a checkpoint tollgate sealed on this host "
     "with the same credentials, hardened and governed anew"},
    {"update", cmd_update, false,
     "update [--resources FILE|-] [--memory N] [--pids-limit N] "
     "[--cpu-quota N] [--cpu-period N] [--cpu-shares N] ID",
     "change resource limits (runc only)"},
    {"features", cmd_features, false, "features",
     "print the runtime-spec features document"},
    {"spec", cmd_spec, true, "spec [--bundle DIR] [--rootfs DIR] [--force]",
     "write a hardened config.json"},
    {"policy", cmd_policy, true, "policy check FILE | policy check --within CEILING POLICY",
     "check a policy file, or that a policy allows nothing its ceiling does not"},
    {"calls", cmd_calls, true, "calls ID", "list a container's tool calls"},
    {"pending", cmd_pending, true, "pending [ID]",
     "list calls waiting for approval"},
    {"approve", cmd_approve, true, "approve ID CALL", "approve a call"},
    {"deny", cmd_deny, true, "deny ID CALL", "deny a call"},
    {"tool", cmd_tool, true, "tool add ID FILE",
     "add one agent-written tool (FILE: {\"NAME\": entry with source_sha256}) to a running "
     "container's gate, its budgets untouched"},
    {"audit", cmd_audit, true, "audit verify|show ...",
     "verify or show the audit log"},
    {"mcp", cmd_mcp, true,
     "mcp [--policy FILE] [--rootfs DIR] [--tools FILE.py]... [--audit-dir DIR] [--timeout S] "
     "[--max-sessions N] [--http HOST:PORT]",
     "serve governed code execution to an MCP client on stdio or HTTP (docs/mcp.md)"},
    {"serve", cmd_serve, true,
     "serve --tenants FILE [--listen HOST:PORT] [--socket PATH] [--state DIR] [--template NAME=ROOTFS]...",
     "a sandbox service that the e2b SDKs use, with tenants, lifetimes and governance (docs/serve.md)"},
    {"version", cmd_version, false, "version", "print the version"},
    {"help", NULL, false, "help [COMMAND]", "print this help"},
};

const struct verb *help_find_verb(const char *name) {
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (strcmp(verbs[i].name, name) == 0)
      return &verbs[i];
  return NULL;
}

void help_print(FILE *out, const char *verb) {
  if (verb != NULL) {
    const struct verb *v = help_find_verb(verb);
    if (v != NULL) {
      fprintf(out, "usage: tollgate [GLOBAL FLAGS] %s\n\n%s\n", v->usage,
              v->summary);
      return;
    }
  }
  fputs("tollgate: a gVisor-first OCI runtime with a governed tool bridge\n"
        "\n"
        "usage: tollgate [GLOBAL FLAGS] COMMAND [FLAGS] [ARGS]\n"
        "\n"
        "global flags:\n"
        "  --root DIR            state directory (default /run/tollgate)\n"
        "  --log FILE            append errors to FILE\n"
        "  --log-format FORMAT   text or json (runc-style lines)\n"
        "  --debug               debug output from the backend\n"
        "  --systemd-cgroup      let the backend use systemd cgroups\n"
        "  --runtime NAME|PATH   runsc (default) or runc, or a binary path\n"
        "  --config FILE         host config (default "
        "/etc/tollgate/config.json)\n"
        "  --help, --version\n"
        "\n"
        "commands:\n",
        out);
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
  fputs("\nSee 'tollgate help COMMAND' and docs/cli.md.\n", out);
}

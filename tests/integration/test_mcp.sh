#!/usr/bin/env bash
# `tollgate mcp` (docs/mcp.md) driven over stdio by real MCP clients that
# nobody here wrote: the official TypeScript SDK (@modelcontextprotocol/sdk)
# and the MCP Inspector's CLI (@modelcontextprotocol/inspector --cli), both
# installed by `make deps` into tests/mcp/node_modules.
#  - client.mjs, under each backend: run_python with a governed call that is
#    allowed (a policy builtin and an SDK Python tool) and one that is
#    denied, a failing program, a session, approval through the MCP tools
#    when the host config allows it, and without mcp_allow_approve no
#    approval tools; run_shell only on a rootfs that has a shell.
#  - capabilities.mjs, under each backend: descriptions naming the
#    governed tools, outputSchema and annotations, progress during a 4 s
#    program, cancelling a 6 s program after 2 s (its later call never
#    runs, the audit log says so), approvals by elicitation (one approved,
#    one denied), audit logs as resources, the session cap, a changed
#    policy's tools/list_changed.
#  - the Inspector CLI: what it supports of the same (tools/list,
#    tools/call, resources/list, resources/read).
# Afterwards no container of the MCP servers is left and every audit log
# they wrote verifies.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/../mcp" && pwd)
for pkg in sdk inspector; do
  if [ ! -d "$here/node_modules/@modelcontextprotocol/$pkg" ]; then
    echo "FAIL - @modelcontextprotocol/$pkg is not installed in tests/mcp/node_modules: run 'make deps'"
    exit 0
  fi
done
bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python"
bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python-shell" --shell
# The policy's exec tool (the orders example's get_order, relative to the
# policy file) must be reachable by the tools' user, 65534: staged in /tmp,
# not left in a checkout that may sit under a private home.
stage=$(mktemp -d /tmp/tollgate-mcp.XXXXXX)
on_exit "rm -rf $stage"
chmod 755 "$stage"
cp "$here/policy.json" "$stage/policy.json"
cp -r "$(dirname "$0")/../../bundles/examples/orders/tools" "$stage/tools"
chmod -R go+rX "$stage"

argv() { # argv CONFIG BACKEND [ROOTFS [POLICY [MORE...]]] -> the JSON argv of `tollgate mcp`
  local config=$1 backend=$2 rootfs=${3:-$BUILD/rootfs/python} policy=${4:-$stage/policy.json}
  shift 4 2>/dev/null || shift $#
  python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$TG" --root "$TG_ROOT" --config "$config" \
    --runtime "$backend" mcp --policy "$policy" --tools "$here/tools.py" --rootfs "$rootfs" "$@"
}
write_config mcp_allow_approve=true
approver_config=$TG_ROOT/approver.json
cp "$TG_CONFIG" "$approver_config"
write_config mcp_elicit_approvals=true
elicit_config=$TG_ROOT/elicit.json
cp "$TG_CONFIG" "$elicit_config"
write_config
# Does this SDK stream a program's output (Sandbox.run's on_stdout)?  Then
# progress must name the program's last line of output too.
streams=$(cd "$(dirname "$0")/../../sdk" && python3 -c \
  'import inspect; from tollgate_sdk import Sandbox; print(int("on_stdout" in inspect.signature(Sandbox.run).parameters))')
for backend in $BACKENDS; do
  (cd "$here" && timeout 300 node client.mjs "$(argv "$approver_config" "$backend")" 1 "$backend" 0)
  check_eq "$backend: the MCP client exits 0 (approver)" 0 "$?"
  # Each backend changes its own copy of the policy (tools/list_changed).
  cp "$stage/policy.json" "$stage/policy-$backend.json"
  (cd "$here" && timeout 300 node capabilities.mjs \
     "$(argv "$elicit_config" "$backend" "$BUILD/rootfs/python" "$stage/policy-$backend.json" --max-sessions 2)" \
     "$backend" "$stage/policy-$backend.json" 2 "$streams")
  check_eq "$backend: the capabilities client exits 0" 0 "$?"
done
backend=${BACKENDS%% *}
(cd "$here" && timeout 300 node client.mjs "$(argv "$TG_CONFIG" "$backend" "$BUILD/rootfs/python-shell")" 0 "$backend" 1)
check_eq "$backend: the MCP client exits 0 (shell rootfs)" 0 "$?"

# The Inspector's CLI: one process per request, so what it shows is one
# request's worth (a fresh server has no runs yet to list as resources).
# The server's command line follows `--`, as docs/mcp.md writes it: before
# it, the Inspector would read tollgate's own --config as its own; and
# `--method` comes last before it, since an option of several values
# (--tool-arg) right before `--` would take the server's words as its own.
inspect() { # inspect METHOD [ARGS...] -> the Inspector's JSON output
  (cd "$here" && timeout 120 npx --no-install mcp-inspector --cli "${@:2}" --method "$1" -- \
     "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$backend" mcp --policy "$stage/policy.json" \
     --tools "$here/tools.py" --rootfs "$BUILD/rootfs/python" 2>"$stage/inspector.err")
}
out=$(inspect tools/list)
check_match "inspector: run_python's description names get_order and refund" \
  'get_order\(\*, order_id: str\).*refund\(\*, amount: float' "$(printf %s "$out" | tr '\n' ' ')"
check_eq "inspector: run_python has an outputSchema with audit_log, calls and budget_used" "yes" \
  "$(printf %s "$out" | python3 -c 'import json,sys; t=[x for x in json.load(sys.stdin)["tools"] if x["name"]=="run_python"][0]; p=t["outputSchema"]["properties"]; print("yes" if {"audit_log","calls","budget_used","stdout"} <= set(p) and t["annotations"]["destructiveHint"] else p)')"
out=$(inspect tools/call --tool-name run_python --tool-arg "code=from tollgate import echo; print(echo(word='inspected')['word'])" \
      --tool-metadata progressToken=inspector-1)
check_eq "inspector: tools/call run_python answers with the structured result" "0 inspected" \
  "$(printf %s "$out" | python3 -c 'import json,sys; s=json.load(sys.stdin)["structuredContent"]; print(s["exit_status"], s["stdout"].strip())' 2>&1)"
out=$(inspect resources/list)
check_eq "inspector: resources/list answers (a fresh server: no runs yet)" "[]" \
  "$(printf %s "$out" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["resources"]))' 2>&1)"
inspect resources/read --uri "tollgate://audit/../../etc/passwd" >/dev/null 2>&1
check_match "inspector: resources/read of a URI that is no run of the server is refused" "no resource" \
  "$(cat "$stage/inspector.err")"

# SIGTERM (what a client sends 2 s after closing stdin) while a session is
# open and a program runs: both are stopped, the program's run is recorded
# as cancelled, and nothing is left behind.
sigterm_out=$(python3 - "$(argv "$TG_CONFIG" "$backend")" <<'PY'
import json, subprocess, sys, time
p = subprocess.Popen(json.loads(sys.argv[1]), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(m):
    p.stdin.write(json.dumps(dict(m, jsonrpc="2.0")) + "\n"); p.stdin.flush()
def wait_for(mid):
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == mid:
            return m
send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
      "clientInfo": {"name": "sigterm-test", "version": "1"}}})
wait_for(1)
send({"method": "notifications/initialized"})
send({"id": 2, "method": "tools/call", "params": {"name": "run_python", "arguments": {"session": "held", "code": "print(1)"}}})
wait_for(2)
send({"id": 3, "method": "tools/call", "params": {"name": "run_python", "arguments": {
      "code": "import time\nfrom tollgate import echo\necho(word='sigterm-before')\ntime.sleep(30)\n"}}})
time.sleep(3)
p.terminate()
print("exit", p.wait(timeout=60))
PY
)
check_eq "SIGTERM: the server exits 0 after cleaning up" "exit 0" "$sigterm_out"
check_eq "SIGTERM: neither the session nor the running program is left" "" \
  "$(tg list -q 2>/dev/null | grep '^sdk-' | tr '\n' ' ')"
check_match "SIGTERM: the running program's log records its cancellation" \
  'cancelled by the MCP client .sigterm-test 1.: the server got SIGTERM' \
  "$(grep -l sigterm-before "$TG_ROOT"/audit/sdk-*.jsonl | xargs cat | grep '"event":"cancelled"')"

check_fails "mcp refuses --allow-approve from the command line" tg mcp --allow-approve
check_fails "mcp refuses an abbreviation of it too" tg mcp --allow
check_fails "mcp refuses --allow-elicit from the command line" tg mcp --allow-elicit
check_fails "mcp refuses --host-max-sessions from the command line" tg mcp --host-max-sessions 99
check_eq "no container of the MCP servers is left (sessions, cancelled runs, the cap's refusals)" "" \
  "$(tg list -q 2>/dev/null | grep '^sdk-' | tr '\n' ' ')"
check_eq "the MCP servers' audit logs verify" "ok " \
  "$(for l in "$TG_ROOT"/audit/sdk-*.jsonl; do "$TG" audit verify "$l" >/dev/null && echo ok || echo "bad $l"; done | sort -u | tr '\n' ' ')"
check_match "a cancelled run's audit log has its cancelled record" '"event":"cancelled"' \
  "$(cat "$TG_ROOT"/audit/sdk-*.jsonl | grep '"event":"cancelled"' | head -1)"

#!/usr/bin/env bash
# `tollgate mcp` (docs/mcp.md) driven over stdio by a real MCP client that
# nobody here wrote: the official TypeScript SDK (@modelcontextprotocol/sdk,
# installed by `make deps` into tests/mcp/node_modules).  Under each
# backend: run_python with a governed call that is allowed (a policy builtin
# and an SDK Python tool) and one that is denied, a failing program, a
# session, and approval through MCP when the host config allows it; and
# without mcp_allow_approve, no approval tools at all.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/../mcp" && pwd)
if [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
  echo "FAIL - the MCP TypeScript SDK is not installed in tests/mcp/node_modules: run 'make deps'"
  exit 0
fi
bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python"
# The policy's exec tool (the orders example's get_order, relative to the
# policy file) must be reachable by the tools' user, 65534: staged in /tmp,
# not left in a checkout that may sit under a private home.
stage=$(mktemp -d /tmp/tollgate-mcp.XXXXXX)
on_exit "rm -rf $stage"
chmod 755 "$stage"
cp "$here/policy.json" "$stage/policy.json"
cp -r "$(dirname "$0")/../../bundles/examples/orders/tools" "$stage/tools"
chmod -R go+rX "$stage"

argv() { # argv CONFIG BACKEND -> the JSON argv of `tollgate mcp`
  python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$TG" --root "$TG_ROOT" --config "$1" \
    --runtime "$2" mcp --policy "$stage/policy.json" --tools "$here/tools.py" --rootfs "$BUILD/rootfs/python"
}
write_config mcp_allow_approve=true
approver_config=$TG_ROOT/approver.json
cp "$TG_CONFIG" "$approver_config"
write_config
for backend in $BACKENDS; do
  (cd "$here" && timeout 300 node client.mjs "$(argv "$approver_config" "$backend")" 1 "$backend")
  check_eq "$backend: the MCP client exits 0 (approver)" 0 "$?"
done
backend=${BACKENDS%% *}
(cd "$here" && timeout 300 node client.mjs "$(argv "$TG_CONFIG" "$backend")" 0 "$backend")
check_eq "$backend: the MCP client exits 0" 0 "$?"
check_fails "mcp refuses --allow-approve from the command line" tg mcp --allow-approve
check_fails "mcp refuses an abbreviation of it too" tg mcp --allow
check_eq "the MCP server's audit logs verify" "ok " \
  "$(for l in "$TG_ROOT"/audit/sdk-*.jsonl; do "$TG" audit verify "$l" >/dev/null && echo ok || echo "bad $l"; done | sort -u | tr '\n' ' ')"

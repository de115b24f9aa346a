#!/usr/bin/env bash
# Agent-written tools (Sandbox.create_tool, docs/sdk.md "Agent-written
# tools"; issue 43).  The gate's side first: a policy tool's
# source_sha256 and budgets.max_custom_tools as `tollgate policy check`
# reads them, and a ceiling that forbids such tools (--within).  Then,
# under each backend, tests/sdk/custom_tools.py: a tool created at run time
# and called from a later program, its source digest on its audit records
# (the log verifies), its rules applied, the cap and the ceiling refusing
# create_tool, and its code kept from a host file, the host's loopback and
# the network; and a tool created in an open session (the gate's add_tool,
# through `tollgate tool add`): called from the session's next cell, the
# calls spent before it still counted, an entry without source_sha256 or
# naming an existing tool refused, the addition on a log that verifies, and
# the tool still served after the sidecar is killed and restarted.
. "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
PY=${VENV:-$repo/.venv}/bin/python
if [ ! -x "$PY" ]; then
  echo "FAIL - $PY is missing: run 'make deps'"
  exit 1
fi
work=$(mktemp -d /tmp/tg-custom.XXXXXX)
chmod 755 "$work"
on_exit "remove_tree '$work'"

# ---- the gate's side ---------------------------------------------------------
digest=$(printf 'def add(a, b):\n    return a + b\n' | sha256sum | cut -d' ' -f1)
cat > "$work/custom.json" <<JSON
{"version": 1,
 "tools": {"add": {"backend": {"type": "builtin", "name": "echo"}, "source_sha256": "$digest",
                   "rules": [{"effect": "allow"}]},
           "echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]}},
 "budgets": {"max_custom_tools": 1}}
JSON
check "a policy with an agent-written tool and max_custom_tools 1 passes" tg policy check "$work/custom.json"
sed 's/"max_custom_tools": 1/"max_custom_tools": 0/' "$work/custom.json" > "$work/over.json"
out=$(tg policy check "$work/over.json" 2>&1)
check_match "over budgets.max_custom_tools is refused, positioned" \
  'over\.json:[0-9]+:[0-9]+: budgets\.max_custom_tools: 1 tools are agent-written' "$out"
sed 's/"source_sha256": "[0-9a-f]*"/"source_sha256": "ABC"/' "$work/custom.json" > "$work/badsha.json"
out=$(tg policy check "$work/badsha.json" 2>&1)
check_match "a source_sha256 that is not 64 lowercase hex digits is refused" \
  'tools\.add\.source_sha256: must be the SHA-256 of the tool.s source' "$out"
cat > "$work/ceiling.json" <<'JSON'
{"version": 1,
 "tools": {"add": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]},
           "echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]}},
 "budgets": {"max_custom_tools": 0}}
JSON
out=$(tg policy check --within "$work/ceiling.json" "$work/custom.json" 2>&1); st=$?
check_eq "a ceiling with max_custom_tools 0: not within (exit 1)" 1 "$st"
check_match "the witness names the agent-written tool and the ceiling's 0" \
  'budgets\.max_custom_tools: the policy has 1 agent-written tool \(add\), the ceiling forbids agent-written tools' "$out"
sed 's/, "source_sha256": "[0-9a-f]*"//' "$work/custom.json" > "$work/plain.json"
check "the same tools written by a person are within it" tg policy check --within "$work/ceiling.json" "$work/plain.json"
sed 's/"max_custom_tools": 0/"max_custom_tools": 1/' "$work/ceiling.json" > "$work/ceiling1.json"
check "a ceiling with max_custom_tools 1 admits one" tg policy check --within "$work/ceiling1.json" "$work/custom.json"

# ---- the SDK, per backend ------------------------------------------------------
for backend in $BACKENDS; do
  TG=$TG timeout 240 "$PY" "$repo/tests/sdk/custom_tools.py" "$backend" "$work"
  check_eq "$backend: the custom tools driver exits 0" 0 "$?"
done

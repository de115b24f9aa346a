#!/usr/bin/env bash
# tollgate_sdk.integrations.openai_agents (docs/integrations.md, "OpenAI
# Agents SDK") with the real Agents SDK (the pinned openai-agents of the
# project's .venv) and its ScriptedModel, under each backend: a run_python
# call runs in a tollgate session; a governed call allowed, one denied by
# policy, one parked for approval that surfaces as the SDK's approval
# interruption and is answered with state.approve / state.reject (through a
# saved state) on resume; an abandoned run closed; the audit logs verify
# (tests/integrations/openai_agents_run.py); first the doc's example as
# written.  (mypy --strict covers the adapter in `make typecheck`: 20-40 s
# here, too slow for this script's budget.)
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
py=$top/.venv/bin/python3
if ! "$py" -c 'import agents' 2>/dev/null; then
  echo "FAIL - the project's .venv has no openai-agents (import agents): run 'make deps'"
  exit 0
fi
bash "$top/bundles/rootfs/python.sh" "$BUILD/rootfs/python"
work=$(mktemp -d /tmp/tollgate-oai.XXXXXX)
on_exit "rm -rf $work"
# The doc's example as written (docs/integrations.md), from another
# directory, with TOLLGATE naming the binary; under runsc, as it says.
doc_block "$top/docs/integrations.md" openai_agents_example.py > "$work/example.py"
check "docs/integrations.md has the OpenAI Agents SDK example" grep -q "TollgateCodeTool(tools=" "$work/example.py"
out=$(cd "$work" && PYTHONPATH=$top/sdk OPENAI_AGENTS_DISABLE_TRACING=1 TOLLGATE="$TG" TOLLGATE_ROOTFS=$BUILD/rootfs/python \
      timeout 120 "$py" example.py 2>&1)
check_eq "the doc's example exits 0" 0 "$?"
check_match "the doc's example: the parked refund surfaced and was approved" \
  "a person approves issue_refund \{[^}]*'amount': 640" "$out"
check_match "the doc's example: the program's refund and the final output" \
  "Refunded A-1004 in full.*\{'refunded': 640\.0, 'order_id': 'A-1004'\}.*\('issue_refund', 'allow', 'uid:0'\)" \
  "$(printf '%s' "$out" | tr '\n' ' ')"
ex_log=$(printf '%s\n' "$out" | sed -n 's/^audit log: //p')
check "the doc's example: its audit log verifies" sh -c '"$1" audit verify "$2" >/dev/null' sh "$TG" "$ex_log"
[ -n "$ex_log" ] && rm -f "$ex_log"
printf '%s\n' "$out" | sed 's/^/   # example: /' | head -20

for backend in $BACKENDS; do
  TG=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python timeout 300 "$py" "$top/tests/integrations/openai_agents_run.py" \
    "$backend" "$work"
  check_eq "$backend: the Agents SDK driver exits 0" 0 "$?"
done

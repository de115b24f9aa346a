#!/usr/bin/env bash
# tollgate_sdk.integrations.openai_agents (docs/integrations.md, "OpenAI
# Agents SDK") with the real Agents SDK (the pinned openai-agents of the
# project's .venv) and its ScriptedModel, under each backend: a run_python
# call runs in a tollgate session; a governed call allowed, one denied by
# policy, one parked for approval that surfaces as the SDK's approval
# interruption and is answered with state.approve / state.reject (through a
# saved state) on resume; an abandoned run closed; the audit logs verify
# (tests/integrations/openai_agents_run.py).  Then mypy --strict on the
# adapter.
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
for backend in $BACKENDS; do
  TG=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python timeout 300 "$py" "$top/tests/integrations/openai_agents_run.py" \
    "$backend" "$work"
  check_eq "$backend: the Agents SDK driver exits 0" 0 "$?"
done
(cd "$top/sdk" && "$py" -m mypy --strict --follow-imports=silent --cache-dir "$work/mypy-cache" \
   tollgate_sdk/integrations/openai_agents.py >"$work/mypy.out" 2>&1)
check_eq "mypy --strict reports nothing in the adapter ($(tail -1 "$work/mypy.out"))" 0 "$?"

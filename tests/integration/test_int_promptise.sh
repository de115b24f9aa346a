#!/usr/bin/env bash
# Promptise's code-action pattern under tollgate
# (sdk/tollgate_sdk/integrations/promptise.py, docs/integrations.md,
# "Promptise"): a real promptise agent whose program Promptise's own
# ScriptedModel writes (no network, no LLM) runs in a tollgate container
# under each backend; get_order is allowed, issue_refund denied by the
# policy and never run on the host, a loop past the call cap gets
# Promptise's ToolBudgetExceeded, and each run's audit log verifies;
# docs/integrations.md's example runs as written first.  The driver is
# tests/sdk/int_promptise.py.
. "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
project_python
check "promptise is installed in $venv (sdk/requirements.lock)" "$PY" -c 'import promptise'
bash "$repo/bundles/rootfs/python.sh" "$BUILD/rootfs/python" >/dev/null
audit=$TG_ROOT/audit
mkdir -p "$audit"
# docs/integrations.md's example, as written.
ex=$TG_ROOT/promptise_example.py
doc_block "$repo/docs/integrations.md" promptise_example.py > "$ex"
check "docs/integrations.md has the promptise_example.py block" grep -q TollgateCodeAction "$ex"
for backend in $BACKENDS; do
  out=$(cd "$TG_ROOT" && PYTHONPATH=$repo/sdk TOLLGATE=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python RUNTIME=$backend \
        timeout 120 "$PY" "$ex" 2>&1)
  check_match "$backend: the docs example answers from the program" "answer: refund of 640.0 refused" "$out"
  check_match "$backend: ... get_order allowed, issue_refund denied by the callback" \
    "get_order \{'order_id': 'A-1004'\} allow .*issue_refund \{'order_id': 'A-1004', 'amount': 640(\.0)?\} deny uid:0" "$out"
  log=$(printf '%s\n' "$out" | sed -n 's/^audit log: //p')
  check "$backend: ... its audit log verifies" sh -c '"$1" audit verify "$2" >/dev/null' sh "$TG" "$log"
  [ -n "$log" ] && rm -f "$log"
done

for backend in $BACKENDS; do
  # The checkout's SDK, whatever the venv's editable install points at.
  PYTHONPATH=$repo/sdk TG=$TG TOLLGATE=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python AUDIT_DIR=$audit \
    timeout 120 "$PY" "$repo/tests/sdk/int_promptise.py" "$backend" "$TG_ROOT"
  check_eq "$backend: the Promptise driver exits 0" 0 "$?"
done

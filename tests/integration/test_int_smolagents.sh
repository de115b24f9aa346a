#!/usr/bin/env bash
# smolagents' CodeAgent on tollgate (tollgate_sdk.integrations.smolagents,
# docs/integrations.md): under each backend the real CodeAgent with a
# scripted model runs its code actions in one tollgate session (its own pid
# namespace, hostname and /tmp; state kept between steps) while its tools
# run on the host through the gate: one allowed, one denied by the policy,
# one parked and refused by the approval callback; final_answer is the
# agent's result and the audit log verifies.  Then the docs' example.
. "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
project_python
check "smolagents 1.26.0 is installed in $venv" \
  sh -c '[ "$("$1" -c "import smolagents; print(smolagents.__version__)")" = 1.26.0 ]' sh "$PY"
check "make built the Python rootfs" test -x "$BUILD/rootfs/python/usr/bin/python3"

for backend in $BACKENDS; do
  TG=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python timeout 300 \
    "$PY" "$repo/tests/integrations/smolagents_agent.py" "$backend" "$TG_ROOT"
  check_eq "$backend: the smolagents driver exits 0" 0 "$?"
done

# The example of docs/integrations.md's "smolagents" section, as written.
awk '/^## smolagents/ {s = 1; next} s && /^## / {exit} s && /^```python/ {p = 1; next} p && /^```/ {exit} p {print}' \
  "$repo/docs/integrations.md" > "$TG_ROOT/smolagents_example.py"
check "docs/integrations.md has the smolagents example" grep -q "TollgateExecutor" "$TG_ROOT/smolagents_example.py"
out=$(cd "$TG_ROOT" && TOLLGATE="$TG" TOLLGATE_ROOTFS=$BUILD/rootfs/python PYTHONPATH="$repo/sdk" \
  timeout 120 "$PY" smolagents_example.py 2>&1)
check_match "docs example: the agent's answer" "answer: 42" "$out"
check_match "docs example: the model's code saw the refusal as ToolDenied" "refused: denied by uid:0: no bulk orders today" "$out"
check_match "docs example: get_price allowed twice, buy denied by the callback" \
  "get_price \\{'item': 'apple'\\} allow policy.*get_price \\{'item': 'pear'\\} allow policy.*buy \\{'item': 'apple', 'quantity': 100\\} deny uid:0" "$out"
ex_log=$(printf '%s\n' "$out" | sed -n 's/^audit log: //p')
check "docs example: its audit log verifies" sh -c '"$1" audit verify "$2" >/dev/null' sh "$TG" "$ex_log"
[ -n "$ex_log" ] && rm -f "$ex_log"

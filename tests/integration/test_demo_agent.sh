#!/usr/bin/env bash
# The reference agent harness (make demo-agent): attempt 1 crashes after its
# first refund, the stderr tail goes back to the scripted model, attempt 2
# succeeds; the refund made by attempt 1 is not made again, and the budget
# given to attempt 2 is what attempt 1 left.
. "$(dirname "$0")/lib.sh"
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$result" 2>/dev/null; }
for backend in $BACKENDS; do
  keep=$TG_ROOT/keep-$backend
  out=$(BUILD=$BUILD RUNTIME=$backend AGENT_ROOT=$TG_ROOT AGENT_KEEP=$keep bash bundles/examples/agent/run.sh 2>&1)
  status=$?
  check_eq "$backend: harness exits 0" 0 "$status"
  [ "$status" = 0 ] || echo "$out" | sed 's/^/   # /'
  result=$keep/result.json
  check_eq "$backend: two attempts" 2 "$(field "$result" 'len(r["attempts"])')"
  check_match "$backend: attempt 1 failed" '^[1-9][0-9]*$' "$(field "$result" 'r["attempts"][0]["status"]')"
  check_eq "$backend: attempt 2 succeeded" 0 "$(field "$result" 'r["attempts"][1]["status"]')"
  check_match "$backend: the model was shown attempt 1's TypeError" "TypeError" "$(field "$result" 'r["model_feedback"][0]')"
  check_match "$backend: attempt 2 printed the EU total" "EU total: 1218\.5" "$(field "$result" 'r["attempts"][1]["stdout"]')"
  refunds=$(cat "$keep/ledger/refunds.jsonl" 2>/dev/null)
  check_eq "$backend: the small refund went out exactly once over both attempts" 1 "$(grep -c 'A-1003' <<<"$refunds")"
  check_eq "$backend: the large refund never went out" 0 "$(grep -c 'A-1004' <<<"$refunds")"
  check_match "$backend: attempt 2's repeat of the refund was denied by policy" "deny" \
    "$(field "$result" '[c["decision"] for c in r["attempts"][1]["calls"] if c["tool"]=="issue_refund" and c["args"]["order_id"]=="A-1003"]')"
  check_match "$backend: the denial points at attempt 1's audit record" "already done by an earlier attempt \(agent-.*-1\.jsonl, seq [0-9]+\)" \
    "$(field "$result" '[c["reason"] for c in r["attempts"][1]["calls"] if c["tool"]=="issue_refund" and c["args"]["order_id"]=="A-1003"]')"
  used=$(field "$result" 'r["tool_calls_used"]')
  first=$(field "$result" 'len(r["attempts"][0]["calls"])')
  left=$(field "$result" 'r["attempts"][1]["budgets"]["max_tool_calls"]')
  check_eq "$backend: attempt 2's budget is what attempt 1 left" "$((20 - first))" "$left"
  check_match "$backend: the budget counted calls of both attempts" '^1[0-9]$' "$used"
  for log in "$keep"/audit/*.jsonl; do
    check "$backend: audit log $(basename "$log") verifies" "$TG" audit verify "$log"
  done
done

#!/usr/bin/env bash
# `make demo` end to end under each backend: the orders program's EU total,
# the small refund executed exactly once, the large refund parked and
# denied by the hook and never executed, and an audit log that verifies.
# The assertions read the run's own files (program output, the refund
# ledger the tool writes, the audit log), not just the demo's verdict.
. "$(dirname "$0")/lib.sh"
demo=bundles/examples/orders/demo.sh

for backend in $BACKENDS; do
  keep=$TG_ROOT/keep-$backend
  out=$(BUILD=$BUILD RUNTIME=$backend DEMO_ROOT=$TG_ROOT DEMO_KEEP=$keep \
        bash "$demo" 2>&1)
  status=$?
  check_eq "$backend: demo exits 0" 0 "$status"
  [ "$status" = 0 ] || echo "$out" | sed 's/^/   # /'
  check_match "$backend: the account names the backend" "backend +$backend" "$out"
  check_match "$backend: program prints the EU total" "EU total: 1218\.5" "$(cat "$keep/stdout" 2>/dev/null)"
  refunds=$(cat "$keep/ledger/refunds.jsonl" 2>/dev/null)
  check_eq "$backend: exactly one refund executed" 1 "$(grep -c . <<<"$refunds")"
  check_match "$backend: the executed refund is the small one" '"order_id": "A-1003", "amount": 25\.0' "$refunds"
  check_eq "$backend: the large refund was not executed" 0 "$(grep -c 'A-1004' <<<"$refunds")"
  log=$keep/audit/orders-demo.jsonl
  check "$backend: audit log verifies" "$TG" audit verify "$log"
  check_match "$backend: the audit log records the large refund" 'A-1004' "$(cat "$log" 2>/dev/null)"
  check_match "$backend: the account shows the approve command" "approve orders-demo [0-9a-f]{32}" "$out"
  check_match "$backend: the account shows the audit verdict" "audit verify: ok.*\(exit 0\)" "$out"
done

# Editing one byte of the demo's audit log breaks the chain.
backend=${BACKENDS%% *}
log=$TG_ROOT/keep-$backend/audit/orders-demo.jsonl
if [ -f "$log" ]; then
  # (the log holds the canonical arguments: 25.0 is written 25)
  sed -i -E 's/"amount":25(\.0)?([,}])/"amount":15\2/' "$log"
  check_match "$backend: the edit changed the log" '"amount":15[,}]' "$(cat "$log")"
  check_fails "$backend: the edited audit log no longer verifies" "$TG" audit verify "$log"
fi

# make demo-interactive: the large refund waits for a person; approving it
# from another process (as the printed command does) lets it run, once.
keep=$TG_ROOT/keep-interactive
out_file=$TG_ROOT/interactive.out
BUILD=$BUILD RUNTIME=$backend DEMO_ROOT=$TG_ROOT DEMO_KEEP=$keep \
  bash bundles/examples/orders/demo.sh --interactive >"$out_file" 2>&1 &
demo_pid=$!
on_exit "kill $demo_pid"
approve=""
for _ in $(seq 1 120); do
  approve=$(grep -E '^ +/.*tollgate --root [^ ]+ approve orders-demo [0-9a-f]{32}$' "$out_file" || true)
  [ -n "$approve" ] && break
  kill -0 "$demo_pid" 2>/dev/null || break
  sleep 0.5
done
check_match "interactive: the demo prints the approve command" "approve orders-demo [0-9a-f]{32}" "$approve"
if [ -n "$approve" ]; then
  # shellcheck disable=SC2086 # the printed command, word for word
  check "interactive: the printed approve command works" $approve
fi
wait "$demo_pid"
check_eq "interactive: demo exits 0 once approved" 0 "$?"
refunds=$(cat "$keep/ledger/refunds.jsonl" 2>/dev/null)
check_eq "interactive: the approved large refund ran exactly once" 1 "$(grep -c 'A-1004' <<<"$refunds")"
check_eq "interactive: the small refund ran exactly once" 1 "$(grep -c 'A-1003' <<<"$refunds")"
check_match "interactive: the audit log names the approver" '"approver":"uid:0"' "$(cat "$keep/audit/orders-demo.jsonl" 2>/dev/null)"
check "interactive: audit log verifies" "$TG" audit verify "$keep/audit/orders-demo.jsonl"

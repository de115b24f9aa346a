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
  out=$(BUILD=$BUILD RUNTIME=$backend DEMO_ROOT=$TG_ROOT/demo-$backend DEMO_KEEP=$keep \
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
  check_match "$backend: the account shows the audit verdict" "audit verify .*\(exit 0\)" "$out"
done

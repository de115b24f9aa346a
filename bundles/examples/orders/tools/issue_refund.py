#!/usr/bin/python3 -B
"""issue_refund {"order_id": ..., "amount": ..., "reason": ...}: pay money
back.  Irreversible.

Usage (as the policy's exec argv): issue_refund.py --ledger FILE

"Paying" here means appending one JSON line to the ledger FILE, which stands
in for the payment provider: the demo and the tests count its lines to prove
how many refunds really happened, independently of tollgate's own audit log.
The ledger's directory must be writable by the tool's user (65534).
"""
import fcntl
import json
import os
import sys
import time

from toolio import fail, load_orders, read_args, reply

if len(sys.argv) != 3 or sys.argv[1] != "--ledger":
    fail("usage: issue_refund.py --ledger FILE (set it in the policy's argv)")
ledger = sys.argv[2]

args = read_args()
order_id = args.get("order_id")
amount = args.get("amount")
order = load_orders().get(order_id)
if order is None:
    fail(f"no order {order_id!r}")
if not isinstance(amount, (int, float)) or isinstance(amount, bool) or amount <= 0:
    fail("amount must be a positive number")
if amount > order["amount"]:
    fail(f"refund {amount} exceeds order {order_id} total {order['amount']}")

# O_APPEND plus an exclusive lock: concurrent refunds each get their own
# line and their own number, and fsync makes the "payment" durable before
# we report it as done.
fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
with os.fdopen(fd, "a", encoding="utf-8") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    with open(ledger, encoding="utf-8") as r:
        number = sum(1 for _ in r) + 1
    entry = {
        "refund_id": f"R-{number:04d}",
        "order_id": order_id,
        "amount": float(amount),
        "reason": str(args.get("reason", ""))[:200],
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    f.write(json.dumps(entry) + "\n")
    f.flush()
    os.fsync(f.fileno())
reply({"refund_id": entry["refund_id"], "order_id": order_id,
       "amount": entry["amount"], "status": "issued"})

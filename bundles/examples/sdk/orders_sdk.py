#!/usr/bin/env python3
"""The orders demo on the host SDK (docs/sdk.md): the tools are Python functions, the
policy comes from their decorators, and the approval is a callback that refuses."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk"))
from tollgate_sdk import Sandbox, tool  # noqa: E402

ORDERS = {"A-1001": {"id": "A-1001", "region": "EU", "amount": 420.0, "customer": "Lindqvist AB"},
          "A-1002": {"id": "A-1002", "region": "US", "amount": 275.0, "customer": "Hale & Sons"},
          "A-1003": {"id": "A-1003", "region": "EU", "amount": 158.5, "customer": "Moreau SARL"},
          "A-1004": {"id": "A-1004", "region": "EU", "amount": 640.0, "customer": "Baumann GmbH"}}
REFUNDS = []

@tool(max_calls=5)
def list_orders() -> list[str]:
    """List the ids of every order."""
    return sorted(ORDERS)

@tool(max_calls=20)
def get_order(order_id: str) -> dict:
    """One order: id, region (EU or US), amount and customer."""
    return ORDERS[order_id]

@tool(irreversible=True, cost=1, max_calls=4, approve="amount > 50")
def issue_refund(order_id: str, amount: float, reason: str = "") -> dict:
    """Refund part or all of an order. Irreversible: money leaves the company."""
    REFUNDS.append({"order_id": order_id, "amount": amount, "reason": reason})
    return {"refund_id": "R-%04d" % len(REFUNDS), "order_id": order_id, "amount": amount, "status": "issued"}

def approve(call):  # a person would be asked here; this one refuses everything
    print(f"approval callback: refusing {call.tool} {json.dumps(call.args)} ({call.reason})")
    return False

sb = Sandbox(tools=[list_orders, get_order, issue_refund], approval=approve, approval_timeout=30,
             budgets={"max_tool_calls": 20, "max_cost": 3, "max_irreversible": 2, "repeat_limit": 3},
             runtime=os.environ.get("RUNTIME", "runsc"), audit_dir=os.environ.get("AUDIT_DIR"))
program = open(os.path.join(os.path.dirname(__file__), "..", "orders", "program.py")).read()
result = sb.run(program)
print(result.stdout, end="")
for c in result.calls:
    print(f"call {c.tool} {json.dumps(c.args)}: {c.decision} by {c.approver} -> {c.outcome}")
print("refunds made:", json.dumps(REFUNDS))
print("budget used:", json.dumps(result.budget_used), "audit log:", result.audit_log)
sb.close()

# The "model-written" program of the orders demo.  It runs inside a
# hardened gVisor container with no network; the only way out is the tool
# bridge, and every call below is governed by policy.json on the host.
from tollgate import TollgateError, get_order, issue_refund, list_orders

ids = list_orders()
print("orders:", ", ".join(ids))

orders = [get_order(order_id=order_id) for order_id in ids]
eu = [order for order in orders if order["region"] == "EU"]
total = sum(order["amount"] for order in eu)
print("EU orders:", ", ".join(order["id"] for order in eu))
print(f"EU total: {total:.1f}")

# Two refunds: a small one the policy allows on its own, and a large one
# that a person has to approve.
for order_id, amount, reason in [("A-1003", 25.0, "parcel arrived damaged"),
                                  ("A-1004", 640.0, "order cancelled")]:
    try:
        refund = issue_refund(order_id=order_id, amount=amount, reason=reason)
        print(f"refund {order_id} {amount:.1f}: issued as {refund['refund_id']}")
    except TollgateError as e:
        print(f"refund {order_id} {amount:.1f}: not issued ({e})")

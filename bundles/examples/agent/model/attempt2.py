# Attempt 2 of the scripted "model", written after it was shown the stderr
# tail of attempt 1 (a TypeError in the refund report).  The fix: format the
# amount instead of adding it to a string.  It runs the whole task again,
# refunds included: keeping it from paying A-1003 twice is the harness's and
# tollgate's job, not the model's.
from tollgate import TollgateError, get_order, issue_refund, list_orders

ids = list_orders()
orders = [get_order(order_id=order_id) for order_id in ids]
eu = [order for order in orders if order["region"] == "EU"]
print(f"EU total: {sum(order['amount'] for order in eu):.1f}")

for order_id, amount, reason in [("A-1003", 25.0, "parcel arrived damaged"),
                                  ("A-1004", 640.0, "order cancelled")]:
    try:
        refund = issue_refund(order_id=order_id, amount=amount, reason=reason)
        print(f"refund {order_id} {amount:.1f}: issued as {refund['refund_id']}")
    except TollgateError as e:
        print(f"refund {order_id} {amount:.1f}: not issued ({e})")

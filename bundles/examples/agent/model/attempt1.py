# Attempt 1 of the scripted "model": reconcile the EU orders and refund two
# of them.  It has a bug that only shows after the first refund went out:
# it adds a float to a string when reporting it.
from tollgate import TollgateError, get_order, issue_refund, list_orders

ids = list_orders()
orders = [get_order(order_id=order_id) for order_id in ids]
eu = [order for order in orders if order["region"] == "EU"]
print("EU total: " + str(sum(order["amount"] for order in eu)))

for order_id, amount, reason in [("A-1003", 25.0, "parcel arrived damaged"),
                                  ("A-1004", 640.0, "order cancelled")]:
    try:
        refund = issue_refund(order_id=order_id, amount=amount, reason=reason)
        print("refund " + order_id + " " + amount + ": issued as " + refund["refund_id"])
    except TollgateError as e:
        print(f"refund {order_id}: not issued ({e})")

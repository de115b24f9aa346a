#!/usr/bin/python3 -B
"""get_order {"order_id": "A-1001"}: one order's id, region, amount and
customer.  Read-only."""
from toolio import fail, load_orders, read_args, reply

args = read_args()
order = load_orders().get(args.get("order_id"))
if order is None:
    fail(f"no order {args.get('order_id')!r}")
reply(order)

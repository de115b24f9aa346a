#!/usr/bin/python3 -B
"""list_orders: the ids of every order, sorted.  Read-only."""
from toolio import load_orders, read_args, reply

read_args()
reply(sorted(load_orders()))

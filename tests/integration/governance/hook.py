#!/usr/bin/env python3
"""Approval hook for the tests: approves refunds under 100, denies the rest.
stdin: the call as JSON; exit 0 approves, 1 denies; the first line of
stdout is recorded as the reason."""
import json, sys
call = json.load(sys.stdin)
amount = call["args"].get("amount", 0)
if amount < 100:
    print("hook: %s under 100 is fine" % amount)
    sys.exit(0)
print("hook: %s is too much for the hook" % amount)
sys.exit(1)

#!/usr/bin/env python3
"""An irreversible exec tool for the governance tests: "refunds" an amount.
With {"sleep": N} it first sleeps N seconds (the kill -9 test needs a call
that is still running after its intent record is on disk)."""
import json, sys, time
args = json.load(sys.stdin)
if args.get("sleep"):
    time.sleep(float(args["sleep"]))
print(json.dumps({"refunded": args.get("amount", 0), "order": args.get("order", "?")}))

#!/usr/bin/python3
# An exec tool for the fault tests: sleeps {"s": N} seconds, then answers.
# With a path as its argument it answers as soon as that file exists.
import json
import os
import sys
import time

args = json.load(sys.stdin)
end = time.monotonic() + float(args.get("s", 1))
until = sys.argv[1] if len(sys.argv) > 1 else None
while time.monotonic() < end and not (until and os.path.exists(until)):
    time.sleep(min(0.1, max(0.0, end - time.monotonic())))
json.dump({"slept": args.get("s", 1)}, sys.stdout)

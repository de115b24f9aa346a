#!/usr/bin/python3
# An exec tool for the fault tests: sleeps {"s": N} seconds, then answers.
import json
import sys
import time

args = json.load(sys.stdin)
time.sleep(float(args.get("s", 1)))
json.dump({"slept": args.get("s", 1)}, sys.stdout)

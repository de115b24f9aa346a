#!/usr/bin/python3
# An exec tool for the bridge tests: {"text": S} -> {"upper": S.upper()}.
import json
import sys

args = json.load(sys.stdin)
if args.get("fail"):
    sys.stderr.write("upper: asked to fail\n")
    sys.exit(3)
json.dump({"upper": args["text"].upper(), "len": len(args["text"])}, sys.stdout,
          ensure_ascii=False)

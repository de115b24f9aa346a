#!/usr/bin/python3 -B
"""The demo's approval hook: it denies every call it is asked about.

tollgate runs the hook for each call whose policy effect is "approve", with
the call as JSON on stdin.  Exit 0 approves, exit 1 denies, anything else is
an error that also counts as a denial.  A real hook would page a person or
ask a ticketing system; this one makes `make demo` unattended and
deterministic, and says on stderr what it refused.
"""
import json
import sys

try:
    call = json.loads(sys.stdin.read(65536) or "{}")
except ValueError:
    call = {}
print(f"demo approval hook: denying {call.get('tool', '?')} {json.dumps(call.get('args', {}))}",
      file=sys.stderr)
sys.exit(1)

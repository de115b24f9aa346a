"""The exec tool backend's contract, shared by the three order tools.

tollgate runs a tool as an unprivileged user with a scrubbed environment:
the call's arguments arrive as one JSON object on stdin, the result goes to
stdout as JSON, and a non-zero exit turns into a `tool_failed` error whose
message is the tail of stderr.  The sandboxed program never sees this code;
only the governed result crosses back through the bridge.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read_args():
    """The call's arguments (tollgate has already checked them against the
    policy's schema, but a tool stays defensive about what it acts on)."""
    raw = sys.stdin.read(65536)
    args = json.loads(raw) if raw.strip() else {}
    if not isinstance(args, dict):
        fail("arguments must be a JSON object")
    return args


def load_orders():
    with open(os.path.join(HERE, "orders.json"), encoding="utf-8") as f:
        return json.load(f)


def reply(result):
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.exit(0)


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)

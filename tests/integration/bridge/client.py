# Runs inside a gVisor/runc container on the minimal Python rootfs: the
# tollgate.py client against the real bridge.  Prints ok/FAIL lines.
import threading

import tollgate
from tollgate import echo, upper


def check(name, cond, detail=""):
    print(("ok - " if cond else "FAIL - ") + name + ("" if cond else " " + repr(detail)), flush=True)


r = echo(text="héllo ✓ 🚀")
check("py: echo round-trips unicode", r == {"text": "héllo ✓ 🚀"}, r)
r = upper(text="abc é")
check("py: exec tool upper", r.get("upper") == "ABC É", r)
r = tollgate.call("echo", n=1, name="x", nested={"a": [1, 2, None]})
check("py: tollgate.call", r == {"n": 1, "name": "x", "nested": {"a": [1, 2, None]}}, r)
check("py: generated docstring", "Upper-case a text" in (upper.__doc__ or ""), upper.__doc__)

try:
    tollgate.call("refund", amount=10)
    check("py: denial raises ToolDenied", False, "no exception")
except tollgate.ToolDenied as e:
    check("py: denial raises ToolDenied", "refunds are disabled" in e.message, e.message)
try:
    tollgate.call("no_such_tool")
    check("py: unknown tool raises UnknownTool", False)
except tollgate.UnknownTool:
    check("py: unknown tool raises UnknownTool", True)
try:
    upper(text="x", fail=True)
    check("py: failing exec tool raises ToolFailed", False)
except tollgate.ToolFailed as e:
    check("py: failing exec tool raises ToolFailed", "asked to fail" in e.message, e.message)
try:
    upper(text=7)
    check("py: schema violation raises BadRequest", False)
except tollgate.BadRequest:
    check("py: schema violation raises BadRequest", True)

big = "é" * 30720  # 60 KiB of UTF-8
r = echo(text=big)
check("py: 60 KiB unicode payload", r == {"text": big}, len(r.get("text", "")))

results = {}
errors = []
lock = threading.Lock()


def worker(t):
    for i in range(200):
        try:
            got = echo(t=t, i=i)
            with lock:
                key = (got["t"], got["i"])
                results[key] = results.get(key, 0) + 1
                if key != (t, i):
                    errors.append((t, i, got))
        except Exception as e:  # noqa: BLE001 - report any failure
            with lock:
                errors.append((t, i, repr(e)))


threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join()
check("py: 8 threads x 200 calls, each answered once with its own result",
      not errors and len(results) == 1600 and set(results.values()) == {1},
      errors[:3])
print("client done", flush=True)

"""The SDK's client mode against `tollgate serve` (test_serve.sh), run as
an unprivileged user over the service's unix socket: a session keeps
state, a host Python function is a tool the daemon's gate governs and
this process runs, a call the policy parks is approved, and a call whose
client is gone fails instead of hanging."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk"))
from tollgate_sdk import RemoteSandbox, Sandbox  # noqa: E402

server, key = sys.argv[1], sys.argv[2]
seen = []


def lookup(order_id: str) -> dict:
    """An order, from the host."""
    seen.append((order_id, os.getuid()))
    return {"id": order_id, "uid": os.getuid()}


def check(name, cond, why=""):
    print("ok - %s" % name if cond else "FAIL - %s: %s" % (name, why), flush=True)


check("the client runs unprivileged", os.getuid() != 0, os.getuid())
sb = Sandbox([lookup], server=server, api_key=key)
check("Sandbox(server=...) is the client mode", isinstance(sb, RemoteSandbox), type(sb))
with sb.session() as s:
    s.run("x = 41")
    r = s.run("print(x + 1)")
    check("client mode: a session keeps x (prints 42)", r.stdout == "42\n", r.stdout)
    r = s.run("from tollgate import lookup\nprint(lookup(order_id='A-7')['id'])")
    check("a host function is a governed tool: the call ran in this process", r.stdout == "A-7\n" and
          seen == [("A-7", os.getuid())], (r.stdout, r.stderr, seen))
    check("and the daemon's audit log records it", any(c.tool == "lookup" for c in r.calls), r.calls)
    out = {}
    t = threading.Thread(target=lambda: out.update(r=s.run("from tollgate import careful\n"
                                                             "print(careful(text='go'))", check=False)))
    t.start()
    p = []
    for _ in range(100):
        p = s.pending()
        if p:
            break
        time.sleep(0.1)
    check("a parked call is listed to the client", len(p) == 1, p)
    if p:
        check("and approved by it", s.decide(p[0]["call"], True).get("ok") is True)
    t.join(60)
    check("the approved call ran", "go" in out.get("r").stdout if out.get("r") else False, out)
    s.write_file("/tmp/f.txt", b"abc")
    check("files through the client", s.read_file("/tmp/f.txt") == b"abc")

if len(sys.argv) > 3 and sys.argv[3] == "orphan":
    # The tool's client dies without a word: its sandbox stays (until its
    # deadline), and a later call of its tool must fail, not hang.
    s3 = sb.session()
    print("ORPHAN", s3.sandbox_id, flush=True)
    os._exit(0)

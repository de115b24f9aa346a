"""Agent-written tools (Sandbox.create_tool, issue 43) against real
containers, one backend per run.

Usage: custom_tools.py BACKEND WORKDIR    (as root, after `make`)
Prints `ok - NAME` / `FAIL - NAME` lines for
tests/integration/test_custom_tools.sh: a tool created at run time and
called from a later program, its source digest on the audit record of
each call (the log verifies), its rules applied by the gate, the cap
(max_custom_tools) and a ceiling that forbids such tools, and its code
kept from host files, the host's processes and the network; a tool
created in an open session, called from its next cell with the budgets
going on (through a sidecar restart), and the gate's add_tool refusals.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integrations"))
import common  # noqa: E402
from common import TG, backend, check, verifies, work  # noqa: E402
from tollgate_sdk import CustomToolError, ProgramFailed, Sandbox  # noqa: E402
from tollgate_sdk._approvals import control_request  # noqa: E402

audit_dir = os.path.join(work, "audit-custom-" + backend)


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# What the host holds that the tool must not reach: a file, and a TCP
# listener on the host's loopback that counts its connections.
secret_dir = os.path.join(work, "custom-secret-" + backend)
os.makedirs(secret_dir, exist_ok=True)
os.chmod(secret_dir, 0o755)
secret = os.path.join(secret_dir, "secret.txt")
with open(secret, "w") as f:
    f.write("host-secret-%s\n" % backend)
os.chmod(secret, 0o644)
marker = os.path.join(secret_dir, "written-by-tool")
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
port = listener.getsockname()[1]
accepted = []


def accept_loop():
    while True:
        try:
            c, a = listener.accept()
        except OSError:
            return
        accepted.append(a)
        c.close()


threading.Thread(target=accept_loop, daemon=True).start()

# The model's source, as a model would write it: plain Python, one function.
ADD = '''
def add(a, b):
    return {"sum": a + b}
'''
PROBE = '''
import os, socket

def probe(path, port, marker):
    out = {}
    try:
        out["file"] = open(path).read()
    except OSError as e:
        out["file"] = "refused: %s" % type(e).__name__
    try:
        with open(marker, "w") as f:
            f.write("x")
        out["marker"] = "written (inside the container)"
    except OSError as e:
        out["marker"] = "refused: %s" % type(e).__name__
    for name, addr in (("loopback", ("127.0.0.1", port)), ("net", ("198.18.0.1", 80))):
        try:
            socket.create_connection(addr, timeout=3).close()
            out[name] = "connected"
        except OSError as e:
            out[name] = "refused: %s" % type(e).__name__
    try:
        import tollgate
        out["tools"] = "called: %r" % (tollgate.call("add", a=1, b=2),)
    except Exception as e:
        out["tools"] = "refused: %s: %s" % (type(e).__name__, e)
    out["uid"] = os.getuid()
    out["pid"] = os.getpid()
    return out
'''

DOUBLE = "def double(x):\n    return 2 * x\n"


def gate_calls_used(sb, cid):
    """The session gate's own count of calls (its control socket)."""
    r = control_request(os.path.join(sb.root, cid, "control.sock"), {"verb": "calls"})
    return ((r.get("budget") or {}).get("calls") or {}).get("used")


def tool_add(sb, cid, name, entry):
    """`tollgate tool add CID FILE` with FILE = {name: entry}."""
    path = os.path.join(work, "tool-add-%s-%s.json" % (backend, name))
    with open(path, "w") as f:
        json.dump({name: entry}, f)
    return subprocess.run(sb._tg("tool", "add", cid, path), capture_output=True, text=True)


def sidecar_state(sb, cid):
    p = subprocess.run(sb._tg("state", cid), capture_output=True, text=True)
    try:
        return json.loads(p.stdout)["tollgate"]["sidecar"]
    except (ValueError, KeyError, TypeError):
        return {}


def session_tool_added_live(sb):
    """A tool created in an open session (issue 43): its next cell calls
    it, the gate's budgets go on as they were (through a sidecar restart
    too), the gate refuses what add_tool must refuse, and the log records
    the addition and verifies."""
    s = sb.session()
    log = None
    try:
        cid = s.cid
        r = s.run("from tollgate import boom, ToolFailed\nfor _ in range(2):\n"
                  "    try:\n        boom()\n    except ToolFailed:\n        print('failed')\n")
        check("session: two calls before the addition", r.stdout.count("failed") == 2
              and gate_calls_used(sb, cid) == 2, (r.stdout, gate_calls_used(sb, cid)))
        # The container has no way to the control socket: its host path
        # is not in the container's filesystem, and nothing under
        # /run/tollgate (the bridge area) is a socket.
        host_sock = os.path.join(sb.root, cid, "control.sock")
        r = s.run("import os, socket, stat\n"
                  "try:\n    c = socket.socket(socket.AF_UNIX)\n    c.connect(%r)\n    print('connected')\n"
                  "except OSError as e:\n    print('refused', type(e).__name__)\n"
                  "socks = [os.path.join(d, f) for d, _, fs in os.walk('/run/tollgate') for f in fs\n"
                  "         if stat.S_ISSOCK(os.lstat(os.path.join(d, f)).st_mode)]\n"
                  "print('sockets', socks)\n" % host_sock)
        check("the container cannot reach the gate's control socket",
              os.path.exists(host_sock) and "refused" in r.stdout and "sockets []" in r.stdout,
              r.stdout + r.stderr)
        s.create_tool("double", DOUBLE, description="Twice x.")
        check("session: adding the tool leaves the gate's budget as it was (2 calls used)",
              gate_calls_used(sb, cid) == 2, gate_calls_used(sb, cid))
        r = s.run("from tollgate import double\nprint('double', double(x=21))")
        check("Session.create_tool: the session's next cell calls it", "double 42" in r.stdout,
              r.stdout + r.stderr)
        entry = sb.policy["tools"]["double"]
        plain = {k: v for k, v in entry.items() if k != "source_sha256"}
        p = tool_add(sb, cid, "plain", plain)
        check("the gate refuses an entry without source_sha256",
              p.returncode != 0 and "has no source_sha256" in p.stderr, p.stdout + p.stderr)
        p = tool_add(sb, cid, "boom", entry)
        check("the gate refuses an entry naming an existing tool",
              p.returncode != 0 and "a tool of that name already" in p.stderr, p.stdout + p.stderr)
        # The sidecar killed: its supervisor starts another, which has the
        # tool again (from the log's tool_added record) and the budget.
        before = sidecar_state(sb, cid)
        pid = before.get("pid")
        check("the session's sidecar is running", isinstance(pid, int) and pid > 1, before)
        if isinstance(pid, int) and pid > 1:
            os.kill(pid, 9)
        now = before
        deadline = time.time() + 30
        while time.time() < deadline:
            now = sidecar_state(sb, cid)
            if now.get("restarts", 0) >= 1 and now.get("status") == "running" and now.get("pid") != before.get("pid"):
                break
            time.sleep(0.1)
        check("the killed sidecar was restarted", now.get("restarts", 0) >= 1, (before, now))
        r = s.run("from tollgate import double, BudgetExhausted\n"
                  "print('d', double(x=1), double(x=2))\n"
                  "try:\n    double(x=3)\nexcept BudgetExhausted as e:\n    print('exhausted:', e)\n",
                  check=False)
        check("after a sidecar restart the session still calls the added tool", "d 2 4" in r.stdout,
              r.stdout + r.stderr)
        check("the calls before the addition still count: the 6th call of 5 is refused",
              "exhausted:" in r.stdout and "max_tool_calls" in r.stdout, r.stdout + r.stderr)
        log = r.audit_log
    finally:
        s.close()
    added = [x for x in records(log) if x.get("event") == "tool_added"] if log else []
    check("the session's log records the addition, with the source's digest",
          len(added) == 1 and added[0].get("tool") == "double"
          and added[0].get("source_sha256") == hashlib.sha256(DOUBLE.encode()).hexdigest(), added)
    check("the session's log verifies", log is not None and verifies(log), log)


sb = Sandbox(runtime=backend, audit_dir=audit_dir, tollgate=TG, max_custom_tools=2)
try:
    sb.create_tool("add", ADD, description="Add two numbers; returns {sum}.",
                   schema={"type": "object", "required": ["a", "b"],
                           "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
                   deny="a > 1000")
    r = sb.run("from tollgate import add, ToolDenied\n"
               "print('sum', add(a=2, b=40)['sum'])\n"
               "try:\n    add(a=5000, b=1)\nexcept ToolDenied as e:\n    print('refused:', e)\n")
    check("a tool created at run time is called from a later program", "sum 42" in r.stdout, r.stdout + r.stderr)
    check("its rule is the gate's: a > 1000 is denied", "refused: denied" in r.stdout, r.stdout)
    digest = hashlib.sha256(ADD.encode()).hexdigest()
    recs = records(r.audit_log)
    ran = [x for x in recs if x.get("event") == "call" and x.get("tool") == "add" and x.get("outcome") == "ok"]
    check("the call's audit record carries the source's sha256",
          len(ran) == 1 and ran[0].get("source_sha256") == digest, ran)
    check("the audit log verifies", verifies(r.audit_log), r.audit_log)
    check("the policy entry names the digest", sb.policy["tools"]["add"].get("source_sha256") == digest,
          sb.policy["tools"].get("add"))

    sb.create_tool("probe", PROBE, description="Tries to reach the host.", timeout=20)
    r = sb.run("from tollgate import probe\nimport json\n"
               "print(json.dumps(probe(path=%r, port=%d, marker=%r)))" % (secret, port, marker))
    try:
        got = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        got = {}
    check("the tool's code cannot read a host file", str(got.get("file", "")).startswith("refused")
          and "host-secret" not in r.stdout, got)
    check("the tool's code wrote nothing on the host", not os.path.exists(marker), got)
    check("the tool's code cannot reach the host's loopback",
          str(got.get("loopback", "")).startswith("refused") and not accepted, (got, accepted))
    check("the tool's code cannot open a network connection", str(got.get("net", "")).startswith("refused"), got)
    check("the tool's code runs unprivileged, not as the host's root", got.get("uid") not in (None, 0), got)
    check("the tool's code has no tools of its own (its gate refuses the call)",
          str(got.get("tools", "")).startswith("refused: BudgetExhausted: budget_exhausted: max_tool_calls"),
          got)

    try:
        sb.create_tool("third", "def third():\n    return 3\n", description="Three.")
        check("a third tool over max_custom_tools=2 is refused", False, "no error")
    except CustomToolError as e:
        check("a third tool over max_custom_tools=2 is refused", "max_custom_tools is 2" in str(e), e)
    r = sb.run("from tollgate import third", check=False)
    check("the refused tool is not in the policy", r.exit_status != 0 and "third" not in sb.policy["tools"],
          r.stderr)

    # max_tool_calls 5: the session below spends 2 before its tool is
    # added and must find them still spent after (and after a sidecar
    # restart).
    failing = Sandbox(runtime=backend, audit_dir=audit_dir, tollgate=TG, budgets={"max_tool_calls": 5})
    try:
        failing.create_tool("boom", "def boom():\n    raise ValueError('no')\n", description="Fails.")
        r = failing.run("from tollgate import boom, ToolFailed\n"
                        "try:\n    boom()\nexcept ToolFailed as e:\n    print('failed:', e)\n")
        check("a tool whose code raises answers ToolFailed with its error",
              "failed:" in r.stdout and "ValueError: no" in r.stdout, r.stdout + r.stderr)
        session_tool_added_live(failing)
        with failing.session() as s:
            r = s.run("from tollgate import double\nprint('double', double(x=21))")
            check("Session.create_tool: a later session calls it", "double 42" in r.stdout,
                  r.stdout + r.stderr)
    finally:
        failing.close()
except (ProgramFailed, CustomToolError) as e:
    check("no program failed and no tool was refused", False,
          "%s\n%s" % (e, e.result.stderr if isinstance(e, ProgramFailed) else ""))
finally:
    sb.close()

# A host whose ceiling forbids agent-written tools: the SDK refuses at
# create_tool, naming the ceiling; nothing is added.
ceiling = os.path.join(work, "custom-ceiling-%s.json" % backend)
with open(ceiling, "w") as f:
    json.dump({"version": 1, "tools": {}, "budgets": {"max_custom_tools": 0}}, f)
cfg = os.path.join(work, "custom-host-%s.json" % backend)
with open(cfg, "w") as f:
    json.dump({"policy_ceiling": ceiling}, f)
ceiled = Sandbox(runtime=backend, audit_dir=audit_dir, tollgate=TG, host_config=cfg)
try:
    ceiled.create_tool("add", ADD, description="Add two numbers.")
    check("a ceiling with max_custom_tools 0 refuses create_tool", False, "no error")
except CustomToolError as e:
    check("a ceiling with max_custom_tools 0 refuses create_tool",
          "policy ceiling %s forbids it" % ceiling in str(e) and "forbids agent-written tools" in str(e), e)
finally:
    check("the refused tool is not the Sandbox's", not [t for t in ceiled.tools if t.name == "add"])
    ceiled.close()

listener.close()
print("# %s: %d failed" % (backend, common.failures))
common.exit_by_checks()

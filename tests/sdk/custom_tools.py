"""Agent-written tools (Sandbox.create_tool, issue 43) against real
containers, one backend per run.

Usage: custom_tools.py BACKEND WORKDIR    (as root, after `make`)
Prints `ok - NAME` / `FAIL - NAME` lines for
tests/integration/test_custom_tools.sh: a tool created at run time and
called from a later program, its source digest on the audit record of
each call (the log verifies), its rules applied by the gate, the cap
(max_custom_tools) and a ceiling that forbids such tools, and its code
kept from host files, the host's processes and the network.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk"))
from tollgate_sdk import CustomToolError, ProgramFailed, Sandbox  # noqa: E402

backend, work = sys.argv[1], os.path.abspath(sys.argv[2])
audit_dir = os.path.join(work, "audit-custom-" + backend)
TG = os.environ.get("TG") or os.path.join(REPO, "build", "tollgate")
failures = 0


def check(name, cond, detail=""):
    global failures
    if cond:
        print("ok - %s: %s" % (backend, name))
    else:
        failures += 1
        print("FAIL - %s: %s%s" % (backend, name, (": " + str(detail)[-1500:]) if detail else ""))
    sys.stdout.flush()


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def verifies(path):
    return subprocess.run([TG, "audit", "verify", path], capture_output=True).returncode == 0


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

    failing = Sandbox(runtime=backend, audit_dir=audit_dir, tollgate=TG)
    try:
        failing.create_tool("boom", "def boom():\n    raise ValueError('no')\n", description="Fails.")
        r = failing.run("from tollgate import boom, ToolFailed\n"
                        "try:\n    boom()\nexcept ToolFailed as e:\n    print('failed:', e)\n")
        check("a tool whose code raises answers ToolFailed with its error",
              "failed:" in r.stdout and "ValueError: no" in r.stdout, r.stdout + r.stderr)
        with failing.session() as s:
            s.create_tool("double", "def double(x):\n    return 2 * x\n", description="Twice x.")
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
print("# %s: %d failed" % (backend, failures))
sys.exit(1 if failures else 0)

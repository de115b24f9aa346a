"""The SDK end to end against real containers, one backend per run.

Usage: integration.py BACKEND WORKDIR    (as root, after `make`)
Prints `ok - NAME` / `FAIL - NAME` lines for tests/integration/test_sdk.sh.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk"))
from tollgate_sdk import (CellTimeout, PolicyError, ProgramFailed, Sandbox, SandboxUnavailable,  # noqa: E402
                          repair, tool)

backend, work = sys.argv[1], os.path.abspath(sys.argv[2])
audit_dir = os.path.join(work, "audit-" + backend)
TG = os.environ.get("TG") or os.path.join(REPO, "build", "tollgate")
failures = 0


failed_names = []


def check(name, cond, detail=""):
    global failures
    if cond:
        print("ok - %s: %s" % (backend, name))
    else:
        failures += 1
        failed_names.append("%s%s" % (name, (": " + str(detail)[-300:]) if detail else ""))
        print("FAIL - %s: %s%s" % (backend, name, (": " + str(detail)[-1500:]) if detail else ""))
    sys.stdout.flush()


def verifies(path):
    return subprocess.run([TG, "audit", "verify", path], capture_output=True).returncode == 0


# ---- the orders example (bundles/examples/sdk/orders_sdk.py) ----------------
example = os.path.join(REPO, "bundles", "examples", "sdk", "orders_sdk.py")
p = subprocess.run([sys.executable, example], capture_output=True, text=True, timeout=300,
                   env=dict(os.environ, RUNTIME=backend, AUDIT_DIR=audit_dir, TOLLGATE=TG))
out = p.stdout
check("orders_sdk.py exits 0", p.returncode == 0, p.stdout + p.stderr)
check("orders_sdk: EU total 1218.5", "EU total: 1218.5" in out, out)
refunds = json.loads(next((l.split(":", 1)[1] for l in out.splitlines() if l.startswith("refunds made:")), "[]"))
check("orders_sdk: the small refund ran exactly once",
      refunds == [{"order_id": "A-1003", "amount": 25.0, "reason": "parcel arrived damaged"}], refunds)
check("orders_sdk: the large refund was denied by the approval callback",
      "approval callback: refusing issue_refund" in out and
      'issue_refund {"order_id": "A-1004", "amount": 640, "reason": "order cancelled"}: deny by uid:0 -> denied' in out,
      out)
log = next((l.rsplit(" ", 1)[1] for l in out.splitlines() if "audit log:" in l), "")
check("orders_sdk: its audit log verifies", log and verifies(log), log)
with open(example, encoding="utf-8") as f:
    code_lines = [l for l in f if l.strip() and not l.strip().startswith("#")]
doc_lines = 3  # the module docstring
check("orders_sdk: under 40 lines of user code", len(code_lines) - doc_lines < 40, len(code_lines))


# ---- sessions: two cells, one /tmp, one budget; an async tool -----------------
@tool
async def slow_add(a: int, b: int) -> int:
    """Add, asynchronously."""
    import asyncio
    await asyncio.sleep(0.01)
    return a + b


sb = Sandbox(tools=[slow_add], budgets={"max_tool_calls": 3}, runtime=backend, audit_dir=audit_dir, tollgate=TG)
try:
    with sb.session() as s:
        r1 = s.run("from tollgate import slow_add\n"
                   "open('/tmp/shared', 'w').write(str(slow_add(a=1, b=2)))\nprint(slow_add(a=20, b=22))\n")
        check("session cell 1: the async tool answers", r1.stdout == "42\n", r1.stdout + r1.stderr)
        r2 = s.run("from tollgate import slow_add, BudgetExhausted\nprint(open('/tmp/shared').read())\n"
                   "print(slow_add(a=5, b=5))\ntry:\n    slow_add(a=6, b=6)\n"
                   "except BudgetExhausted as e:\n    print('refused:', e.code)\n")
        check("session cell 2 reads the file cell 1 wrote in /tmp", r2.stdout.startswith("3\n"), r2.stdout + r2.stderr)
        check("session: the budget spans cells (the 4th call is budget_exhausted)",
              r2.stdout.endswith("10\nrefused: budget_exhausted\n"), r2.stdout)
        check("session: each cell's calls, the session's budget",
              [c.outcome for c in r2.calls] == ["ok", "budget_exhausted"] and r2.budget_used["calls"] == 4,
              (r2.calls, r2.budget_used))
        cid = s.cid
    check("session: its container is gone after the with block",
          cid not in subprocess.run([TG, "--root", sb.root, "list", "-q"], capture_output=True, text=True).stdout)
    check("session: its audit log verifies", verifies(r2.audit_log), r2.audit_log)
    # The async tool in a fresh container too.
    r = sb.run("from tollgate import slow_add\nprint(slow_add(a=2, b=3))\n")
    check("fresh run: the async tool answers", r.stdout == "5\n" and r.calls[0].outcome == "ok", r)
    # A session whose container is killed under it: the next cell says the
    # interpreter ended, at once, not that it ran past its timeout (it did
    # not: a liveness check asked twice within 50 ms answered "alive").
    s = sb.session()
    s.run("x = 1\n")
    state = json.loads(subprocess.run([TG, "--root", sb.root, "state", s.cid], capture_output=True,
                                      text=True).stdout)
    os.kill(int(state["pid"]), signal.SIGKILL)
    t0, raised = time.monotonic(), None
    try:
        s.run("print(x)\n", timeout=20)
    except ProgramFailed as e:
        raised = e
    check("a killed session's next cell fails at once as ended, not as a timeout",
          raised is not None and not isinstance(raised, CellTimeout) and "interpreter ended" in str(raised)
          and time.monotonic() - t0 < 10, (type(raised).__name__, str(raised)[-300:], time.monotonic() - t0))
finally:
    sb.close()


# ---- approval callbacks that deny (and one that breaks) ------------------------
seen = []


@tool(irreversible=True, approve="amount > 10")
def pay(to: str, amount: float) -> str:
    """Pay someone."""
    seen.append((to, amount))
    return "paid"


def refuse(call):
    seen.append(("asked", call.tool, call.args, call.reason))
    if call.args.get("to") == "mallory":
        raise RuntimeError("callback bug")
    return ("deny", "no invoice for %s" % call.args["to"])


sb = Sandbox(tools=[pay], approval=refuse, approval_timeout=30, runtime=backend, audit_dir=audit_dir, tollgate=TG)
try:
    r = sb.run("from tollgate import pay, ToolDenied\n"
               "print(pay(to='bob', amount=5))\n"
               "for who in ('carol', 'mallory'):\n"
               "    try:\n        pay(to=who, amount=500)\n"
               "    except ToolDenied as e:\n        print('denied', who, e.message)\n")
    check("approval: a small payment runs without asking", r.stdout.startswith("paid\n"), r.stdout + r.stderr)
    check("approval: the callback sees tool, args and the rule's reason",
          ("asked", "pay", {"to": "carol", "amount": 500}, "pay needs approval when amount > 10") in seen, seen)
    check("approval: the callback's deny, with its reason, reaches the program",
          "denied carol" in r.stdout and "no invoice for carol" in r.stdout, r.stdout)
    check("approval: a callback that raises denies", "denied mallory" in r.stdout, r.stdout)
    check("approval: the denied payments never ran", [x for x in seen if x[0] != "asked"] == [("bob", 5)], seen)
    check("approval: the audit log names the decider",
          [(c.decision, c.approver) for c in r.calls] == [("allow", "policy"), ("deny", "uid:0"), ("deny", "uid:0")],
          r.calls)

    # ProgramFailed, for self-repair loops
    try:
        sb.run("import sys\nprint('partial')\nraise ValueError('model bug')\n")
        check("ProgramFailed is raised for a failing program", False)
    except ProgramFailed as e:
        check("ProgramFailed carries the exit status and stderr tail",
              e.exit_status == 1 and "ValueError: model bug" in e.stderr_tail and e.result.stdout == "partial\n",
              (e.exit_status, e.stderr_tail))
finally:
    sb.close()

# ---- approval="cli": a person runs the printed `tollgate approve` ------------------
import io  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402


class Tee(io.StringIO):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def write(self, text):
        with self.lock:
            return super().write(text)


person_said = []


def person(buf, stop):
    while not stop.wait(0.1):
        with buf.lock:
            m = re.search(r"^    (\S+ --root \S+ approve \S+ [0-9a-f]{32})$", buf.getvalue(), re.M)
        if m:
            p = subprocess.run(m.group(1).split(), capture_output=True, text=True)
            person_said.append((m.group(1), p.returncode, p.stdout))
            return


sb = Sandbox(tools=[pay], approval="cli", approval_timeout=60, runtime=backend, audit_dir=audit_dir, tollgate=TG)
buf, stop = Tee(), threading.Event()
old_stderr, sys.stderr = sys.stderr, buf
helper = threading.Thread(target=person, args=(buf, stop))
helper.start()
try:
    r = sb.run("from tollgate import pay\nprint(pay(to='dave', amount=99))\n")
finally:
    sys.stderr = old_stderr
    stop.set()
    helper.join()
    sb.close()
check("approval=cli prints the exact approve command", person_said and person_said[0][1] == 0, (person_said, buf.getvalue()))
check("approval=cli: the person's approval lets the call run", r.stdout == "paid\n" and ("dave", 99) in seen, r.stdout)
check("approval=cli: the audit log names the person", [c.approver for c in r.calls] == ["uid:0"], r.calls)

# ---- run_shell, on a rootfs with a shell -------------------------------------------
shell_rootfs = os.environ.get("TOLLGATE_SHELL_ROOTFS")
if shell_rootfs:
    sb = Sandbox(tools=[slow_add], runtime=backend, audit_dir=audit_dir, tollgate=TG, image=shell_rootfs)
    try:
        r = sb.run_shell("echo from sh; /run/tollgate/tollgate-call slow_add '{\"a\": 1, \"b\": 1}'")
        check("run_shell: sh runs and reaches a governed tool with tollgate-call",
              r.stdout.split() == ["from", "sh", "2"] and r.calls[0].outcome == "ok", (r.stdout, r.stderr))
        with sb.session() as s:
            s.run_shell("echo kept > /tmp/f")
            r = s.run("print(open('/tmp/f').read().strip())")
        check("run_shell in a session shares /tmp with a Python cell", r.stdout == "kept\n", r)
    finally:
        sb.close()

# ---- a hostile program's output is bounded; a hung one is killed ----------------
sb = Sandbox(runtime=backend, audit_dir=audit_dir, tollgate=TG, output_max=65536)
try:
    r = sb.run("import sys\nfor _ in range(64):\n    sys.stdout.write('x' * 65536)\nprint('end')\n")
    check("output_max: 4 MiB of stdout is cut to the cap, and says so",
          r.exit_status == 0 and r.stdout.startswith("x" * 65536) and len(r.stdout) < 70000 and
          "more bytes of stdout were cut" in r.stdout and r.stdout_cut == 64 * 65536 + 4 - 65536,
          (r.exit_status, len(r.stdout), r.stdout[-200:], r.stdout_cut))
    r = sb.run("import time\nprint('started', flush=True)\ntime.sleep(600)\n", check=False, timeout=5)
    check("timeout: a hung program is killed and reported", r.timed_out and r.exit_status != 0 and
          "started" in r.stdout and "was killed" in r.stderr and r.timeout_how == "killed", r)
    try:
        sb.run("import time\ntime.sleep(600)\n", timeout=3)
        check("timeout: check=True raises CellTimeout", False)
    except CellTimeout as e:
        check("timeout: check=True raises CellTimeout (a ProgramFailed)", isinstance(e, ProgramFailed) and
              e.how == "killed" and "ran past 3 s" in str(e), e)
    check("timeout: its container is gone", r.container_id not in subprocess.run(
        [TG, "--root", sb.root, "list", "-q"], capture_output=True, text=True).stdout)
finally:
    sb.close()

# ---- new session, files, refusal, streaming, async, approval and cap tests ------
import sdk_features  # noqa: E402
sdk_features.main(backend, work, audit_dir, TG, check)

# ---- PolicyError with tollgate's positioned messages ---------------------------
try:
    Sandbox(policy={"version": 1, "tools": {"x": {"backend": {"type": "builtin", "name": "echo"},
                                                  "rules": [{"effect": "aprove"}]}}},
            runtime=backend, audit_dir=audit_dir, tollgate=TG).run("print(1)")
    check("PolicyError for a broken policy", False)
except PolicyError as e:
    check("PolicyError names line, column and field",
          any(":" in m and "tools.x.rules[0].effect" in m and "aprove" in m for m in e.messages), e.messages)

# ---- self-repair: budgets and irreversible calls span attempts -----------------
ledger = []


@tool(irreversible=True, cost=1)
def refund(order_id: str, amount: float) -> dict:
    """Refund an order."""
    ledger.append(order_id)
    return {"refunded": order_id}


attempts = ["from tollgate import refund\nrefund(order_id='A-1', amount=5.0)\nprint(1 + 'x')\n",
            "from tollgate import refund, ToolDenied\ntry:\n    refund(order_id='A-1', amount=5.0)\n"
            "except ToolDenied as e:\n    print('not again:', e.message)\nprint('done')\n"]
fed = []
sb = Sandbox(tools=[refund], budgets={"max_tool_calls": 10, "max_cost": 5}, runtime=backend,
             audit_dir=audit_dir, tollgate=TG)
try:
    outcome = repair(sb, lambda fb: (fed.append(fb), attempts[len(fed) - 1])[1], retries=1,
                     once={"refund": ["order_id"]})
    check("repair: the second attempt succeeds", outcome.succeeded and len(outcome.attempts) == 2,
          [a.stderr for a in outcome.attempts])
    check("repair: the stderr tail was fed back", fed[1] and "TypeError" in fed[1], fed)
    check("repair: the refund a failed attempt made is refused the second time, by the host policy",
          ledger == ["A-1"] and "already done by an earlier attempt" in outcome.attempts[1].stdout,
          (ledger, outcome.attempts[-1].stdout))
finally:
    sb.close()

# ---- SandboxUnavailable: never run on the host ---------------------------------
marker = os.path.join(work, "ran-on-host-" + backend)
program = "open(%r, 'w').write('escaped')\n" % marker
for how, kw in (("runtime_path", {"runtime_path": "/nonexistent/runsc"}),
                ("host config runtime_path", {"host_config": os.path.join(work, "missing-runsc.json")})):
    with open(os.path.join(work, "missing-runsc.json"), "w") as f:
        json.dump({"runtime": "runsc", "runtime_path": "/nonexistent/runsc"}, f)
    try:
        Sandbox(runtime="runsc", audit_dir=audit_dir, tollgate=TG, **kw).run(program)
        check("SandboxUnavailable when runsc is missing (%s)" % how, False)
    except SandboxUnavailable as e:
        check("SandboxUnavailable when runsc is missing (%s) names the fix" % how,
              "runsc (gVisor) not found at /nonexistent/runsc" in str(e) and "make deps" in str(e), e)
    check("nothing ran on the host (%s)" % how, not os.path.exists(marker))
# A host config whose runtime_path is runsc's (it names no runtime: runsc
# is the default) does not give runc's sandbox that binary.
if backend == "runc":
    with open(os.path.join(work, "runsc-path.json"), "w") as f:
        json.dump({"runtime_path": shutil.which("runsc") or "/usr/bin/runsc"}, f)
    sb = Sandbox(runtime="runc", audit_dir=audit_dir, tollgate=TG,
                 host_config=os.path.join(work, "runsc-path.json"))
    try:
        r = sb.run("print('ran under runc')")
        check("runc with a host config naming runsc's runtime_path runs runc", r.stdout == "ran under runc\n",
              (r.stdout, r.stderr))
    finally:
        sb.close()
try:
    Sandbox(runtime=backend, audit_dir=audit_dir, tollgate="/nonexistent/tollgate").run(program)
    check("SandboxUnavailable when the tollgate binary is missing", False)
except SandboxUnavailable as e:
    check("SandboxUnavailable when the tollgate binary is missing", "make install" in str(e), e)
try:
    Sandbox(runtime=backend, audit_dir=audit_dir, tollgate=TG, image="/nonexistent/rootfs").run(program)
    check("SandboxUnavailable without a rootfs", False)
except SandboxUnavailable as e:
    check("SandboxUnavailable without a rootfs names python.sh", "python.sh" in str(e), e)
check("nothing ran on the host at all", not os.path.exists(marker))

# The failures again at the end, where the runner's tail shows them.
for n in failed_names:
    print("# %s failed: %s" % (backend, n.replace("\n", " ")))
sys.exit(1 if failures else 0)

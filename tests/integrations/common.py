"""What the framework drivers share: ok/FAIL lines, the host's tools with
their governance, the program the scripted models write, and the audit
log checks.  Each driver runs one backend: DRIVER.py BACKEND WORKDIR."""
import contextlib
import io
import json
import os
import re
import runpy
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk"))
from tollgate_sdk import Sandbox, live_sessions, tool  # noqa: E402

TG = os.environ.get("TG") or os.path.join(REPO, "build", "tollgate")
backend, work = sys.argv[1], os.path.abspath(sys.argv[2])
failures = 0
refunds = []   # the refunds that really ran, on the host


def check(name, cond, detail=""):
    global failures
    if cond:
        print("ok - %s: %s" % (backend, name))
    else:
        failures += 1
        print("FAIL - %s: %s%s" % (backend, name, (": " + str(detail)[-1500:]) if detail else ""))
    sys.stdout.flush()


def exit_by_checks():
    """End the driver: status 1 when a check failed, else 0."""
    sys.exit(1 if failures else 0)


def verifies(path):
    return bool(path) and subprocess.run([TG, "audit", "verify", path], capture_output=True).returncode == 0


@tool
def lookup_order(order_id: str) -> dict:
    """An order's status and total."""
    return {"order_id": order_id, "status": "delivered", "total": 120.0}


@tool(deny=True)
def read_secret(name: str) -> str:
    """Never allowed: the policy denies every call."""
    return "s3cr3t"


@tool(approve="amount > 50", irreversible=True)
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order; over 50 waits for a person."""
    refunds.append((order_id, amount))
    return "refunded %s to %s" % (amount, order_id)


def sandbox(name):
    """One Sandbox per driver and backend, shared by its scenarios; the
    framework decides approvals, so approval=None."""
    return Sandbox(tools=[lookup_order, read_secret, issue_refund], runtime=backend, tollgate=TG,
                   audit_dir=os.path.join(work, "audit-%s-%s" % (name, backend)),
                   root=os.path.join(work, "root-%s-%s" % (name, backend)), timeout=120,
                   approval_timeout=60)


# What the scripted model writes: proof that it runs in the container,
# one allowed call, one denied by policy, two parked for approval (the
# first approved, the second denied by whoever answers).
PROGRAM = """\
import os, socket
from tollgate import lookup_order, read_secret, issue_refund, ToolDenied
print("in tollgate:", os.path.isdir("/run/tollgate"), "host:", socket.gethostname(), "uid:", os.getuid())
print("lookup:", lookup_order(order_id="A-1")["status"])
try:
    read_secret(name="db")
except ToolDenied as e:
    print("secret refused:", e)
print("refund 1:", issue_refund(order_id="A-1", amount=80))
try:
    issue_refund(order_id="A-2", amount=500)
except ToolDenied as e:
    print("refund 2 refused:", e)
last_order = "A-1"
"""

# The next program of the same conversation: the session kept its state.
SECOND = """print("state carried over:", last_order)
"""

# An abandoned program: parks once and is never answered.
PARKS = """\
from tollgate import issue_refund
print(issue_refund(order_id="A-9", amount=900))
"""


def audit_log_of(text):
    """The audit log the tool's report names."""
    for line in text.splitlines():
        if "audit log: " in line:
            return line.rsplit("audit log: ", 1)[1].strip()
    return ""


def calls_of(log):
    """[(tool, args, decision, approver, reason)] of the log's call records."""
    out = []
    with open(log, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            # an irreversible tool's allowed call is its "intent" record
            if r.get("event") in ("call", "intent"):
                out.append((r.get("tool"), r.get("args"), r.get("decision"), r.get("approver"), r.get("reason")))
    return out


def check_program_report(text, what):
    """The report of PROGRAM after the two answers (approve, then deny)."""
    check(what + ": the code ran in the container (its /run/tollgate, its host name)",
          "in tollgate: True host: tollgate" in text, text)
    check(what + ": the allowed call ran", "lookup: delivered" in text, text)
    check(what + ": the policy denied read_secret", "secret refused: denied" in text, text)
    check(what + ": the approved refund ran", "refund 1: refunded 80" in text, text)
    check(what + ": the refund denied through the framework was refused", "refund 2 refused: denied" in text, text)
    log = audit_log_of(text)
    if log:
        calls = calls_of(log)
        decided = [(c[0], c[2], c[3]) for c in calls]
        check(what + ": the audit log has the four decisions, two of them by the SDK (uid:0)",
              ("lookup_order", "allow", "policy") in decided and ("read_secret", "deny", "policy") in decided
              and ("issue_refund", "allow", "uid:0") in decided and ("issue_refund", "deny", "uid:0") in decided,
              calls)


# What the LangGraph and Pydantic AI docs examples print: the refund
# parked, approved by the person's answer, run, and the audit log.
REFUND_EXAMPLE_PRINTS = [
    r"approve\? issue_refund \{'order_id': 'A-1', 'amount': 80(\.0)?\} - issue_refund needs approval",
    r"refunded 80\.0 to A-1", r"issue_refund .*: allow \(uid:0, ok\)", r"audit log: /"]


def run_doc_example(name, what, expects):
    """Run docs/integrations.md's NAME block (the script extracts it into
    WORKDIR) in this process, as written, under runsc (its Sandbox's
    default): its output must match each of expects."""
    path = os.path.join(work, name)
    if backend != "runsc":
        return
    if not os.path.exists(path):
        check(what + ": docs/integrations.md has the %s block" % name, False, path)
        return
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        err = ""
    except Exception as e:  # the check below shows it
        err = "%s: %s" % (type(e).__name__, e)
    text = out.getvalue()
    print("\n".join("   # " + l for l in text.splitlines()))
    for pattern in expects:
        check("%s: the docs example prints /%s/" % (what, pattern), not err and re.search(pattern, text), err or text)
    check(what + ": the docs example leaves no session", live_sessions() == 0, live_sessions())
    log = audit_log_of(text)
    check(what + ": the docs example's audit log verifies", verifies(log), log)
    if log.startswith("/var/log/tollgate/audit/"):
        os.remove(log)  # the example's Sandbox logs to the default directory

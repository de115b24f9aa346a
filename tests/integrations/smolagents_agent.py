"""smolagents' real CodeAgent on tollgate (tollgate_sdk.integrations.smolagents),
one backend per run, with a scripted model of smolagents' own kind (a Model
subclass returning fixed code actions: no network, no LLM).

Usage: smolagents_agent.py BACKEND WORKDIR    (as root, after `make`)
Prints `ok - NAME` / `FAIL - NAME` lines for tests/integration/test_int_smolagents.sh.

The agent's four steps: (1) the program shows where it runs (its own pid
namespace and hostname, the bridge area only the container has), calls an
allowed tool positionally and keeps a variable and a file; (2) a tool the
policy denies and one parked for approval and refused by the callback,
both caught as ToolDenied; (3) a denied call left uncaught, which fails the
step as an error the model is shown; (4) the variable and the file are
still there, and final_answer ends the run with the agent's result.  Then
a code action past its timeout is stopped and the session lives on, and a
tool with an image input is refused before any container starts.
"""
import os
import secrets
import socket
import subprocess

import common
from common import TG, backend, check, verifies, work
from smolagents import CodeAgent, Tool, tool
from smolagents.memory import ActionStep
from smolagents.models import ChatMessage, MessageRole, Model
from smolagents.monitoring import LogLevel, TokenUsage
from tollgate_sdk import TollgateSDKError
from tollgate_sdk.integrations.smolagents import StepFailed, TollgateExecutor

audit_dir = os.path.join(work, "audit-smolagents-" + backend)


# ---- the host's tools: what ran here is counted -------------------------------
ran = {"lookup_order": 0, "delete_records": 0, "issue_refund": 0}


@tool
def lookup_order(order_id: str) -> dict:
    """Look up one order.

    Args:
        order_id: the order's id, such as A-1.
    """
    ran["lookup_order"] += 1
    return {"id": order_id, "amount": 120.0, "served_by_pid": os.getpid(), "served_on": socket.gethostname()}


class DeleteRecords(Tool):
    name = "delete_records"
    description = "Delete every record of a table."
    inputs = {"table": {"type": "string", "description": "the table"}}
    output_type = "string"

    def forward(self, table):
        ran["delete_records"] += 1
        return "deleted " + table


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order. Irreversible.

    Args:
        order_id: the order's id.
        amount: how much to refund.
    """
    ran["issue_refund"] += 1
    return "refunded %s %s" % (order_id, amount)


POLICY = {"tools": {
    "delete_records": {"rules": [{"effect": "deny", "reason": "no deletions from agents"}]},
}}
# issue_refund is governed the other way: tollgate's @tool keywords.
GOVERNANCE = {"issue_refund": {"irreversible": True, "approve": "amount > 50"}}

asked = []


def approval(request):
    asked.append((request.tool, dict(request.args), request.reason))
    return False, "the approver says no"


# ---- the scripted model -------------------------------------------------------
MARKER = "/tmp/tg-smol-%s" % secrets.token_hex(6)
ACTIONS = [
    """import os, socket
order = lookup_order("A-1")
print("order", order["id"], order["amount"])
print("pids", os.getpid(), order["served_by_pid"])
print("hosts", socket.gethostname(), order["served_on"])
print("bridge area", os.path.isdir("/run/tollgate"))
open(%r, "w").write("written inside")
subtotal = order["amount"]
subtotal""" % MARKER,
    """try:
    delete_records(table="orders")
except ToolDenied as e:
    print("delete refused:", e)
try:
    issue_refund(order_id="A-1", amount=subtotal)
except ToolDenied as e:
    print("refund refused:", e)
subtotal = subtotal + 5""",
    """delete_records(table="customers")""",
    """print("marker:", open(%r).read())
final_answer({"subtotal": subtotal, "refund": "refused"})""" % MARKER,
]


class ScriptedModel(Model):
    """Returns the next fixed code action; keeps what it was shown."""

    def __init__(self, actions):
        super().__init__(model_id="scripted")
        self.actions = list(actions)
        self.seen = []

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        self.seen.append("\n".join(str(m.content if hasattr(m, "content") else m.get("content")) for m in messages))
        code = self.actions.pop(0)
        return ChatMessage(role=MessageRole.ASSISTANT, content="Thought: next step.\n<code>\n%s\n</code>" % code,
                           token_usage=TokenUsage(input_tokens=1, output_tokens=1))


model = ScriptedModel(ACTIONS)
executor = TollgateExecutor(policy=POLICY, governance=GOVERNANCE, approval=approval, approval_timeout=30, runtime=backend,
                            audit_dir=audit_dir, tollgate=TG, timeout=60)
agent = CodeAgent(tools=[lookup_order, DeleteRecords(), issue_refund], model=model, executor=executor,
                  max_steps=6, verbosity_level=LogLevel.OFF)
cid = ""
try:
    answer = agent.run("Refund order A-1 if you may.")
    cid = executor.session.cid if executor.session else ""
    # A code action past its timeout is interrupted; the model is told, the
    # session and its variables live on (the executor's interface, as the
    # agent calls it).
    executor.timeout = 2
    try:
        executor("import time\nprint('sleeping')\ntime.sleep(30)")
        timed_out = None
    except StepFailed as e:
        timed_out = e
    executor.timeout = 60
    after = executor("subtotal")
finally:
    agent.cleanup()

# ---- what the agent saw -----------------------------------------------------------
check("final_answer returns the agent's result", answer == {"subtotal": 125.0, "refund": "refused"}, answer)
steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
check("four action steps", len(steps) == 4, len(steps))
check("the last step is the final answer's, its output the answer",
      steps[-1] is agent.memory.steps[-1] and steps[-1].is_final_answer and steps[-1].action_output == answer,
      agent.memory.steps[-1])
s1 = steps[0].observations or ""
check("step 1: its logs are the program's stdout", "order A-1 120.0" in s1 and s1.startswith("Execution logs:"), s1)
check("step 1: the last expression is the step's output",
      steps[0].action_output == 120.0 and "Last output from code snippet:\n120.0" in s1, s1)
pids = next((l.split()[1:] for l in s1.splitlines() if l.startswith("pids ")), ["?", "?"])
check("step 1: the program runs in a pid namespace of its own, the tool in this process",
      pids[1] == str(os.getpid()) and pids[0] != pids[1] and int(pids[0]) < 100, pids)
hosts = next((l.split()[1:] for l in s1.splitlines() if l.startswith("hosts ")), ["?", "?"])
check("step 1: the program's hostname is the container's", hosts[1] == socket.gethostname() and hosts[0] != hosts[1],
      hosts)
check("step 1: the program sees the bridge area only the container has",
      "bridge area True" in s1 and not os.path.isdir("/run/tollgate/calls"), s1)
check("the file the program wrote is in the container's /tmp, not the host's", not os.path.exists(MARKER))
check("the model was shown step 1's logs", len(model.seen) >= 2 and "order A-1 120.0" in model.seen[1])
s2 = steps[1].observations or ""
check("step 2: the policy's denial reached the program as ToolDenied",
      "delete refused: denied: no deletions from agents" in s2, s2)
check("step 2: the parked refund, refused by the callback, reached it as ToolDenied",
      "refund refused: denied by uid:0: the approver says no" in s2, s2)
check("step 2: the approval callback was asked once, with the call's arguments",
      asked == [("issue_refund", {"order_id": "A-1", "amount": 120}, "issue_refund needs approval when amount > 50")], asked)
err = str(steps[2].error or "")
check("step 3: an uncaught refusal is the step's error, shown to the model",
      "ToolDenied" in err and "no deletions from agents" in err and "<step 3>" in err, err)
check("step 3's error reached the model", len(model.seen) >= 4 and "no deletions from agents" in model.seen[3])
s4 = steps[3].observations or ""
check("step 4: the variable and the file persisted between steps",
      "marker: written inside" in s4 and steps[3].is_final_answer, s4)
check("only the allowed tool ran on the host",
      ran == {"lookup_order": 1, "delete_records": 0, "issue_refund": 0}, ran)

check("a step past its timeout fails with StepFailed, its logs kept",
      timed_out is not None and "timeout of 2 s" in str(timed_out) and timed_out.logs == "sleeping\n", timed_out)
check("the session and its variables live on after the timeout",
      after.output == 125.0 and not after.is_final_answer, after)

# ---- what the gate recorded --------------------------------------------------------
calls = [(c.tool, c.decision, c.approver) for c in executor.calls]
check("every call crossed the gate: one allowed, three denied (policy, approver, policy)",
      [(t, d) for t, d, _ in calls] == [("lookup_order", "allow"), ("delete_records", "deny"),
                                         ("issue_refund", "deny"), ("delete_records", "deny")], calls)
check("the refund's denial is the approver's (the SDK's callback)", calls[2][2] == "uid:0", calls)
logs = executor.audit_logs
check("the session wrote one audit log", len(logs) == 1, logs)
check("the audit log verifies", logs and verifies(logs[0]), logs)
listed = subprocess.run([TG, "list", "--all-roots"], capture_output=True, text=True).stdout
check("cleanup() removed the session's container", cid and cid not in listed, cid)

# ---- bad input: a tool that cannot cross the gate is refused by name ------------------
class Picture(Tool):
    name = "caption"
    description = "Caption an image."
    inputs = {"image": {"type": "image", "description": "the picture"}}
    output_type = "string"

    def forward(self, image):
        return "a cat"


try:
    TollgateExecutor(runtime=backend, tollgate=TG).send_tools({"caption": Picture()})
    check("an image input is refused", False)
except Exception as e:  # ToolDefinitionError, before any container
    check("an image input is refused, naming the tool, the input and the fix",
          type(e).__name__ == "ToolDefinitionError" and "caption" in str(e) and "'image'" in str(e)
          and "JSON" in str(e), e)
check("StepFailed is an SDK error", issubclass(StepFailed, TollgateSDKError))
common.exit_by_checks()

"""tollgate_sdk.integrations.openai_agents with the real Agents SDK
(openai-agents, `agents`) and real containers, one backend per run.  The
model is the SDK's own ScriptedModel (agents.testing): fixed responses, a
run_python call with the code then the final output; no network, no LLM.

Usage: openai_agents_run.py BACKEND WORKDIR    (as root, after `make`)
Prints `ok - NAME` / `FAIL - NAME` lines for
tests/integration/test_int_openai_agents.sh.

Run 1: the program runs in tollgate (its container's uid and
/run/tollgate), one governed call allowed (get_order), one denied by
policy (a refund over 1000), one parked for approval (a refund over 50):
the run stops with the SDK's approval interruption while the refund waits,
state.approve answers it and the resumed run returns the program's output.
Run 2: the session kept the first program's variable; its parked refund is
rejected through a state serialised to a string and loaded again
(state.reject with a message), which denies tollgate's parked call with
that message.  Run 3: a run abandoned while parked; close() denies the call
and removes the container.  Every audit log verifies.
"""
import asyncio
import json
import os
import time

import common
from agents import Agent, RunConfig, Runner, RunState, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from common import TG, backend, check, verifies, work
from tollgate_sdk import live_sessions, tool
from tollgate_sdk.integrations.openai_agents import TollgateCodeTool

audit_dir = os.path.join(work, "audit-oai-" + backend)
set_tracing_disabled(True)   # no trace export: no network


ORDERS = {"A-1": {"id": "A-1", "amount": 120.0, "region": "EU"},
          "A-2": {"id": "A-2", "amount": 95.0, "region": "US"}}
refunds = []


@tool(max_calls=10)
def get_order(order_id: str) -> dict:
    """One order: id, amount, region."""
    return ORDERS[order_id]


@tool(irreversible=True, cost=1, deny="amount > 1000", approve="amount > 50")
def issue_refund(order_id: str, amount: float) -> dict:
    """Refund part of an order. Irreversible."""
    refunds.append((order_id, amount))
    return {"refunded": amount, "order_id": order_id}


PROGRAM_1 = """\
import os
from tollgate import get_order, issue_refund, ToolDenied
print("inside: uid", os.getuid(), "bridge", os.path.isdir("/run/tollgate"))
order = get_order(order_id="A-1")
print("order", order["id"], order["amount"])
try:
    issue_refund(order_id="A-1", amount=5000)
except ToolDenied as e:
    print("policy said:", e)
print("refund", issue_refund(order_id="A-1", amount=80))
kept = 41
"""

PROGRAM_2 = """\
from tollgate import issue_refund, ToolDenied
print("kept", kept + 1)
try:
    issue_refund(order_id="A-2", amount=90)
except ToolDenied as e:
    print("person said:", e)
"""

PROGRAM_4 = """\
from tollgate import issue_refund, ToolDenied
print("first", issue_refund(order_id="A-2", amount=60))
try:
    issue_refund(order_id="A-2", amount=70)
except ToolDenied as e:
    print("second:", e)
"""

PROGRAM_5 = """\
from tollgate import issue_refund
print(issue_refund(order_id="A-2", amount=%d))
"""

PROGRAM_3 = """\
from tollgate import issue_refund
issue_refund(order_id="A-2", amount=65)
"""


def tool_output(model, call_index):
    """The run_python output the model was given in its call_index-th call."""
    items = model.calls[call_index].input
    outs = [i.get("output") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return str(outs[-1]) if outs else ""


def wait_until(pred, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def audit_records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


async def main():
    code = TollgateCodeTool(tools=[get_order, issue_refund], runtime=backend, audit_dir=audit_dir, tollgate=TG,
                            timeout=60, approval_timeout=60)
    cfg = RunConfig(tracing_disabled=True)

    # ---- run 1: allowed, denied by policy, parked and approved ----------------
    model = ScriptedModel([[function_call("run_python", {"code": PROGRAM_1}, call_id="call-1")],
                           [assistant_message("refunded 80 on A-1")]])
    agent = Agent(name="ops", instructions="Use run_python.", model=model, tools=[code.tool])
    t0 = time.monotonic()
    result = await Runner.run(agent, "refund A-1", run_config=cfg)
    check("run 1 stops with one approval interruption for run_python",
          len(result.interruptions) == 1 and result.interruptions[0].tool_name == "run_python"
          and result.interruptions[0].call_id == "call-1", result.interruptions)
    item = result.interruptions[0] if result.interruptions else None
    parked = code.pending(item) if item else None
    check("the interruption names tollgate's parked call: issue_refund 80 on A-1",
          parked is not None and parked.tool == "issue_refund"
          and parked.args == {"order_id": "A-1", "amount": 80}, parked)
    check("while interrupted the refund has not run (the program is parked in its container)",
          refunds == [], refunds)
    check("the description the model gets lists the governed tools",
          "get_order(*, order_id: str)" in code.tool.description and "issue_refund(" in code.tool.description,
          code.tool.description)
    state = result.to_state()
    state.approve(item)
    result = await Runner.run(agent, state, run_config=cfg)
    check("run 1 resumes to the final output", result.final_output == "refunded 80 on A-1", result.final_output)
    check("the approved refund ran once", refunds == [("A-1", 80.0)], refunds)
    out = tool_output(model, 1)
    print("   # run 1 tool output:\n" + "\n".join("   #   " + l for l in out.splitlines()))
    check("the code ran in tollgate's container (uid 65534, the bridge at /run/tollgate)",
          "inside: uid 65534 bridge True" in out, out)
    check("the model got the allowed get_order's answer", "order A-1 120" in out, out)
    check("the policy's deny reached the program", "policy said: denied" in out, out)
    check("the approved refund's answer reached the program",
          "refund {'refunded': 80, 'order_id': 'A-1'}" in out or "refund {'refunded': 80.0, 'order_id': 'A-1'}"
          in out, out)
    check("the model got every governed call with its decision",
          '- get_order {"order_id": "A-1"}: allow' in out and '"amount": 5000' in out
          and '- issue_refund {"amount": 80, "order_id": "A-1"}: allow (approved by a person, uid:0)' in out, out)
    r1 = code.result("call-1")
    check("code.result gives the tollgate Result", r1 is not None and r1.exit_status == 0, r1)
    if r1 is not None:
        dec = [(c.tool, c.decision, c.approver, c.outcome) for c in r1.calls]
        print("   # run 1 calls from the audit log: %s" % dec)
        check("the audit log: get_order allowed, the 5000 refund denied by policy, the 80 one "
              "approved by uid:0 (the SDK) and run",
              len(dec) == 3 and dec[0][:2] == ("get_order", "allow")
              and dec[1][:2] == ("issue_refund", "deny") and r1.calls[1].args.get("amount") == 5000
              and dec[2][:3] == ("issue_refund", "allow", "uid:0") and dec[2][3] == "ok", dec)
    print("   # run 1 took %.1f s" % (time.monotonic() - t0))

    # ---- run 2: the session kept state; rejected through a saved state ------------
    model2 = ScriptedModel([[function_call("run_python", {"code": PROGRAM_2}, call_id="call-2")],
                            [assistant_message("the person refused")]])
    agent2 = Agent(name="ops", instructions="Use run_python.", model=model2, tools=[code.tool])
    result = await Runner.run(agent2, "refund A-2", run_config=cfg)
    check("run 2 stops with an interruption", len(result.interruptions) == 1, result.interruptions)
    saved = result.to_state().to_string()      # e.g. kept in a database while a person decides
    state = await RunState.from_string(agent2, saved)
    item = state.get_interruptions()[0]
    p2 = code.pending(item)
    check("the restored state's interruption finds the parked refund of A-2",
          p2 is not None and p2.args == {"order_id": "A-2", "amount": 90}, p2)
    state.reject(item, rejection_message="not today")
    result = await Runner.run(agent2, state, run_config=cfg)
    check("run 2 resumes to the final output", result.final_output == "the person refused", result.final_output)
    check("the model got the rejection message", "not today" in tool_output(model2, 1), tool_output(model2, 1))
    check("the rejected program ends", wait_until(lambda: code.result("call-2") is not None, 30))
    r2 = code.result("call-2")
    check("the session kept the first program's variable (kept + 1 = 42)",
          r2 is not None and "kept 42" in r2.stdout, r2 and r2.stdout + r2.stderr)
    check("the rejection denied tollgate's parked call with the person's message",
          r2 is not None and "person said: denied by uid:0: not today" in r2.stdout, r2 and r2.stdout + r2.stderr)
    check("the rejected refund never ran", refunds == [("A-1", 80.0)], refunds)
    if r2 is not None:
        check("the audit log records the deny by uid:0 with the message",
              any(r.get("tool") == "issue_refund" and r.get("decision") == "deny"
                  and "not today" in str(r.get("reason")) for r in audit_records(r2.audit_log)),
              audit_records(r2.audit_log)[-3:])

    # ---- run 4: a program that parks twice: one interruption, the second denied --------
    model4 = ScriptedModel([[function_call("run_python", {"code": PROGRAM_4}, call_id="call-4")],
                            [assistant_message("one refund made")]])
    agent4 = Agent(name="ops", model=model4, tools=[code.tool])
    result = await Runner.run(agent4, "two refunds", run_config=cfg)
    check("run 4 stops once", len(result.interruptions) == 1, result.interruptions)
    state = result.to_state()
    if result.interruptions:
        state.approve(result.interruptions[0])
    result = await Runner.run(agent4, state, run_config=cfg)
    out4 = tool_output(model4, 1)
    check("run 4: the first parked refund approved and run, the second denied naming the fix "
          "(a new run_python call asks the person)",
          result.final_output == "one refund made" and "first {'refunded': 60.0" in out4
          and "second: denied" in out4 and "make this call in a new run_python call" in out4
          and refunds == [("A-1", 80.0), ("A-2", 60.0)], out4 + str(refunds))

    # ---- run 5: "always approve": later parked calls of the tool are approved -------
    model5 = ScriptedModel([[function_call("run_python", {"code": PROGRAM_5 % 55}, call_id="call-5")],
                            [function_call("run_python", {"code": PROGRAM_5 % 56}, call_id="call-6")],
                            [assistant_message("two refunds made")]])
    agent5 = Agent(name="ops", model=model5, tools=[code.tool])
    result = await Runner.run(agent5, "two refunds", run_config=cfg)
    check("run 5 stops once", len(result.interruptions) == 1, result.interruptions)
    state = result.to_state()
    if result.interruptions:
        state.approve(result.interruptions[0], always_approve=True)
    result = await Runner.run(agent5, state, run_config=cfg)
    check("run 5: after always_approve the next program's parked call is approved without a new "
          "interruption", not result.interruptions and result.final_output == "two refunds made"
          and refunds[-2:] == [("A-2", 55.0), ("A-2", 56.0)], (result.interruptions, refunds))

    # ---- run 6: a call id used again (a scripted model) is a new call --------------
    model6 = ScriptedModel([[function_call("run_python", {"code": "print('again', kept)"}, call_id="call-1")],
                            [assistant_message("done")]])
    result = await Runner.run(Agent(name="ops", model=model6, tools=[code.tool]), "again", run_config=cfg)
    check("run 6: call-1 again runs its own program, not run 1's output",
          "again 41" in tool_output(model6, 1), tool_output(model6, 1))

    # ---- run 3: abandoned while parked; close() ends it ---------------------------
    model3 = ScriptedModel([[function_call("run_python", {"code": PROGRAM_3}, call_id="call-3")]])
    agent3 = Agent(name="ops", model=model3, tools=[code.tool])
    result = await Runner.run(agent3, "refund A-2 again", run_config=cfg)
    check("run 3 stops with an interruption, then is abandoned", len(result.interruptions) == 1)
    log = r2.audit_log if r2 is not None else ""
    t = time.monotonic()
    await asyncio.to_thread(code.close)
    took = time.monotonic() - t
    check("close() with a parked call returns at once (%.1f s), denying it" % took, took < 15, took)
    check("close() left no session open", live_sessions() == 0, live_sessions())
    check("close() removed the Sandbox's state directory",
          not code.sandbox.root or not os.path.exists(code.sandbox.root), code.sandbox.root)
    if log:
        recs = audit_records(log)
        check("the abandoned call was denied, never approved",
              any(r.get("tool") == "issue_refund" and r.get("decision") == "deny" and
                  "no run of the agent is waiting" in str(r.get("reason")) for r in recs)
              and ("A-2", 65.0) not in refunds, recs[-3:])
        check("the session's audit log (runs 1 to 3) verifies after close", verifies(log), log)

    # ---- the host's problems end the run, they are not told to the model ----------
    bad = TollgateCodeTool(tools=[get_order], runtime=backend, runtime_path="/nonexistent/" + backend,
                           audit_dir=audit_dir, tollgate=TG)
    m = ScriptedModel([[function_call("run_python", {"code": "print(1)"}, call_id="c")],
                       [assistant_message("unreachable")]])
    try:
        await Runner.run(Agent(name="ops", model=m, tools=[bad.tool]), "go", run_config=cfg)
        check("a missing runtime ends the run with SandboxUnavailable", False)
    except Exception as e:
        check("a missing runtime ends the run with SandboxUnavailable, naming the fix",
              type(e.__cause__).__name__ == "SandboxUnavailable" and "nothing was run" in str(e), repr(e))
    finally:
        bad.close()

    # ---- bad input ------------------------------------------------------------
    try:
        TollgateCodeTool(tools=[get_order], approval=lambda r: True)
        check("approval= is refused, naming the Agents SDK's interruptions", False)
    except ValueError as e:
        check("approval= is refused, naming the Agents SDK's interruptions", "state.approve" in str(e), e)


asyncio.run(main())
common.exit_by_checks()

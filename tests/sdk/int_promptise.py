"""Promptise's code-action agent under tollgate (tests/integration/test_int_promptise.sh).

    python int_promptise.py BACKEND WORKDIR

A real promptise 1.10 agent (build_agent, agent_pattern = the code-action
graph with tollgate_sdk.integrations.promptise's factory) and Promptise's
own ScriptedModel, which "writes" the program: no network, no LLM.  The
program calls get_order (allowed) and issue_refund (denied by the policy);
a second agent run loops get_order past tollgate's call cap.  Prints
"ok - ..." / "FAIL - ..." lines; exits 1 on any failure.
"""
from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integrations"))
import common  # noqa: E402
from common import backend, check, verifies  # noqa: E402
from promptise import build_agent  # noqa: E402
from promptise.testing import ScriptedModel  # noqa: E402

from tollgate_sdk import Sandbox  # noqa: E402
from tollgate_sdk.integrations.promptise import TollgateCodeAction  # noqa: E402

ran: list[tuple[str, tuple[object, ...]]] = []   # what really ran on the host


def get_order(order_id: str) -> dict:
    """One order: id, region, amount."""
    ran.append(("get_order", (order_id,)))
    return {"id": order_id, "region": "EU", "amount": 640.0}


def issue_refund(order_id: str, amount: float) -> dict:
    """Refund part or all of an order."""
    ran.append(("issue_refund", (order_id, amount)))
    return {"refund_id": "R-1", "amount": amount}


PROGRAM = '''```python
order = get_order("A-1004")
print("order", order["id"], order["amount"])
try:
    issue_refund("A-1004", order["amount"])
    print("refunded")
except ToolDenied as e:
    print("not refunded:", e)
print("RESULT: checked", order["id"])
```'''

# A program that loops past tollgate's cap (budgets max_tool_calls 4): the
# fifth call raises Promptise's ToolBudgetExceeded, which the model's
# program may catch; tollgate refused it, so get_order never ran a fifth time.
LOOP = '''```python
n = 0
try:
    for i in range(10):
        get_order("B-%d" % i)
        n += 1
except ToolBudgetExceeded as e:
    print("capped after", n, isinstance(e, RuntimeError))
print("RESULT: done")
```'''


async def main() -> None:
    tg = TollgateCodeAction(
        runtime=backend,
        governance={"issue_refund": {"irreversible": True, "cost": 1, "deny": "amount > 100",
                                     "args_schema": {"type": "object",
                                                     "properties": {"order_id": {"type": "string"},
                                                                    "amount": {"type": "number"}},
                                                     "required": ["order_id", "amount"],
                                                     "additionalProperties": False}}},
        budgets={"max_tool_calls": 4}, audit_dir=os.environ["AUDIT_DIR"])
    with tg:
        model = ScriptedModel([PROGRAM, LOOP])
        agent = await build_agent(model=model, extra_tools=[get_order, issue_refund],
                                  agent_pattern=tg.graph(max_repairs=0, exec_timeout=60))
        try:
            out = await agent.ainvoke({"messages": [{"role": "user", "content": "Refund A-1004"}]})
            answer = out["messages"][-1].content
            check("the agent's answer is the program's RESULT line", answer == "checked A-1004", answer)
            res = tg.results[-1]
            check("the program ran under tollgate and printed the denial",
                  "order A-1004 640" in res.stdout and "not refunded: denied" in res.stdout, res.stdout)
            calls = [(c.tool, c.decision) for c in res.calls]
            check("get_order allowed, issue_refund denied by policy",
                  calls == [("get_order", "allow"), ("issue_refund", "deny")], calls)
            check("the denial names the policy's rule",
                  "amount > 100" in (res.calls[1].reason or ""), res.calls[1].reason)
            check("only the allowed call ran on the host (through Promptise's bridge)",
                  ran == [("get_order", ("A-1004",))], ran)
            check("the run's audit log verifies", verifies(res.audit_log), res.audit_log)
            check("Promptise saw the model once (one program, no repair)", len(model.calls) == 1,
                  len(model.calls))

            ran.clear()
            out = await agent.ainvoke({"messages": [{"role": "user", "content": "Fetch B orders"}]})
            res = tg.results[-1]
            check("past tollgate's cap the program gets ToolBudgetExceeded (a RuntimeError)",
                  "capped after 4 True" in res.stdout, res.stdout + res.stderr)
            check("the call over the cap never ran on the host", len(ran) == 4, ran)
            check("tollgate counted every attempt", res.budget_used["calls"] == 5, res.budget_used)
            check("the capped run's audit log verifies", verifies(res.audit_log), res.audit_log)
        finally:
            await agent.shutdown()
    check("close() ended the Sandboxes", not tg._sandboxes, tg._sandboxes)


asyncio.run(main())
common.exit_by_checks()

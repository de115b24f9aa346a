"""tollgate_sdk.integrations.openai_agents without containers: refusals of
bad input, the tool's shape, and the approval flow against the real Agents
SDK with a stand-in session whose program parks one call (the containers'
side is tests/integration/test_int_openai_agents.sh)."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, RunConfig, Runner, set_tracing_disabled  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from tollgate_sdk import ApprovalRequest, InvalidArgument, Result, Sandbox, tool  # noqa: E402
from tollgate_sdk.integrations.openai_agents import TollgateCodeTool  # noqa: E402

set_tracing_disabled(True)


@tool(irreversible=True, approve="amount > 50")
def pay(to: str, amount: float) -> str:
    """Pay someone."""
    return "paid"


def test_approval_is_refused_naming_the_interruptions() -> None:
    with pytest.raises(InvalidArgument, match="state.approve"):
        TollgateCodeTool(tools=[pay], approval=lambda r: True)


def test_sandbox_and_tools_are_one_or_the_other() -> None:
    with pytest.raises(InvalidArgument, match="either sandbox="):
        TollgateCodeTool(tools=[pay], sandbox=Sandbox(tools=[pay]))
    with pytest.raises(InvalidArgument, match="approval=None"):
        TollgateCodeTool(sandbox=Sandbox(tools=[pay], approval=lambda r: True))
    with pytest.raises(InvalidArgument, match="tollgate_sdk.Sandbox"):
        TollgateCodeTool(sandbox=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="timeout"):
        TollgateCodeTool(tools=[pay], timeout=0)


def test_the_tool_the_model_gets() -> None:
    code = TollgateCodeTool(tools=[pay])
    t = code.tool
    assert isinstance(t, FunctionTool) and t.name == "run_python"
    assert t.params_json_schema["required"] == ["code"]
    assert "pay(*, amount: float, to: str)" in t.description
    assert "may need approval" in t.description and "from tollgate import NAME" in t.description
    assert code.pending("nope") is None and code.result("nope") is None
    assert code.sandbox.approval_timeout == 300


class _ParkingSession:
    """Stands in for a tollgate Session: its program parks one call with
    the Sandbox's approval callback and prints the answer."""

    closed = False

    def __init__(self, sb: Sandbox) -> None:
        self.sb = sb

    def run(self, code: str, **kw: Any) -> Result:
        cb: Any = self.sb.approval
        answer = cb(ApprovalRequest(call_id="g-1", tool="pay", args={"to": "bob", "amount": 80},
                                    reason="big payments need a person", container="c"))
        return Result(stdout="answer %s\n" % (answer,), stderr="", exit_status=0, calls=[], budget_used={},
                      audit_log="")

    def close(self) -> None:
        self.closed = True


def _run_flow(approve: bool) -> tuple[TollgateCodeTool, ScriptedModel, Any]:
    code = TollgateCodeTool(tools=[pay], approval_timeout=20)
    code.sandbox.session = lambda: _ParkingSession(code.sandbox)  # type: ignore[method-assign,return-value]
    model = ScriptedModel([[function_call("run_python", {"code": "pay(...)"}, call_id="c-1")],
                           [assistant_message("finished")]])
    agent = Agent(name="a", model=model, tools=[code.tool])
    cfg = RunConfig(tracing_disabled=True)

    async def go() -> Any:
        result = await Runner.run(agent, "pay bob", run_config=cfg)
        assert [i.call_id for i in result.interruptions] == ["c-1"]
        parked = code.pending(result.interruptions[0])
        assert parked is not None and parked.args == {"to": "bob", "amount": 80}
        state = result.to_state()
        if approve:
            state.approve(result.interruptions[0])
        else:
            state.reject(result.interruptions[0], rejection_message="no")
        return await Runner.run(agent, state, run_config=cfg)

    return code, model, asyncio.run(go())


def test_a_parked_call_is_an_interruption_and_the_approval_answers_it() -> None:
    code, model, result = _run_flow(approve=True)
    assert result.final_output == "finished"
    r = code.result("c-1")
    assert r is not None and r.stdout.startswith('answer (True, "approved by a person')
    out = [i for i in model.calls[1].input if isinstance(i, dict) and i.get("type") == "function_call_output"]
    assert "answer (True" in str(out[-1]["output"])
    code.close()


def test_a_rejection_denies_the_parked_call_with_its_message() -> None:
    code, model, result = _run_flow(approve=False)
    assert result.final_output == "finished"
    deadline = 50
    while code.result("c-1") is None and deadline:
        asyncio.run(asyncio.sleep(0.1))
        deadline -= 1
    r = code.result("c-1")
    assert r is not None and "answer (False, 'no')" in r.stdout
    code.close()

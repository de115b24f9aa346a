"""The LangGraph and Pydantic AI adapters' parts that need no container:
how a framework's answer becomes a decision (never an approval by
accident), what they refuse at construction, and that their tools have
the shape each framework expects."""
from __future__ import annotations

import pytest

from tollgate_sdk import InvalidArgument, Sandbox
from tollgate_sdk.integrations._jobs import Parked, decision

P = Parked(call_id="c1", tool="issue_refund", args={"amount": 80}, reason="over 50", container="sdk-1")


@pytest.mark.parametrize("answer", [True, "approve", "Allow", "yes", {"approve": True},
                                    {"approve": "approve", "call_id": "c1"}, {"decision": "allow"}])
def test_approving_answers(answer: object) -> None:
    approve, reason = decision(answer, P, "LangGraph")
    assert approve is True and reason


@pytest.mark.parametrize("answer", [False, "deny", "no", {"approve": False}, None, 1, "sure", [True],
                                    {"reason": "no approve key"}, {"approve": 1}])
def test_everything_else_denies(answer: object) -> None:
    approve, _ = decision(answer, P, "LangGraph")
    assert approve is False


def test_an_answer_for_another_call_denies_and_says_so() -> None:
    approve, reason = decision({"approve": True, "call_id": "c2"}, P, "LangGraph")
    assert approve is False and "c2" in reason and "c1" in reason


def test_a_reason_is_kept_and_a_non_answer_is_named() -> None:
    assert decision({"approve": False, "reason": "too large"}, P, "X") == (False, "too large")
    approve, reason = decision("sure", P, "Pydantic AI")
    assert not approve and "'sure'" in reason and "Pydantic AI" in reason


def test_the_payload_is_what_the_decider_needs() -> None:
    assert P.payload() == {"type": "tollgate_approval", "call_id": "c1", "tool": "issue_refund",
                           "args": {"amount": 80}, "reason": "over 50", "container": "sdk-1"}


def test_langgraph_tool_shape_and_refusals() -> None:
    from tollgate_sdk.integrations.langgraph import TollgateCodeTool
    code = TollgateCodeTool(Sandbox(), name="py")
    assert code.tool.name == "py"
    # the model sees code only; the call id is injected by ToolNode
    assert list(code.tool.tool_call_schema.model_json_schema()["properties"]) == ["code"]
    with pytest.raises(InvalidArgument, match="approval=None"):
        TollgateCodeTool(Sandbox(approval=lambda r: True))
    with pytest.raises(InvalidArgument, match="abandon_after"):
        TollgateCodeTool(Sandbox(), abandon_after=0)
    with pytest.raises(InvalidArgument, match="Sandbox"):
        TollgateCodeTool("not a sandbox")  # type: ignore[arg-type]


def test_pydantic_ai_toolset_shape_and_refusals() -> None:
    from tollgate_sdk.integrations.pydantic_ai import TollgateToolset
    ts = TollgateToolset(Sandbox(), name="py", timeout=5)
    assert list(ts.tools) == ["py"]
    assert ts.timeout is None and ts.program_timeout == 5  # Pydantic AI's own tool timeout stays off
    assert ts.tools["py"].function_schema.json_schema["required"] == ["code"]
    with pytest.raises(InvalidArgument, match="approval=None"):
        TollgateToolset(Sandbox(approval="cli"))

"""tollgate_sdk.integrations.smolagents without containers: smolagents tools
as governed tools, the in-container step runner (run here in-process with a
stand-in for the in-container client), and the host's reading of what the
container answers, which is untrusted."""
import io
import json
import sys
import types
from contextlib import redirect_stderr, redirect_stdout

import pytest

smolagents = pytest.importorskip("smolagents")

from tollgate_sdk import TollgateSDKError, ToolDefinitionError  # noqa: E402
from smolagents import tool  # noqa: E402

from tollgate_sdk.integrations import smolagents as integ  # noqa: E402


@tool
def convert(amount: float, currency: str, note: str | None = None) -> float:
    """Convert money.

    Args:
        amount: how much.
        currency: to what.
        note: why.
    """
    return amount


class Anything(smolagents.Tool):
    name = "anything"
    description = "Takes anything."
    inputs = {"x": {"type": "any", "description": "whatever"},
              "y": {"type": ["string", "integer"], "description": "one or the other"}}
    output_type = "string"

    def forward(self, x, y):
        return repr((x, y))


def test_a_smolagents_tool_becomes_a_governed_tool():
    t = integ.smolagents_tool(convert, approve="amount > 100", cost=2)
    assert t.name == "convert" and t.description.startswith("Convert money.") and t.cost == 2
    assert t.schema["required"] == ["amount", "currency"]
    assert t.schema["additionalProperties"] is False
    assert t.schema["properties"]["amount"]["type"] == "number"
    assert sorted(t.schema["properties"]["note"]["type"]) == ["null", "string"]
    assert t.rules[0]["effect"] == "approve"
    # The gate writes 60.0 as 60: a "number" input gets its float back.
    assert t.call({"amount": 60, "currency": "EUR"}) == 60.0
    assert isinstance(t.call({"amount": 60, "currency": "EUR"}), float)


def test_any_and_type_lists():
    t = integ.smolagents_tool(Anything())
    assert "type" not in t.schema["properties"]["x"]
    assert t.schema["properties"]["y"]["type"] == ["string", "integer"]
    assert t.call({"x": [1], "y": 2}) == "([1], 2)"


def test_inputs_that_cannot_cross_the_gate_are_refused_by_name():
    class Picture(smolagents.Tool):
        name = "caption"
        description = "Caption."
        inputs = {"picture": {"type": "image", "description": "the picture"}}
        output_type = "string"

        def forward(self, picture):
            return ""

    with pytest.raises(ToolDefinitionError, match=r"caption: input 'picture' is of type 'image'.*JSON"):
        integ.smolagents_tool(Picture())
    with pytest.raises(ToolDefinitionError, match="not a smolagents tool"):
        integ.smolagents_tool(object())
    class Bad:
        name, inputs, description = "t", {"a": "string"}, ""

        def __call__(self, **kw):
            return None

    bad = Bad()
    with pytest.raises(ToolDefinitionError, match="input 'a' must be a dict"):
        integ.smolagents_tool(bad)


def test_governance_for_a_tool_the_agent_lacks_is_an_error_before_any_container():
    ex = integ.TollgateExecutor(governance={"missing": {"approve": "True"}})
    with pytest.raises(ToolDefinitionError, match=r"convert: governance has 'aprove'; the keys are irreversible"):
        integ.TollgateExecutor(governance={"convert": {"aprove": "True"}}).send_tools({"convert": convert})
    with pytest.raises(ToolDefinitionError, match="'a.b' is not a Python identifier"):
        integ.TollgateExecutor().send_tools({"a.b": convert})
    with pytest.raises(ToolDefinitionError, match="governance names missing"):
        ex.send_tools({"convert": convert})
    with pytest.raises(TollgateSDKError, match="sends its tools first"):
        ex("print(1)")


# ---- the step runner, in-process -------------------------------------------------

@pytest.fixture
def kernel(monkeypatch):
    """The prelude in a fresh namespace, as the session's interpreter runs
    it, over a stand-in for the in-container client."""
    client = types.ModuleType("tollgate")
    calls = []

    class ToolDenied(Exception):
        pass

    def call(name, **args):
        calls.append((name, args))
        if name == "refuse":
            raise ToolDenied("denied: no")
        return {"tool": name, "args": args}

    client.call, client.ToolDenied, client.ToolFailed = call, ToolDenied, RuntimeError
    monkeypatch.setitem(sys.modules, "tollgate", client)
    g = {"__name__": "__main__"}
    exec(integ._PRELUDE + "final_answer = _tollgate_final_answer\n"
         "lookup = _tollgate_tool('lookup', ['order_id', 'full'])\n"
         "refuse = _tollgate_tool('refuse', [])\n", g)

    def step(code):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            g["_tollgate_step"](code, "<step 1>", "NONCE")
        logs, _, trailer = out.getvalue().rpartition("\nNONCE ")
        return logs, integ.TollgateExecutor._outcome(trailer), err.getvalue()
    step.calls = calls
    step.globals = g
    return step


def test_the_last_expression_is_the_output_and_state_persists(kernel):
    assert kernel("x = 41\nprint('hi')\nx + 1") == ("hi\n", {"final": False, "value": 42}, "")
    assert kernel("x")[1]["value"] == 41
    assert kernel("y = 1")[1] == {"final": False, "value": None}


def test_tools_take_positional_arguments_in_input_order(kernel):
    assert kernel("lookup('A-1', full=True)")[1]["value"] == {"tool": "lookup", "args": {"order_id": "A-1", "full": True}}
    _, o, err = kernel("lookup('A-1', order_id='B')")
    assert "multiple values for argument 'order_id'" in o["error"]
    _, o, _ = kernel("lookup(1, 2, 3)")
    assert "at most 2 positional arguments" in o["error"]


def test_final_answer_is_not_swallowed_by_except_exception(kernel):
    logs, o, _ = kernel("try:\n    final_answer((1, {2}, b'x', 1j, {(1, 2): 'k'}))\nexcept Exception:\n    print('caught')")
    assert logs == "" and o == {"final": True, "value": (1, {2}, b"x", 1j, {(1, 2): "k"})}


def test_an_error_carries_the_model_code_traceback(kernel):
    logs, o, err = kernel("print('before')\nrefuse()")
    assert logs == "before\n"
    assert o["error"] == "ToolDenied: denied: no"
    assert 'File "<step 1>", line 2' in o["traceback"] and "_tollgate_step" not in o["traceback"]
    assert 'File "<step 1>", line 2' in err
    _, o, _ = kernel("raise SystemExit(3)")
    assert o["error"].startswith("SystemExit")
    _, o, _ = kernel("def (:")
    assert o["error"].startswith("SyntaxError")


def test_what_cannot_be_sent_arrives_as_its_repr(kernel):
    assert kernel("object")[1]["value"] == "<class 'object'>"


# ---- reading the container's answer --------------------------------------------

@pytest.mark.parametrize("trailer", [
    "", "not json", "[]", '"x"', '{"final": "yes", "value": 1}', '{"final": true}',
    '{"error": 3}', '{"error": "x", "traceback": []}', "[" * 100000 + "]" * 100000,
    '{"final": true, "value": {"__type__": "bytes", "data": "!!"}}',
    '{"final": true, "value": {"__type__": "set", "data": [[1]]}}',
    '{"final": true, "value": {"__type__": "dict_with_complex_keys", "data": [1]}}',
])
def test_a_malformed_outcome_is_no_outcome(trailer):
    assert integ.TollgateExecutor._outcome(trailer) is None


def test_unknown_markers_stay_plain_data():
    v = {"__type__": "PIL.Image", "data": "AAAA"}
    o = integ.TollgateExecutor._outcome(json.dumps({"final": True, "value": v}))
    assert o == {"final": True, "value": v}

"""Agent-written tools (Sandbox.create_tool, issue 43), the parts that need
no container: the source checks, the digest, the call program and its
result line, the cap, the ceiling's refusal read from `tollgate policy
check --within`, and the policy entry.  tests/integration/test_custom_tools.sh
runs them in real containers."""
import ast
import hashlib
import inspect

import pytest

import tollgate_sdk
from tollgate_sdk import (AsyncSandbox, AsyncSession, CustomToolError, InvalidArgument, Sandbox, Session,
                          TollgateSDKError, ToolDefinitionError)
from tollgate_sdk import _custom as custom

ADD = "def add(a, b):\n    return {'sum': a + b}\n"


def test_the_digest_is_sha256_of_the_utf8_source() -> None:
    assert custom.source_digest(ADD) == hashlib.sha256(ADD.encode()).hexdigest()
    assert custom.source_digest("def f():\n    return 'é'\n") == \
        hashlib.sha256("def f():\n    return 'é'\n".encode("utf-8")).hexdigest()
    assert len(custom.source_digest("")) == 64


@pytest.mark.parametrize("name, source, match", [
    ("add", "def add(:\n", r"does not parse: line 1"),
    ("add", "def other():\n    return 1\n", r"defines no top-level function add"),
    ("add", "class add:\n    pass\n", r"defines no top-level function add"),
    ("add", "def outer():\n    def add():\n        return 1\n", r"defines no top-level function add"),
    ("add", "async def add():\n    return 1\n", r"not async def"),
    ("add", b"def add(): pass", r"must be Python text"),
    ("a-b", "def a_b():\n    return 1\n", r"not a tool name the source can define"),
    ("1x", "def x():\n    return 1\n", r"not a tool name"),
    ("", "", r"not a tool name"),
    ("add", "#" * (custom.SOURCE_MAX + 1), r"over 256 KiB"),
])
def test_a_source_that_cannot_be_the_tool_is_refused(name: str, source: object, match: str) -> None:
    with pytest.raises(ToolDefinitionError, match=match):
        custom.check_source(name, source)


def test_a_good_source_passes() -> None:
    custom.check_source("add", ADD)
    custom.check_source("add", "import math\n\nHELPER = 2\n\ndef add(a, b=1):\n    return math.fsum([a, b])\n")


def test_the_call_program_parses_and_names_the_tool() -> None:
    prog = custom.call_program("add", ADD, {"a": 1, "b": "it's \"quoted\"\n"}, "tollgate-result-abc")
    tree = ast.parse(prog)  # the args and the source are literals, whatever they hold
    assert "<tool add>" in prog
    literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert ADD in literals
    assert '{"a": 1, "b": "it\'s \\"quoted\\"\\n"}' in literals


@pytest.mark.parametrize("stdout, want", [
    ("noise\nN {\"sum\": 3}\n", (True, {"sum": 3})),
    ("N 1\nN 2\n", (True, 2)),                  # the last one: what the program printed after the tool's
    ("N null\n", (True, None)),
    ("N not json\n", (False, None)),
    ("no result\n", (False, None)),
    ("XN 1\n", (False, None)),
])
def test_the_result_is_the_last_line_after_the_nonce(stdout: str, want: tuple[bool, object]) -> None:
    assert custom.parse_result(stdout, "N") == want


def test_the_ceiling_refusal_is_the_max_custom_tools_witness() -> None:
    text = ("p.json: not within c.json: tools.add: in the policy, not in the ceiling\n"
            "p.json: not within c.json: budgets.max_custom_tools: the policy has 1 agent-written tool (add), "
            "the ceiling forbids agent-written tools (max_custom_tools 0)\n")
    why = custom.ceiling_refusal(lambda: (1, text))
    assert why is not None and why.startswith("p.json: not within c.json: budgets.max_custom_tools:")
    assert custom.ceiling_refusal(lambda: (0, "p.json: within c.json")) is None
    # Other witnesses are not create_tool's to report (the run reports them).
    assert custom.ceiling_refusal(lambda: (1, "p.json: not within c.json: tools.add: ...")) is None


def _sandbox(**kw: object) -> Sandbox:
    return Sandbox(tollgate="/nonexistent/tollgate", **kw)  # type: ignore[arg-type]


def test_make_tool_entry_carries_the_digest_and_governance() -> None:
    t = custom.make_tool(_sandbox(), "add", ADD, description="Add.", schema=None, timeout=20, cost=1,
                         max_calls=3, approve="a > 10", deny=None, rules=None)
    e = t.policy_entry("/run/x.sock")
    assert e["source_sha256"] == custom.source_digest(ADD)
    assert e["args"] == {"type": "object"} and e["cost"] == 1 and e["max_calls"] == 3
    assert e["rules"][0]["effect"] == "approve"
    assert t.source_text == ADD
    # a person's tool has none
    assert "source_sha256" not in tollgate_sdk.Tool.from_function(lambda: 1, name="f").policy_entry("/x")


@pytest.mark.parametrize("kw, match", [
    ({"description": ""}, r"description= must say what the tool does"),
    ({"schema": {"type": "array"}}, r"schema= must be a JSON Schema of type object"),
    ({"timeout": 2}, r"timeout must be seconds, more than 3"),
])
def test_make_tool_refusals(kw: dict[str, object], match: str) -> None:
    args: dict[str, object] = dict(description="Add.", schema=None, timeout=30, cost=0, max_calls=None,
                                   approve=None, deny=None, rules=None)
    args.update(kw)
    with pytest.raises(ToolDefinitionError, match=match):
        custom.make_tool(_sandbox(), "add", ADD, **args)  # type: ignore[arg-type]


def test_max_custom_tools_comes_from_the_option_the_budgets_or_the_default() -> None:
    assert _sandbox().max_custom_tools == custom.DEFAULT_MAX_CUSTOM_TOOLS
    assert _sandbox(max_custom_tools=3).max_custom_tools == 3
    assert _sandbox(budgets={"max_custom_tools": 2}).max_custom_tools == 2
    # never above the policy's figure
    assert _sandbox(budgets={"max_custom_tools": 2}, max_custom_tools=5).max_custom_tools == 2
    assert _sandbox(policy={"version": 1, "tools": {}, "budgets": {"max_custom_tools": 1}}).max_custom_tools == 1
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(InvalidArgument, match="max_custom_tools"):
            _sandbox(max_custom_tools=bad)


def test_create_tool_needs_a_sandbox_and_runs_nothing_without_one() -> None:
    with pytest.raises(tollgate_sdk.SandboxUnavailable, match="nothing was run"):
        _sandbox().create_tool("add", ADD, description="Add.")


def test_the_surface() -> None:
    assert issubclass(CustomToolError, TollgateSDKError)
    assert "CustomToolError" in tollgate_sdk.__all__
    for cls in (Sandbox, Session, AsyncSandbox, AsyncSession):
        params = inspect.signature(getattr(cls, "create_tool")).parameters
        assert list(params)[:3] == ["self", "name", "source"], cls
        assert params["description"].kind is inspect.Parameter.KEYWORD_ONLY, cls
        assert params["schema"].kind is inspect.Parameter.KEYWORD_ONLY, cls
    assert inspect.iscoroutinefunction(AsyncSandbox.create_tool)

"""Agent-written tools (issue 43): Python a model writes at run time,
made a governed tool that later programs call like any other.

The source never runs on the host.  Each call runs it in a tollgate
container of its own (a Sandbox with no tools, no mounts, small limits,
the hardened profile's empty network namespace): the host only serves the
call on the SDK's tool socket, so the gate governs it (policy, approval,
budgets, audit) exactly as it does a function of the host's.  The policy
entry carries the SHA-256 of the source (`source_sha256`), which the gate
puts on the audit record of every call that runs it.
"""
from __future__ import annotations

import ast
import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any, Callable

from ._errors import CustomToolError, ToolDefinitionError
from ._schema import JSONSchema
from ._tools import NAME_RE, Condition, Rule, Tool

if TYPE_CHECKING:
    from ._sandbox import Sandbox

SOURCE_MAX = 256 << 10      # bytes of source one tool may have
DEFAULT_MAX_CUSTOM_TOOLS = 8
# The container a call runs in: far below a program's.
CALL_MEMORY = "128m"
CALL_PIDS = 32
CALL_TMP = "16m"
RESULT_MAX = 1 << 20        # the tool server's own reply bound
# Seconds of a tool's timeout kept for starting and deleting its container,
# so the call's run ends (and says why) before the gate's tool timeout.
START_MARGIN = 3.0


def source_digest(source: str) -> str:
    """The SHA-256 of the source as UTF-8, lowercase hex: what the policy
    entry and every audit record of the tool's calls carry."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def check_source(name: object, source: object) -> None:
    """Refuse, naming the fix, a name or source that cannot be a tool: the
    source must parse and define a function of that name at top level."""
    if not isinstance(name, str) or not NAME_RE.match(name) or not name.isidentifier():
        raise ToolDefinitionError("create_tool: %r is not a tool name the source can define: use a "
                                  "Python identifier of letters, digits and '_' (64 at most)" % (name,))
    if not isinstance(source, str):
        raise ToolDefinitionError("create_tool(%s): source must be Python text (a str), not %s"
                                  % (name, type(source).__name__))
    if len(source.encode("utf-8", "surrogatepass")) > SOURCE_MAX:
        raise ToolDefinitionError("create_tool(%s): the source is over %d KiB; a tool is one function"
                                  % (name, SOURCE_MAX >> 10))
    try:
        tree = ast.parse(source, "<tool %s>" % name)
    except SyntaxError as e:
        raise ToolDefinitionError("create_tool(%s): the source does not parse: line %s: %s"
                                  % (name, e.lineno, e.msg)) from None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            if isinstance(node, ast.AsyncFunctionDef):
                raise ToolDefinitionError("create_tool(%s): define it with def, not async def" % name)
            return
    raise ToolDefinitionError("create_tool(%s): the source defines no top-level function %s(...); "
                              "write `def %s(...):` and return a JSON value" % (name, name, name))


def call_program(name: str, source: str, args: dict[str, Any], nonce: str) -> str:
    """The program one call runs in its container: the source compiled
    under its own name (tracebacks say `<tool NAME>`), the function called
    with the arguments the gate let through, the result printed as JSON
    after the nonce."""
    return ("import json, sys\n"
            "_src = %r\n"
            "_ns = {'__name__': 'tollgate_custom_tool'}\n"
            "exec(compile(_src, %r, 'exec'), _ns)\n"
            "_result = _ns[%r](**json.loads(%r))\n"
            "sys.stdout.flush()\n"
            "sys.stdout.write('\\n' + %r + ' ' + json.dumps(_result) + '\\n')\n"
            % (source, "<tool %s>" % name, name, json.dumps(args), nonce))


def parse_result(stdout: str, nonce: str) -> tuple[bool, Any]:
    """(True, result) from the last line the call program wrote after its
    nonce; (False, None) when there is none or it is not JSON."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(nonce + " "):
            try:
                return True, json.loads(line[len(nonce) + 1:])
            except ValueError:
                return False, None
    return False, None


def make_tool(sandbox: Sandbox, name: str, source: str, *, description: str,
              schema: JSONSchema | None, timeout: float, cost: float, max_calls: int | None,
              approve: Condition, deny: Condition, rules: list[Rule] | None) -> Tool:
    """The Tool the Sandbox serves for an agent-written tool: each call is
    a run of call_program in a fresh container of the Sandbox's runner."""
    check_source(name, source)
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError("create_tool(%s): description= must say what the tool does "
                                  "(the programs that call it read it)" % name)
    if schema is None:
        schema = {"type": "object"}
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ToolDefinitionError("create_tool(%s): schema= must be a JSON Schema of type object "
                                  "(the arguments), or None for any object" % name)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= START_MARGIN:
        raise ToolDefinitionError("create_tool(%s): timeout must be seconds, more than %g (each call "
                                  "starts a container)" % (name, START_MARGIN))

    def call(args: dict[str, Any]) -> Any:
        nonce = "tollgate-result-" + secrets.token_hex(16)
        runner = sandbox.custom_runner()
        r = runner.run(call_program(name, source, args, nonce), timeout=timeout - START_MARGIN)
        ok, result = parse_result(r.stdout, nonce)
        if not ok:
            raise ToolDefinitionError("agent-written tool %s printed no result (its output was "
                                      "cut or it exited early)" % name)
        return result

    t = Tool(name, description, schema, call, False, cost=cost, timeout=timeout,
             max_calls=max_calls, approve=approve, deny=deny, rules=rules, source="agent-written")
    t.source_sha256 = source_digest(source)
    t.source_text = source
    return t


def ceiling_refusal(check: Callable[[], tuple[int, str]]) -> str | None:
    """The ceiling's word on agent-written tools, from `tollgate policy
    check --within`'s output (check() gives its status and text): the
    max_custom_tools witness, or None when it has none."""
    status, text = check()
    if status == 0:
        return None
    for line in text.splitlines():
        if "budgets.max_custom_tools" in line:
            return line.strip()
    return None

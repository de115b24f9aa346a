"""smolagents' CodeAgent with its code actions run in tollgate (docs/integrations.md).

    from smolagents import CodeAgent
    from tollgate_sdk.integrations.smolagents import TollgateExecutor

    executor = TollgateExecutor(policy={"tools": {...}}, approval=callback)
    with CodeAgent(tools=[...], model=model, executor=executor) as agent:
        agent.run("...")

The model's program runs in one tollgate session (a hardened runsc or runc
container whose Python interpreter keeps its variables between steps, like
smolagents' own executors).  The agent's tools stay on the host: each
becomes a governed tollgate tool, and the program calls it as a function
whose every call crosses the gate (policy, approvals, budgets, audit log).
`final_answer` ends the step in the container; a final_answer tool of the
user's own (not smolagents' FinalAnswerTool) is governed like the others.

What crosses back from the container (the step's output, its final answer)
is untrusted: JSON, decoded into a small set of plain types, never pickle.
"""
from __future__ import annotations

import base64
import json
import keyword
import secrets
from collections.abc import Mapping
from typing import Any, Callable, Literal

try:
    # smolagents ships no type information (no py.typed): its names are Any here.
    from smolagents.default_tools import FinalAnswerTool  # type: ignore[import-untyped]
    from smolagents.local_python_executor import CodeOutput, PythonExecutor  # type: ignore[import-untyped]
    from smolagents.serialization import SafeSerializer, SerializationError  # type: ignore[import-untyped]
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("tollgate_sdk.integrations.smolagents needs smolagents 1.26: pip install "
                      "'./sdk[smolagents]' (or smolagents==1.26.0); %s" % e) from e

from .. import ApprovalRequest, Call, Result, Sandbox, Session, TollgateSDKError, Tool, ToolDefinitionError
from .. import to_policy_schema

__all__ = ["TollgateExecutor", "StepFailed", "smolagents_tool"]

ApprovalCallback = Callable[[ApprovalRequest], Any]

# smolagents' input types (smolagents.tools.AUTHORIZED_TYPES) as JSON Schema.
# "any" is unconstrained; image and audio are Python objects that cannot
# cross the gate as JSON, so a tool taking one is refused, not half-checked.
# The keywords of tollgate's Tool that `governance` may give a tool.
_GOVERNANCE = ("irreversible", "cost", "timeout", "max_calls", "approve", "deny", "rules")
_JSON_TYPES = {"string": "string", "boolean": "boolean", "integer": "integer", "number": "number",
               "array": "array", "object": "object", "null": "null"}


class StepFailed(TollgateSDKError):
    """A code action failed in the container: it raised (a refused tool
    call is a ToolDenied there), timed out, or ended without its result.
    The message is what the model is shown; .logs is what the step printed
    and .result the session cell's Result (calls, audit log)."""

    def __init__(self, message: str, logs: str, result: Result | None) -> None:
        super().__init__(message)
        self.logs = logs
        self.result = result


def _input_schema(tool_name: str, arg: str, spec: object) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise ToolDefinitionError("%s: input %r must be a dict with a 'type', as smolagents' Tool.inputs"
                                  % (tool_name, arg))
    types = spec.get("type", "any")
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, (list, tuple)) else None
    if names is None or not all(isinstance(n, str) for n in names):
        raise ToolDefinitionError("%s: input %r has type %r; give one of smolagents' type names or a list of them"
                                  % (tool_name, arg, types))
    out: dict[str, Any] = {}
    if "any" not in names:
        mapped = []
        for n in names:
            if n not in _JSON_TYPES:
                raise ToolDefinitionError(
                    "%s: input %r is of type %r, which cannot cross the gate as JSON; give the tool "
                    "JSON arguments (a path or an id instead of an image or audio object)" % (tool_name, arg, n))
            mapped.append(_JSON_TYPES[n])
        if spec.get("nullable") and "null" not in mapped:
            mapped.append("null")
        out["type"] = mapped[0] if len(mapped) == 1 else mapped
    if isinstance(spec.get("description"), str):
        out["description"] = spec["description"]
    return out


def smolagents_tool(obj: Any, **governance: Any) -> Tool:
    """A governed tollgate Tool from a smolagents Tool (a Tool subclass, an
    @tool function, a managed agent: anything with name, description,
    inputs and a call taking the inputs as keywords).  Its inputs become
    the schema the gate checks (nullable inputs are optional); governance
    is Tool's keywords (irreversible=, cost=, timeout=, max_calls=,
    approve=, deny=, rules=).  The result must be JSON."""
    name = getattr(obj, "name", None)
    wrong = sorted(set(governance) - set(_GOVERNANCE))
    if wrong:
        raise ToolDefinitionError("%s: governance has %s; the keys are %s"
                                  % (name, ", ".join(map(repr, wrong)), ", ".join(_GOVERNANCE)))
    inputs = getattr(obj, "inputs", None)
    if not isinstance(name, str) or not isinstance(inputs, Mapping) or not callable(obj):
        raise ToolDefinitionError("%r is not a smolagents tool: it needs a name, an inputs dict and to be "
                                  "callable with the inputs as keywords" % (obj,))
    props = {arg: _input_schema(name, arg, spec) for arg, spec in inputs.items()}
    required = [arg for arg, spec in inputs.items() if not (isinstance(spec, Mapping) and spec.get("nullable"))]
    schema = to_policy_schema({"type": "object", "properties": props, "required": required,
                               "additionalProperties": False}, name)
    numbers = {arg for arg, p in props.items() if p.get("type") == "number"}

    def call(args: dict[str, Any]) -> Any:
        # The gate writes numbers canonically (2.0 as 2): a "number" input is
        # given a float, as the model's program wrote it.
        kwargs = {k: float(v) if k in numbers and isinstance(v, int) and not isinstance(v, bool) else v
                  for k, v in args.items()}
        return obj(**kwargs)

    description = getattr(obj, "description", "")
    return Tool(name, description if isinstance(description, str) else "", schema, call, False, **governance)


# Defined once in the session's interpreter: the tools as functions over
# the in-container client (positional arguments mapped onto the inputs, as
# the model writes `get_weather("Paris")`), final_answer, and the step
# runner, which ends the step's stdout with one line: the nonce and the
# step's outcome as JSON.
_PRELUDE = r'''
import ast as _tg_ast, base64 as _tg_b64, json as _tg_json, linecache as _tg_lc, sys as _tg_sys
import traceback as _tg_tb
import tollgate as _tg_client
from tollgate import ToolDenied, ToolFailed

class _TollgateFinalAnswer(BaseException):
    # BaseException, as smolagents' own: `except Exception` in the model's
    # code does not swallow the final answer.
    def __init__(self, value):
        self.value = value

def _tollgate_tool(_name, _params, _final=False):
    def tool(*args, **kwargs):
        if len(args) > len(_params):
            raise TypeError("%s() takes at most %d positional arguments (%d given)" % (_name, len(_params), len(args)))
        for p, a in zip(_params, args):
            if p in kwargs:
                raise TypeError("%s() got multiple values for argument %r" % (_name, p))
            kwargs[p] = a
        out = _tg_client.call(_name, **kwargs)
        if _final:
            raise _TollgateFinalAnswer(out)
        return out
    tool.__name__ = tool.__qualname__ = _name
    return tool

def _tollgate_final_answer(*args, **kwargs):
    if len(args) + len(kwargs) != 1:
        raise TypeError("final_answer() takes one argument, the answer")
    raise _TollgateFinalAnswer(args[0] if args else next(iter(kwargs.values())))

def _tollgate_enc(o, depth=0):
    if depth > 64:
        return repr(o)
    t = type(o)
    if o is None or t in (bool, int, float, str):
        return o
    if t is list:
        return [_tollgate_enc(x, depth + 1) for x in o]
    if t in (tuple, set, frozenset):
        return {"__type__": t.__name__, "data": [_tollgate_enc(x, depth + 1) for x in o]}
    if t is dict:
        if all(type(k) is str for k in o):
            return {k: _tollgate_enc(v, depth + 1) for k, v in o.items()}
        return {"__type__": "dict_with_complex_keys",
                "data": [[_tollgate_enc(k, depth + 1), _tollgate_enc(v, depth + 1)] for k, v in o.items()]}
    if t is bytes:
        return {"__type__": "bytes", "data": _tg_b64.b64encode(o).decode()}
    if t is complex:
        return {"__type__": "complex", "real": o.real, "imag": o.imag}
    if isinstance(o, str):
        return str(o)
    return repr(o)  # as a Jupyter kernel shows what it cannot send

def _tollgate_step(_src, _name, _nonce):
    _tg_lc.cache[_name] = (len(_src), None, _src.splitlines(True), _name)
    g = globals()
    out = {"final": False, "value": None}
    try:
        tree = _tg_ast.parse(_src, _name)
        last = None
        if tree.body and isinstance(tree.body[-1], _tg_ast.Expr):
            last = _tg_ast.Expression(tree.body.pop().value)
        exec(compile(tree, _name, "exec"), g)
        if last is not None:
            out["value"] = eval(compile(last, _name, "eval"), g)
    except _TollgateFinalAnswer as e:
        out = {"final": True, "value": e.value}
    except KeyboardInterrupt:
        raise  # the step's timeout: the session reports it
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None  # not this frame
        _tg_sys.stderr.write("".join(_tg_tb.format_exception(type(e), e, tb)))
        out = {"error": "%s: %s" % (type(e).__name__, e), "traceback": "".join(_tg_tb.format_exception(type(e), e, tb))}
    if "value" in out:
        out["value"] = _tollgate_enc(out["value"])
    _tg_sys.stdout.flush()
    _tg_sys.stdout.write("\n%s %s\n" % (_nonce, _tg_json.dumps(out)))
    _tg_sys.stdout.flush()
'''


def _decode(o: Any, depth: int = 0) -> Any:
    """The container's value back into plain Python: only the markers the
    prelude writes, nothing that runs code or parses images on the host."""
    if depth > 64:
        raise ValueError("the value is nested too deeply")
    if isinstance(o, list):
        return [_decode(x, depth + 1) for x in o]
    if not isinstance(o, dict):
        return o
    kind = o.get("__type__")
    data = o.get("data")
    if kind in ("tuple", "set", "frozenset") and isinstance(data, list):
        items = [_decode(x, depth + 1) for x in data]
        return tuple(items) if kind == "tuple" else set(items) if kind == "set" else frozenset(items)
    if kind == "bytes" and isinstance(data, str):
        return base64.b64decode(data, validate=True)
    if kind == "complex" and isinstance(o.get("real"), (int, float)) and isinstance(o.get("imag"), (int, float)):
        return complex(o["real"], o["imag"])
    if kind == "dict_with_complex_keys" and isinstance(data, list):
        return {_decode(k, depth + 1): _decode(v, depth + 1) for k, v in data}
    return {k: _decode(v, depth + 1) for k, v in o.items()}


class TollgateExecutor(PythonExecutor):  # type: ignore[misc]  # PythonExecutor is Any (untyped package)
    """A smolagents PythonExecutor that runs each code action in a tollgate
    session and the agent's tools on the host through the gate.

    Pass it as CodeAgent(executor=TollgateExecutor(...)).  policy: a tollgate
    policy (dict or file) whose tools entries, by tool name, govern the
    agent's tools (rules, cost, max_calls, ...; docs/policy.md); approval:
    the Sandbox's approval callback (or "cli"); governance: per tool name,
    Tool keywords (approve="EXPR", deny="EXPR", irreversible=True, ...);
    timeout: seconds per code action; runtime and every other keyword go to
    the Sandbox (budgets=, approval_timeout=, audit_dir=, memory=, ...).

    The Sandbox and its session are made when the agent sends its tools (at
    agent.run) and kept for later runs; cleanup() (CodeAgent.cleanup, the
    end of `with CodeAgent(...)`) closes them.  .steps holds each code
    action's Result, .calls every tool call attempt, .audit_logs the logs."""

    def __init__(self, *, policy: dict[str, Any] | str | None = None,
                 approval: ApprovalCallback | Literal["cli"] | None = None,
                 governance: Mapping[str, Mapping[str, Any]] | None = None,
                 runtime: Literal["runsc", "runc"] = "runsc", timeout: float = 300, **sandbox_options: Any) -> None:
        self.policy = policy
        self.approval = approval
        self.governance = {k: dict(v) for k, v in (governance or {}).items()}
        self.runtime = runtime
        self.timeout = timeout
        self.sandbox_options = sandbox_options
        self.sandbox: Sandbox | None = None
        self.session: Session | None = None
        self.steps: list[Result] = []
        # smolagents reads state["_print_outputs"] for the logs of a failed
        # step, as with its local executor.
        self.state: dict[str, Any] = {}
        self._tools: dict[str, Any] = {}
        self._variables: dict[str, Any] = {}  # sent again to a new session
        self._n = 0

    # ---- smolagents' executor interface ----

    def send_tools(self, tools: dict[str, Any]) -> None:
        """Serve the tools through the gate and define them in the session.
        A different set of tools than the session has needs a new Sandbox:
        the old session (and its variables) is closed."""
        if self.session is not None and not self.session.closed and tools == self._tools:
            return
        unknown = set(self.governance) - set(tools)
        if unknown:
            raise ToolDefinitionError("governance names %s, which the agent does not have; its tools are %s"
                                      % (", ".join(sorted(unknown)), ", ".join(sorted(tools))))
        governed = []
        lines = [_PRELUDE]
        for name, t in tools.items():
            if not name.isidentifier() or keyword.iskeyword(name):
                # The program calls it as a function: the name is Python code in the prelude.
                raise ToolDefinitionError("tool name %r is not a Python identifier, which the agent's code "
                                          "could call; rename the tool" % (name,))
            if name == "final_answer" and type(t) is FinalAnswerTool:
                lines.append("final_answer = _tollgate_final_answer")
                continue
            governed.append(smolagents_tool(t, **self.governance.get(name, {})))
            lines.append("%s = _tollgate_tool(%r, %r, %r)" % (
                name, name, list(getattr(t, "inputs", {})), name == "final_answer"))
        self.cleanup()
        self.sandbox = Sandbox(governed, policy=self.policy, approval=self.approval, runtime=self.runtime,
                               **self.sandbox_options)
        self.session = self.sandbox.session()
        self._tools = dict(tools)
        self._run("\n".join(lines) + "\n", "setting up the tools")
        if self._variables:
            self._send_variables(self._variables)

    def send_variables(self, variables: dict[str, Any]) -> None:
        """Make the agent's state (additional_args) variables of the session:
        smolagents' own safe serializer, no pickle."""
        if not variables:
            return
        self._variables.update(variables)
        if self.session is not None:  # else at send_tools: the agent sends its variables first
            self._send_variables(variables)

    def _send_variables(self, variables: dict[str, Any]) -> None:
        try:
            data = SafeSerializer.dumps(variables, allow_pickle=False)
        except SerializationError as e:
            raise TollgateSDKError("the agent's variables cannot be sent to the sandbox (%s): give "
                                   "additional_args of JSON-like types" % e) from e
        code = "%s\nglobals().update(_deserialize(%r))\n" % (SafeSerializer.get_deserializer_code(False), data)
        self._run(code, "sending the agent's variables")

    def __call__(self, code_action: str) -> CodeOutput:
        """Run one code action in the session: its stdout is the step's logs,
        the value of its last expression the output, final_answer(x) the
        final answer.  A failure raises StepFailed with what the model needs."""
        if self.session is None:
            raise TollgateSDKError("the executor has no session: the agent sends its tools first "
                                   "(CodeAgent.run does); call send_tools(agent.tools) to run code by hand")
        self._n += 1
        nonce = "tollgate-step-" + secrets.token_hex(16)
        cell = "_tollgate_step(%r, %r, %r)\n" % (code_action, "<step %d>" % self._n, nonce)
        result = self.session.run(cell, check=False, timeout=self.timeout)
        self.steps.append(result)
        logs, sep, trailer = result.stdout.rpartition("\n%s " % nonce)
        if not sep:
            logs = result.stdout
        self.state = {"_print_outputs": logs}
        if result.timed_out:
            raise StepFailed("the code ran past its timeout of %g s and was stopped (%s)"
                             % (self.timeout, result.timeout_how), logs, result)
        outcome = self._outcome(trailer) if sep else None
        if outcome is None:
            raise StepFailed("the code ended without its result (exit status %d):\n%s"
                             % (result.exit_status, _tail(result.stderr)), logs, result)
        if "error" in outcome:
            raise StepFailed("Code execution failed: %s\n%s" % (outcome["error"], outcome.get("traceback", "")),
                             logs, result)
        return CodeOutput(output=outcome["value"], logs=logs, is_final_answer=outcome["final"])

    # ---- lifetime ----

    def cleanup(self) -> None:
        """Close the session and the Sandbox (its audit logs stay)."""
        if self.session is not None:
            self.session.close()
            self.session = None
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def __enter__(self) -> TollgateExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    @property
    def calls(self) -> list[Call]:
        """Every tool call attempt of every step, refused ones too."""
        return [c for r in self.steps for c in r.calls]

    @property
    def audit_logs(self) -> list[str]:
        """The audit logs the steps wrote (`tollgate audit verify PATH`)."""
        return sorted({r.audit_log for r in self.steps if r.audit_log})

    # ---- helpers ----

    def _run(self, code: str, what: str) -> None:
        assert self.session is not None
        result = self.session.run(code, check=False, timeout=self.timeout)
        if result.exit_status != 0:
            raise StepFailed("%s failed in the sandbox (exit status %d):\n%s"
                             % (what, result.exit_status, _tail(result.stderr)), result.stdout, result)

    @staticmethod
    def _outcome(trailer: str) -> dict[str, Any] | None:
        """The step's outcome line, read as untrusted: None unless it is the
        prelude's shape."""
        try:
            o = json.loads(trailer.split("\n", 1)[0])
            if not isinstance(o, dict):
                return None
            if "error" in o:
                err, tb = o["error"], o.get("traceback", "")
                return {"error": err, "traceback": tb} if isinstance(err, str) and isinstance(tb, str) else None
            if not isinstance(o.get("final"), bool) or "value" not in o:
                return None
            return {"final": o["final"], "value": _decode(o["value"])}
        except (ValueError, TypeError, RecursionError):
            return None


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join((text or "").rstrip("\n").split("\n")[-lines:])

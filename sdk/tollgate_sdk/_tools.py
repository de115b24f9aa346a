"""Python callables as governed tools.

    @tool(irreversible=True, cost=1, approve="amount > 50")
    def issue_refund(order_id: str, amount: float) -> dict:
        "Refund part or all of an order."

The name, description (the docstring) and argument schema come from the
function; the keyword arguments say how tollgate governs it, and become
the tool's entry in the policy file (docs/policy.md):

  irreversible, cost, timeout, max_calls   the policy's fields of that name
  approve="EXPR"   calls matching EXPR wait for approval, the rest are allowed
  deny="EXPR"      calls matching EXPR are denied (tried before approve)
  rules=[...]      the policy's rules, verbatim, instead of allow/approve/deny
  name=, description=, args_schema=   override what the function says

EXPR is a small Python expression over the arguments, translated into the
policy's conditions (so it is evaluated by the gate, never by Python):
`amount > 50`, `region == "EU" and amount >= 10`, `order_id in ["A-1", "A-2"]`,
`path.startswith("/srv/")`, `customer.id != 7`, `not (amount <= 50)` is not
supported (use the opposite comparison).

Objects with LangChain's tool shape (name, description, args_schema or a
JSON schema in .args / .args_schema, invoke / ainvoke) are accepted as they
are by as_tool(), with no LangChain import.
"""
from __future__ import annotations

import ast
import asyncio
import collections.abc
import dataclasses
import inspect
import json
import re
import types
import typing
from typing import Any, Awaitable, Callable, Optional, TypeVar, Union, overload

from ._errors import ToolDefinitionError
from ._schema import JSONSchema, signature_schema, to_policy_schema

# a rule or a condition of the policy language (docs/policy.md, Rules)
Rule = dict[str, Any]
# approve=/deny=: an expression over the arguments, or True for every call
Condition = Union[str, bool, None]
F = TypeVar("F", bound=Callable[..., Any])

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_OPS: dict[type[ast.cmpop], str] = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
        ast.In: "in"}


class Tool:
    """One governed tool: what the policy says about it and how to call it.
    Built by @tool, Tool.from_function or as_tool; the SDK's socket server
    calls .call(args) (a coroutine for async tools) for each allowed call."""

    function: Optional[Callable[..., Any]] = None  # the Python function, for a Tool made from one
    # An agent-written tool (Sandbox.create_tool): its source and that
    # source's SHA-256, which the policy entry carries to the audit log.
    source_sha256: Optional[str] = None
    source_text: Optional[str] = None

    def __init__(self, name: str, description: str, schema: JSONSchema,
                 call: Callable[[dict[str, Any]], Any], is_async: bool, *, irreversible: bool = False,
                 cost: float = 0, timeout: float = 30, max_calls: int | None = None,
                 approve: Condition = None, deny: Condition = None, rules: list[Rule] | None = None,
                 source: str = "python") -> None:
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ToolDefinitionError("tool name %r is not valid: use letters, digits, '_', '.', '-' "
                                      "(64 at most, not starting with a digit)" % (name,))
        if not isinstance(cost, (int, float)) or isinstance(cost, bool) or cost < 0:
            raise ToolDefinitionError("%s: cost must be a number, 0 or more" % name)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
            raise ToolDefinitionError("%s: timeout must be seconds, more than 0 and at most 3600" % name)
        if max_calls is not None and (not isinstance(max_calls, int) or max_calls < 0):
            raise ToolDefinitionError("%s: max_calls must be a whole number, 0 or more" % name)
        self.name = name
        self.description = description or ""
        self.schema = schema
        self._call = call
        self.is_async = is_async
        self.irreversible = bool(irreversible)
        self.cost = cost
        self.timeout = timeout
        self.max_calls = max_calls
        self.source = source
        if rules is not None:
            if approve is not None or deny is not None:
                raise ToolDefinitionError("%s: give either rules=[...] or approve=/deny=, not both" % name)
            if not isinstance(rules, list):
                raise ToolDefinitionError("%s: rules must be a list of policy rules" % name)
            self.rules = rules
        else:
            self.rules = make_rules(name, approve, deny)

    def call(self, args: dict[str, Any]) -> Any:
        """Run the tool on the arguments the gate let through; returns its
        result (or a coroutine, for an async tool)."""
        return self._call(args)

    def policy_entry(self, socket_path: str) -> dict[str, Any]:
        """The tool's entry in the policy file: a socket backend at
        socket_path, the schema, the governance fields and the rules."""
        t: dict[str, Any] = {"backend": {"type": "socket", "path": socket_path},
             "description": self.description[:4000],
             "args": self.schema,
             "timeout": self.timeout, "cost": self.cost, "irreversible": self.irreversible,
             "rules": self.rules}
        if self.max_calls is not None:
            t["max_calls"] = self.max_calls
        if self.source_sha256 is not None:
            t["source_sha256"] = self.source_sha256
        return t

    def __repr__(self) -> str:
        return "<Tool %s (%s)>" % (self.name, self.source)

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None,
                      description: str | None = None, args_schema: JSONSchema | None = None,
                      irreversible: bool = False, cost: float = 0, timeout: float = 30,
                      max_calls: int | None = None, approve: Condition = None, deny: Condition = None,
                      rules: list[Rule] | None = None) -> Tool:
        """A Tool from a plain function or coroutine function; the options
        are @tool's."""
        if not callable(fn):
            raise ToolDefinitionError("%r is not callable" % (fn,))
        tool_name: str = name or getattr(fn, "__name__", None) or ""
        if description is None:
            description = inspect.getdoc(fn) or ""
        schema = (to_policy_schema(args_schema, tool_name) if args_schema is not None
                  else signature_schema(fn, tool_name))
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None))
        hints = _safe_hints(fn)
        try:
            params: collections.abc.Mapping[str, inspect.Parameter] = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}

        def call(args: dict[str, Any]) -> Any:
            kwargs = {}
            for k, v in args.items():
                if k not in params:
                    raise TypeError("%s() has no parameter %r" % (tool_name, k))
                kwargs[k] = _convert(hints.get(k), v)
            return fn(**kwargs)

        t = cls(tool_name, description, schema, call, is_async, irreversible=irreversible, cost=cost,
                timeout=timeout, max_calls=max_calls, approve=approve, deny=deny, rules=rules)
        t.function = fn
        return t


def _safe_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception:
        return {}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _convert(hint: Any, value: Any) -> Any:
    """JSON value -> what the function's hint asks for: a float from a
    whole number (the gate writes 60.0 as 60), a dataclass from an object,
    a tuple from an array, each through lists, dicts, TypedDicts,
    dataclasses and Optional; everything else as is."""
    if hint is None or value is None:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _convert(args[0], value)
    if hint is float:
        return float(value) if _is_int(value) else value
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return _convert(members[0], value)
        for a in members:
            if dataclasses.is_dataclass(a) and isinstance(value, dict):
                return _convert(a, value)
        # int | float keeps a whole number whole (it is both); float | str
        # means the number was a float.
        if float in members and int not in members and _is_int(value):
            return float(value)
        return value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(value, dict):
        fh = typing.get_type_hints(hint)
        return hint(**{k: _convert(fh.get(k), v) for k, v in value.items()})
    if _is_typeddict(hint) and isinstance(value, dict):
        fh = typing.get_type_hints(hint)
        return {k: _convert(fh.get(k), v) for k, v in value.items()}
    if isinstance(value, list) and origin in (list, tuple, collections.abc.Sequence) and args:
        items = [_convert(args[0], v) for v in value]
        return tuple(items) if origin is tuple else items
    if isinstance(value, dict) and origin in (dict, collections.abc.Mapping) and len(args) == 2:
        return {k: _convert(args[1], v) for k, v in value.items()}
    if hint is tuple and isinstance(value, list):
        return tuple(value)
    return value


def _is_typeddict(t: object) -> bool:
    return isinstance(t, type) and issubclass(t, dict) and hasattr(t, "__required_keys__")


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(*, name: str | None = None, description: str | None = None, args_schema: JSONSchema | None = None,
         irreversible: bool = False, cost: float = 0, timeout: float = 30, max_calls: int | None = None,
         approve: Condition = None, deny: Condition = None,
         rules: list[Rule] | None = None) -> Callable[[F], F]: ...


def tool(fn: Optional[F] = None, /, *, name: str | None = None, description: str | None = None,
         args_schema: JSONSchema | None = None, irreversible: bool = False, cost: float = 0,
         timeout: float = 30, max_calls: int | None = None, approve: Condition = None,
         deny: Condition = None, rules: list[Rule] | None = None) -> F | Callable[[F], F]:
    """Decorator: @tool or @tool(irreversible=True, cost=1, approve="amount > 50").
    The function stays callable as before; its .tollgate_tool is the Tool.

    name, description, args_schema   instead of the function's name,
                docstring and the schema derived from its signature
    irreversible, cost, timeout, max_calls   the policy's fields of that name
    approve="EXPR" or True   matching calls wait for approval
    deny="EXPR" or True      matching calls are denied (tried before approve)
    rules=[...]              the policy's rules verbatim, instead of approve/deny
    """
    def wrap(f: F) -> F:
        setattr(f, "tollgate_tool", Tool.from_function(
            f, name=name, description=description, args_schema=args_schema, irreversible=irreversible,
            cost=cost, timeout=timeout, max_calls=max_calls, approve=approve, deny=deny, rules=rules))
        return f
    if fn is not None:
        return wrap(fn)
    return wrap


def _looks_like_langchain(obj: object) -> bool:
    return (isinstance(getattr(obj, "name", None), str) and
            (callable(getattr(obj, "invoke", None)) or callable(getattr(obj, "ainvoke", None))))


def _langchain_schema(obj: Any) -> JSONSchema:
    schema = getattr(obj, "args_schema", None)
    if schema is not None and not isinstance(schema, dict):
        for meth in ("model_json_schema", "schema"):  # pydantic v2, v1
            f = getattr(schema, meth, None)
            if callable(f):
                schema = f()
                break
        else:
            raise ToolDefinitionError("%s: args_schema is neither a JSON schema nor a pydantic model"
                                      % obj.name)
    if schema is None:
        props = getattr(obj, "args", None)
        if isinstance(props, dict):
            schema = {"type": "object", "properties": props}
    if schema is None:
        schema = {"type": "object"}
    if not isinstance(schema, dict):
        raise ToolDefinitionError("%s: args_schema did not give a JSON schema object" % obj.name)
    s = to_policy_schema(schema, obj.name)
    s.setdefault("type", "object")
    s.pop("title", None)
    return s


def from_langchain(obj: Any, *, name: str | None = None, description: str | None = None,
                   args_schema: JSONSchema | None = None, irreversible: bool = False, cost: float = 0,
                   timeout: float = 30, max_calls: int | None = None, approve: Condition = None,
                   deny: Condition = None, rules: list[Rule] | None = None) -> Tool:
    """A Tool from an object with LangChain's tool shape.  Calls go to
    obj.ainvoke(args) when it has one and obj.invoke has none, else to
    obj.invoke(args); a result with .content (a ToolMessage) gives its
    content.  The options are @tool's."""
    tool_name: str = name or obj.name
    if description is None:
        description = getattr(obj, "description", "") or ""
    schema = to_policy_schema(args_schema, tool_name) if args_schema is not None else _langchain_schema(obj)
    inv = getattr(obj, "invoke", None)
    ainv = getattr(obj, "ainvoke", None)
    # LangChain's StructuredTool built from a coroutine alone has an
    # invoke() that raises; it says so with .func None and .coroutine set.
    async_only = getattr(obj, "coroutine", None) is not None and getattr(obj, "func", None) is None
    use_async = callable(ainv) and (not callable(inv) or async_only)
    call: Callable[[dict[str, Any]], Any]
    if use_async:
        assert ainv is not None

        async def acall(args: dict[str, Any]) -> Any:
            return _unwrap(await ainv(args))
        call = acall
    else:
        assert inv is not None

        def scall(args: dict[str, Any]) -> Any:
            return _unwrap(inv(args))
        call = scall
    return Tool(tool_name, description or "", schema, call, use_async, source="langchain",
                irreversible=irreversible, cost=cost, timeout=timeout, max_calls=max_calls,
                approve=approve, deny=deny, rules=rules)


def _unwrap(result: Any) -> Any:
    content = getattr(result, "content", None)
    if content is not None and not isinstance(result, (dict, list, str)):
        return content
    return result


def as_tool(obj: object, *, name: str | None = None, description: str | None = None,
            args_schema: JSONSchema | None = None, irreversible: bool = False, cost: float = 0,
            timeout: float = 30, max_calls: int | None = None, approve: Condition = None,
            deny: Condition = None, rules: list[Rule] | None = None) -> Tool:
    """Anything the SDK accepts as a tool -> Tool: a Tool, a function
    decorated with @tool, a plain function or coroutine function, or an
    object with LangChain's tool shape.  The options are @tool's."""
    opts: dict[str, Any] = dict(name=name, description=description, args_schema=args_schema,
                                irreversible=irreversible, cost=cost, timeout=timeout,
                                max_calls=max_calls, approve=approve, deny=deny, rules=rules)
    given = opts != _DEFAULT_OPTIONS
    if isinstance(obj, Tool):
        if given:
            raise ToolDefinitionError("%s is already a Tool; pass its options to @tool" % obj.name)
        return obj
    t = getattr(obj, "tollgate_tool", None)
    if isinstance(t, Tool) and not given:
        return t
    if _looks_like_langchain(obj) and not inspect.isfunction(obj):
        return from_langchain(obj, **opts)
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.iscoroutinefunction(obj):
        assert callable(obj)
        return Tool.from_function(obj, **opts)
    raise ToolDefinitionError(
        "%r cannot be a tool: pass a function, a @tool-decorated function, or an object with "
        "LangChain's tool shape (name, description, args_schema, invoke/ainvoke)" % (obj,))


_DEFAULT_OPTIONS: dict[str, Any] = dict(name=None, description=None, args_schema=None, irreversible=False,
                                        cost=0, timeout=30, max_calls=None, approve=None, deny=None,
                                        rules=None)


# ---- approve="amount > 50" -> policy conditions ------------------------------

def condition(expr: object, where: str) -> Rule:
    """A policy condition (docs/policy.md, Rules) from a Python expression.
    Raises ToolDefinitionError for anything the policy language lacks."""
    if not isinstance(expr, str):
        raise ToolDefinitionError("%s: a condition is a string such as \"amount > 50\"" % where)
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError as e:
        raise ToolDefinitionError("%s: %r is not an expression (%s)" % (where, expr, e.msg)) from None
    return _cond(tree, expr, where)


def _argname(node: ast.expr, expr: str, where: str) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _argname(node.value, expr, where) + "." + node.attr
    raise ToolDefinitionError("%s: in %r, the left side must be an argument name (amount, "
                              "customer.id)" % (where, expr))


def _literal(node: ast.expr, expr: str, where: str) -> Any:
    try:
        v = ast.literal_eval(node)
    except ValueError:
        raise ToolDefinitionError("%s: in %r, the right side must be a literal (a number, a "
                                  "string, True/False/None, or a list of them)" % (where, expr)) from None
    if isinstance(v, tuple):
        v = list(v)
    json.dumps(v)
    return v


def _cond(node: ast.expr, expr: str, where: str) -> Rule:
    if isinstance(node, ast.BoolOp):
        key = "all" if isinstance(node.op, ast.And) else "any"
        return {key: [_cond(v, expr, where) for v in node.values]}
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            raise ToolDefinitionError("%s: %r chains comparisons; write 'a < x and x < b'" % (where, expr))
        op = _OPS.get(type(node.ops[0]))
        if op is None:
            raise ToolDefinitionError("%s: %r uses an operator the policy lacks; use <, <=, >, >=, "
                                      "==, !=, in" % (where, expr))
        value = _literal(node.comparators[0], expr, where)
        if op == "in" and not isinstance(value, list):
            raise ToolDefinitionError("%s: in %r, 'in' needs a list on the right" % (where, expr))
        if op in ("<", "<=", ">", ">=") and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise ToolDefinitionError("%s: in %r, %s compares numbers only" % (where, expr, op))
        return {"arg": _argname(node.left, expr, where), "op": op, "value": value}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            node.func.attr == "startswith" and len(node.args) == 1 and not node.keywords):
        value = _literal(node.args[0], expr, where)
        if not isinstance(value, str):
            raise ToolDefinitionError("%s: in %r, startswith needs a string" % (where, expr))
        return {"arg": _argname(node.func.value, expr, where), "op": "prefix", "value": value}
    raise ToolDefinitionError("%s: %r is not a condition the policy can check; use comparisons "
                              "(amount > 50), 'in [...]', .startswith('...'), and/or" % (where, expr))


def make_rules(name: str, approve: Condition, deny: Condition) -> list[Rule]:
    """The rules for approve=/deny=: deny first, then approve, then allow."""
    rules: list[Rule] = []
    if deny is True:
        return [{"effect": "deny", "reason": "%s is not allowed" % name}]
    if deny is not None and deny is not False:
        rules.append({"if": condition(deny, name + ": deny"), "effect": "deny",
                      "reason": "%s: %s is not allowed" % (name, deny)})
    if approve is True:
        rules.append({"effect": "approve", "reason": "every %s call needs approval" % name})
        return rules
    if approve is not None and approve is not False:
        rules.append({"if": condition(approve, name + ": approve"), "effect": "approve",
                      "reason": "%s needs approval when %s" % (name, approve)})
    rules.append({"effect": "allow", "reason": "allowed by the tool's definition"})
    return rules


def run_sync(t: Tool, args: dict[str, Any], loop: asyncio.AbstractEventLoop) -> Any:
    """Call a tool from a worker thread: an async tool runs on loop (the
    server's event loop thread), a sync one right here."""
    if t.is_async:
        fut = asyncio.run_coroutine_threadsafe(_await(t.call(args)), loop)
        return fut.result()
    out = t.call(args)
    if inspect.isawaitable(out):
        fut = asyncio.run_coroutine_threadsafe(_await(out), loop)
        return fut.result()
    return out


async def _await(x: Awaitable[Any]) -> Any:
    return await x

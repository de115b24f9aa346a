"""What `tollgate mcp` tells an MCP client about itself, made from the
policy: run_python's description and the server's instructions (each
governed tool with its Python signature, one line of description, whether
it is irreversible or may need approval, and the budgets), the tools'
input and output schemas, and their annotations (docs/mcp.md).

Everything here is computed from a policy document; nothing starts a
container, so a client can list the tools before the sandbox is usable.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ._sdk import escape_json, one_line

__all__ = ["escape_json", "one_line"]

# What a session keeps between calls, unless the SDK's Session class says
# itself (a KEEPS attribute).  Sessions are Sandbox.session() (sandbox.py):
# one container, each call a new process in it.
SESSION_KEEPS = ("files in /tmp and the budgets carry over from call to call; Python "
                 "variables and imports do not (each call is a new process)")


def session_keeps() -> str:
    from .. import Session
    keeps = getattr(Session, "KEEPS", None)
    return keeps if isinstance(keeps, str) else SESSION_KEEPS


TOOLS_IN_DESCRIPTION = 60   # more than this: the rest are named, see list_tools

_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
             "array": "list", "object": "dict", "null": "None"}


def effective_policy(sb: Any) -> dict[str, Any]:
    """The policy the sandbox's programs run under: sb.policy once it has
    started, else the policy file merged with the Python tools the way
    Sandbox does it (the policy file's word on governance wins)."""
    if getattr(sb, "policy", None):
        return dict(sb.policy)
    p: dict[str, Any] = json.loads(json.dumps(getattr(sb, "base_policy", None) or {"version": 1, "tools": {}}))
    tools = p.setdefault("tools", {})
    for t in getattr(sb, "tools", []):
        entry = t.policy_entry("/nonexistent")
        given = tools.get(t.name)
        if isinstance(given, dict):
            entry.update({k: v for k, v in given.items() if k != "backend"})
        tools[t.name] = entry
    if getattr(sb, "budgets", None):
        p.setdefault("budgets", {}).update(sb.budgets)
    return p




def _py_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "Any"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "Literal[%s]" % ", ".join(_py_literal(v) for v in schema["enum"][:8])
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(_PY_TYPES.get(x, "Any") for x in t if isinstance(x, str)) or "Any"
    if t == "array" and isinstance(schema.get("items"), dict):
        return "list[%s]" % _py_type(schema["items"])
    return _PY_TYPES.get(t, "Any") if isinstance(t, str) else "Any"


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    t = schema.get("type")
    if t is None:
        return "enum" not in schema or None in (schema.get("enum") or [])
    return t == "null" or (isinstance(t, list) and "null" in t)


def _py_literal(v: Any) -> str:
    """A JSON default as the Python value the program would write."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    return one_line(json.dumps(v), 80)


def _optional(k: str, schema: Any) -> str:
    """An argument the program may leave out, shown as what it may pass:
    its default when the schema has one, `= None` only when null is
    allowed (a program that passes None where the schema wants a string
    is refused), else `= <omit>`: leave it out or pass the type."""
    t = _py_type(schema)
    if isinstance(schema, dict) and "default" in schema:
        return "%s: %s = %s" % (k, t, _py_literal(schema["default"]))
    if _allows_null(schema):
        has_none = "None" in t.split(" | ") or t == "Any" or t.startswith("Literal[") and "None" in t
        return "%s: %s = None" % (k, t if has_none else t + " | None")
    return "%s: %s = <omit>" % (k, t)


def signature(name: str, spec: dict[str, Any]) -> str:
    """name(*, a: str, b: int | None = None): the tool as the program
    calls it (keyword arguments only, bridge/client/tollgate.py)."""
    given, args, props = spec.get("args"), {}, {}
    if isinstance(given, dict):
        args = given
    if isinstance(args.get("properties"), dict):
        props = args["properties"]
    required = [r for r in (args.get("required") or []) if isinstance(r, str)]
    parts = []
    for k in sorted(props, key=lambda k: (k not in required, k)):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            continue  # not a Python keyword argument; list_tools shows it
        parts.append("%s: %s" % (k, _py_type(props[k])) if k in required else _optional(k, props[k]))
    if parts:
        return "%s(*, %s)" % (name, ", ".join(parts))
    return "%s(**args)" % name if not props and args.get("additionalProperties", True) is not False \
        else "%s()" % name


def _effects(spec: dict[str, Any]) -> set[Any]:
    return {r.get("effect") for r in spec.get("rules") or [] if isinstance(r, dict)}


def reachable(spec: dict[str, Any]) -> bool:
    """Can a call of this tool ever run: some rule allows or approves."""
    return bool(_effects(spec) & {"allow", "approve"})


def tool_facts(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "signature": signature(name, spec),
            "description": one_line(spec.get("description", "")),
            "irreversible": bool(spec.get("irreversible")),
            "may_need_approval": "approve" in _effects(spec),
            "always_denied": not reachable(spec),
            "cost": spec.get("cost", 0), "max_calls": spec.get("max_calls")}


def budget_lines(policy: dict[str, Any]) -> list[str]:
    b = policy.get("budgets") or {}
    out = ["at most %s tool calls (every attempt counts, denied ones too)" % b.get("max_tool_calls", 50)]
    if "max_cost" in b:
        out.append("a total cost of %s (the tools' cost)" % b["max_cost"])
    if "max_irreversible" in b:
        out.append("%s calls of irreversible tools" % b["max_irreversible"])
    if "repeat_limit" in b:
        out.append("the same call (tool and arguments) at most %s times" % b["repeat_limit"])
    return out


def tools_text(policy: dict[str, Any], approvals_by: str) -> str:
    """The governed tools, one per line, and the budgets."""
    tools = policy.get("tools") or {}
    facts = [tool_facts(n, s) for n, s in sorted(tools.items()) if isinstance(s, dict)]
    lines = []
    for f in facts[:TOOLS_IN_DESCRIPTION]:
        marks = []
        if f["irreversible"]:
            marks.append("irreversible")
        if f["always_denied"]:
            marks.append("always denied")
        elif f["may_need_approval"]:
            marks.append("may need approval (%s)" % approvals_by)
        if f["cost"]:
            marks.append("cost %s" % f["cost"])
        if f["max_calls"] is not None:
            marks.append("at most %s calls" % f["max_calls"])
        lines.append("- %s%s%s" % (f["signature"], " [%s]" % "; ".join(marks) if marks else "",
                                   ": " + f["description"] if f["description"] else ""))
    if len(facts) > TOOLS_IN_DESCRIPTION:
        lines.append("- and %d more (list_tools): %s" % (
            len(facts) - TOOLS_IN_DESCRIPTION,
            ", ".join(f["name"] for f in facts[TOOLS_IN_DESCRIPTION:])[:2000]))
    if not facts:
        lines.append("- (none: the program has no way out of the sandbox)")
    return ("Governed host tools (inside: `from tollgate import NAME`, then NAME(arg=value); "
            "keyword arguments only):\n" + "\n".join(lines) +
            "\nBudgets per run, or per session: " + "; ".join(budget_lines(policy)) + ".")


REFUSALS = ("A refused call raises an exception in the program (tollgate.ToolDenied, "
            "BudgetExhausted, ApprovalTimeout, ... all subclasses of tollgate.TollgateError): "
            "catch it to carry on.")


def run_description(policy: dict[str, Any], shell: bool, approvals_by: str, timeout: float) -> str:
    what = ("Run a sh command line" if shell else "Run a Python 3 program")
    head = ("%s in a fresh hardened sandbox (gVisor, no network, killed after %g s unless "
            "`timeout` says otherwise). Its only way out is the governed host tools below; every "
            "call is checked by policy on the host and audited." % (what, timeout))
    if shell:
        head += (" Tools from sh: /run/tollgate/tollgate-call TOOL 'JSON-ARGS' (or python3 -c "
                 "'from tollgate import NAME ...').")
    return "\n".join([head, tools_text(policy, approvals_by), REFUSALS,
                      "Sessions: pass `session` (a name) to keep one sandbox for several calls: " +
                      session_keeps() + ". Without it every call starts clean.",
                      "Returns stdout, stderr, the exit status, every governed call with its "
                      "decision, the budget used and the audit log (also a resource)."])


def instructions(policy: dict[str, Any], approvals_by: str, timeout: float, shell: bool) -> str:
    return "\n".join([
        "tollgate runs code you write in a hardened gVisor sandbox with no network: "
        "run_python%s. Write the whole task as one program that calls the tools directly; "
        "you do not need list_tools first." % (" (or run_shell)" if shell else ""),
        tools_text(policy, approvals_by), REFUSALS,
        "Sessions (the `session` argument): " + session_keeps() + "; end_session ends one.",
        "Each run's audit log, with its verification, is a resource (tollgate://audit/ID)."
        " Programs run at most %g s by default." % timeout])


def tool_annotations(policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Hints per tool name, from what the policy lets a program reach."""
    tools = [s for s in (policy.get("tools") or {}).values() if isinstance(s, dict)]
    irreversible = any(s.get("irreversible") and reachable(s) for s in tools)
    approvable_irreversible = any(s.get("irreversible") and "approve" in _effects(s) for s in tools)
    nothing_reachable = not any(reachable(s) for s in tools)
    run = {"readOnlyHint": nothing_reachable, "destructiveHint": irreversible,
           "idempotentHint": nothing_reachable, "openWorldHint": False}
    ro = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
          "openWorldHint": False}
    return {
        "run_python": dict(run, title="Run Python in a governed sandbox"),
        "run_shell": dict(run, title="Run sh in a governed sandbox"),
        "end_session": {"title": "End a sandbox session", "readOnlyHint": False,
                        "destructiveHint": True, "idempotentHint": True, "openWorldHint": False},
        "list_tools": dict(ro, title="The governed tools inside the sandbox"),
        "pending_approvals": dict(ro, title="Calls waiting for approval"),
        "approve": {"title": "Approve a waiting call", "readOnlyHint": False,
                    "destructiveHint": approvable_irreversible, "idempotentHint": True,
                    "openWorldHint": False},
        "deny": {"title": "Deny a waiting call", "readOnlyHint": False, "destructiveHint": False,
                 "idempotentHint": True, "openWorldHint": False},
    }


# ---- schemas ------------------------------------------------------------------

def obj(props: dict[str, Any], required: tuple[str, ...] | list[str] = (),
        additional: bool = False) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": additional}


_STR = {"type": "string"}
_CALL = obj({"call_id": _STR, "tool": _STR, "args": {}, "decision": _STR, "reason": _STR,
             "approver": _STR, "outcome": _STR},
            ["call_id", "tool", "args", "decision", "reason", "approver", "outcome"])
_BUDGET = obj({"calls": {"type": "integer"}, "cost": {"type": "number"},
               "irreversible": {"type": "integer"},
               "tools": {"type": "object", "additionalProperties": {"type": "integer"}},
               "anomalies": {"type": "integer",
                             "description": "anomaly limits of the policy the run reached"}},
              ["calls", "cost", "irreversible", "tools"], additional=True)

RUN_OUTPUT = obj({
    "exit_status": {"type": "integer", "description": "the program's exit status (128+N: signal N)"},
    "stdout": _STR, "stderr": _STR,
    "calls": {"type": "array", "items": _CALL, "description": "every governed call, denied ones too"},
    "budget_used": _BUDGET,
    "audit_log": {"type": "string", "description": "the run's audit log on the host"},
    "audit_resource": {"type": "string", "description": "the same log as an MCP resource URI"},
    "timed_out": {"type": "boolean"},
    "session": {"type": ["string", "null"]},
}, ["exit_status", "stdout", "stderr", "calls", "budget_used", "audit_log", "audit_resource",
    "timed_out", "session"])

LIST_OUTPUT = obj({"tools": {"type": "array", "items": {"type": "object"}},
                   "budgets": {"type": "object"}}, ["tools", "budgets"])
END_OUTPUT = obj({"ended": {"type": "boolean"}}, ["ended"])
PENDING_OUTPUT = obj({"pending": {"type": "array", "items": {"type": "object"}}}, ["pending"])
DECIDE_OUTPUT = obj({"ok": {"type": "boolean"}, "error": _STR}, ["ok"], additional=True)

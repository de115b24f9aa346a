"""Approving parked calls by asking the person at the MCP client
(docs/mcp.md): the Sandbox's approval callback when the host config allows
it (mcp_elicit_approvals, passed as --allow-elicit by shim/cli/cmd_mcp.c:
the operator's decision).

Each call the policy parks is put to the person through the run's own MCP
request, in its revision's input mechanism: an `elicitation/create`
request (2025-11-25 and earlier) or an `input_required` result that the
client answers by retrying its tools/call (2026-07-28).  The question
shows the tool, its arguments and the rule's reason, every character
escaped (the arguments are the container's).  The answer reaches the gate
over the container's control socket and is recorded there with the
client's name and version in the reason.  No answer before the gate's
approval timeout is the gate's timeout deny; a decline, a cancel, an
error or a malformed answer denies.  A run whose client cannot be asked
(no elicitation capability) is left to a person on the host, or the
timeout.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._describe import escape_json, one_line
from ._runs import Job, Question

ARGS_SHOWN = 2000

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "title": "Decision", "enum": ["approve", "deny"],
                     "description": "approve runs the call; deny refuses it"},
        "note": {"type": "string", "title": "Note for the audit log", "maxLength": 200}},
    "required": ["decision"]}


def escaped_args(args: Any) -> str:
    """The arguments as JSON with every non-ASCII character escaped
    (bidi overrides and zero-width characters cannot reorder or hide
    what the person reads), cut at ARGS_SHOWN."""
    s = escape_json(args)
    return s if len(s) <= ARGS_SHOWN else s[:ARGS_SHOWN] + "... (%d characters in all)" % len(s)


def message(req: Any) -> str:
    wait = max(0, (req.timeout_ms - req.waiting_ms) // 1000)
    return ("A sandboxed program wants to call %s, which needs a person's approval.\n"
            "Arguments: %s\nWhy it needs approval: %s\nContainer: %s, call %s. "
            "Unanswered within %d s, it is denied." % (
                one_line(req.tool, 128), escaped_args(req.args), one_line(req.reason, 500),
                one_line(req.container, 128), one_line(req.call_id, 64), wait))


def decision(answer: Any, who: str) -> tuple[bool, str]:
    """An elicitation result (its JSON form) -> (approve?, the reason recorded)."""
    if not isinstance(answer, dict):
        return False, "the MCP client %s answered with no result" % who
    action = answer.get("action")
    content: dict[str, Any] = {}
    if isinstance(answer.get("content"), dict):
        content = answer["content"]
    note = one_line(content.get("note") or "", 200)
    tail = (": " + note) if note else ""
    if action == "accept" and content.get("decision") == "approve":
        return True, "approved by the person at MCP client %s (elicitation)%s" % (who, tail)
    if action == "accept" and content.get("decision") == "deny":
        return False, "denied by the person at MCP client %s (elicitation)%s" % (who, tail)
    if action in ("decline", "cancel"):
        return False, "the person at MCP client %s chose %s (elicitation)" % (who, action)
    return False, "the MCP client %s gave no decision (%s)" % (who, one_line(action, 32))


class Approver:
    """The Sandbox's approval callback (called on the SDK's watcher thread,
    one per parked call): finds the run of the container, and when its
    client can be asked, puts the question to it and waits."""

    def __init__(self, find: Callable[[str], tuple[Job, str] | None]) -> None:
        self.find = find        # container id -> (its job, the client's identity), if askable

    def __call__(self, req: Any) -> tuple[bool, str]:
        remaining = max(1.0, (req.timeout_ms - req.waiting_ms) / 1000.0) + 0.5
        deadline = time.monotonic() + remaining
        found = self.find(req.container)
        while found is None and time.monotonic() < deadline:
            # Its run may not be known yet; or its client cannot be asked,
            # and then a person on the host may still decide: past the
            # gate's timeout the call is denied and this deny is moot.
            time.sleep(0.2)
            found = self.find(req.container)
        if found is None:
            return False, "no MCP client of this run could be asked"
        job, who = found
        q = Question(req, message(req))
        job.ask(q)
        if not q.done.wait(remaining):
            q.settle(None, "timed out")
            return False, "nobody at the MCP client %s answered in time" % who
        if q.error is not None:
            return False, "the MCP client %s could not ask: %s" % (who, one_line(q.error, 200))
        return decision(q.answer, who)

"""Approving parked calls by MCP elicitation (docs/mcp.md).

When the host config allows it (mcp_elicit_approvals, passed as
--allow-elicit by shim/cli/cmd_mcp.c: the operator's decision) and the MCP
client declares the elicitation capability, each call the policy parks
for approval is put to the person at the client with elicitation/create:
the tool, its arguments and the rule's reason, every character of them
escaped (the arguments are the container's).  The answer is the
Sandbox's approval callback's (sandbox.py), so it reaches the gate over
the container's control socket and is recorded there with the client's
name and version in the reason.  No answer before the gate's approval
timeout is a deny (the gate's own timeout, recorded as such); a decline,
a cancel, an error or a malformed answer denies too.
"""
import threading

from ._describe import escape_json, one_line

ARGS_SHOWN = 2000


def escaped_args(args):
    """The arguments as JSON with every non-ASCII character escaped
    (bidi overrides and zero-width characters cannot reorder or hide
    what the person reads), cut at ARGS_SHOWN."""
    s = escape_json(args)
    return s if len(s) <= ARGS_SHOWN else s[:ARGS_SHOWN] + "... (%d characters in all)" % len(s)


SCHEMA = {"type": "object",
          "properties": {
              "decision": {"type": "string", "title": "Decision", "enum": ["approve", "deny"],
                           "description": "approve runs the call; deny refuses it"},
              "note": {"type": "string", "title": "Note for the audit log", "maxLength": 200}},
          "required": ["decision"]}


class Elicitor:
    """The approval callback that asks the person at the MCP client."""

    def __init__(self, server):
        self.srv = server

    def message(self, req):
        wait = max(0, (req.timeout_ms - req.waiting_ms) // 1000)
        return ("A sandboxed program wants to call %s, which needs a person's approval.\n"
                "Arguments: %s\nWhy it needs approval: %s\nContainer: %s, call %s. "
                "Unanswered within %d s, it is denied." % (
                    one_line(req.tool, 128), escaped_args(req.args), one_line(req.reason, 500),
                    one_line(req.container, 128), one_line(req.call_id, 64), wait))

    def __call__(self, req):
        who = self.srv.client_identity()
        remaining = max(1.0, (req.timeout_ms - req.waiting_ms) / 1000.0) + 0.5
        try:
            answer = self.srv.outgoing.request("elicitation/create",
                                               {"message": self.message(req), "requestedSchema": SCHEMA},
                                               timeout=remaining, tag=req.container)
        except TimeoutError:
            return False, "nobody at the MCP client %s answered in time" % who
        except Exception as e:  # the client refused or broke: never an approval
            return False, "the MCP client %s could not ask: %s" % (who, one_line(e, 200))
        if not isinstance(answer, dict):
            return False, "the MCP client %s answered with no result" % who
        action = answer.get("action")
        content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
        note = one_line(content.get("note") or "", 200)
        tail = (": " + note) if note else ""
        if action == "accept" and content.get("decision") == "approve":
            return True, "approved by the person at MCP client %s (elicitation)%s" % (who, tail)
        if action == "accept" and content.get("decision") == "deny":
            return False, "denied by the person at MCP client %s (elicitation)%s" % (who, tail)
        if action in ("decline", "cancel"):
            return False, "the person at MCP client %s chose %s (elicitation)" % (who, action)
        return False, "the MCP client %s gave no decision (%s)" % (who, one_line(action, 32))


class Outgoing:
    """Requests from the server to the client, and their answers."""

    def __init__(self, send):
        self.send = send
        self.lock = threading.Lock()
        self.n = 0
        self.waiting = {}

    def request(self, method, params, timeout, tag=None):
        with self.lock:
            self.n += 1
            mid = "tollgate-%d" % self.n
            slot = self.waiting[mid] = {"event": threading.Event(), "tag": tag}
        self.send({"jsonrpc": "2.0", "id": mid, "method": method, "params": params})
        try:
            if not slot["event"].wait(timeout):
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": mid, "reason": "timed out after %g s" % timeout}})
                raise TimeoutError(method)
        finally:
            with self.lock:
                self.waiting.pop(mid, None)
        if "error" in slot:
            raise RuntimeError(one_line((slot["error"] or {}).get("message", "error"), 300))
        return slot.get("result")

    def withdraw(self, tag, why):
        """End every request made for tag (a container) unanswered: its
        run ended, so the question is moot.  The client is told."""
        with self.lock:
            slots = [(mid, sl) for mid, sl in self.waiting.items() if sl.get("tag") == tag]
        for mid, sl in slots:
            sl["error"] = {"message": why}
            sl["event"].set()
            self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": mid, "reason": why}})

    def answer(self, msg):
        """A response from the client: True when it answered one of ours."""
        mid = msg.get("id")
        if not isinstance(mid, str):
            return False
        with self.lock:
            slot = self.waiting.get(mid)
        if slot is None:
            return False
        if "error" in msg:
            slot["error"] = msg["error"] if isinstance(msg["error"], dict) else {"message": str(msg["error"])}
        else:
            slot["result"] = msg.get("result")
        slot["event"].set()
        return True

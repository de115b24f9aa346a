"""Approval callbacks: the parked calls of a container, shown to the
Sandbox's approval callback (or printed for a person) over its control
socket (docs/policy.md, The control socket; docs/sdk.md, Approval)."""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any, Awaitable

from ._text import one_line

if TYPE_CHECKING:
    from ._sandbox import Sandbox


@dataclasses.dataclass
class ApprovalRequest:
    """A call parked for approval, as the approval callback sees it."""
    call_id: str
    tool: str
    args: dict[str, Any]
    reason: str                 # the rule's reason ("refunds over 50 need a human")
    container: str
    waiting_ms: int = 0
    timeout_ms: int = 0


def control_request(path: str, req: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """One request to a container's control socket (docs/policy.md, The
    control socket): one JSON line out, one back."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > (4 << 20):
                raise OSError("control socket reply too large")
    reply = json.loads(buf.split(b"\n", 1)[0] or b"{}")
    if not isinstance(reply, dict):
        raise ValueError("the control socket's reply is not a JSON object")
    return reply


def _decision(answer: object) -> tuple[bool, str]:
    """The approval callback's answer -> (approve?, reason)."""
    reason = ""
    if isinstance(answer, tuple) and len(answer) == 2:
        answer, reason = answer
    if isinstance(answer, str):
        approve = answer.strip().lower() in ("allow", "approve", "approved", "yes", "y")
    else:
        approve = answer is True
    return approve, str(reason or "")


class ApprovalWatcher(threading.Thread):
    """Decides the parked calls of one container with the Sandbox's
    approval callback, over its control socket; or, with approval="cli",
    prints the command a person types.  The gate's timeout denies whatever
    nobody decides.

    Each parked call gets its own thread (the gate parks at most
    max_pending calls, 10 by default, so they are bounded): a slow
    callback never keeps the next parked call from being shown.  A
    coroutine function (or a callback that returns an awaitable) is run
    to completion on that thread's own event loop."""

    def __init__(self, sandbox: Sandbox, container_id: str) -> None:
        super().__init__(name="tollgate-sdk-approval", daemon=True)
        self.sb = sandbox
        self.cid = container_id
        assert sandbox.root is not None, "the Sandbox has started"
        self.sock = os.path.join(sandbox.root, container_id, "control.sock")
        self.stopping = threading.Event()
        self.seen: set[str] = set()
        self.decisions: list[tuple[str, str, str, str]] = []
        self.deciders: list[threading.Thread] = []

    def stop(self) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(timeout=10)
        for t in self.deciders:
            t.join(timeout=1)

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            try:
                reply = control_request(self.sock, {"verb": "pending"}, timeout=2)
            except (OSError, ValueError):
                continue
            for p in reply.get("pending") or []:
                call = p.get("call")
                if not isinstance(call, str) or call in self.seen or p.get("decider") == "hook":
                    continue
                self.seen.add(call)
                if self.sb.approval == "cli":
                    self.decide(p)
                    continue
                t = threading.Thread(target=self.decide, args=(p,), name="tollgate-sdk-decide", daemon=True)
                self.deciders = [d for d in self.deciders if d.is_alive()] + [t]
                t.start()

    def decide(self, p: dict[str, Any]) -> None:
        req = ApprovalRequest(call_id=p["call"], tool=p.get("tool") or "", args=p.get("args") or {},
                              reason=p.get("reason") or "", container=self.cid,
                              waiting_ms=p.get("waiting_ms") or 0, timeout_ms=p.get("timeout_ms") or 0)
        cb = self.sb.approval
        if cb is None:
            return
        if cb == "cli":
            tg = self.sb.tollgate
            # the container's words, escaped for the person's terminal
            print("tollgate_sdk: %s %s waits for a person (%s). Approve or deny it with\n"
                  "    %s --root %s approve %s %s\n    %s --root %s deny %s %s --reason TEXT"
                  % (one_line(req.tool), json.dumps(req.args), one_line(req.reason), tg, self.sb.root,
                     self.cid, req.call_id,
                     tg, self.sb.root, self.cid, req.call_id), file=sys.stderr, flush=True)
            return
        try:
            answer = cb(req)
            if inspect.isawaitable(answer):
                answer = asyncio.run(_awaited(answer))
            approve, why = _decision(answer)
        except Exception as e:  # a broken callback denies; it never approves
            approve, why = False, "the approval callback raised %s: %s" % (type(e).__name__, e)
        verb = "approve" if approve else "deny"
        reason = why or ("approved" if approve else "denied") + " by the SDK's approval callback"
        self.decisions.append((req.call_id, req.tool, verb, reason))
        try:
            control_request(self.sock, {"verb": verb, "call": req.call_id, "reason": reason[:500]})
        except (OSError, ValueError):
            pass  # the call ended meanwhile (timeout, container stopped)


async def _awaited(aw: Awaitable[Any]) -> Any:
    return await aw

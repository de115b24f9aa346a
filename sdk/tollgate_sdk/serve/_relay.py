"""Tools served by an API client (the SDK's client mode): the tenant's
policy names them with a `{"type": "client"}` backend; a sandbox created
with {"tollgate": {"tools": [...]}} gets them as Python tools whose every
call, once the gate has let it through, is handed to the client that
polls /tollgate/sandboxes/ID/tool-calls and answered by its POST.  A call
whose client has stopped polling fails at once; one handed out and never
answered fails at the tool's timeout: never a hang."""
from __future__ import annotations

import queue
import secrets
import threading
import time
from typing import Any

from .._errors import TollgateSDKError, ToolDefinitionError
from .._tools import Tool
from ._service_error import ServiceError

__all__ = ["ClientToolFailed", "Relay", "client_tools_of", "without_client_tools"]


class ClientToolFailed(TollgateSDKError):
    """A client-served tool's call failed: its client is gone, has too
    many calls waiting, did not answer in time, or answered an error.
    The program in the sandbox sees it as the tool's failure."""


POLL_GRACE = 3.0     # seconds after a poll ends during which the client still counts as there
ANSWER_MAX = 1 << 20


class Relay:
    def __init__(self) -> None:
        self._calls: queue.Queue[dict[str, Any]] = queue.Queue(256)
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, dict[str, Any]]] = {}
        self._polling = 0
        self._last_poll = time.monotonic()
        self.closed = False

    def _client_there(self) -> bool:
        with self._lock:
            return not self.closed and (self._polling > 0 or time.monotonic() - self._last_poll < POLL_GRACE)

    def tool(self, name: str, description: str, schema: dict[str, Any], timeout: float) -> Tool:
        def call(args: dict[str, Any]) -> Any:
            return self._call(name, args, timeout)
        return Tool(name, description, schema, call, False, timeout=timeout, source="client")

    def _call(self, name: str, args: dict[str, Any], timeout: float) -> Any:
        if not self._client_there():
            raise ClientToolFailed("the client that serves %s is gone" % name)
        call_id = secrets.token_hex(8)
        ev = threading.Event()
        slot: dict[str, Any] = {}
        with self._lock:
            self._waiting[call_id] = (ev, slot)
        try:
            try:
                self._calls.put({"id": call_id, "tool": name, "args": args}, timeout=1)
            except queue.Full:
                raise ClientToolFailed("the client that serves %s has too many calls waiting" % name) from None
            end = time.monotonic() + timeout
            while not ev.wait(0.5):
                if time.monotonic() > end:
                    raise ClientToolFailed("the client that serves %s did not answer in %g s" % (name, timeout))
                if not self._client_there():
                    raise ClientToolFailed("the client that serves %s is gone" % name)
        finally:
            with self._lock:
                self._waiting.pop(call_id, None)
        if slot.get("ok"):
            return slot.get("result")
        raise ClientToolFailed(str(slot.get("error") or "the client's tool failed")[:2000])

    def next_call(self, wait: float) -> dict[str, Any] | None:
        """The next call for the client, waiting up to wait seconds."""
        with self._lock:
            self._polling += 1
        try:
            return self._calls.get(timeout=max(0.0, min(wait, 30.0)))
        except queue.Empty:
            return None
        finally:
            with self._lock:
                self._polling -= 1
                self._last_poll = time.monotonic()

    def answer(self, call_id: str, body: dict[str, Any]) -> bool:
        with self._lock:
            w = self._waiting.get(call_id)
        if w is None:
            return False
        ev, slot = w
        slot.update(ok=bool(body.get("ok")), result=body.get("result"), error=body.get("error"))
        ev.set()
        return True

    def close(self) -> None:
        with self._lock:
            self.closed = True


def client_tools_of(policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    tools = policy.get("tools") or {}
    return {n: t for n, t in tools.items()
            if isinstance(t, dict) and isinstance(t.get("backend"), dict) and t["backend"].get("type") == "client"}


def without_client_tools(policy: dict[str, Any]) -> dict[str, Any]:
    p = dict(policy)
    client = client_tools_of(policy)
    p["tools"] = {n: t for n, t in (policy.get("tools") or {}).items() if n not in client}
    return p


def relay_tools(relay: Relay, policy: dict[str, Any], asked: Any) -> list[Tool]:
    """The client's tools, each one the tenant's policy names as a client
    tool: the client brings only the function; the tenant's entry (rules,
    schema, cost, limits) governs it."""
    if asked is None:
        return []
    if not isinstance(asked, list) or len(asked) > 64:
        raise ServiceError(400, "tollgate.tools must be a list of at most 64 tools")
    allowed = client_tools_of(policy)
    out = []
    for t in asked:
        name = t.get("name") if isinstance(t, dict) else None
        if not isinstance(name, str) or name not in allowed:
            raise ServiceError(400, "tool %r is not a client tool of this tenant's policy (the tenant's "
                                    "policy names the tools a client may serve, with backend "
                                    "{\"type\": \"client\"})" % (name,))
        entry = allowed[name]
        try:
            out.append(relay.tool(name, str(entry.get("description") or t.get("description") or ""),
                                  entry.get("args") or {"type": "object"}, float(entry.get("timeout", 30))))
        except ToolDefinitionError as e:
            raise ServiceError(400, str(e)) from None
    return out

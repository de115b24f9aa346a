"""The SDK's client mode: the same Sandbox API against a `tollgate serve`
daemon (docs/serve.md), over TCP or a unix socket, with no privileges and
the standard library only.  The daemon makes and governs the containers;
host Python functions given as tools run here, in this process, when the
daemon's gate lets a call through (it hands the call over this client's
connection and takes the answer back)."""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from typing import Any, Callable, Iterable, Iterator

from ._audit import Call, budget_used, calls_of_last_run
from ._errors import InvalidArgument, ProgramFailed, SandboxUnavailable, SessionClosed, TollgateSDKError
from ._tools import Tool, as_tool

__all__ = ["RemoteSandbox", "RemoteSession", "ServiceRefused"]


class ServiceRefused(TollgateSDKError):
    """The service answered a request with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__("%d: %s" % (status, message))
        self.status = status


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class _Client:
    def __init__(self, server: str, api_key: str) -> None:
        self.api_key = api_key
        if server.startswith("unix:"):
            self._unix: str | None = server[5:]
            self._host, self._port, self._tls = "localhost", 0, False
        else:
            u = urllib.parse.urlsplit(server)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise InvalidArgument("server is http://HOST:PORT, https://HOST:PORT or unix:/path, not %r" % server)
            self._unix = None
            self._host, self._port, self._tls = u.hostname, u.port or (443 if u.scheme == "https" else 80), \
                u.scheme == "https"

    def _conn(self, timeout: float) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, timeout)
        cls = http.client.HTTPSConnection if self._tls else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def request(self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None,
                raw: bytes | None = None, timeout: float = 120) -> tuple[int, Any]:
        h = {"X-API-Key": self.api_key, **(headers or {})}
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c = self._conn(timeout)
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            payload = r.read()
        except OSError as e:
            raise SandboxUnavailable("the tollgate service at %s cannot be reached: %s"
                                     % (self._unix or "%s:%d" % (self._host, self._port), e)) from None
        finally:
            c.close()
        ctype = r.getheader("content-type", "")
        obj: Any = payload
        if ctype.startswith("application/json") and payload:
            obj = json.loads(payload)
        if r.status >= 400:
            msg = obj.get("message") if isinstance(obj, dict) else payload.decode("utf-8", "replace")
            raise ServiceRefused(r.status, str(msg))
        return r.status, obj

    def lines(self, path: str, body: Any, headers: dict[str, str], timeout: float) -> Iterator[dict[str, Any]]:
        c = self._conn(timeout)
        try:
            c.request("POST", path, body=json.dumps(body).encode(),
                      headers={"Content-Type": "application/json", **headers})
            r = c.getresponse()
            if r.status >= 400:
                raise ServiceRefused(r.status, r.read(4096).decode("utf-8", "replace"))
            while True:
                line = r.readline(16 << 20)
                if not line:
                    return
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    yield obj
        finally:
            c.close()


class RemoteSession:
    """One sandbox of the service kept for several cells (variables
    persist), its files under /tmp, its calls governed by the tenant's
    policy and recorded in the tenant's audit log.  Open once made; close()
    (or its RemoteSandbox's close(), or a with block) kills it."""

    def __init__(self, sandbox: "RemoteSandbox") -> None:
        self.sb = sandbox
        c = sandbox._client
        tools = [{"name": t.name, "description": t.description} for t in sandbox.tools]
        body: dict[str, Any] = {"templateID": sandbox.template, "timeout": sandbox.lifetime,
                                "metadata": dict(sandbox.metadata)}
        if tools:
            body["tollgate"] = {"tools": tools}
        _, created = c.request("POST", "/sandboxes", body)
        self.sandbox_id: str = created["sandboxID"]
        self._traffic = {"E2b-Sandbox-Id": self.sandbox_id, "E2b-Sandbox-Port": "49999",
                         "E2B-Traffic-Access-Token": created.get("trafficAccessToken") or ""}
        self._envd = {"E2b-Sandbox-Id": self.sandbox_id, "E2b-Sandbox-Port": "49983",
                      "X-Access-Token": created.get("envdAccessToken") or ""}
        self._closed = False
        self._server: threading.Thread | None = None
        if sandbox.tools:
            self._server = threading.Thread(target=self._serve_tools, daemon=True)
            self._server.start()
        sandbox._sessions.add(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _serve_tools(self) -> None:
        by_name = {t.name: t for t in self.sb.tools}
        path = "/tollgate/sandboxes/%s/tool-calls" % self.sandbox_id
        c = self.sb._client
        while not self._closed:
            try:
                status, call = c.request("GET", path + "?wait=5", timeout=30)
            except TollgateSDKError:
                if self._closed:
                    return
                time.sleep(0.5)
                continue
            if status != 200 or not isinstance(call, dict):
                continue
            t = by_name.get(str(call.get("tool")))
            try:
                if t is None:
                    c.request("POST", "%s/%s" % (path, call.get("id")),
                              {"ok": False, "error": "no tool %r here" % call.get("tool")})
                    continue
                out = t.call(call.get("args") or {})
                if hasattr(out, "__await__"):
                    import asyncio
                    out = asyncio.run(_await(out))
                answer = {"ok": True, "result": out}
                json.dumps(answer)
            except Exception as e:  # the tool's failure is the call's answer, never this thread's end
                answer = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
            try:
                c.request("POST", "%s/%s" % (path, call.get("id")), answer)
            except TollgateSDKError:
                pass

    def run(self, code: str, *, check: bool = True, timeout: float | None = None,
            on_stdout: Callable[[str], None] | None = None,
            on_stderr: Callable[[str], None] | None = None) -> "RemoteResult":
        if self._closed:
            raise SessionClosed("the session is closed")
        out: list[str] = []
        err: list[str] = []
        error: dict[str, Any] | None = None
        for ev in self.sb._client.lines("/execute", {"code": code, "context_id": None, "language": None,
                                                      "env_vars": None}, self._traffic,
                                        timeout or self.sb.timeout):
            kind = ev.get("type")
            if kind == "stdout":
                out.append(str(ev.get("text", "")))
                if on_stdout:
                    on_stdout(str(ev.get("text", "")))
            elif kind == "stderr":
                err.append(str(ev.get("text", "")))
                if on_stderr:
                    on_stderr(str(ev.get("text", "")))
            elif kind == "error":
                error = ev
                err.append(str(ev.get("traceback") or "%s: %s" % (ev.get("name"), ev.get("value"))))
        _, audit = self.sb._client.request("GET", "/tollgate/sandboxes/%s/audit" % self.sandbox_id)
        records = audit.get("records") or []
        calls = calls_of_last_run(records)
        result = RemoteResult(stdout="".join(out), stderr="".join(err), exit_status=1 if error else 0,
                              calls=calls, budget_used=budget_used(calls, {}, records),
                              audit_log=str(audit.get("log") or ""), sandbox_id=self.sandbox_id)
        if check and error:
            raise ProgramFailed(result)  # type: ignore[arg-type]
        return result

    def pending(self) -> list[dict[str, Any]]:
        _, p = self.sb._client.request("GET", "/tollgate/sandboxes/%s/pending" % self.sandbox_id)
        return list(p or [])

    def decide(self, call_id: str, approve: bool, reason: str = "") -> dict[str, Any]:
        _, r = self.sb._client.request("POST", "/tollgate/sandboxes/%s/calls/%s/%s"
                                       % (self.sandbox_id, call_id, "approve" if approve else "deny"),
                                       {"reason": reason})
        return dict(r or {})

    def write_file(self, path: str, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        self.sb._client.request("POST", "/files?" + urllib.parse.urlencode({"path": path}), raw=raw,
                                headers={**self._envd, "Content-Type": "application/octet-stream"})

    def read_file(self, path: str) -> bytes:
        _, body = self.sb._client.request("GET", "/files?" + urllib.parse.urlencode({"path": path}),
                                          headers=self._envd)
        return bytes(body)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.sb._client.request("DELETE", "/sandboxes/%s" % self.sandbox_id)
        except ServiceRefused as e:
            if e.status != 404:
                raise
        self.sb._sessions.discard(self)

    def __enter__(self) -> "RemoteSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteResult:
    """What one program or cell did, as the service reports it."""

    def __init__(self, *, stdout: str, stderr: str, exit_status: int, calls: list[Call],
                 budget_used: dict[str, Any], audit_log: str, sandbox_id: str) -> None:
        self.stdout, self.stderr, self.exit_status = stdout, stderr, exit_status
        self.calls, self.budget_used, self.audit_log = calls, budget_used, audit_log
        self.sandbox_id = sandbox_id

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class RemoteSandbox:
    """Sandbox(server=..., api_key=...): run() gives each program a fresh
    sandbox of the service; session() keeps one."""

    def __init__(self, *, server: str, api_key: str, tools: Iterable[Any] = (), template: str = "base",
                 timeout: float = 300, lifetime: int = 600, metadata: dict[str, str] | None = None) -> None:
        self._client = _Client(server, api_key)
        self.tools: list[Tool] = [as_tool(t) for t in tools]
        self.template = template
        self.timeout = timeout
        self.lifetime = lifetime
        self.metadata = dict(metadata or {})
        self._sessions: set[RemoteSession] = set()

    def session(self) -> RemoteSession:
        return RemoteSession(self)

    def run(self, code: str, *, check: bool = True, timeout: float | None = None) -> RemoteResult:
        with self.session() as s:
            return s.run(code, check=check, timeout=timeout)

    def close(self) -> None:
        for s in list(self._sessions):
            s.close()

    def __enter__(self) -> "RemoteSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _await(x: Any) -> Any:
    return await x

"""One ASGI application for the whole service on one port: the REST
paths first (X-API-Key), then envd and interpreter traffic routed by
E2b-Sandbox-Id and E2b-Sandbox-Port (the sandbox's own tokens), as e2b's
SDKs send it with E2B_API_URL and E2B_SANDBOX_URL (docs/serve.md)."""
from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any, AsyncIterator, Awaitable, Callable, MutableMapping

import anyio

from ._boxes import Box, Boxes
from ._service_error import ServiceError
from ._connect import ConnectError, end_of_stream, read_envelope, read_unary
from ._envd import check_token, stream, unary
from ._fs import FILE_MAX, read_file, resolve, write_file
from ._interp import Contexts, execute_lines
from ._rest import route
from ._shares import Shares, TooManyRequests
from ._tenants import Tenants
from ._transfers import Transfers
from ._upload import files_of

__all__ = ["App"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

BODY_MAX = FILE_MAX + (1 << 20)   # an upload and its multipart framing
JSON_MAX = 1 << 20
RPC = re.compile(r"^/((?:process\.Process|filesystem\.Filesystem)/[A-Za-z]+)$")
CONTEXT = re.compile(r"^/contexts(?:/([0-9a-f]{1,32}|default)(?:/(restart))?)?$")


class _Request:
    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self.receive = receive
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.query = {k: v[-1] for k, v in urllib.parse.parse_qs(scope.get("query_string", b"").decode(
            "latin-1"), keep_blank_values=True).items()}
        self.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

    async def body(self, limit: int) -> bytes:
        declared = self.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise ServiceError(413, "the request body is over %d bytes" % limit)
        chunks, n = [], 0
        while True:
            msg = await self.receive()
            if msg["type"] == "http.disconnect":
                raise ServiceError(400, "the client went away")
            b = msg.get("body", b"")
            n += len(b)
            if n > limit:
                raise ServiceError(413, "the request body is over %d bytes" % limit)
            chunks.append(b)
            if not msg.get("more_body"):
                return b"".join(chunks)

    async def json(self) -> dict[str, Any]:
        raw = await self.body(JSON_MAX)
        if not raw.strip():
            return {}
        try:
            obj = json.loads(raw)
        except ValueError:
            raise ServiceError(400, "the body is not JSON") from None
        if not isinstance(obj, dict):
            raise ServiceError(400, "the body must be a JSON object")
        return obj


async def _respond(send: Send, status: int, body: bytes = b"", ctype: str = "application/json",
                   headers: list[tuple[bytes, bytes]] | None = None) -> None:
    hs = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())] + (headers or [])
    await send({"type": "http.response.start", "status": status, "headers": hs})
    await send({"type": "http.response.body", "body": body})


async def _stream(req: _Request, send: Send, status: int, ctype: str, chunks: AsyncIterator[bytes]) -> None:
    """chunks as one streamed response, until they end or the client
    leaves: then the stream is cancelled (a cell that had not begun never
    runs, a command's stream stops listening) and closed."""
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", ctype.encode())]})

    async def until_gone(scope: anyio.CancelScope) -> None:
        while (await req.receive())["type"] != "http.disconnect":
            pass
        scope.cancel()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(until_gone, tg.cancel_scope)
            async for c in chunks:
                await send({"type": "http.response.body", "body": c, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            tg.cancel_scope.cancel()
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()


def _error(status: int, message: str) -> bytes:
    return json.dumps({"code": status, "message": message}).encode()


class App:
    def __init__(self, boxes: Boxes, tenants: Tenants, transfers: Transfers | None = None,
                 shares: Shares | None = None) -> None:
        self.boxes = boxes
        self.tenants = tenants
        self.contexts: dict[str, Contexts] = {}
        self.transfers = transfers or Transfers()
        self.shares = shares or Shares()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        req = _Request(scope, receive)
        try:
            await self._dispatch(req, send)
        except TooManyRequests as e:
            await _respond(send, e.status, _error(e.status, e.message), headers=[(b"connection", b"close")])
        except ServiceError as e:
            await _respond(send, e.status, _error(e.status, e.message))

    async def _dispatch(self, req: _Request, send: Send) -> None:
        sid = req.headers.get("e2b-sandbox-id")
        if req.path.startswith(("/sandboxes", "/v2/sandboxes", "/tollgate/")):
            tenant = self.tenants.by_key(req.headers.get("x-api-key"))
            if tenant is None:
                raise ServiceError(401, "a valid API key is needed (X-API-Key: e2b_...)")
            with self.shares.request(tenant.name):
                body = await req.json() if req.method in ("POST", "PUT") else {}
                r = await self.shares.control(tenant.name, route, self.boxes, tenant, req.method, req.path,
                                              req.query, body)
            if r is not None:
                status, obj = r
                if status == 204:
                    await send({"type": "http.response.start", "status": 204, "headers": []})
                    await send({"type": "http.response.body", "body": b""})
                else:
                    await _respond(send, status, json.dumps(obj).encode())
                return
        if not sid:
            raise ServiceError(404, "no such path: %s (sandbox traffic needs E2b-Sandbox-Id)" % req.path)
        try:
            box = self.boxes.get(sid)
        except ServiceError as e:
            # envd's health: 2xx running, 502 not running (is_running()
            # answers False for a sandbox that ended or is gone).
            if e.status == 404 and req.path == "/health" and req.method == "GET":
                raise ServiceError(502, e.message) from None
            raise
        if req.headers.get("e2b-sandbox-port") == "49999":
            await self._interpreter(req, box, send)
        else:
            await self._envd(req, box, send)

    # ---- envd (49983) ---------------------------------------------------------

    async def _envd(self, req: _Request, box: Box, send: Send) -> None:
        if req.path == "/health" and req.method == "GET":
            await send({"type": "http.response.start", "status": 204 if box.session else 502, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if req.path == "/files":
            await self._files(req, box, send)
            return
        check_token(box, req.headers.get("x-access-token"))
        with self.shares.request(box.record.tenant):
            await self._rpc(req, box, send)

    async def _rpc(self, req: _Request, box: Box, send: Send) -> None:
        m = RPC.match(req.path)
        if not m or req.method != "POST":
            raise ServiceError(404, "no such envd path: %s" % req.path)
        method = m.group(1)
        ctype = req.headers.get("content-type", "")
        if ctype.startswith("application/connect+json"):
            timeout = req.headers.get("connect-timeout-ms")
            keepalive = req.headers.get("keepalive-ping-interval")
            try:
                msg = read_envelope(await req.body(JSON_MAX + 5))
                events = await stream(self.shares, box, method, msg,
                                      int(timeout) if timeout and timeout.isdigit() else None,
                                      float(keepalive) if keepalive and keepalive.isdigit() else 90.0)
            except ConnectError as e:
                await _stream(req, send, 200, "application/connect+json", _one(end_of_stream(e)))
                return
            await _stream(req, send, 200, "application/connect+json", events)
            return
        try:
            msg = read_unary(await req.body(JSON_MAX))
            out = await self.shares.work(box.record.tenant, unary, box, method, msg)
            await _respond(send, 200, json.dumps(out).encode())
        except ConnectError as e:
            await _respond(send, e.http_status, json.dumps(e.as_json()).encode())

    async def _files(self, req: _Request, box: Box, send: Send) -> None:
        raw_path = req.query.get("path")
        # A multi-file upload (the SDKs' write_files) names no path: each
        # part's filename is its file's path.
        multi = raw_path is None and req.method == "POST"
        try:
            path = "" if multi else resolve(raw_path or "")
        except ConnectError as e:
            raise ServiceError(400, e.message) from None
        op = "read" if req.method == "GET" else "write"
        check_token(box, req.headers.get("x-access-token"), path=raw_path or "", op=op,
                    signature=req.query.get("signature"), expiration=req.query.get("signature_expiration"),
                    user=req.query.get("username", ""))
        if req.method not in ("GET", "POST"):
            raise ServiceError(405, "/files takes GET and POST")
        # Held whole in memory: a bounded number at once, each for a
        # bounded time (_transfers.py).
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)
        try:
            with self.shares.request(box.record.tenant):
                await self.transfers.run(box.record.tenant, self._transfer(req, box, tracked, path, multi))
        except ServiceError:
            if started:  # cut mid-answer (a download past its time): the connection just ends
                return
            raise

    async def _transfer(self, req: _Request, box: Box, send: Send, path: str, multi: bool) -> None:
        if req.method == "GET":
            data = await self.shares.work(box.record.tenant, read_file, box, path)
            await _respond(send, 200, data, "application/octet-stream")
            return
        body = await req.body(BODY_MAX)
        files = files_of(req.headers.get("content-type", ""), req.headers.get("content-encoding", ""),
                         body, FILE_MAX)
        del body
        written = []
        for name, data in files:
            if multi and name is None:
                raise ServiceError(400, "an upload without ?path= is multipart, each file part named by its path")
            try:
                target = resolve(name) if multi else path
            except ConnectError as e:
                raise ServiceError(400, e.message) from None
            await self.shares.work(box.record.tenant, write_file, box, target, data)
            written.append({"path": target, "name": target.rsplit("/", 1)[-1], "type": "file"})
        await _respond(send, 200, json.dumps(written).encode())

    # ---- the code interpreter (49999) ------------------------------------------

    async def _interpreter(self, req: _Request, box: Box, send: Send) -> None:
        token = req.headers.get("e2b-traffic-access-token") or req.headers.get("x-access-token")
        import hmac
        if not token or not (hmac.compare_digest(token, box.record.traffic_token)
                             or hmac.compare_digest(token, box.record.envd_token)):
            raise ServiceError(401, "this sandbox needs its access token")
        with self.shares.request(box.record.tenant):
            await self._contexts(req, box, send)

    async def _contexts(self, req: _Request, box: Box, send: Send) -> None:
        ctxs = self.contexts.setdefault(box.record.sandbox_id, Contexts())
        if req.path == "/execute" and req.method == "POST":
            lines = await execute_lines(self.shares, box, ctxs, await req.json())
            await _stream(req, send, 200, "application/x-ndjson", lines)
            return
        m = CONTEXT.match(req.path)
        if m is None:
            raise ServiceError(404, "no such interpreter path: %s" % req.path)
        cid, action = m.group(1), m.group(2)
        if cid is None and req.method == "POST":
            body = await req.json()
            await _respond(send, 200, json.dumps(ctxs.create(body.get("language"), body.get("cwd"))).encode())
        elif cid is None and req.method == "GET":
            await _respond(send, 200, json.dumps(ctxs.listed()).encode())
        elif action == "restart" and req.method == "POST":
            ctxs.get(cid)
            lines = await execute_lines(self.shares, box, ctxs, {"code": "None", "context_id": cid})
            async for _ in lines:
                pass
            async with ctxs.turn:
                await self.shares.work(box.record.tenant, _clear_context, box, cid)
            await _respond(send, 200, b"{}")
        elif action is None and req.method == "DELETE":
            ctxs.remove(cid)
            async with ctxs.turn:
                await self.shares.work(box.record.tenant, _clear_context, box, cid)
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        else:
            raise ServiceError(405, "%s %s is not served" % (req.method, req.path))


def _clear_context(box: Box, cid: str) -> None:
    if box.session is not None:
        box.session.run("globals().get('_tollgate_contexts', {}).pop(%r, None)" % cid, check=False)


async def _one(b: bytes) -> AsyncIterator[bytes]:
    yield b

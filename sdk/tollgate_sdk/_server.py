"""The host side of tollgate's socket tool backend, serving Python tools.

tollgate's gate connects once per allowed call and sends one JSON line,
{"v":1,"call":ID,"tool":NAME,"args":{...}}; we answer one line,
{"ok":true,"result":...} or {"ok":false,"error":"..."} (docs/policy.md,
Backends).  Only calls the policy, budgets and approval let through ever
get here, but the server still treats every byte as untrusted: the socket
lives in a private 0700 directory and is 0600, a peer that is neither root
nor us is refused (SO_PEERCRED, from the kernel), a request line is
bounded in size and in time, and anything malformed is refused with an
error that says why, logged, and counted in .rejected.  No input, and no
exception a tool raises, ever stops the server or the program it runs in.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import logging
import os
import socket
import struct
import tempfile
import threading
import time
from typing import Any, Iterable

from ._tree import remove_tree
from ._tools import Tool, run_sync

log = logging.getLogger("tollgate_sdk")

REQUEST_MAX = 1 << 20       # a request line larger than this is refused
REPLY_MAX = 1 << 20         # tollgate refuses replies over 1 MiB; say so ourselves
READ_TIMEOUT = 10.0         # seconds a peer has to send its one line
MAX_WORKERS = 64            # connections served at once; more wait in the backlog


class ToolServer:
    """Serve tools (a list of Tool) on a fresh Unix socket.

    .path is the socket (inside a private directory the server made and
    removes on close()).  .served lists (call id, tool, ok) per answered
    call; .rejected the last 100 refused requests as (time, reason)."""

    def __init__(self, tools: Iterable[Tool], directory: str | None = None) -> None:
        self.tools = {t.name: t for t in tools}
        # A socket path has 107 bytes at most: inside a directory of the
        # caller's (the SDK's state directory) the name stays short.
        self._dir = tempfile.mkdtemp(prefix="tollgate-sdk-sock." if directory is None else "sock.",
                                     dir=directory)
        os.chmod(self._dir, 0o700)
        self.path = os.path.join(self._dir, "tools.sock")
        self.served: list[tuple[str, str, bool]] = []
        self.rejected: collections.deque[tuple[float, str]] = collections.deque(maxlen=100)
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_WORKERS)
        self._closed = False
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self._sock.bind(self.path)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._sock.listen(64)
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever,
                                             name="tollgate-sdk-async", daemon=True)
        self._loop_thread.start()
        self._thread = threading.Thread(target=self._accept_loop, name="tollgate-sdk-tools",
                                        daemon=True)
        self._thread.start()

    # -- lifecycle --

    def close(self) -> None:
        """Stop serving, remove the socket and its directory."""
        if self._closed:
            return
        self._closed = True
        try:
            # Wakes accept() in the serving thread.
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(timeout=5)
        if not self._loop_thread.is_alive():
            self._loop.close()
        remove_tree(self._dir)

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serving --

    def _reject(self, conn: socket.socket | None, reason: str, call_id: str | None = None) -> None:
        log.warning("tollgate_sdk: refused a request on %s: %s", self.path, reason)
        with self._lock:
            self.rejected.append((time.time(), reason))
        if conn is not None:
            self._send(conn, {"ok": False, "error": "refused by the SDK's tool server: " + reason})

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._closed:
                    return
                time.sleep(0.05)  # EMFILE and friends: back off, keep serving
                continue
            if not self._slots.acquire(timeout=READ_TIMEOUT):
                self._reject(conn, "too many connections at once")
                conn.close()
                continue
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._handle(conn)
        except Exception as e:  # never let one connection take the server down
            log.exception("tollgate_sdk: error serving a call: %s", e)
        finally:
            self._slots.release()

    def _peer_allowed(self, conn: socket.socket) -> tuple[bool, str]:
        try:
            raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", raw)
        except OSError:
            return False, "cannot read the peer's credentials"
        if uid not in (0, os.geteuid()):
            return False, "uid %d may not call these tools (only root or uid %d)" % (uid, os.geteuid())
        return True, ""

    def _read_line(self, conn: socket.socket) -> tuple[bytes | None, str]:
        conn.settimeout(READ_TIMEOUT)
        deadline = time.monotonic() + READ_TIMEOUT
        buf = bytearray()
        while b"\n" not in buf:
            if time.monotonic() > deadline:
                return None, "no request line within %g s" % READ_TIMEOUT
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                return None, "no request line within %g s" % READ_TIMEOUT
            if not chunk:
                return None, ("the connection closed before a request line" if not buf
                              else "the request has no newline at its end")
            buf += chunk
            if len(buf) > REQUEST_MAX and b"\n" not in buf[:REQUEST_MAX + 1]:
                return None, "the request is larger than %d bytes" % REQUEST_MAX
        line = bytes(buf[:buf.index(b"\n")])
        return line, ""

    def _handle(self, conn: socket.socket) -> None:
        ok, why = self._peer_allowed(conn)
        if not ok:
            return self._reject(conn, why)
        line, why = self._read_line(conn)
        if line is None:
            return self._reject(conn, why)
        try:
            req = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return self._reject(conn, "the request is not JSON (%s)" % e)
        if not isinstance(req, dict):
            return self._reject(conn, "the request is not a JSON object")
        if req.get("v") != 1:
            return self._reject(conn, "protocol version %r is not 1" % (req.get("v"),))
        call_id, name, args = req.get("call"), req.get("tool"), req.get("args", {})
        if not isinstance(call_id, str) or len(call_id) > 128:
            return self._reject(conn, "\"call\" must be the call id string")
        if not isinstance(name, str):
            return self._reject(conn, "\"tool\" must be a string", call_id)
        if not isinstance(args, dict):
            return self._reject(conn, "\"args\" must be a JSON object", call_id)
        t = self.tools.get(name)
        if t is None:
            return self._reject(conn, "no tool named %r is served here" % name[:80], call_id)
        try:
            result = run_sync(t, args, self._loop)
            out: dict[str, Any] = {"ok": True, "result": result}
            payload = _dumps(out)
        except Exception as e:
            log.info("tollgate_sdk: tool %s (call %s) raised %s: %s", name, call_id,
                     type(e).__name__, e)
            out = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
            payload = _dumps(out)
        with self._lock:
            self.served.append((call_id, name, out["ok"]))
        self._send_raw(conn, payload)

    def _send(self, conn: socket.socket, obj: dict[str, Any]) -> None:
        self._send_raw(conn, _dumps(obj))

    @staticmethod
    def _send_raw(conn: socket.socket, payload: bytes) -> None:
        try:
            conn.settimeout(READ_TIMEOUT)
            conn.sendall(payload)
        except OSError as e:
            log.info("tollgate_sdk: could not send a reply: %s", e)


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    for meth in ("model_dump", "dict"):
        f = getattr(value, meth, None)
        if callable(f):
            return f()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError("a %s is not JSON" % type(value).__name__)


def _dumps(obj: dict[str, Any]) -> bytes:
    """One reply line.  A result that is not JSON, or too large for the
    gate, becomes an error reply that says so."""
    try:
        data = json.dumps(obj, default=_jsonable, allow_nan=False).encode() + b"\n"
    except (TypeError, ValueError) as e:
        data = json.dumps({"ok": False, "error": "the tool's result is not JSON: %s" % e}).encode() + b"\n"
    if len(data) > REPLY_MAX:
        data = json.dumps({"ok": False, "error": "the tool's result is %d bytes, over the 1 MiB "
                           "the gate accepts" % len(data)}).encode() + b"\n"
    return data

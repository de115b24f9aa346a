"""The HTTP listeners' bounds (tollgate_sdk._listener) on a real uvicorn
server over loopback, against raw sockets as an untrusted client holds
them: idle connections, headers sent a byte at a time, a kept-alive
connection's half-sent next request, more connections than the service
holds, more from one address than its share; and what must not be cut:
a slow response whose request was whole, a client that keeps its
connection alive between requests, and another address's client while
one address is at its share."""
from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from tollgate_sdk._listener import Limits, guard_protocol, listener_bounds

TIMEOUT = 0.6


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    slow = scope["path"] == "/slow"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    if slow:  # a response that takes well past the header timeout
        for _ in range(4):
            await send({"type": "http.response.body", "body": b"tick\n", "more_body": True})
            await asyncio.sleep(TIMEOUT)
    await send({"type": "http.response.body", "body": b"ok\n", "more_body": True})
    await send({"type": "http.response.body", "body": b""})  # chunked: ends with "0\r\n\r\n"


class Server:
    def __init__(self, limits: Limits) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.sock = sock
        self.port = sock.getsockname()[1]
        cfg = uvicorn.Config(app, log_level="error", http=guard_protocol(limits), lifespan="off",
                             timeout_keep_alive=30)
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                return
            time.sleep(0.02)
        raise RuntimeError("uvicorn did not start")

    def connect(self, source: str = "127.0.0.1") -> socket.socket:
        s = socket.socket()
        s.bind((source, 0))
        s.connect(("127.0.0.1", self.port))
        s.settimeout(10)
        return s

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server(Limits(max_connections=20, per_client=8, header_timeout=TIMEOUT))
    yield s
    s.stop()


def get(s: socket.socket, path: str = "/", keep: bool = True) -> bytes:
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path.encode(), b"" if keep else b"Connection: close\r\n"))
    out = b""
    while not out.endswith(b"ok\n\r\n0\r\n\r\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    return out


def closed_with(s: socket.socket) -> bytes:
    """What the server sent before closing (waits for the close)."""
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


def test_an_idle_connection_is_closed_after_the_header_timeout(server: Server) -> None:
    s = server.connect()
    t = time.monotonic()
    assert closed_with(s).startswith(b"HTTP/1.1 408 ")
    assert TIMEOUT * 0.8 < time.monotonic() - t < TIMEOUT * 5


def test_headers_a_byte_at_a_time_do_not_keep_it_open(server: Server) -> None:
    s = server.connect()
    t = time.monotonic()
    req = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    try:
        for b in req:
            s.send(bytes([b]))
            time.sleep(TIMEOUT / 10)
    except OSError:
        pass  # the server closed it: what this checks
    assert time.monotonic() - t < TIMEOUT * 5
    assert closed_with(s).startswith(b"HTTP/1.1 408 ")


def test_a_kept_alive_connection_serves_requests_then_bounds_a_half_sent_one(server: Server) -> None:
    s = server.connect()
    for _ in range(3):
        assert b"200 OK" in get(s)
        time.sleep(TIMEOUT * 1.5)  # idle between requests: uvicorn's keep-alive, not the header timeout
    s.sendall(b"GET / HTTP/1.1\r\nHo")
    assert closed_with(s).startswith(b"HTTP/1.1 408 ")


def test_a_whole_request_with_a_slow_response_is_not_cut(server: Server) -> None:
    s = server.connect()
    out = get(s, "/slow")
    assert out.count(b"tick") == 4 and out.endswith(b"ok\n\r\n0\r\n\r\n")


def test_one_address_gets_its_share_and_others_are_still_served(server: Server) -> None:
    held = [server.connect("127.0.0.2") for _ in range(8)]
    extra = server.connect("127.0.0.2")
    assert closed_with(extra).startswith(b"HTTP/1.1 429 ")
    other = server.connect("127.0.0.1")
    assert b"200 OK" in get(other, keep=False)
    for s in held:
        s.close()


def test_beyond_max_connections_one_more_gets_503_and_the_held_ones_work(server: Server) -> None:
    held = [server.connect("127.0.0.%d" % (2 + i // 8)) for i in range(20)]
    extra = server.connect("127.0.0.9")
    assert closed_with(extra).startswith(b"HTTP/1.1 503 ")
    assert b"200 OK" in get(held[0])
    for s in held:
        s.close()
    # once the idle ones have gone, a newcomer is served again
    deadline = time.monotonic() + 10
    while True:
        s = server.connect("127.0.0.9")
        out = get(s, keep=False)
        if b"200 OK" in out or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert b"200 OK" in out


def test_idle_connections_past_the_timeout_free_their_places(server: Server) -> None:
    held = [server.connect("127.0.0.%d" % (2 + i // 8)) for i in range(20)]
    time.sleep(TIMEOUT * 2)  # all 20 timed out and were closed by the server
    s = server.connect("127.0.0.9")
    assert b"200 OK" in get(s, keep=False)
    for h in held:
        assert closed_with(h).startswith(b"HTTP/1.1 408 ")


def test_the_bounds_fit_the_open_file_limit() -> None:
    fitted, why = listener_bounds(Limits(max_connections=1024, per_client=256), 1024)
    assert fitted.max_connections == 1024 - 256 and fitted.per_client == 256
    assert why is not None and "open-file limit is 1024" in why
    same, none = listener_bounds(Limits(), 65536)
    assert same == Limits() and none is None

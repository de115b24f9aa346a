"""The SDK's socket tool server: bad input from the gate side is refused
with a reason, logged, and never stops the server or its host program."""
import asyncio
import json
import logging
import os
import socket
import stat
import threading
import time

import pytest

from tollgate_sdk import ToolServer, tool
from tollgate_sdk import _server as server_mod


@tool
def greet(name: str) -> dict:
    """Say hello."""
    return {"greeting": "hello " + name}


@tool
def boom() -> int:
    """Fails."""
    raise RuntimeError("the tool broke")


@tool
def opaque() -> object:
    """Returns something that is not JSON."""
    return object()


@tool
def huge() -> str:
    """Returns more than the gate accepts."""
    return "x" * (2 << 20)


@tool
async def later(n: int) -> int:
    """An async tool."""
    await asyncio.sleep(0.01)
    return n * 2


def exchange(path, data, shut=True, timeout=15):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        try:
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            # The server may answer and close before it has read all of an
            # oversized request; its reply is still there to read.
            pass
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            buf += chunk
    return json.loads(buf) if buf.strip() else None


def call(path, tool_name, args, call_id="c1"):
    return exchange(path, (json.dumps({"v": 1, "call": call_id, "tool": tool_name, "args": args}) + "\n").encode())


class TestServerTest:
    def setup_method(self):
        self.srv = ToolServer([t.tollgate_tool for t in (greet, boom, opaque, huge, later)])

    def teardown_method(self):
        self.srv.close()

    def assert_still_serves(self):
        assert call(self.srv.path, "greet", {"name": "x"}) == {"ok": True, "result": {"greeting": "hello x"}}

    def test_socket_is_private(self):
        assert stat.S_IMODE(os.stat(self.srv.path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(self.srv.path)).st_mode) == 0o700

    def test_a_good_call(self):
        self.assert_still_serves()
        assert self.srv.served[-1] == ("c1", "greet", True)

    def test_async_tool(self):
        assert call(self.srv.path, "later", {"n": 21}) == {"ok": True, "result": 42}

    def test_bad_requests_are_refused_logged_and_survived(self, subtests: pytest.Subtests,
                                                         caplog: pytest.LogCaptureFixture):
        cases = [
            (b"this is not json\n", "not JSON"),
            (b"[1, 2]\n", "not a JSON object"),
            (b'{"v": 2, "call": "c", "tool": "greet", "args": {}}\n', "protocol version"),
            (b'{"v": 1, "tool": "greet", "args": {}}\n', "call id"),
            (b'{"v": 1, "call": "c", "tool": 7, "args": {}}\n', "\"tool\" must be a string"),
            (b'{"v": 1, "call": "c", "tool": "greet", "args": [1]}\n', "\"args\" must be a JSON object"),
            (b'{"v": 1, "call": "c", "tool": "nope", "args": {}}\n', "no tool named"),
            (b'\xff\xfe\n', "not JSON"),
            (b'{"v": 1, "call": "c", "tool": "greet"', "no newline"),
            (b"", "closed before a request line"),
        ]
        for data, why in cases:
            with subtests.test(data=data[:40]):
                caplog.clear()
                with caplog.at_level(logging.WARNING, logger="tollgate_sdk"):
                    reply = exchange(self.srv.path, data)
                assert reply["ok"] == False
                assert why in reply["error"]
                assert why in caplog.text
                assert why in self.srv.rejected[-1][1]
                self.assert_still_serves()

    def test_oversized_request_is_refused(self, caplog: pytest.LogCaptureFixture):
        with caplog.at_level(logging.WARNING, logger="tollgate_sdk"):
            reply = exchange(self.srv.path, b"x" * (server_mod.REQUEST_MAX + 70000), timeout=30)
        assert "larger than" in caplog.text
        assert "larger than" in reply["error"]
        self.assert_still_serves()

    def test_silent_peer_times_out_and_others_are_served_meanwhile(self, caplog: pytest.LogCaptureFixture):
        old = server_mod.READ_TIMEOUT
        server_mod.READ_TIMEOUT = 0.5
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.srv.path)   # says nothing
            self.assert_still_serves()  # served on another thread meanwhile
            s.settimeout(10)
            with caplog.at_level(logging.WARNING, logger="tollgate_sdk"):
                data = s.recv(65536)
                time.sleep(0.1)
            assert "no request line" in caplog.text
            s.close()
            assert b"no request line" in data
        finally:
            server_mod.READ_TIMEOUT = old

    def test_tool_errors_become_error_replies(self):
        r = call(self.srv.path, "boom", {})
        assert r == {"ok": False, "error": "RuntimeError: the tool broke"}
        assert "not JSON" in call(self.srv.path, "opaque", {})["error"]
        assert "over the 1 MiB" in call(self.srv.path, "huge", {})["error"]
        r = call(self.srv.path, "greet", {"name": "x", "extra": 1})
        assert not r["ok"]
        assert "no parameter 'extra'" in r["error"]
        r = call(self.srv.path, "greet", {})
        assert not r["ok"]
        self.assert_still_serves()

    def test_many_hostile_connections_at_once(self):
        errors = []

        def hammer(i):
            try:
                payload = [b"garbage\n", b"{}\n", b'{"v":1,"call":"x","tool":"later","args":{"n":1}}\n'][i % 3]
                exchange(self.srv.path, payload)
            except Exception as e:  # the client side may see a reset; the server must not die
                errors.append(e)
        logging_off = server_mod.log.disabled
        server_mod.log.disabled = True
        try:
            threads = [threading.Thread(target=hammer, args=(i,)) for i in range(60)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        finally:
            server_mod.log.disabled = logging_off
        assert errors == []
        self.assert_still_serves()

    def test_close_removes_the_socket(self):
        path = self.srv.path
        self.srv.close()
        assert not os.path.exists(path)
        assert not os.path.exists(os.path.dirname(path))


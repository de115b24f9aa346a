"""Host-side parts of sessions, files, mounts, resources and refusals that
need no container: argument validation, the cell trailer, the session cap,
the error families, and kernel.py itself run as a plain process (its
interpreter, cell timeouts and the files walk under a scratch directory)."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

import tollgate_sdk
from tollgate_sdk import _errors as errors, _limits as limits, _session as session

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
KERNEL = os.path.join(REPO, "bridge", "client", "kernel.py")


def load_client():
    d = tempfile.mkdtemp()
    os.environ["TOLLGATE_DIR"] = d
    spec = importlib.util.spec_from_file_location("tollgate_client_under_test",
                                                  os.path.join(REPO, "bridge", "client", "tollgate.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


class TestRefusals:
    def test_client_family(self):
        c = load_client()
        for name in ("ApprovalTimeout", "BudgetExhausted", "BadRequest", "UnknownTool", "AnomalyDetected"):
            assert issubclass(getattr(c, name), c.ToolDenied), name
        for name in ("ToolFailed", "ToolTimeout", "BridgeTimeout", "ContainerStopped"):
            assert not (issubclass(getattr(c, name), c.ToolDenied)), name
        assert str(c.ToolDenied("denied: no secrets")) == "denied: no secrets"
        assert str(c.ToolDenied("denied by uid:0: no")) == "denied by uid:0: no"
        assert str(c.ApprovalTimeout("approval timed out: nobody decided")) == "approval timed out: nobody decided"
        assert str(c.BudgetExhausted("max_tool_calls reached: x")) == "budget_exhausted: max_tool_calls reached: x"
        assert c._ERRORS["anomaly"] == c.AnomalyDetected

    def test_host_family_matches(self):
        c = load_client()
        for code, cls in errors.REFUSALS.items():
            assert issubclass(cls, tollgate_sdk.ToolDenied)
            assert issubclass(c._ERRORS[code], c.ToolDenied), code
            assert c._ERRORS[code].__name__ == cls.__name__
        call = tollgate_sdk.Call("id1", "pay", {}, "deny", "r", "timeout", "approval_timeout",
                                 "approval timed out: nobody approved the call within 1 s")
        e = call.error()
        assert isinstance(e, tollgate_sdk.ApprovalTimeout)
        assert call.refused
        assert str(e) == "approval timed out: nobody approved the call within 1 s"
        ok = tollgate_sdk.Call("id2", "pay", {}, "allow", "", "policy", "ok")
        assert ok.error() is None
        assert not ok.refused
        assert issubclass(tollgate_sdk.CellTimeout, tollgate_sdk.ProgramFailed)


class TestValidation:
    def test_mounts(self):
        d = tempfile.mkdtemp()
        assert limits.check_mounts({"/data": d}) == [("/data", d)]
        link = d + "-link"
        os.symlink(d, link)
        cases = [({"/data": "/"}, "host's /"), ({"/data": link}, "symbolic link"),
                 ({"/data/": d}, "normalised"), ({"/": d}, "normalised"), ({"/tmp/x": d}, "sandbox owns"),
                 ({"/run": d}, "sandbox owns"), ({"/usr/local/data": d}, "sandbox owns"),
                 ({"/data": "relative"}, "absolute"), ({"/data": d + "/missing"}, "not a directory"),
                 ({"/data": "/proc/sys"}, "/proc"), ({"/data": "/dev/shm"}, "/dev")]
        for m, why in cases:
            with pytest.raises(tollgate_sdk.InvalidArgument) as cm:
                limits.check_mounts(m)
            assert why in str(cm.value), m
        with pytest.raises(tollgate_sdk.InvalidArgument):
            limits.check_mounts(["/data"])

    def test_resources(self):
        assert limits.check_resources("1g", 2, 512, "256m") == {"memory": 1 << 30, "cpus": 2.0, "pids": 512, "tmp": 256 << 20}
        assert limits.parse_size("1.5g", "memory") == 3 << 29
        assert limits.parse_size(4096, "tmp") == 4096
        for bad in (("lots", None, None, None), ("1m", None, None, None), (None, 0, None, None),
                    (None, True, None, None), (None, None, 4, None), (None, None, 9.5, None),
                    (None, None, None, "-1m"), (None, None, None, "12q")):
            with pytest.raises(tollgate_sdk.InvalidArgument):
                limits.check_resources(*bad)
        assert limits.size_text(512 << 20) == "512m"
        assert limits.size_text(1 << 30) == "1g"

    def test_area_paths(self):
        assert session.check_area_path("/tmp/a/b") == "/tmp/a/b"
        for bad in ("/etc/passwd", "/tmp/../etc", "/tmp//a", "/tmp/a/", "tmp/a", "/tmpx/a", "", None, "/tmp/\0"):
            with pytest.raises(errors.FileOperationError):
                session.check_area_path(bad)

    def test_trailer(self):
        nonce = "ab" * 16
        tail = b"output\n\ntollgate-cell:" + nonce.encode() + b':{"exit": 3}\n'
        v, t = session._trailer(tail, nonce)
        assert v == {"exit": 3}
        assert tail.endswith(t)
        # A cell that prints a trailer with another nonce is not believed.
        forged = b'\ntollgate-cell:' + b"cd" * 16 + b':{"exit": 0}\n'
        assert session._trailer(forged, nonce) == (None, b"")
        assert session._trailer(b"\ntollgate-cell:" + nonce.encode() + b":{bad", nonce) == (None, b"")

    def test_session_cap(self):
        assert session.max_sessions() == 16
        session.set_max_sessions(3)
        try:
            assert session.max_sessions() == 3
            for bad in (0, -1, "2", True, 1.5):
                with pytest.raises(tollgate_sdk.InvalidArgument):
                    session.set_max_sessions(bad)
        finally:
            session.set_max_sessions(None)
        os.environ["TOLLGATE_SDK_MAX_SESSIONS"] = "5"
        try:
            assert session.max_sessions() == 5
        finally:
            del os.environ["TOLLGATE_SDK_MAX_SESSIONS"]

    def test_session_cap_refuses_before_anything_starts(self):
        session.set_max_sessions(1)
        try:
            sentinel = object()
            with session._live_lock:
                session._live.add(sentinel)
            try:
                s = session.Session(tollgate_sdk.Sandbox(tollgate="/nonexistent/tollgate"))
                with pytest.raises(errors.SessionLimit) as cm:
                    s.open()
                assert "1 sessions are open" in str(cm.value)
                assert "close one" in str(cm.value)
            finally:
                with session._live_lock:
                    session._live.discard(sentinel)
            assert session.live_sessions() == 0
        finally:
            session.set_max_sessions(None)


class TestKernelOnTheHost:
    """kernel.py needs nothing of the container but an abstract socket and
    /tmp: run it here to test its interpreter and timeouts directly."""

    @classmethod
    def setup_class(cls):
        cls.token = os.urandom(8).hex()
        cls.proc = subprocess.Popen([sys.executable, KERNEL, "serve", cls.token],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @classmethod
    def teardown_class(cls):
        cls.proc.kill()
        cls.proc.wait()

    def cell(self, code, timeout=10, shell=False):
        nonce = os.urandom(16).hex()
        head = json.dumps({"nonce": nonce, "timeout": timeout, "shell": shell}).encode() + b"\n"
        p = subprocess.run([sys.executable, KERNEL, "cell", self.token], input=head + code.encode(),
                           capture_output=True, timeout=timeout + 30)
        v, t = session._trailer(p.stderr[-4096:], nonce)
        err = p.stderr[:-len(t)] if t else p.stderr
        return v, p.stdout.decode(), err.decode()

    def test_state_timeouts_and_abandon(self):
        v, out, err = self.cell("x = 41")
        assert v == {"exit": 0}
        v, out, _ = self.cell("print(x + 1)")
        assert out == "42\n"
        t0 = time.monotonic()
        v, out, err = self.cell("import time\nprint('a', flush=True)\nx = 5\ntime.sleep(30)\n", timeout=1)
        assert v["timed_out"] and v["interrupted"], v
        assert time.monotonic() - t0 < 10
        assert "KeyboardInterrupt" in err
        assert "kernel.py" not in err
        assert self.cell("print(x)")[1] == "5\n"
        v, _, _ = self.cell("import time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
                            "    except KeyboardInterrupt:\n        pass\n", timeout=1)
        assert v["timed_out"] and v["abandoned"], v
        assert self.cell("print(x * 2)")[1] == "10\n"
        # In the successor thread a CPU loop is still interrupted.
        v, _, err = self.cell("while True:\n    pass\n", timeout=1)
        assert v["timed_out"] and v["interrupted"], v
        assert self.cell("print(x * 3)")[1] == "15\n"
        v, _, err = self.cell("raise SystemExit(4)")
        assert v == {"exit": 4}
        v, _, err = self.cell("1/0")
        assert v["exit"] == 1
        assert 'File "<cell' in err
        assert "1/0" in err
        v, out, _ = self.cell("echo from sh; exit 3", shell=True)
        assert (v["exit"], out) == (3, "from sh\n")

    def test_large_output(self):
        v, out, _ = self.cell("import sys\nfor _ in range(5):\n    sys.stdout.write('x' * (1 << 20))\n")
        assert len(out) == 5 << 20


class _FullFor:
    """The os module, but for its first n writes the area is full."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def write(self, fd: int, data: bytes) -> int:
        if self.n > 0:
            self.n -= 1
            raise OSError(28, "No space left on device")
        return os.write(fd, data)


class TestCopier:
    """kernel._Copier, a cell's stdout into the channel's area, when a
    program floods the area: a write that found it full once lost the
    cell's output ("3 more bytes of stdout were cut", CI under load)."""

    def setup_method(self) -> None:
        spec = importlib.util.spec_from_file_location("kernel_under_test", KERNEL)
        assert spec is not None and spec.loader is not None
        self.k = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.k)
        self.dir = tempfile.mkdtemp()

    def copy(self, full_for: int, text: bytes) -> tuple[bytes, int, int]:
        c = self.k._Copier(os.path.join(self.dir, "n.out"), 1 << 20)
        os.write(c.w, text)
        self.k.os = _FullFor(full_for)
        try:
            c.finish()
        finally:
            self.k.os = os
        with open(c.path, "rb") as f:
            return f.read(), c.kept, c.total

    def test_a_full_area_is_waited_for(self) -> None:
        assert self.copy(5, b"30\n") == (b"30\n", 3, 3)

    def test_one_that_stays_full_is_counted_not_kept(self) -> None:
        self.k.COPY_WAIT = 0.1
        t = time.monotonic()
        out, kept, total = self.copy(10 ** 9, b"30\n")
        assert (out, total) == (b"", 3) and kept == 1 << 20
        assert time.monotonic() - t < 5


class TestChannelSend:
    """_cells.Channel._send, the host's request, when the program has filled
    the area (one tmpfs, its calls/cells the container's): a write that
    found it full once lost the session (test_cells' flood, CI under load)."""

    def setup_method(self) -> None:
        from tollgate_sdk import _cells
        self.cells = _cells
        self.area = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.area, "bridge", "cells"))
        os.makedirs(os.path.join(self.area, "bridge", "calls", "cells"))
        self.ch = _cells.Channel(os.path.dirname(self.area), os.path.basename(self.area))
        with open(os.path.join(self.ch.ans_dir, "flood-1"), "wb") as f:
            f.write(b"z" * 4096)

    def send(self, full_for: int, wait: float = 10.0) -> None:
        self.cells.os = _FullFor(full_for)  # type: ignore[attr-defined]
        try:
            self.ch._send("ab" * 16, b'{"op": "cell"}\nx = 1', time.monotonic() + wait, None)
        finally:
            self.cells.os = os  # type: ignore[attr-defined]

    def test_a_full_area_is_emptied_and_the_request_written(self) -> None:
        self.send(5)
        with open(os.path.join(self.ch.req_dir, "next.req"), "rb") as f:
            assert f.read() == b'{"op": "cell"}\nx = 1'
        assert os.listdir(self.ch.ans_dir) == []
        assert os.listdir(self.ch.req_dir) == ["next.req"]

    def test_one_that_stays_full_is_lost_at_the_deadline(self) -> None:
        t = time.monotonic()
        with pytest.raises(self.cells._Lost, match="No space left"):
            self.send(10 ** 9, wait=0.3)
        assert 0.3 <= time.monotonic() - t < 5
        assert os.listdir(self.ch.req_dir) == []

    def test_another_error_is_not_retried(self) -> None:
        os.rmdir(self.ch.req_dir)
        t = time.monotonic()
        with pytest.raises(self.cells._Lost, match="No such file"):
            self.send(0)
        assert time.monotonic() - t < 1


class TestFilesWalk:
    """kernel.files_main under a scratch directory standing in for /tmp."""

    def setup_method(self):
        spec = importlib.util.spec_from_file_location("kernel_under_test", KERNEL)
        self.k = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.k)
        self.area = tempfile.mkdtemp()
        self.k.AREA = self.area

    def run_files(self, op, path, data=b""):
        code = ("import sys, importlib.util\nspec = importlib.util.spec_from_file_location('k', %r)\n"
                "k = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(k)\nk.AREA = %r\n"
                "sys.exit(k.files_main(%r, %r))\n" % (KERNEL, self.area, op, path))
        return subprocess.run([sys.executable, "-c", code], input=data, capture_output=True)

    def test_round_trip_and_links(self):
        blob = os.urandom(1 << 20)
        p = self.run_files("write", self.area + "/a/b/blob", blob)
        assert (p.returncode, p.stdout) == (0, str(len(blob)).encode()), p.stderr
        p = self.run_files("read", self.area + "/a/b/blob")
        assert p.stdout == blob
        p = self.run_files("list", self.area + "/a")
        assert (json.loads(p.stdout) == [{"name": "b", "path": self.area + "/a/b", "type": "dir",
                                                 "size": os.stat(self.area + "/a/b").st_size}])
        os.symlink("/etc", self.area + "/link")
        os.symlink("/etc/hostname", self.area + "/file-link")
        for op, path in (("read", "/link/hostname"), ("read", "/file-link"), ("write", "/link/x"),
                         ("list", "/link")):
            p = self.run_files(op, self.area + path, b"x")
            assert p.returncode == 2, (op, path)
            assert b"symbolic link" in p.stderr, (op, path, p.stderr)
        assert not (os.path.exists("/etc/x"))
        p = self.run_files("read", "/etc/hostname")
        assert p.returncode == 2
        assert b"writable area" in p.stderr
        os.mkfifo(self.area + "/fifo")
        p = self.run_files("read", self.area + "/fifo")  # never blocks on a FIFO
        assert p.returncode == 2
        assert b"not a regular file" in p.stderr



class TestNotices:
    """tollgate's own warning lines leading stderr are kept apart from the
    program's stderr (Result.warnings), however the pipe splits them."""

    def drain(self, pieces):
        from tollgate_sdk import _capture as capture
        r, w = os.pipe()
        seen = []
        with os.fdopen(r, "rb") as rf:
            s = capture.Stream("stderr", rf, 1 << 20, seen.append, divert=capture.NOTICE)
            for p in pieces:
                os.write(w, p)
                time.sleep(0.02)
            os.close(w)
            s.thread.join(5)
        return s, "".join(seen)

    def test_split_notices_are_diverted(self):
        note = b"tollgate: warning: runc 1.1.5 predates the fixes; upgrade runc or use runsc\n"
        s, cb = self.drain([note[:5], note[5:30], note[30:], b"tollgate: warning: two\n", b"prog", b" err\n"])
        assert bytes(s.buf) == b"prog err\n"
        assert cb == "prog err\n"
        assert s.diverted == [note[:-1].decode(), "tollgate: warning: two"]
        assert s.total == 9

    def test_only_leading_lines(self):
        s, _ = self.drain([b"mine\ntollgate: warning: not ours\n"])
        assert bytes(s.buf) == b"mine\ntollgate: warning: not ours\n"
        assert s.diverted == []
        s, _ = self.drain([b"toll"])  # a short program line that only looks like the start
        assert bytes(s.buf) == b"toll"

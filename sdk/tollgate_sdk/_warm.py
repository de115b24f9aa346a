"""The warm pool: Sandbox(..., warm=N) keeps N containers created, started
and waiting, so a run skips create and start (most of a cold run's time).

Each warm container's init is `kernel.py warm`: it waits for the host to
write the job into its /app (a bind of the bundle's app directory), runs it
once in a child process, ends stdout and stderr with a trailer carrying the
job's nonce and the exit status, and exits, which stops the container.
So a container runs exactly one program and is never reused after untrusted
code; it is deleted in the background and a new one is made in its place.
Each has its own sidecar, policy, budgets and audit log, as a cold run does.
A run whose policy differs from the Sandbox's (repair's lowered budgets)
takes the cold path.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from ._tree import remove_tree
from . import _oom as oom_watch
from ._approvals import ApprovalWatcher
from ._capture import Capture, Stream, TextCallback, stream_text
from ._errors import CellTimeout, ContainerError, ProgramFailed
from ._session import KERNEL

if TYPE_CHECKING:
    from ._sandbox import Result, Sandbox


class _Warm:
    def __init__(self, cid: str, bundle: str, proc: subprocess.Popen[bytes], capture: Capture) -> None:
        self.cid, self.bundle, self.proc, self.capture = cid, bundle, proc, capture
        self.notices = capture.err.diverted
        self.pidfd: Optional[int] = None   # the container's process: the host's view of its exit


class WarmPool:
    def __init__(self, sb: Sandbox, n: int) -> None:
        self.sb = sb
        self.n = n
        self.ready: list[_Warm] = []
        self.making = 0
        self.lock = threading.Condition()
        self.closed = False
        self.errors: list[str] = []  # why the last refills failed (shown by run when the pool is empty)
        self.cleaners: list[threading.Thread] = []

    # ---- filling ------------------------------------------------------------
    def fill(self) -> None:
        with self.lock:
            want = self.n - len(self.ready) - self.making
            if self.closed or want <= 0:
                return
            self.making += want
        for _ in range(want):
            threading.Thread(target=self._make_one, name="tollgate-sdk-warm", daemon=True).start()

    def _make_one(self) -> None:
        w = None
        try:
            w = self._create()
        except Exception as e:  # shown when a run finds the pool empty
            self.errors = (self.errors + ["%s: %s" % (type(e).__name__, e)])[-3:]
        with self.lock:
            if w is not None and not self.closed:
                self.ready.append(w)
                self.making -= 1
                self.lock.notify_all()
                return
        # Closed meanwhile: deleted before close() may see making reach 0.
        if w is not None:
            self._discard(w)
        with self.lock:
            self.making -= 1
            self.lock.notify_all()

    def _create(self) -> _Warm:
        sb = self.sb
        cid = sb._new_id()
        bundle = sb._bundle(cid, ["python3", KERNEL, "warm"])
        # Pipes, read from now on: the init writes the run's output into
        # them; the sidecar holds them too, so the end of a run is its
        # trailer, never an end of file.
        proc = subprocess.Popen(sb._tg("create", "--bundle", bundle, "--policy", sb.policy_path, cid),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cap = Capture(proc, sb.output_max)
        w = _Warm(cid, bundle, proc, cap)
        try:
            proc.wait(timeout=120)
            if proc.returncode != 0:
                raise ContainerError("tollgate create: %s" % stream_text(cap.err).strip()[-2000:])
            p = subprocess.run(sb._tg("start", cid), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=120)
            if p.returncode != 0:
                raise ContainerError("tollgate start: %s" % p.stderr.decode("utf-8", "replace").strip())
            w.pidfd = _init_pidfd(sb, cid)
        except BaseException:
            self._discard(w)
            raise
        return w

    def wait_ready(self, timeout: float = 120) -> bool:
        """Wait until all N are started and waiting and no retired one is
        still being deleted.  True when they are."""
        end = time.monotonic() + timeout
        with self.lock:
            while len(self.ready) < self.n and not self.closed:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(min(left, 0.5))
                if not self.making and len(self.ready) < self.n:
                    self.lock.release()
                    try:
                        self.fill()
                    finally:
                        self.lock.acquire()
        for c in list(self.cleaners):
            c.join(max(0, end - time.monotonic()))
        return len(self.ready) >= self.n

    def take(self) -> _Warm | None:
        """A ready container, or None (the caller runs cold)."""
        with self.lock:
            w = self.ready.pop(0) if self.ready else None
        if w is None:  # else the refill waits for the run's end (_retire):
            self.fill()  # a create beside it slows its first result
        return w

    # ---- one run --------------------------------------------------------------
    def run(self, w: _Warm, code: str, shell: bool, timeout: float, check: bool,
            on_stdout: Optional[TextCallback], on_stderr: Optional[TextCallback]) -> Result:
        sb = self.sb
        nonce = secrets.token_hex(16)
        mark = b"\ntollgate-run:" + nonce.encode() + b":"
        for s, cb in ((w.capture.out, on_stdout), (w.capture.err, on_stderr)):
            s.reset(sb.output_max, cb)
        app = os.path.join(w.bundle, "app")
        if not shell:
            _write(os.path.join(app, "main.py"), code.encode("utf-8"))
        watcher = ApprovalWatcher(sb, w.cid) if sb.approval is not None else None
        if watcher:
            watcher.start()
        sb.active.add(w.cid)
        memwatch = oom_watch.Watch(w.cid, sb.runtime)
        try:
            head = json.dumps({"nonce": nonce, "timeout": timeout, "shell": bool(shell)}).encode()
            _write(os.path.join(app, ".tollgate", "job.json"), head + b"\n" + code.encode("utf-8"))
            got_err = w.capture.err.wait_for(mark, timeout + 30, abort=memwatch.killed)
            got_out = got_err and w.capture.out.wait_for(mark, 10)
            # A trailer proves nothing until the container has stopped: the
            # program can print one (it can read the nonce).  The last one,
            # written by the init after it killed the rest, is the verdict.
            if got_err and not _stopped(sb, w, timeout + 30, memwatch.killed):
                got_err = got_out = False
            if got_err:
                _drained(w.capture.err)
                _drained(w.capture.out)
        finally:
            sb.active.discard(w.cid)
            if watcher:
                watcher.stop()
        verdict = _verdict(bytes(w.capture.err.tail), mark) if got_err else None
        lost = verdict is None
        out = stream_text(w.capture.out, _line(bytes(w.capture.out.tail), mark) if got_out else b"")
        err = stream_text(w.capture.err, _line(bytes(w.capture.err.tail), mark) if got_err else b"")
        if lost:
            subprocess.run(sb._tg("kill", w.cid, "KILL"), capture_output=True)
        oom = memwatch.killed()
        memwatch.close()
        status = int(verdict.get("exit", 1)) if verdict else 137
        timed_out = (lost and not oom) or bool(verdict and verdict.get("timed_out"))
        if timed_out:
            err += "\ntollgate_sdk: the program ran past %s s and was killed\n" % timeout
        result = sb._result(w.cid, out, err, status, timed_out, sb.policy)
        result.stdout_cut, result.stderr_cut = w.capture.out.cut, w.capture.err.cut
        result.warnings = list(w.notices)
        self._retire(w)
        if timed_out:
            result.timeout_how = "killed"
        if oom and status != 0:
            result.oom_killed, result.memory_limit = True, sb.memory_text()
            result.stderr += ("\ntollgate_sdk: the program ran out of memory and was killed "
                              "(memory limit %s; Sandbox(memory=...) raises it)\n" % result.memory_limit)
        if check and timed_out:
            raise CellTimeout(result, timeout, "killed")
        if check and status != 0:
            raise ProgramFailed(result)
        return result

    # ---- ending -----------------------------------------------------------------
    def _retire(self, w: _Warm) -> None:
        self.fill()
        t = threading.Thread(target=self._discard, args=(w,), name="tollgate-sdk-warm-delete", daemon=True)
        self.cleaners = [c for c in self.cleaners if c.is_alive()] + [t]
        t.start()

    def _discard(self, w: _Warm) -> None:
        sb = self.sb
        if w.pidfd is not None:
            os.close(w.pidfd)
            w.pidfd = None
        subprocess.run(sb._tg("kill", w.cid, "KILL"), capture_output=True)
        p = subprocess.run(sb._tg("delete", "--force", w.cid), capture_output=True)
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()
        w.capture.finish(linger=1)
        if p.returncode == 0:
            remove_tree(w.bundle)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            while self.making:
                self.lock.wait(130)
            ready, self.ready = self.ready, []
        for w in ready:
            self._discard(w)
        for c in self.cleaners:
            c.join(60)


def _init_pidfd(sb: Sandbox, cid: str) -> Optional[int]:
    """A pidfd on the process tollgate reports as the container's (runc:
    its init; runsc: its sandbox, which ends with the init), taken while it
    runs, so a reused pid cannot stand in for it; None when there is none."""
    try:
        p = subprocess.run(sb._tg("state", cid), capture_output=True, timeout=60)
        pid = int(json.loads(p.stdout).get("pid") or 0)
        return os.pidfd_open(pid) if pid > 0 else None
    except (OSError, ValueError, AttributeError, subprocess.TimeoutExpired):
        return None


def _stopped(sb: Sandbox, w: _Warm, limit: float, abort: Callable[[], bool]) -> bool:
    """Wait until the container has stopped, as the host sees it: its
    process's pidfd says it exited, or else `tollgate state` says
    "stopped".  False when limit seconds passed or abort() said so."""
    import select
    import time
    end = time.monotonic() + limit
    fd = w.pidfd
    wait = 0.005
    while time.monotonic() < end:
        if fd is not None:
            if select.select([fd], [], [], min(0.5, max(0, end - time.monotonic())))[0]:
                return True
        else:
            p = subprocess.run(sb._tg("state", w.cid), capture_output=True)
            try:
                status = json.loads(p.stdout).get("status") if p.returncode == 0 else "stopped"
            except ValueError:
                status = None
            if status == "stopped":
                return True
            time.sleep(wait)
            wait = min(wait * 2, 0.1)
        if abort():
            return False
    return False


def _drained(stream: Stream) -> None:
    """Wait (briefly) until everything the stopped container wrote has
    been read and kept: its pipe is empty, and the reader holds no chunk
    it read but has not kept (Stream.reading).  Counting what the reader
    took in twice, 1 ms apart, was not enough: on a loaded machine the
    reader sat longer than that between its read and its keep, and the
    program's forged trailer was the last one kept."""
    import fcntl
    import struct
    import termios
    import time
    try:
        fd = stream.f.fileno()
    except (OSError, ValueError):
        return

    def left() -> int:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            if left() == 0:
                with stream.reading:  # a chunk read is kept before this is free
                    pass
                if left() == 0:
                    return
        except OSError:
            return
        time.sleep(0.001)


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _line(tail: bytes, mark: bytes) -> bytes:
    i = tail.rfind(mark)
    j = tail.find(b"\n", i + 1) if i >= 0 else -1
    return tail[i:j + 1] if j >= 0 else b""


def _verdict(tail: bytes, mark: bytes) -> dict[str, Any] | None:
    line = _line(tail, mark)
    if not line:
        return None
    try:
        v = json.loads(line[len(mark):-1])
    except ValueError:
        return None
    return v if isinstance(v, dict) else None

"""Reading a sandboxed process's stdout and stderr on the host.

The program is hostile: what it prints must not be able to fill the
host's memory, block the program on a full pipe, or keep the SDK waiting
after it exited.  So each stream is read on its own thread; at most cap
bytes of it are kept, the rest is read, counted and dropped; a callback
(on_stdout/on_stderr) sees each chunk as it arrives; and once the process
has exited the reader gives the pipe LINGER seconds to reach its end (a
child the program left behind may hold it open) before it stops.
"""
from __future__ import annotations

import codecs
import os
import select
import subprocess
import threading
import time
from typing import Any, Callable, IO, Optional, Protocol

# a callable given the text of a stream as it arrives
TextCallback = Callable[[str], object]

LINGER = 2.0
TAIL = 4096  # bytes of each stream's end always kept (the cell trailer lives there)


# tollgate's own notices on the stderr it shares with the program (the
# runc version-floor warning, printed before the container starts): taken
# out of the program's stderr into Result.warnings.
NOTICE = b"tollgate: warning: "


class KeptOutput:
    """What is kept of one output stream (its first cap bytes, its last
    TAIL, how many came, how many the text left out) and its callback,
    handed the text as it comes; _cells._Sink keeps a channel's alike."""

    def __init__(self, cap: int, callback: Optional[TextCallback]) -> None:
        self.cap = cap
        self.callback = callback
        self.buf = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.cut = 0
        self.diverted: list[str] = []
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.lock = threading.Lock()

    def _keep(self, chunk: bytes) -> None:
        """Count chunk in; the caller holds the lock."""
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += chunk[:room]
        self.total += len(chunk)
        self.tail = (self.tail + chunk)[-TAIL:]

    def _call(self, chunk: bytes) -> None:
        text = self.decoder.decode(chunk)
        if text:
            self._safe(text)

    def end(self) -> None:
        """Hand the callback what the decoder still holds."""
        if self.callback is not None:
            rest = self.decoder.decode(b"", final=True)
            if rest:
                self._safe(rest)

    def _safe(self, text: str) -> None:
        cb = self.callback
        if cb is None:
            return
        try:
            cb(text)
        except Exception:  # a broken callback must not stop the draining
            self.callback = None

    @property
    def dropped(self) -> int:
        return max(0, self.total - len(self.buf))


class Stream(KeptOutput):
    def __init__(self, name: str, f: IO[bytes], cap: int, callback: Optional[TextCallback],
                 divert: bytes | None = None) -> None:
        super().__init__(cap, callback)
        self.name = name
        self.divert = divert      # a line prefix taken out while it leads the stream
        self.pending = b""
        self.f = f
        self.changed = threading.Condition(self.lock)
        # Held from a read that select said is ready until its chunk is
        # kept: with the pipe empty, a drainer that takes it knows every
        # byte read so far is in buf and tail (warm runs judge the last
        # trailer there: one not yet kept would hand the verdict to a
        # program's forged one).
        self.reading = threading.Lock()
        self.ended = False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drain, name="tollgate-sdk-" + name, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        # Reads on the descriptor with select, not on the file object: a
        # thread blocked in read1() holds the file's lock, so closing it to
        # stop a drain whose pipe a sandbox keeps open would block too.
        fd = self.f.fileno()
        try:
            while True:
                if self.stop.is_set():
                    break
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    continue
                with self.reading:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    if self.divert is not None:
                        chunk = self._take_notices(chunk)
                        if not chunk:
                            continue
                    with self.lock:
                        self._keep(chunk)
                        cb = self.callback
                        self.changed.notify_all()
                if cb is not None:
                    self._call(chunk)
        except (OSError, ValueError):
            pass  # closed under us after the linger
        if self.pending:  # a leading partial line that was not a notice
            with self.lock:
                self._keep(self.pending)
            self.pending = b""
        with self.lock:
            self.ended = True
            self.changed.notify_all()
        self.end()

    def _take_notices(self, chunk: bytes) -> bytes:
        """While the stream starts with tollgate's notice lines, keep them
        apart; return what is the program's."""
        data = self.pending + chunk
        self.pending = b""
        while self.divert is not None:
            if len(data) < len(self.divert) and self.divert.startswith(data):
                self.pending = data
                return b""
            if not data.startswith(self.divert):
                self.divert = None
                break
            nl = data.find(b"\n")
            if nl < 0:
                if len(data) > 4096:  # not a notice of ours: too long
                    self.divert = None
                    break
                self.pending = data
                return b""
            self.diverted.append(data[:nl].decode("utf-8", "replace"))
            data = data[nl + 1:]
        return data

    def reset(self, cap: int, callback: Optional[TextCallback]) -> None:
        """Forget what came so far (a warm container's wait) and start
        counting for one run."""
        with self.lock:
            self.buf, self.tail, self.total = bytearray(), bytearray(), 0
            self.cap, self.callback = cap, callback
            self.divert, self.pending = None, b""

    def wait_for(self, mark: bytes, deadline_s: float, abort: Optional[Callable[[], bool]] = None) -> bool:
        """Wait until the stream's end holds mark (or it ended, or the
        time passed, or abort(), asked twice a second, says so).  True
        when the mark came."""
        end = time.monotonic() + deadline_s
        with self.lock:
            while mark not in self.tail:
                left = end - time.monotonic()
                if self.ended or left <= 0:
                    return False
                self.changed.wait(min(left, 0.5) if abort else left)
                if abort and mark not in self.tail:
                    self.lock.release()
                    try:
                        stop = abort()
                    finally:
                        self.lock.acquire()
                    if stop:
                        return False
            return True


class Capture:
    def __init__(self, proc: subprocess.Popen[bytes], cap: int, on_stdout: Optional[TextCallback] = None,
                 on_stderr: Optional[TextCallback] = None) -> None:
        assert proc.stdout is not None and proc.stderr is not None, "the process's output is piped"
        self.cap = cap
        self.out = Stream("stdout", proc.stdout, cap, on_stdout)
        self.err = Stream("stderr", proc.stderr, cap, on_stderr, divert=NOTICE)

    def finish(self, linger: float = LINGER) -> None:
        for s in (self.out, self.err):
            s.thread.join(linger)
        for s in (self.out, self.err):
            if s.thread.is_alive():
                s.stop.set()
                s.thread.join(2)
            try:
                s.f.close()
            except OSError:
                pass

    def text(self, s: Stream, strip_tail: bytes = b"") -> str:
        return stream_text(s, strip_tail)


class TextSource(Protocol):
    """What stream_text reads: _capture.Stream, or a cell channel's sink."""
    name: str
    cap: int
    cut: int
    buf: bytearray
    lock: threading.Lock

    @property
    def dropped(self) -> int: ...


def stream_text(s: TextSource, strip_tail: bytes = b"") -> str:
    """(text, bytes cut) of a stream, without strip_tail (the SDK's own
    trailer) at its end; the trailer is not counted as cut either."""
    with s.lock:
        data = bytes(s.buf)
        dropped = s.dropped
    if strip_tail:
        i = data.rfind(strip_tail)
        if i >= 0:
            data = data[:i] + data[i + len(strip_tail):]
        elif dropped:
            dropped = max(0, dropped - len(strip_tail))
    t = data.decode("utf-8", "replace")
    if dropped:
        t += "\n[tollgate_sdk: %d more bytes of %s were cut (output_max %d)]\n" % (dropped, s.name, s.cap)
    s.cut = dropped
    return t


def wait_capture(proc: subprocess.Popen[bytes], cap: int, timeout: float, on_timeout: Callable[[], Any],
                 on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None,
                 abort: Optional[Callable[[], bool]] = None) -> tuple[Capture, bool]:
    """Wait for proc, capturing its output; on timeout call on_timeout()
    (which must make proc end) and wait again.  abort(), asked twice a
    second, may end the wait early the same way (an OOM kill under runsc
    can leave the exec waiting on a sandbox that will never answer).
    Returns (Capture, timed out?); the Capture is finished."""
    c = Capture(proc, cap, on_stdout, on_stderr)
    timed_out = False
    end = time.monotonic() + timeout
    try:
        while True:
            try:
                proc.wait(timeout=max(0.01, min(0.5, end - time.monotonic())) if abort else timeout)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= end:
                    raise
                if abort is not None and abort():
                    on_timeout()
                    break
    except subprocess.TimeoutExpired:
        timed_out = True
        on_timeout()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    c.finish()
    return c, timed_out

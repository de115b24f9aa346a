"""Processes started through envd's process service: each is one
`tollgate exec` in the sandbox's container, with its stdout and stderr
read by two threads and handed to whoever streams it (Start, Connect).
A stream waits for its next event in the service's event loop, not in a
thread (serve/_shares.py)."""
from __future__ import annotations

import math
import subprocess
import threading
import time
from typing import IO, Any, Callable

import anyio
import anyio.from_thread
from anyio.lowlevel import EventLoopToken

__all__ = ["Proc", "Event", "Listener", "STREAM_QUEUE"]

# Events a slow reader may be behind by before the process's pipe blocks
# (back-pressure, not an unbounded buffer); each is at most one 64 KiB read.
STREAM_QUEUE = 64
# A reader that took none of its events for this long is dropped rather
# than holding the process up for ever.
SLOW_READER = 60.0
Event = dict[str, Any]


class Listener:
    """One stream's events of one process: the pump threads put them,
    the stream awaits them in the event loop whose token it was made
    with.  None ends it."""

    def __init__(self, token: EventLoopToken) -> None:
        self._token = token
        self._send, self._recv = anyio.create_memory_object_stream[Event | None](STREAM_QUEUE)

    def put(self, ev: Event | None) -> bool:
        """From a thread: False when the reader is gone, is SLOW_READER
        behind, or its loop has ended."""
        async def send() -> None:
            with anyio.fail_after(SLOW_READER):
                await self._send.send(ev)
        try:
            anyio.from_thread.run(send, token=self._token)
        except (TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
            return False
        return True

    def put_now(self, ev: Event | None) -> None:
        """From the loop, with room known to be there."""
        self._send.send_nowait(ev)

    async def get(self, timeout: float) -> Event | None:
        """The next event; TimeoutError when none came within timeout."""
        with anyio.fail_after(timeout if math.isfinite(timeout) else None):
            return await self._recv.receive()

    def close(self) -> None:
        """From the loop, when the stream ends: a pump putting to it is
        let go at once."""
        self._recv.close()
        self._send.close()


class Proc:
    """One process: its envd pid (the service's number, not the
    container's), what started it, and the listeners of its output."""

    def __init__(self, pid: int, argv: list[str], config: dict[str, Any], tag: str | None,
                 stdin: bool, deadline: float | None, killer: Callable[[int], None],
                 token: EventLoopToken, changed: Callable[[], str | None] | None = None) -> None:
        self.pid = pid
        self.killer = killer
        self.changed = changed  # why its sandbox was removed or paused since it started, or None
        self.config = config
        self.tag = tag
        self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._lock = threading.Lock()
        # The Start call's own stream listens from before the first byte:
        # its HTTP response begins only after this returns, and a command
        # that ended meanwhile had published its whole output to nobody
        # (seen: `commands.run` of 30 sandboxes at once, 6 came back with
        # empty stdout and exit 0).
        self.first = Listener(token)
        self._listeners: list[Listener] = [self.first]
        self.end: Event | None = None
        self._open_pipes = 2
        self.deadline = deadline
        for name, pipe in (("stdout", self.popen.stdout), ("stderr", self.popen.stderr)):
            assert pipe is not None
            threading.Thread(target=self._pump, args=(name, pipe), daemon=True).start()
        if deadline is not None:
            threading.Thread(target=self._expire, daemon=True).start()

    def listen(self, token: EventLoopToken) -> Listener:
        """This process's events from now on (a Connect), for a stream in
        the loop of token, called from that loop.  The Start's stream
        reads `first`, which has them all."""
        q = Listener(token)
        with self._lock:
            if self.end is not None:
                q.put_now(self.end)
                q.put_now(None)
            else:
                self._listeners.append(q)
        return q

    def unlisten(self, q: Listener) -> None:
        with self._lock:
            if q in self._listeners:
                self._listeners.remove(q)

    def _publish(self, ev: Event | None) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for q in listeners:
            if not q.put(ev):
                self.unlisten(q)

    def _pump(self, name: str, pipe: IO[bytes]) -> None:
        # Closed here at its end, not left to the collector: a Proc lives in
        # reference cycles (its listeners, its threads), and under churn the
        # service held two pipes of each ended command (seen: 45 after 300
        # sandboxes with nothing running).
        with pipe:
            while True:
                chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
                if not chunk:
                    break
                self._publish({"data": {name: chunk}})
        with self._lock:
            self._open_pipes -= 1
            last = self._open_pipes == 0
        if last:
            code = self.popen.wait()
            self.close_stdin()
            status = "exit status %d" % code if code >= 0 else "signal: %d" % -code
            exit_code = code if code >= 0 else 128 - code
            why = self.changed() if exit_code != 0 and self.changed is not None else None
            if why is not None:
                # Its sandbox was killed or paused under it: a SIGKILL, said
                # as such, not the exit status of an exec whose container
                # went away before it had started the command (runsc's
                # "connecting to control server ...: connection refused").
                exit_code, code, status = 137, -9, "signal: killed (%s)" % why
            end: Event = {"end": {"exitCode": exit_code, "exited": code >= 0, "status": status}}
            if exit_code != 0:
                end["end"]["error"] = status
            with self._lock:
                self.end = end
                listeners, self._listeners = self._listeners, []
            for q in listeners:
                if q.put(end):
                    q.put(None)

    def _expire(self) -> None:
        assert self.deadline is not None
        while self.end is None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.signal(9)
                return
            time.sleep(min(left, 0.5))

    def send_input(self, data: bytes) -> None:
        stdin = self.popen.stdin
        if stdin is None:
            raise ValueError("the process was started without stdin")
        if self.end is not None:
            raise ValueError("the process has ended")
        if stdin.closed:
            raise ValueError("its stdin was closed")
        stdin.write(data)
        stdin.flush()

    def close_stdin(self) -> None:
        """Close the process's stdin; again, or once it ended, does nothing.
        A reader that went away leaves unwritten bytes: they are dropped."""
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            return
        try:
            stdin.close()
        except OSError:  # the flush of what a gone reader never took
            pass

    def ended_by(self, until: float) -> bool:
        """After a SIGKILL: wait until the process's `tollgate exec` has
        ended (so the process inside has: the exec waits for it), or
        time.monotonic() passes until.  Signalled again each second: a
        command whose exec had not yet started it inside found no process
        to signal."""
        while True:
            try:
                self.popen.wait(timeout=max(0.05, min(1.0, until - time.monotonic())))
                return True
            except subprocess.TimeoutExpired:
                if time.monotonic() >= until:
                    return False
            self.signal(9)

    def signal(self, signo: int) -> None:
        """Signal the process group in the container.  Ending the host's
        `tollgate exec` would not do: under runsc the process inside runs
        on without it."""
        if self.end is None:
            self.killer(signo)

"""Processes started through envd's process service: each is one
`tollgate exec` in the sandbox's container, with its stdout and stderr
read by two threads and handed to whoever streams it (Start, Connect)."""
from __future__ import annotations

import queue
import subprocess
import threading
import time
from typing import IO, Any, Callable

__all__ = ["Proc", "Event", "STREAM_QUEUE"]

# Events a slow reader may be behind by before the process's pipe blocks
# (back-pressure, not an unbounded buffer); each is at most one 64 KiB read.
STREAM_QUEUE = 64
Event = dict[str, Any]


class Proc:
    """One process: its envd pid (the service's number, not the
    container's), what started it, and the listeners of its output."""

    def __init__(self, pid: int, argv: list[str], config: dict[str, Any], tag: str | None,
                 stdin: bool, deadline: float | None, killer: Callable[[int], None]) -> None:
        self.pid = pid
        self.killer = killer
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
        self.first: queue.Queue[Event | None] = queue.Queue(STREAM_QUEUE)
        self._listeners: list[queue.Queue[Event | None]] = [self.first]
        self.end: Event | None = None
        self._open_pipes = 2
        self.deadline = deadline
        for name, pipe in (("stdout", self.popen.stdout), ("stderr", self.popen.stderr)):
            assert pipe is not None
            threading.Thread(target=self._pump, args=(name, pipe), daemon=True).start()
        if deadline is not None:
            threading.Thread(target=self._expire, daemon=True).start()

    def listen(self) -> "queue.Queue[Event | None]":
        """A queue of this process's events from now on (a Connect); None
        ends it.  The Start's stream reads `first`, which has them all."""
        q: queue.Queue[Event | None] = queue.Queue(STREAM_QUEUE)
        with self._lock:
            if self.end is not None:
                q.put(self.end)
                q.put(None)
            else:
                self._listeners.append(q)
        return q

    def unlisten(self, q: "queue.Queue[Event | None]") -> None:
        with self._lock:
            if q in self._listeners:
                self._listeners.remove(q)

    def _publish(self, ev: Event | None) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for q in listeners:
            # A listener that stopped reading for a minute is dropped
            # rather than holding the process up for ever.
            try:
                q.put(ev, timeout=60)
            except queue.Full:
                self.unlisten(q)

    def _pump(self, name: str, pipe: IO[bytes]) -> None:
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
            status = "exit status %d" % code if code >= 0 else "signal: %d" % -code
            exit_code = code if code >= 0 else 128 - code
            end: Event = {"end": {"exitCode": exit_code, "exited": code >= 0, "status": status}}
            if exit_code != 0:
                end["end"]["error"] = status
            with self._lock:
                self.end = end
                listeners, self._listeners = self._listeners, []
            for q in listeners:
                for ev in (end, None):
                    try:
                        q.put(ev, timeout=60)
                    except queue.Full:
                        break

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
        stdin.write(data)
        stdin.flush()

    def close_stdin(self) -> None:
        if self.popen.stdin is not None:
            self.popen.stdin.close()

    def signal(self, signo: int) -> None:
        """Signal the process group in the container.  Ending the host's
        `tollgate exec` would not do: under runsc the process inside runs
        on without it."""
        if self.end is None:
            self.killer(signo)

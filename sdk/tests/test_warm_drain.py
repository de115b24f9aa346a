"""A warm run's verdict is the last trailer kept from the stopped
container's stderr (tollgate_sdk._warm).  Its program can print trailers
too (it can read the nonce), so the init's own, written last, must be kept
before the verdict is read.  _drained waited until the pipe was empty and
the reader's count stood still for 1 ms; a reader that sat longer between
its read and its keep (a loaded machine: CI once reported a forged exit 0
for a program that exited 3) lost the init's trailer."""
from __future__ import annotations

import os
import threading
import time

from tollgate_sdk import _capture as capture, _warm as warm

MARK = b"\ntollgate-run:n0nce:"


def test_drained_waits_for_a_chunk_read_but_not_yet_kept(monkeypatch) -> None:
    rf, wf = os.pipe()
    slow = threading.Event()
    class SlowReads:
        """os for the capture module, whose read of the init's trailer
        returns late: read from the pipe, not yet kept, as a descheduled
        reader thread leaves it."""

        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        def read(self, fd: int, n: int) -> bytes:
            data = os.read(fd, n)
            if b'"exit": 3' in data:
                slow.set()
                time.sleep(0.3)
            return data

    monkeypatch.setattr(capture, "os", SlowReads())
    s = capture.Stream("stderr", os.fdopen(rf, "rb", buffering=0), 1 << 20, None)
    try:
        os.write(wf, MARK + b'{"exit": 0}\n')  # the program's forgery
        time.sleep(0.1)
        os.write(wf, MARK + b'{"exit": 3}\n')  # the init's, last
        assert slow.wait(5)
        warm._drained(s)
        assert warm._verdict(bytes(s.tail), MARK) == {"exit": 3}
    finally:
        os.close(wf)
        s.stop.set()
        s.thread.join(5)

"""A long-running host command that is PID 1 of its PID namespace (a
container started without an init: `docker run image tollgate serve`).

Every process whose parent dies is re-parented to PID 1: a runsc sandbox
once `runsc create` returns, the gofer, a container's bridge sidecar.  A
PID 1 that does not reap them leaves zombies, and `runsc delete` waits
for its sandbox's process to be gone: measured, a `tollgate serve` that
was PID 1 took 2 minutes to answer each kill.  So `tollgate serve` and
`tollgate mcp` start by splitting in two when they are PID 1, as an init
such as tini does: the child goes on as the command, and PID 1 stays a
small init that reaps every orphan, passes the signals it gets on to the
child and exits as the child does.  (A program that uses the SDK as a
library cannot be split under its author's feet: Sandbox refuses to start
there instead, naming the fix.)
"""
from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Optional

__all__ = ["PID1_FIX", "split_when_pid1"]

PID1_FIX = ("run it under an init that reaps orphans (docker run --init, or tini -- COMMAND), "
            "or not as the first process of a PID namespace")

# What an init passes on: the signals that stop or reload a service.
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)


def split_when_pid1() -> None:
    """Return at once unless this process is PID 1.  If it is, fork: return
    in the child, and never return in PID 1, which reaps until the child
    exits and then exits with its status (128 + N for a signal N)."""
    if os.getpid() != 1:
        return
    # Before the fork: a signal that comes between it and the handlers
    # below would otherwise be lost (PID 1 ignores what it has no handler
    # for).
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return
    _init(child, old)


def _init(child: int, mask: "set[int | signal.Signals]") -> None:
    def pass_on(signum: int, _frame: Optional[FrameType]) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass
    for s in _FORWARDED:
        signal.signal(s, pass_on)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    # The child has the command's stdin and stdout (an MCP client's pipes):
    # this process does not hold them open after it.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # the child is gone and nothing is left
            os._exit(1)
        if pid != child:
            continue  # an orphan, reaped
        code = os.waitstatus_to_exitcode(status)
        sys.stderr.flush()
        os._exit(128 - code if code < 0 else code)

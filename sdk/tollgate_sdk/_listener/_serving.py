"""Running uvicorn servers until SIGTERM or SIGINT, then returning, so
that the caller's clean-up runs.

uvicorn's `Server.serve()` is not used: after its own shutdown it raises
the signal that stopped it again, with the default handler back in place,
so the process died there and nothing after `serve()` ran (`tollgate mcp
--http` left every session's container, and every running program's, to
a later reaper instead of closing them)."""
from __future__ import annotations

import asyncio
import signal
from typing import Callable

import uvicorn

__all__ = ["start_servers"]


def start_servers(servers: list[uvicorn.Server], on_signal: Callable[[int], None]) -> list[asyncio.Task[None]]:
    """In the running loop: a task serving each of servers.  SIGTERM or
    SIGINT calls on_signal(signo) and has every server shut down (its
    graceful timeout, then the requests left are cancelled); the tasks
    then end, and the signal is not raised again."""
    loop = asyncio.get_running_loop()

    def stop(signo: int) -> None:
        for s in servers:
            s.should_exit = True
        on_signal(signo)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig)
    # _serve is serve() without the signal capture and its re-raise.
    return [asyncio.create_task(s._serve()) for s in servers]

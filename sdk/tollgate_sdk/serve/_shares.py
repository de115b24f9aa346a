"""A tenant's share of the service: its requests at once, and the worker
threads its blocking work (a create, a command's start, a cell, a file)
runs in.

Every such call ran in anyio's one pool of 256 threads, and a cell waited
for the cells before it (one interpreter a sandbox) in its thread: one
tenant's 300 held `/execute` requests of `time.sleep(60)` took all 256,
and another tenant's `Sandbox.create` got no thread (measured: no answer
in 120 s, and none for the hours those cells were queued for).  Now each
tenant's work runs on limiters of its own, a control one for the REST
paths (create, kill, list, timeouts: its sandboxes can always be ended)
and a data one for the rest, and a tenant holds at most REQUESTS
requests at once (then 429, and the connection is closed), so another
tenant's requests get threads and connections whatever one tenant holds.
Nothing waits in a thread for a client: cells wait for their turn, and
streams for their next event, in the event loop.
"""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import anyio
import anyio.to_thread
from anyio import CapacityLimiter

from ._service_error import ServiceError

__all__ = ["Shares", "TooManyRequests"]

REQUESTS = 256   # one tenant's requests at once
WORKERS = 32     # its envd, /files and interpreter work at once
CONTROL = 16     # its REST calls at once

T = TypeVar("T")


class TooManyRequests(ServiceError):
    """Over a tenant's requests at once: answered 429, and the
    connection closed (a kept-alive one would still be held)."""


class Shares:
    """Per tenant: a count of requests at once and two thread limiters.
    Used from the service's event loop only."""

    def __init__(self, requests: int = REQUESTS, workers: int = WORKERS, control: int = CONTROL) -> None:
        self.requests, self.workers, self.control_workers = requests, workers, control
        self.running: Counter[str] = Counter()
        self._limiters: dict[tuple[str, bool], CapacityLimiter] = {}

    @contextmanager
    def request(self, tenant: str) -> Iterator[None]:
        if self.running[tenant] >= self.requests:
            raise TooManyRequests(429, "tenant %s has %d requests at once, its limit: wait for some to end"
                                  % (tenant, self.requests))
        self.running[tenant] += 1
        try:
            yield
        finally:
            self.running[tenant] -= 1
            if not self.running[tenant]:
                del self.running[tenant]

    def _limiter(self, tenant: str, control: bool) -> CapacityLimiter:
        lim = self._limiters.get((tenant, control))
        if lim is None:
            lim = CapacityLimiter(self.control_workers if control else self.workers)
            self._limiters[(tenant, control)] = lim
        return lim

    async def work(self, tenant: str, fn: Callable[..., T], *args: object) -> T:
        """fn(*args) in a thread of tenant's data share.  A caller
        cancelled meanwhile (its client left) still waits for it: a thread
        left running would no longer count, and a client that connects
        and leaves could start any number."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter(tenant, False))

    async def control(self, tenant: str, fn: Callable[..., T], *args: object) -> T:
        """fn(*args) in a thread of tenant's control share (the REST paths)."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter(tenant, True))

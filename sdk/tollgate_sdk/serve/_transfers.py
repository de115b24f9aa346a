"""Places for the /files transfers the service holds whole in memory.

An upload's body (up to 65 MiB) and the files cut from it, or a download
(up to 64 MiB), are held whole while they cross the service.  Each is
bounded, but their number was not: one client's 32 uploads of 60 MiB at
once, each a valid request, took the service to 3.8 GB (measured), and
256 at once (one address's share of connections) would take the host.
So at most TOTAL transfers run at once, at most PER_TENANT of them one
tenant's (the others' keep their places); a request waits up to WAIT
seconds for a place, then gets 503 saying to retry.  A place is held for
at most `time_limit` seconds (`run`): a client that sends its body a few
bytes at a time, or does not read a download, held its place for ever,
and four such uploads kept every other transfer of their tenant out (and
eight, of two tenants, everyone's).
"""
from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable

from ._service_error import ServiceError

__all__ = ["Transfers"]

TOTAL = 8
PER_TENANT = 4
WAIT = 30.0
TIME_LIMIT = 120.0


class Transfers:
    def __init__(self, total: int = TOTAL, per_tenant: int = PER_TENANT, wait: float = WAIT,
                 time_limit: float = TIME_LIMIT) -> None:
        self.total, self.per_tenant, self.wait, self.time_limit = total, per_tenant, wait, time_limit
        self.running: Counter[str] = Counter()
        self._cond: asyncio.Condition | None = None

    def _free(self, tenant: str) -> bool:
        return sum(self.running.values()) < self.total and self.running[tenant] < self.per_tenant

    @asynccontextmanager
    async def place(self, tenant: str) -> AsyncIterator[None]:
        if self._cond is None:
            self._cond = asyncio.Condition()  # made in the service's loop
        cond = self._cond
        async with cond:
            try:
                await asyncio.wait_for(cond.wait_for(lambda: self._free(tenant)), self.wait)
            except asyncio.TimeoutError:
                raise ServiceError(503, "too many file transfers at once (%d for the service, %d for a tenant); "
                                   "retry" % (self.total, self.per_tenant)) from None
            self.running[tenant] += 1
        try:
            yield
        finally:
            async with cond:
                self.running[tenant] -= 1
                cond.notify_all()

    async def run(self, tenant: str, transfer: Awaitable[None]) -> None:
        """transfer in a place of tenant's, cut at time_limit: 408 when
        nothing was answered yet (else the connection just ends)."""
        async with self.place(tenant):
            try:
                await asyncio.wait_for(transfer, self.time_limit)
            except asyncio.TimeoutError:
                raise ServiceError(408, "the file transfer took over %g s: send or read it faster, or in smaller "
                                   "files" % self.time_limit) from None

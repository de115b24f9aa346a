"""tollgate_sdk._listener: what an HTTP listener holds for clients it does
not trust (a floor of its own: uvicorn's protocol, which the core may not
import, shared by serve/ and mcp/).

`tollgate serve` and `tollgate mcp --http` take connections from anyone
who can reach the port, before any key is checked.  uvicorn bounds
neither how many connections it holds nor how long a request's headers
may take: a client that opened connections and sent nothing (or a header
a byte at a time) held a file descriptor each, for ever, and at the
process's limit (1,024 under a default systemd unit) `accept` failed with
EMFILE, so no sandbox could be made, used or deleted until that client
let go (measured: 1,100 idle connections from one client stopped the
e2b SDK's `Sandbox.create` for as long as they were held).

`Guard` is uvicorn's h11 protocol with three bounds:
  - a request's headers must be complete within `header_timeout` seconds
    of the connection's start, or of the first byte after a response on a
    kept-alive connection; else the connection is closed (408);
  - at most `max_connections` connections at once: one more gets 503 and
    is closed at once, before anything of it is read (a client whose
    request had already arrived may see a reset instead: the kernel
    resets a socket closed with unread data);
  - at most `per_client` of them from one address: one more gets 429 and
    is closed so (the others' clients keep their share).
A request whose headers are complete is the application's: a long stream
(a command's output, a cell) is not cut.  `raise_fd_limit()` lifts the
process's soft RLIMIT_NOFILE to its hard limit so the bounds, not EMFILE,
decide; `listener_bounds()` fits `max_connections` under what is left.
"""
from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass

from uvicorn.protocols.http.h11_impl import H11Protocol

from ._serving import start_servers

__all__ = ["Limits", "guard_protocol", "listener_bounds", "raise_fd_limit", "start_servers"]

# File descriptors kept for what is not a client's connection: sandboxes'
# pipes and locks, the audit logs, the listeners themselves.
FD_RESERVE = 256


@dataclass(frozen=True)
class Limits:
    max_connections: int = 1024
    per_client: int = 256
    header_timeout: float = 30.0


def raise_fd_limit() -> int:
    """The soft RLIMIT_NOFILE raised to the hard one (at most 1 << 20);
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 20
    want = min(want, 1 << 20)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


def listener_bounds(limits: Limits, fd_limit: int) -> tuple[Limits, str | None]:
    """limits with max_connections lowered to fit fd_limit (less a
    reserve), and a sentence saying so when it was."""
    room = max(16, fd_limit - FD_RESERVE)
    if limits.max_connections <= room:
        return limits, None
    fitted = Limits(room, min(limits.per_client, room), limits.header_timeout)
    return fitted, ("at most %d connections, not %d: the open-file limit is %d (raise the hard "
                    "RLIMIT_NOFILE, e.g. LimitNOFILE= in a systemd unit)" % (room, limits.max_connections, fd_limit))


_REFUSED = {
    408: b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
    429: b"HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n",
    503: b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n",
}


def _peer_of(conn: object) -> str:
    client = getattr(conn, "client", None)
    return str(client[0]) if isinstance(client, tuple) and client else ""


def guard_protocol(limits: Limits) -> type[H11Protocol]:
    """uvicorn's h11 protocol bounded by limits (uvicorn.Config(http=...))."""

    class Guard(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _refused = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            # Counted without the ones refused whose close is still on its
            # way (a burst of connections), which hold nothing for long.
            held = [c for c in self.connections if not getattr(c, "_refused", False)]
            if len(held) > limits.max_connections:
                self._refuse(503)
                return
            peer = _peer_of(self)
            if peer and sum(1 for c in held if _peer_of(c) == peer) > limits.per_client:
                self._refuse(429)
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            super().data_received(data)
            # Bytes of a request whose headers are not complete yet (the
            # next one on a kept-alive connection): its clock starts now.
            if not self._in_request() and self._header_timer is None and not self.transport.is_closing():
                self._arm()

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's headers are complete: it is the app's now
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _in_request(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(limits.header_timeout, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if not self._in_request() and not self.transport.is_closing():
                self._refuse(408)

        def _refuse(self, status: int) -> None:
            self._refused = True
            self._disarm()
            try:
                self.transport.write(_REFUSED[status])
            except (OSError, RuntimeError):
                pass
            self.transport.close()

    return Guard

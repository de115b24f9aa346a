"""A tenant's share of the service (tollgate_sdk.serve._shares): its
requests at once are capped, its blocking work runs on threads of its own
(a data share and a control share), and what one tenant holds never
keeps another's work waiting."""
from __future__ import annotations

import threading

import anyio
import pytest

from tollgate_sdk.serve._shares import Shares, TooManyRequests


def test_requests_over_a_tenants_share_get_429_and_others_still_get_in() -> None:
    s = Shares(requests=3)
    with s.request("a"), s.request("a"), s.request("a"):
        with pytest.raises(TooManyRequests) as e:
            with s.request("a"):
                pass
        assert e.value.status == 429 and "3 requests at once" in e.value.message
        with s.request("b"):
            assert s.running == {"a": 3, "b": 1}
    assert not s.running  # every place given back
    with s.request("a"):
        pass


def test_one_tenants_blocked_work_leaves_the_others_threads() -> None:
    # Tenant a's 40 calls block (a cell waiting on its interpreter, a
    # create): at most its 4 threads run them, and b's call and a's own
    # control call are served meanwhile.
    async def main() -> None:
        s = Shares(workers=4, control=2)
        release = threading.Event()
        lock = threading.Lock()
        running = [0]
        peak = [0]

        def blocked() -> None:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            release.wait(30)
            with lock:
                running[0] -= 1
        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(s.work, "a", blocked)
            await anyio.sleep(0.2)
            with anyio.fail_after(5):
                assert await s.work("b", lambda: "b served") == "b served"
                assert await s.control("a", lambda: "a's kill served") == "a's kill served"
            assert peak[0] == 4
            release.set()
        assert running[0] == 0
    anyio.run(main)


def test_a_cancelled_caller_still_waits_for_its_thread() -> None:
    # Left running, a thread would no longer count against its share, and
    # a client that connects and leaves could start any number.
    async def main() -> None:
        s = Shares(workers=1)
        done = threading.Event()

        def slow() -> None:
            done.wait(0.5)
            done.set()
        with anyio.move_on_after(0.05):
            await s.work("a", slow)
        assert done.is_set()
    anyio.run(main)

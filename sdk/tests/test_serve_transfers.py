"""The places /files transfers take (tollgate_sdk.serve._transfers): at
most TOTAL at once, at most PER_TENANT of one tenant's, a waiter served
when a place frees, and 503 for one that waited too long."""
from __future__ import annotations

import asyncio

import pytest

from tollgate_sdk.serve._service_error import ServiceError
from tollgate_sdk.serve._transfers import Transfers


async def hold(t: Transfers, tenant: str, started: list[str], release: asyncio.Event) -> None:
    async with t.place(tenant):
        started.append(tenant)
        await release.wait()


def test_one_tenant_gets_its_share_and_another_still_gets_a_place() -> None:
    async def main() -> None:
        t = Transfers(total=3, per_tenant=2, wait=5)
        started: list[str] = []
        release = asyncio.Event()
        tasks = [asyncio.create_task(hold(t, "a", started, release)) for _ in range(4)]
        await asyncio.sleep(0.05)
        assert started == ["a", "a"]  # a's share; its other two wait
        b = asyncio.create_task(hold(t, "b", started, release))
        await asyncio.sleep(0.05)
        assert started.count("b") == 1
        release.set()
        await asyncio.gather(*tasks, b)
        assert started.count("a") == 4 and sum(t.running.values()) == 0
    asyncio.run(main())


def test_a_waiter_past_the_wait_gets_503_and_holds_no_place() -> None:
    async def main() -> None:
        t = Transfers(total=1, per_tenant=1, wait=0.2)
        started: list[str] = []
        release = asyncio.Event()
        first = asyncio.create_task(hold(t, "a", started, release))
        await asyncio.sleep(0.05)
        with pytest.raises(ServiceError) as e:
            async with t.place("b"):
                pass
        assert e.value.status == 503 and "retry" in e.value.message
        release.set()
        await first
        async with t.place("b"):  # the place came back
            assert t.running["b"] == 1
        assert sum(t.running.values()) == 0
    asyncio.run(main())


def test_a_transfer_that_fails_gives_its_place_back() -> None:
    async def main() -> None:
        t = Transfers(total=1, per_tenant=1, wait=0.2)
        with pytest.raises(RuntimeError):
            async with t.place("a"):
                raise RuntimeError("the client went away")
        async with t.place("a"):
            pass
    asyncio.run(main())


def test_a_transfer_past_its_time_gets_408_and_its_place_back() -> None:
    async def main() -> None:
        t = Transfers(total=1, per_tenant=1, wait=5, time_limit=0.2)

        async def trickle() -> None:  # a body that never ends
            await asyncio.sleep(60)
        with pytest.raises(ServiceError) as e:
            await t.run("a", trickle())
        assert e.value.status == 408 and "0.2 s" in e.value.message
        assert sum(t.running.values()) == 0

        async def quick() -> None:
            await asyncio.sleep(0.01)
        await t.run("b", quick())  # the place came back
    asyncio.run(main())

"""A process started through envd's process service keeps every byte of
its output for the Start call's stream (tollgate_sdk.serve._procs), even
when it ends before that stream begins reading: the real SDK under load
got empty stdout and exit 0 for `commands.run` of a quick command."""
from __future__ import annotations

import os
import pathlib
import threading
import time
from typing import Any, Awaitable, Callable

import anyio
import anyio.lowlevel

from tollgate_sdk.serve._procs import Listener, Proc


def start(script: str) -> Proc:
    """In the loop: the listeners are the loop's."""
    def killer(signo: int) -> None:
        raise AssertionError("no signal expected")
    return Proc(1, ["sh", "-c", script], {"cmd": "sh"}, None, False, None, killer,
                anyio.lowlevel.current_token())


async def drain(q: Listener) -> tuple[dict[str, bytes], dict[str, Any]]:
    out: dict[str, bytes] = {"stdout": b"", "stderr": b""}
    end: dict[str, Any] = {}
    while True:
        ev = await q.get(30)
        if ev is None:
            return out, end
        if "data" in ev:
            for name, chunk in ev["data"].items():
                out[name] += chunk
        else:
            end = ev["end"]


async def wait_ended(p: Proc) -> None:
    with anyio.fail_after(30):
        while p.end is None:
            await anyio.sleep(0.01)


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def test_output_of_a_process_that_ended_before_its_stream_is_kept() -> None:
    async def main() -> None:
        p = start("echo hello; echo oops >&2")
        await wait_ended(p)
        out, end = await drain(p.first)
        assert out == {"stdout": b"hello\n", "stderr": b"oops\n"}
        assert end["exitCode"] == 0 and end["exited"] is True
    run(main)


def test_a_failing_process_keeps_its_output_and_status() -> None:
    async def main() -> None:
        p = start("echo partial; exit 3")
        await wait_ended(p)
        out, end = await drain(p.first)
        assert out["stdout"] == b"partial\n"
        assert end["exitCode"] == 3 and end["error"] == "exit status 3"
    run(main)


def test_many_mib_arrive_whole_through_the_bounded_queue() -> None:
    # 6 MiB is ~100 reads of 64 KiB, more than the queue holds: the pump
    # waits for the reader instead of dropping anything.
    async def main() -> None:
        p = start("head -c 6291456 /dev/zero | tr '\\0' x")
        await anyio.sleep(0.5)
        out, end = await drain(p.first)
        assert len(out["stdout"]) == 6291456 and set(out["stdout"]) == {ord("x")}
        assert end["exitCode"] == 0
    run(main)


def test_a_later_connect_gets_the_end() -> None:
    async def main() -> None:
        p = start("true")
        await wait_ended(p)
        await drain(p.first)
        out, end = await drain(p.listen(anyio.lowlevel.current_token()))
        assert out == {"stdout": b"", "stderr": b""} and end["exitCode"] == 0
    run(main)


def test_waiting_streams_hold_no_thread_and_a_closed_one_lets_the_process_go(tmp_path: pathlib.Path) -> None:
    # 200 streams of a process that prints nothing wait for their next
    # event in the loop: no thread each (a thread each was what let one
    # tenant's streams take the service's pool).  A stream that closes
    # with its events unread no longer holds the process's output.
    # The output waits for a gate the test opens once every wait timed out
    # (a `sleep 1` before it was over before 200 waits of 0.3 s had ended
    # on a loaded machine: 130 of them got data, in a CI run).
    gate = str(tmp_path / "open")

    async def main() -> None:
        p = start("while [ ! -e %s ]; do sleep 0.05; done; head -c 8388608 /dev/zero" % gate)
        before = threading.active_count()
        listeners = [p.listen(anyio.lowlevel.current_token()) for _ in range(200)]
        got: list[BaseException] = []

        async def wait(q: Listener) -> None:
            try:
                await q.get(0.3)
            except TimeoutError as e:
                got.append(e)
        async with anyio.create_task_group() as tg:
            for q in listeners:
                tg.start_soon(wait, q)
            await anyio.sleep(0.1)
            assert threading.active_count() <= before + 1
        assert len(got) == 200  # each timed out: a keepalive, then on
        open(gate, "w").close()
        for q in listeners:
            p.unlisten(q)
            q.close()
        t = time.monotonic()
        out, end = await drain(p.first)
        assert len(out["stdout"]) == 8388608 and end["exitCode"] == 0
        assert time.monotonic() - t < 20
    run(main)


def test_a_reader_gone_without_unlisten_is_let_go_at_once() -> None:
    async def main() -> None:
        p = start("head -c 8388608 /dev/zero")
        stray = p.listen(anyio.lowlevel.current_token())
        stray.close()  # its stream ended; nobody unlistened
        t = time.monotonic()
        out, end = await drain(p.first)
        assert len(out["stdout"]) == 8388608 and end["exitCode"] == 0
        assert time.monotonic() - t < 20  # not SLOW_READER per event
    run(main)


def _pipes() -> set[str]:
    """The pipes this process holds open, by their inode."""
    found: set[str] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/%s" % fd)
        except OSError:
            continue
        if target.startswith("pipe:"):
            found.add(target)
    return found


def test_an_ended_process_holds_no_pipe_even_while_it_is_kept() -> None:
    """The service keeps ended Procs (in the box's table, in cycles): their
    pipes are closed at the end, with stdin too, not when collected."""
    import gc

    async def main() -> None:
        before = _pipes()
        kept: list[Proc] = []
        for _ in range(20):
            p = Proc(1, ["sh", "-c", "echo out; echo err >&2"], {"cmd": "sh"}, None, True, None,
                     lambda signo: None, anyio.lowlevel.current_token())
            kept.append(p)
            await wait_ended(p)
            out, _ = await drain(p.first)
            assert out == {"stdout": b"out\n", "stderr": b"err\n"}
        gc.disable()  # nothing of theirs may wait for the collector
        try:
            with anyio.fail_after(10):
                while _pipes() - before:
                    await anyio.sleep(0.01)
        finally:
            gc.enable()
        for p in kept:
            try:
                p.send_input(b"late\n")
            except ValueError as e:
                assert "ended" in str(e)
            else:
                raise AssertionError("stdin of an ended process took input")
            p.close_stdin()  # again: nothing happens
    run(main)

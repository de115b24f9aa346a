"""A process started through envd's process service keeps every byte of
its output for the Start call's stream (tollgate_sdk.serve._procs), even
when it ends before that stream begins reading: the real SDK under load
got empty stdout and exit 0 for `commands.run` of a quick command."""
from __future__ import annotations

import queue
import time
from typing import Any

from tollgate_sdk.serve._procs import Proc


def start(script: str) -> Proc:
    def killer(signo: int) -> None:
        raise AssertionError("no signal expected")
    return Proc(1, ["sh", "-c", script], {"cmd": "sh"}, None, False, None, killer)


def drain(q: "queue.Queue[dict[str, Any] | None]") -> tuple[dict[str, bytes], dict[str, Any]]:
    out: dict[str, bytes] = {"stdout": b"", "stderr": b""}
    end: dict[str, Any] = {}
    while True:
        ev = q.get(timeout=30)
        if ev is None:
            return out, end
        if "data" in ev:
            for name, chunk in ev["data"].items():
                out[name] += chunk
        else:
            end = ev["end"]


def wait_ended(p: Proc) -> None:
    until = time.monotonic() + 30
    while p.end is None:
        assert time.monotonic() < until, "the process did not end"
        time.sleep(0.01)


def test_output_of_a_process_that_ended_before_its_stream_is_kept() -> None:
    p = start("echo hello; echo oops >&2")
    wait_ended(p)
    out, end = drain(p.first)
    assert out == {"stdout": b"hello\n", "stderr": b"oops\n"}
    assert end["exitCode"] == 0 and end["exited"] is True


def test_a_failing_process_keeps_its_output_and_status() -> None:
    p = start("echo partial; exit 3")
    wait_ended(p)
    out, end = drain(p.first)
    assert out["stdout"] == b"partial\n"
    assert end["exitCode"] == 3 and end["error"] == "exit status 3"


def test_many_mib_arrive_whole_through_the_bounded_queue() -> None:
    # 6 MiB is ~100 reads of 64 KiB, more than the queue holds: the pump
    # waits for the reader instead of dropping anything.
    p = start("head -c 6291456 /dev/zero | tr '\\0' x")
    time.sleep(0.5)
    out, end = drain(p.first)
    assert len(out["stdout"]) == 6291456 and set(out["stdout"]) == {ord("x")}
    assert end["exitCode"] == 0


def test_a_later_connect_gets_the_end() -> None:
    p = start("true")
    wait_ended(p)
    drain(p.first)
    out, end = drain(p.listen())
    assert out == {"stdout": b"", "stderr": b""} and end["exitCode"] == 0

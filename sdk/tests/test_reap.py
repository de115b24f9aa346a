"""Whose SDK state directory may a sweep remove (tollgate_sdk._reap).

The real case: `tollgate mcp` or `tollgate serve` in a container (its own
PID namespace) shares /tmp with SDK programs on the host.  Each one's
sweep read the other's owner pid in its own namespace, found another
process or none there, and removed a live program's state directory
(its host config went with it: "host config ... does not exist")."""
from __future__ import annotations

import os
import pathlib
import subprocess

from tollgate_sdk import _reap as reap


def _start_time(pid: int) -> int:
    raw = pathlib.Path("/proc/%d/stat" % pid).read_bytes()
    return int(raw[raw.rfind(b")") + 2:].split()[19])


def _pidns() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def _dead_owner() -> tuple[int, int]:
    """The pid and start time of a process that has exited and been reaped."""
    p = subprocess.Popen(["sleep", "30"])
    start = _start_time(p.pid)
    p.kill()
    p.wait()
    return p.pid, start


def _owned(tmp_path: pathlib.Path, text: str) -> str:
    (tmp_path / reap.OWNER_FILE).write_text(text, encoding="ascii")
    return str(tmp_path)


def test_this_process_is_alive(tmp_path: pathlib.Path) -> None:
    reap.mark_owner(str(tmp_path))
    fields = (tmp_path / reap.OWNER_FILE).read_text().split()
    assert fields == [str(os.getpid()), str(_start_time(os.getpid())), str(_pidns())]
    assert not reap.owner_dead(str(tmp_path))


def test_a_dead_owner_of_this_namespace_is_dead(tmp_path: pathlib.Path) -> None:
    pid, start = _dead_owner()
    assert reap.owner_dead(_owned(tmp_path, "%d %d %d\n" % (pid, start, _pidns())))


def test_an_owner_of_another_namespace_is_not_judged(tmp_path: pathlib.Path) -> None:
    pid, start = _dead_owner()
    assert not reap.owner_dead(_owned(tmp_path, "%d %d %d\n" % (pid, start, _pidns() + 1)))
    # pid 1 here is someone else than the other namespace's pid 1
    assert not reap.owner_dead(_owned(tmp_path, "1 12345 %d\n" % (_pidns() + 1)))


def test_the_older_two_field_record_is_judged_as_before(tmp_path: pathlib.Path) -> None:
    pid, start = _dead_owner()
    assert reap.owner_dead(_owned(tmp_path, "%d %d\n" % (pid, start)))
    assert not reap.owner_dead(_owned(tmp_path, "%d %d\n" % (os.getpid(), _start_time(os.getpid()))))


def test_what_is_not_a_record_is_not_judged(tmp_path: pathlib.Path) -> None:
    assert not reap.owner_dead(_owned(tmp_path, "garbage\n"))
    assert not reap.owner_dead(_owned(tmp_path, "1 2 3 4\n"))
    assert not reap.owner_dead(str(tmp_path / "missing"))

"""The service's filesystem helper (serve/_fs.fs_call) reads what the
container prints, and the container may print without end: at most
ANSWER_MAX + 1 bytes are kept, the rest read and dropped."""
from __future__ import annotations

import resource
import sys
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

from tollgate_sdk.serve import _fs
from tollgate_sdk.serve._boxes import Box, Record
from tollgate_sdk.serve._connect import ConnectError


class _Helper:
    """A session whose `tollgate exec` is a program printing `size` bytes."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sb = self

    def _tg(self, *args: str) -> list[str]:
        return [sys.executable, "-c", "import sys\nn = %d\nwhile n > 0:\n    k = min(n, 1 << 20)\n"
                "    sys.stdout.write('x' * k)\n    n -= k\n" % self.size]

    @contextmanager
    def busy(self) -> Iterator[str]:
        yield "sdk-1-1-abcdef"


def box(session: Any) -> Box:
    r = Record(sandbox_id="abc", tenant="acme", template="base", metadata={}, env_vars={},
               started_at=1.0, end_at=2.0, envd_token="e", traffic_token="t")
    return Box(r, session)


def test_a_flood_from_the_helper_is_kept_to_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fs, "ANSWER_MAX", 1 << 20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ConnectError) as e:
        _fs.fs_call(box(_Helper(256 << 20)), "list", "/tmp")
    assert e.value.code == "internal" and "failed" in str(e.value)
    # 256 MiB printed; what the service held stays near the 1 MiB bound.
    grew_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grew_kib < 64 << 10, grew_kib

"""An operation that fails because its sandbox changed meanwhile (a kill or
a pause that held the box first or ran beside it) is answered with what
happened to the sandbox, not with what the closed session or the removed
container said (tollgate_sdk.serve._boxes.Box.changed_under)."""
from __future__ import annotations

from typing import Any

from tollgate_sdk.serve._boxes import Box, Record
from tollgate_sdk.serve._connect import connect_error


def box(session: Any) -> Box:
    r = Record(sandbox_id="abc", tenant="acme", template="base", metadata={}, env_vars={},
               started_at=1.0, end_at=2.0, envd_token="e", traffic_token="t")
    return Box(r, session)


def test_an_unchanged_sandbox_gives_no_error() -> None:
    s = object()
    assert box(s).changed_under(s) is None  # type: ignore[arg-type]


def test_a_pause_meanwhile_is_a_409() -> None:
    s = object()
    b = box(s)
    b.session = None
    e = b.changed_under(s)  # type: ignore[arg-type]
    assert e is not None and e.status == 409 and "paused" in e.message
    assert connect_error(e.status, e.message).code == "unavailable"


def test_a_kill_meanwhile_is_a_404_saying_why() -> None:
    s = object()
    b = box(s)
    b.gone, b.gone_why = True, "killed through the API"
    e = b.changed_under(s)  # type: ignore[arg-type]
    assert e is not None and e.status == 404 and "killed through the API" in e.message
    assert connect_error(e.status, e.message).code == "not_found"

"""A restarted `tollgate serve` takes sandboxes back only from records it
wrote itself (tollgate_sdk.serve._adopt): each is checked field by field,
and anything else is refused with the reason its drop record gives."""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import Any

import pytest

from tollgate_sdk import _pause
from tollgate_sdk.serve._adopt import _load
from tollgate_sdk.serve._boxes import Record

SID = "abcdefghij0123456789"


def record(**change: Any) -> dict[str, Any]:
    r = Record(sandbox_id=SID, tenant="acme", template="base", metadata={"job": "1"}, env_vars={},
               started_at=1.0, end_at=2.5, envd_token="e" * 32, traffic_token="t" * 32,
               container_id="sdk-1-1-abcdef", session_token="s" * 32, bundle="/var/lib/x/bundles/sdk-1-1-abcdef")
    return dict(dataclasses.asdict(r), **change)


def write(tmp_path: pathlib.Path, d: Any, mode: int = 0o600) -> str:
    p = tmp_path / (SID + ".json")
    p.write_text(json.dumps(d))
    os.chmod(p, mode)
    return str(p)


def test_a_record_of_its_own_is_taken(tmp_path: pathlib.Path) -> None:
    rec, why = _load(write(tmp_path, record()), SID)
    assert why == "" and rec is not None
    assert dataclasses.asdict(rec) == record()


def test_a_paused_record_has_no_deadline(tmp_path: pathlib.Path) -> None:
    rec, _ = _load(write(tmp_path, record(end_at=None, state="paused", pause_id="sdk-1-1-abcdef")), SID)
    assert rec is not None and rec.end_at == float("inf")


@pytest.mark.parametrize("change, why", [
    ({"end_at": "soon"}, "end_at is not a number"),
    ({"memory_mb": True}, "memory_mb is not an integer"),
    ({"metadata": {"job": 1}}, "metadata is not a map of strings"),
    ({"sandbox_id": "another0123456789abc"}, "names another sandbox"),
    ({"state": "gone"}, "neither running nor paused"),
    ({"envd_token": None}, "envd_token is not a string"),
])
def test_a_record_with_a_wrong_field_is_refused(tmp_path: pathlib.Path, change: dict[str, Any], why: str) -> None:
    rec, got = _load(write(tmp_path, record(**change)), SID)
    assert rec is None and why in got


def test_a_record_missing_a_field_is_refused(tmp_path: pathlib.Path) -> None:
    d = record()
    del d["tenant"]
    assert _load(write(tmp_path, d), SID) == (None, "its record has no tenant")


def test_only_a_closed_regular_file_counts(tmp_path: pathlib.Path) -> None:
    assert "0600" in _load(write(tmp_path, record(), 0o644), SID)[1]
    real = write(tmp_path, record())
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert "cannot be opened" in _load(str(link), SID)[1]
    assert _load(write(tmp_path, [1, 2]), SID) == (None, "its record is not a JSON object")


def test_only_a_sealed_image_counts_as_a_finished_pause(tmp_path: pathlib.Path) -> None:
    """A restart keeps a sandbox paused from its image only once `tollgate
    checkpoint` sealed it (it seals last); a link or a directory in the
    seal's place does not count."""
    where = tmp_path / "sdk-1-1-abcdef"
    (where / "image").mkdir(parents=True)
    (where / "image" / "pages.img").write_bytes(b"\0" * 64)
    assert not _pause.image_sealed(str(where))
    seal = where / "image" / _pause.SEAL
    seal.mkdir()
    assert not _pause.image_sealed(str(where))
    seal.rmdir()
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    seal.symlink_to(outside)
    assert not _pause.image_sealed(str(where))
    seal.unlink()
    seal.write_text("{}")
    assert _pause.image_sealed(str(where))


def test_the_record_beside_an_image_is_what_restore_reads(tmp_path: pathlib.Path) -> None:
    _pause.write_record(str(tmp_path), "sdk-1-1-abcdef", "s" * 32, "/b/sdk-1-1-abcdef", "runsc")
    assert json.loads((tmp_path / "session.json").read_text()) == {
        "cid": "sdk-1-1-abcdef", "token": "s" * 32, "bundle": "/b/sdk-1-1-abcdef", "runtime": "runsc"}

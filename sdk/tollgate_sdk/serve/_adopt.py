"""Taking sandboxes back after a restart of the service (kill -9 included).

A service's container has no owner process and a deadline (Boxes.hand_over:
the sandbox's plus a grace), so it outlives the service that made it, and
tollgate's reaper deletes it past that deadline if no service takes it
back.  A service started on the same state directory reads its records
(STATE/sandboxes/ID.json: the service's own files, 0600, never anything a
client or a container wrote) and, for each:

- running: its container must be under the service's root, running, made
  from the bundle the record names (`tollgate state`); then the session is
  taken over (the interpreter's token and bundle from the record), the
  container's lifetime is set again, and the sandbox is served as before;
- paused: its image must be in the pause directory, sealed;
- a pause or a resume the kill cut short is settled by what tollgate
  recorded, not by the record alone (_settle): a container that runs is
  taken back running, a sealed image of a container that does not is
  kept paused;
- anything else (the container died or its deadline passed meanwhile, its
  tenant or template is gone, a client served its tools through the
  previous run's connection, an unreadable record) is removed and the
  event log says why.

Then whatever under the root, the pause directory and its bundles no kept
sandbox names (a create the kill cut short) is deleted, with a record.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import subprocess
import tempfile
import time
from typing import Any

from .. import _pause
from .. import _reap as reap
from .._sandbox import Sandbox
from .._session import Session
from .._tree import remove_tree
from ._boxes import Box, Boxes, Record
from ._service_error import ServiceError

__all__ = ["readopt"]

RECORD_MAX = 1 << 20
_CONTAINER = re.compile(r"^sdk-[0-9]+-[0-9]+-[0-9a-f]{6}$")   # the SDK's session ids
_SANDBOX = re.compile(r"^[a-z0-9]{1,64}$")


def readopt(boxes: Boxes) -> None:
    """Take back (or remove, with a record) what a previous run left."""
    recs: list[tuple[str, Record | None, str]] = []
    d = os.path.join(boxes.state_dir, "sandboxes")
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name)
        if name.endswith(".tmp"):
            _unlink(path)
        elif name.endswith(".json"):
            rec, why = _load(path, name[:-5])
            recs.append((name[:-5], rec, why))
    # A runc session's bundle is in the previous run's SDK state directory
    # (/tmp/tollgate-sdk.*), whose owner is gone: claimed before anything
    # sweeps it, removed at this run's close.
    for _, rec, _why in recs:
        if rec is not None and rec.state == "running":
            _claim(boxes, rec.bundle)
    kept: set[str] = set()
    for sid, rec, why in recs:
        if rec is not None:
            why = _take(boxes, rec)
            if not why:
                kept.add(rec.container_id if rec.state == "running" else rec.pause_id)
                continue
        _drop(boxes, sid, rec, why)
    _sweep_unnamed(boxes, kept)


def _load(path: str, sid: str) -> tuple[Record | None, str]:
    """The record at path, checked field by field, or (None, why)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        return None, "its record cannot be opened: %s" % e
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        # Only the service (root) writes records, 0600.
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None, "its record is not a 0600 regular file of the service's"
        raw = f.read(RECORD_MAX + 1)
    try:
        d = json.loads(raw) if len(raw) <= RECORD_MAX else None
    except ValueError:
        d = None
    if not isinstance(d, dict):
        return None, "its record is not a JSON object"
    if d.get("end_at") is None:
        d["end_at"] = float("inf")
    kinds: dict[str, Any] = {"str": str, "float": (int, float), "int": int, "bool": bool,
                             "dict[str, str]": dict}
    said = {"str": "a string", "float": "a number", "int": "an integer", "bool": "a boolean",
            "dict[str, str]": "a map of strings"}
    args: dict[str, Any] = {}
    for f_ in dataclasses.fields(Record):
        if f_.name not in d:
            if f_.default is dataclasses.MISSING:
                return None, "its record has no %s" % f_.name
            continue
        v = d[f_.name]
        want = kinds.get(str(f_.type))
        if want is None or not isinstance(v, want) or (want is int and isinstance(v, bool)):
            return None, "its record's %s is not %s" % (f_.name, said.get(str(f_.type), f_.type))
        if want is dict and not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
            return None, "its record's %s is not a map of strings" % f_.name
        args[f_.name] = v
    rec = Record(**args)
    if rec.sandbox_id != sid or not _SANDBOX.match(sid):
        return None, "its record names another sandbox (%r)" % rec.sandbox_id
    if rec.state not in ("running", "paused"):
        return None, "its record's state %r is neither running nor paused" % rec.state
    return rec, ""


def _claim(boxes: Boxes, bundle: str) -> None:
    state = os.path.dirname(os.path.dirname(bundle))
    tmp = tempfile.gettempdir()
    if (os.path.dirname(state) == tmp and os.path.basename(state).startswith(reap.STATE_PREFIX)
            and os.path.basename(os.path.dirname(bundle)) == "bundles" and state not in boxes.claimed):
        try:
            st = os.lstat(state)
        except OSError:
            return
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            reap.mark_owner(state)
            boxes.claimed.append(state)


def _take(boxes: Boxes, rec: Record) -> str:
    """Serve rec's sandbox again; "" when taken, else why not."""
    tenant = boxes.tenants.by_name.get(rec.tenant)
    if tenant is None:
        return "its tenant %s is no longer in the tenants file" % rec.tenant
    if rec.template not in boxes.templates:
        return "its template %s is no longer served" % rec.template
    if rec.client_tools:
        return "its client served tools through the previous run's connection, which is gone"
    cid = rec.container_id if rec.state == "running" else rec.pause_id
    if not _CONTAINER.match(cid):
        return "its record names no container" if rec.state == "running" else "its paused image is gone"
    try:
        sb = boxes._sandbox(tenant, rec.template)
        sb.start()  # sweeps the roots: a container past its deadline goes now
    except Exception as e:
        return "its tenant's sandbox could not start: %s" % e
    # What the container and its image are, not only what the record says:
    # the kill may have cut a pause or a resume short (_settle).
    st, sealed = _settle(boxes, sb, cid)
    where = os.path.join(boxes.pause_dir, cid)
    if isinstance(st, dict) and st.get("status") == "running":
        why = _take_running(boxes, sb, rec, cid, st)
        if not why:
            remove_tree(where)  # a pause cut short, or a resume's image
        return why
    if sealed:
        return _take_paused(boxes, rec, cid, st)
    if rec.state == "paused":
        return "its paused image is gone"
    if not isinstance(st, dict):
        return "its container is gone (it died, or its deadline passed while the service was down)"
    return "its container is %s, not running" % st.get("status")


# How long a restart waits for a pause the kill cut short (its `tollgate
# checkpoint` outlives the service) to seal its image or fail.
PAUSE_SETTLE = 30.0


def _container_state(sb: Sandbox, cid: str) -> dict[str, Any] | None:
    p = subprocess.run(sb._tg("state", cid), stdin=subprocess.DEVNULL, capture_output=True, text=True)
    try:
        st = json.loads(p.stdout) if p.returncode == 0 else None
    except ValueError:
        st = None
    return st if isinstance(st, dict) else None


def _settle(boxes: Boxes, sb: Sandbox, cid: str) -> tuple[dict[str, Any] | None, bool]:
    """cid's container state and whether its paused image is sealed, once
    any pause in flight has settled.  A pause is `tollgate checkpoint`
    (which seals the image last and stops the container), then the
    session's record beside the image, the container's removal and the
    service's record: a kill -9 between any two left a running record whose
    sandbox is all in a sealed image (dropped before, image and all), and
    one during the checkpoint left it running on to finish.  While the
    container runs beside an image directory without a seal, that pause is
    waited for (PAUSE_SETTLE at most, then the container is taken as
    running).  Everything looked at is tollgate's own: its state of the
    container, the seal its checkpoint wrote."""
    where = os.path.join(boxes.pause_dir, cid)
    end = time.monotonic() + PAUSE_SETTLE
    while True:
        st = _container_state(sb, cid)
        sealed = _pause.image_sealed(where)
        running = st is not None and st.get("status") == "running"
        if not running or not os.path.isdir(where) or time.monotonic() >= end:
            return st, sealed and not running
        time.sleep(0.2)


def _take_running(boxes: Boxes, sb: Sandbox, rec: Record, cid: str, st: dict[str, Any]) -> str:
    if not rec.session_token or not rec.bundle:
        return "its record names no session to take back"
    # The container must be tollgate's, under this service's root, running,
    # and made from the bundle the record names.
    if st.get("bundle") != rec.bundle:
        return "its container was not made from the bundle its record names"
    s = Session(sb)
    try:
        s._reserve()
    except Exception as e:
        return "no session could take it: %s" % e
    s._adopt(cid, rec.session_token, rec.bundle)
    resumed = rec.state == "paused"  # the kill came after the restore
    rec.state, rec.container_id, rec.pause_id = "running", cid, ""
    box = Box(rec, s)
    try:
        boxes.hand_over(box)
    except ServiceError as e:
        s._release()
        return "its lifetime could not be taken over: %s" % e.message
    if resumed:
        boxes._save(rec)
    boxes.add(box)
    boxes.log({"event": "sandbox_readopted", "sandbox": rec.sandbox_id, "tenant": rec.tenant,
               "container": cid, "end_at": rec.end_at, **({"resumed": True} if resumed else {})})
    return ""


def _take_paused(boxes: Boxes, rec: Record, cid: str, st: dict[str, Any] | None) -> str:
    """Keep rec's sandbox paused: its image is sealed and its container is
    not running.  A pause the kill cut short is finished as pause() would:
    the session's record beside the image, the stopped container removed
    (its bundle kept for the restore), the service's record saved."""
    finished = rec.state != "paused"
    where = os.path.join(boxes.pause_dir, cid)
    if finished:
        if not rec.session_token or not rec.bundle:
            return "its record names no session to resume"
        if st is not None and not _delete(boxes, cid):
            return "its stopped container %s could not be removed for the resume" % cid
        _pause.write_record(where, cid, rec.session_token, rec.bundle, "runsc")
        rec.state, rec.pause_id = "paused", cid
        boxes._save(rec)
    elif not os.path.isfile(os.path.join(where, "session.json")):
        return "its paused image has no session record"
    boxes.add(Box(rec, None))
    boxes.log({"event": "sandbox_readopted", "sandbox": rec.sandbox_id, "tenant": rec.tenant,
               "state": "paused", **({"pause_finished": True} if finished else {})})
    return ""


def _drop(boxes: Boxes, sid: str, rec: Record | None, why: str) -> None:
    cid = rec.container_id if rec is not None else ""
    deleted = False
    if rec is not None and rec.state == "running" and _CONTAINER.match(cid):
        deleted = _delete(boxes, cid)
    if rec is not None and _CONTAINER.match(rec.pause_id):
        remove_tree(os.path.join(boxes.pause_dir, rec.pause_id))
    boxes.log({"event": "sandbox_dropped", "sandbox": sid, "tenant": rec.tenant if rec else None,
               "container": cid or None, "container_deleted": deleted,
               "reason": "left by a previous run of the service: %s" % why})
    _unlink(os.path.join(boxes.state_dir, "sandboxes", sid + ".json"))


def _delete(boxes: Boxes, cid: str) -> bool:
    """Delete the container cid under the service's root (it may be gone)."""
    if not boxes.tollgate or not os.path.isdir(os.path.join(boxes.root, cid)):
        return False
    tg = [boxes.tollgate, "--root", boxes.root]
    subprocess.run(tg + ["kill", cid, "KILL"], stdin=subprocess.DEVNULL, capture_output=True)
    return subprocess.run(tg + ["delete", "--force", cid], stdin=subprocess.DEVNULL,
                          capture_output=True).returncode == 0


def _sweep_unnamed(boxes: Boxes, kept: set[str]) -> None:
    """What no kept sandbox names: containers under the root (a create the
    kill cut short), paused images and bundles."""
    try:
        names = sorted(os.listdir(boxes.root))
    except OSError:
        names = []
    for cid in names:
        # A name with a dot first is not a container's: a delete's
        # directory set aside (.removing-*), which tollgate's reaper ends.
        if cid in kept or cid.startswith(".") or not os.path.isfile(os.path.join(boxes.root, cid, "state.json")):
            continue
        boxes.log({"event": "container_dropped", "container": cid, "container_deleted": _delete(boxes, cid),
                   "reason": "under the service's root and named by no sandbox it took back"})
    for top in (boxes.pause_dir, os.path.join(boxes.pause_dir, "bundles")):
        try:
            entries = os.listdir(top)
        except OSError:
            continue
        for e in entries:
            if _CONTAINER.match(e) and e not in kept:
                remove_tree(os.path.join(top, e))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass

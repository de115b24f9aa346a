"""Pausing a session to disk and resuming it: session.pause() -> id,
sandbox.resume(id) -> Session.

pause() is `tollgate checkpoint` of the session's container (runsc: the
sentry saves the whole sandbox, processes and memory, so the interpreter
and its variables), then its removal; the bundle stays, with a small
record beside the image.  resume() is `tollgate restore --detach` of that
image under the same id: tollgate hardens the config again, makes a new
bridge and sidecar and takes the policy from the host afresh (this
Sandbox's), so budgets start again from it, and the audit log continues
(<audit_dir>/<id>.jsonl, one hash chain).  Nothing governance-related is
read from the image (docs/cli.md, checkpoint and restore).

Where things live: with Sandbox(pause_dir=PD), the session's bundle is
made in PD/bundles/<id> when the session opens and the image and record go
to PD/<id>/, so a Sandbox closed after the pause, or another process, can
resume it; without one, both live in the Sandbox's state directory and go
with its close().

runsc only here: runc's checkpoint needs criu, which cannot run on this
project's machines (docs/cli.md).

This module never imports _session at run time (Session imports it for
pause(), Sandbox.resume hands it a fresh Session): no import cycle.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from typing import TYPE_CHECKING

from ._cells import channel_lock
from ._tree import remove_tree
from ._errors import PauseError, SandboxUnavailable

if TYPE_CHECKING:
    from ._sandbox import Sandbox
    from ._session import Session

_ID = re.compile(r"^sdk-[0-9]+-[0-9]+-[0-9a-f]{6}$")
SEAL = "tollgate.seal.json"   # docs/cli.md, "Only a sealed image restores"


def pause_dir(sb: Sandbox) -> str:
    """Where sb keeps paused sessions' images and records (made 0700 when
    missing; 0711 when it also holds bundles, which the container reads)."""
    d = sb.pause_dir or os.path.join(sb._state_dir(), "paused")
    if not os.path.isdir(d):
        os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def bundles_dir(sb: Sandbox) -> str:
    """PD/bundles: the bundles of sb's sessions when it has a pause_dir.
    The directories down to a bundle's app/ are searchable by all (the
    container's uid reads /app); the images beside them stay 0700."""
    d = os.path.join(pause_dir(sb), "bundles")
    os.makedirs(d, exist_ok=True)
    for p in (os.path.dirname(d), d):
        mode = os.stat(p).st_mode & 0o777
        if mode & 0o011 != 0o011:
            os.chmod(p, mode | 0o011)
    return d


def image_sealed(where: str) -> bool:
    """Whether where (PD/<id>) holds an image that `tollgate checkpoint`
    finished: it seals the image last, so a seal (a regular file; restore
    verifies it in full) means the container's state is all there."""
    try:
        st = os.lstat(os.path.join(where, "image", SEAL))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)


def write_record(where: str, cid: str, token: str, bundle: str | None, runtime: str) -> None:
    """The record beside a paused session's image that restore() reads."""
    with open(os.path.join(where, "session.json"), "w", encoding="utf-8") as f:
        json.dump({"cid": cid, "token": token, "bundle": bundle, "runtime": runtime}, f)


def pause(session: Session) -> str:
    sb = session.sb
    cid = session._need_open()
    if sb.runtime != "runsc":
        raise PauseError("pause needs runtime=\"runsc\": runc's checkpoint needs criu, which cannot run "
                         "on this machine's kernel (docs/cli.md); the session is still running")
    where = os.path.join(pause_dir(sb), cid)
    os.makedirs(where, mode=0o700, exist_ok=True)
    image = os.path.join(where, "image")
    # Not while a cell or a file operation is under way: the session's
    # interpreter then holds files of the bridge area open (the request,
    # its answer and output), and the restore, which gives the container a
    # new bridge area, cannot open them again.  Saved so, the sandbox
    # never came back ("restoring container ...: no such file or
    # directory"; a write racing a pause, 2 of 4 tries).  Cells hold the
    # session's lock, file operations only the channel's.
    with session._lock, channel_lock(session):
        try:
            p = subprocess.run(sb._tg("checkpoint", "--image-path", image, cid), capture_output=True,
                               text=True, timeout=300)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess([], 1, "", "did not finish within 300 s")
        if p.returncode != 0:
            remove_tree(where)
            if session.cid is None:  # a close() from another thread removed the container
                session._need_open()
            raise PauseError("tollgate checkpoint %s: %s; the session is still running"
                             % (cid, (p.stderr or p.stdout).strip()[-2000:]))
        write_record(where, cid, session._token, session._bundle_dir, sb.runtime)
        # The container is stopped by the checkpoint; remove it (not its
        # bundle: the restore needs it) so the same id can come back.
        session._release(keep_bundle=True)
    return cid


def restore(s: Session, pause_id: str) -> None:
    """Restore the paused session pause_id into s, a Session of its
    Sandbox that was never opened."""
    sb = s.sb
    if not isinstance(pause_id, str) or not _ID.match(pause_id):
        raise PauseError("%r is not a pause id (what session.pause() returned)" % (pause_id,))
    sb.start()
    where = os.path.join(pause_dir(sb), pause_id)
    try:
        with open(os.path.join(where, "session.json"), encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        rec = None
    bundle, token = (rec.get("bundle"), rec.get("token")) if isinstance(rec, dict) else (None, None)
    if not isinstance(rec, dict) or not isinstance(bundle, str) or not isinstance(token, str):
        raise PauseError("no paused session %s in %s (pause ids live in the Sandbox's pause_dir)"
                         % (pause_id, pause_dir(sb)))
    if rec.get("runtime") != sb.runtime:
        raise PauseError("session %s was paused under %s; resume it with a runtime=%r Sandbox"
                         % (pause_id, rec.get("runtime"), rec.get("runtime")))
    if not os.path.isfile(os.path.join(bundle, "config.json")):
        raise PauseError("session %s's bundle %s is gone (it was paused by a Sandbox without a "
                         "pause_dir, which keeps it only until its close()): it cannot be resumed"
                         % (pause_id, bundle))
    s._reserve()
    try:
        out_path = os.path.join(bundle, "restore.out")
        with open(out_path, "w+b") as out:
            p = subprocess.run(sb._tg("restore", "--image-path", os.path.join(where, "image"), "--detach",
                                      "--bundle", bundle, "--policy", sb.policy_path, pause_id),
                               stdout=out, stderr=out, stdin=subprocess.DEVNULL, timeout=300)
            out.seek(0)
            msg = out.read(65536).decode("utf-8", "replace").strip()
        if p.returncode != 0:
            if "(gVisor) not found" in msg:
                raise SandboxUnavailable(msg)
            if "restoring container" in msg and "no such file or directory" in msg:
                # gVisor opens again every file the sandbox held open, by
                # its path: one that is gone fails the whole restore.
                msg += (" (a file the sandbox held open when it was paused is gone: one of its bridge "
                        "area /run/tollgate, which the restore makes anew, or one removed from a host "
                        "mount since; the image stays in %s)" % where)
            elif "no host FD available" in msg:
                msg += (" (a process that `tollgate exec` started was running when the session was "
                        "paused: its stdio were the host's pipes, which a restore cannot give back; "
                        "the image stays in %s)" % where)
            raise PauseError("tollgate restore %s: %s" % (pause_id, msg or "failed"))
        s._adopt(pause_id, token, bundle)
    except subprocess.TimeoutExpired:
        s._unreserve()
        raise PauseError("tollgate restore %s did not finish within 300 s" % pause_id) from None
    except BaseException:
        s._unreserve()
        raise
    remove_tree(where)

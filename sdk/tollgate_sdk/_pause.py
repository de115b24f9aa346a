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

runsc only here: runc's checkpoint needs criu, which cannot run on this
project's machines (docs/cli.md).
"""
import json
import os
import re
import shutil
import subprocess

from ._errors import SandboxUnavailable, TollgateSDKError

_ID = re.compile(r"^sdk-[0-9]+-[0-9]+-[0-9a-f]{6}$")


class PauseError(TollgateSDKError):
    """A session could not be paused or resumed; the message says why."""


def pause_dir(sb):
    d = sb.pause_dir or os.path.join(sb._state, "paused")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def pause(session):
    sb = session.sb
    session._need_open()
    if sb.runtime != "runsc":
        raise PauseError("pause needs runtime=\"runsc\": runc's checkpoint needs criu, which cannot run "
                         "on this machine's kernel (docs/cli.md); the session is still running")
    cid = session.cid
    where = os.path.join(pause_dir(sb), cid)
    os.makedirs(where, mode=0o700, exist_ok=True)
    image = os.path.join(where, "image")
    with session._lock:
        p = subprocess.run(sb._tg("checkpoint", "--image-path", image, cid), capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            shutil.rmtree(where, ignore_errors=True)
            raise PauseError("tollgate checkpoint %s: %s; the session is still running"
                             % (cid, (p.stderr or p.stdout).strip()[-2000:]))
        with open(os.path.join(where, "session.json"), "w", encoding="utf-8") as f:
            json.dump({"cid": cid, "token": session._token, "bundle": session._bundle_dir,
                       "runtime": sb.runtime}, f)
        # The container is stopped by the checkpoint; remove it (not its
        # bundle: the restore needs it) so the same id can come back.
        session._release(keep_bundle=True)
    return cid


def resume(sb, pause_id):
    from ._session import Session
    if not isinstance(pause_id, str) or not _ID.match(pause_id):
        raise PauseError("%r is not a pause id (what session.pause() returned)" % (pause_id,))
    sb.start()
    where = os.path.join(pause_dir(sb), pause_id)
    try:
        with open(os.path.join(where, "session.json"), encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        raise PauseError("no paused session %s in %s (pause ids live in the Sandbox's pause_dir)"
                         % (pause_id, pause_dir(sb))) from None
    if rec.get("runtime") != sb.runtime:
        raise PauseError("session %s was paused under %s; resume it with a runtime=%r Sandbox"
                         % (pause_id, rec.get("runtime"), rec.get("runtime")))
    bundle = rec["bundle"]
    if not os.path.isfile(os.path.join(bundle, "config.json")):
        raise PauseError("session %s's bundle %s is gone (its Sandbox was closed without a pause_dir "
                         "kept apart): it cannot be resumed" % (pause_id, bundle))
    s = Session(sb)
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
            raise PauseError("tollgate restore %s: %s" % (pause_id, msg or "failed"))
        s._adopt(pause_id, rec["token"], bundle)
    except BaseException:
        s._unreserve()
        raise
    shutil.rmtree(where, ignore_errors=True)
    return s

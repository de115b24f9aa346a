"""envd's API (port 49983) for one sandbox: /health, /files, and the
Connect services process.Process and filesystem.Filesystem, each call
done in the sandbox's container through the C runtime."""
from __future__ import annotations

import base64
import hashlib
import hmac
import subprocess
import time
from typing import Any, AsyncIterator

import anyio.lowlevel
from anyio.lowlevel import EventLoopToken

from ._boxes import Box
from ._service_error import ServiceError
from ._connect import ConnectError, connect_error, end_of_stream, envelope
from ._fs import fs_call, resolve
from ._procs import Listener, Proc
from ._shares import Shares

__all__ = ["check_token", "unary", "stream", "SIGNALS"]

SIGNALS = {"SIGNAL_SIGKILL": 9, "SIGNAL_SIGTERM": 15, "SIGNAL_SIGINT": 2, "SIGNAL_SIGHUP": 1}
MAX_PROCS = 64          # processes one sandbox may have running at once
PIDS = "/tmp/.tollgate-envd"
# Every command starts as the leader of a process group of its own and
# leaves its container pid where a later signal finds it (inside the
# container: the host never reads the file).  The command's own argv is
# exec'd unchanged.
LAUNCH = ("import os, sys\n"
          "try:\n"
          "    os.setsid()\n"
          "except PermissionError:\n"
          "    pass  # a group leader already: its pid names its group\n"
          "os.makedirs(%r, mode=0o700, exist_ok=True)\n"
          "with open(os.path.join(%r, sys.argv[1]), 'w') as f: f.write(str(os.getpid()))\n"
          "try:\n"
          "    os.execvp(sys.argv[2], sys.argv[2:])\n"
          "except OSError as e:\n"
          "    sys.stderr.write('%%s: %%s\\n' %% (sys.argv[2], e.strerror)); sys.exit(127)\n") % (PIDS, PIDS)
SIGNAL = ("import os, sys, time\n"
          "p = os.path.join(%r, sys.argv[1])\n"
          "for _ in range(40):\n"
          "    try:\n"
          "        pid = int(open(p).read()); break\n"
          "    except (OSError, ValueError):\n"
          "        time.sleep(0.05)\n"
          "else:\n"
          "    sys.exit(0)\n"
          "try:\n"
          "    os.killpg(pid, int(sys.argv[2]))\n"
          "except ProcessLookupError:\n"
          "    pass\n") % PIDS
ARGS_MAX = 1024         # arguments of one command
# A stream's keepalive interval, as the client asks (Keepalive-Ping-Interval,
# seconds), within these: at 0 the stream sent keepalives without pause.
KEEPALIVE_MIN, KEEPALIVE_MAX = 1.0, 600.0


def check_token(box: Box, token: str | None, *, path: str = "", op: str = "",
                signature: str | None = None, expiration: str | None = None, user: str = "") -> None:
    """The sandbox's envd access token, or (for /files) a signature made
    with it; otherwise 401."""
    want = box.record.envd_token
    if token and hmac.compare_digest(token, want):
        return
    if signature and path and op:
        raw = "%s:%s:%s:%s" % (path, op, user, want)
        if expiration:
            try:
                if int(expiration) < time.time():
                    raise ServiceError(401, "the signature has expired")
            except ValueError:
                raise ServiceError(401, "signature_expiration must be unix seconds") from None
            raw += ":" + expiration
        good = "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")
        if hmac.compare_digest(signature, good):
            return
    raise ServiceError(401, "this sandbox needs its access token (X-Access-Token)")


def _process_selector(box: Box, msg: dict[str, Any]) -> Proc:
    sel = msg.get("process")
    if not isinstance(sel, dict):
        raise ConnectError("invalid_argument", "process must name a pid or a tag")
    with box.lock:
        if "pid" in sel:
            try:
                p = box.procs.get(int(sel["pid"]))
            except (TypeError, ValueError):
                p = None
        else:
            p = next((q for q in box.procs.values() if q.tag is not None and q.tag == sel.get("tag")), None)
    if p is None:
        raise ConnectError("not_found", "no such process")
    return p


def _start(box: Box, msg: dict[str, Any], timeout_ms: int | None, token: EventLoopToken) -> Proc:
    spec = msg.get("process")
    if not isinstance(spec, dict) or not isinstance(spec.get("cmd"), str) or not spec["cmd"]:
        raise ConnectError("invalid_argument", "process.cmd must be a non-empty string")
    args = spec.get("args") or []
    envs = spec.get("envs") or {}
    if (not isinstance(args, list) or len(args) > ARGS_MAX or not all(isinstance(a, str) for a in args)):
        raise ConnectError("invalid_argument", "process.args must be a list of strings")
    if not isinstance(envs, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and "=" not in k
                                             for k, v in envs.items()):
        raise ConnectError("invalid_argument", "process.envs must map names to strings")
    if msg.get("pty"):
        raise ConnectError("unimplemented", "a pty is not available in tollgate sandboxes")
    cwd = resolve(spec["cwd"]) if spec.get("cwd") else "/tmp"
    argv: list[str] = ["exec", "--cwd", cwd]
    for k, v in {**box.record.env_vars, **envs}.items():
        argv += ["--env", "%s=%s" % (k, v)]
    with box.lock:
        # Under the box's lock, which a pause holds throughout: a start that
        # waited for one finds the sandbox paused, not a container gone
        # (its exec said "container sdk-... does not exist").
        session = box.session
        gone = box.changed_under(session)
        if gone is not None:  # a kill that held the box first
            raise connect_error(gone.status, gone.message)
        if session is None:
            raise ConnectError("unavailable", "the sandbox is paused: connect to resume it")
        cid = box.container_id
        live = [p for p in box.procs.values() if p.end is None]
        if len(live) >= MAX_PROCS:
            raise ConnectError("resource_exhausted", "%d processes are running in this sandbox, its "
                               "limit" % len(live))
        # Ended processes are forgotten once a new one starts.
        for pid in [pid for pid, p in box.procs.items() if p.end is not None]:
            del box.procs[pid]
        pid = box.new_pid()
        deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms else None
        tag = msg.get("tag") if isinstance(msg.get("tag"), str) else None
        config = {"cmd": spec["cmd"], "args": args, "envs": envs, "cwd": cwd}
        argv += [cid, "python3", "-c", LAUNCH, str(pid), spec["cmd"], *args]

        def killer(signo: int) -> None:
            subprocess.run(session.sb._tg("exec", cid, "python3", "-c", SIGNAL, str(pid), str(signo)),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        def changed() -> str | None:
            e = box.changed_under(session)
            return None if e is None else e.message
        p = Proc(pid, session.sb._tg(*argv), config, tag, bool(msg.get("stdin")), deadline, killer, token,
                 changed)
        box.procs[pid] = p
    return p


def _wire(ev: dict[str, Any]) -> dict[str, Any]:
    if "data" in ev:
        return {"event": {"data": {k: base64.b64encode(v).decode() for k, v in ev["data"].items()}}}
    return {"event": ev}


async def _events(p: Proc, q: Listener, first: dict[str, Any], keepalive: float) -> AsyncIterator[bytes]:
    try:
        yield envelope({"event": first})
        while True:
            try:
                ev = await q.get(keepalive)
            except TimeoutError:
                yield envelope({"event": {"keepalive": {}}})
                continue
            if ev is None:
                break
            yield envelope(_wire(ev))
        yield end_of_stream()
    finally:
        p.unlisten(q)
        q.close()


async def stream(shares: Shares, box: Box, method: str, msg: dict[str, Any], timeout_ms: int | None,
                 keepalive: float) -> AsyncIterator[bytes]:
    keepalive = min(max(keepalive, KEEPALIVE_MIN), KEEPALIVE_MAX)
    token = anyio.lowlevel.current_token()
    if method == "process.Process/Start":
        p = await shares.work(box.record.tenant, _start, box, msg, timeout_ms, token)
        return _events(p, p.first, {"start": {"pid": p.pid}}, keepalive)
    if method == "process.Process/Connect":
        p = _process_selector(box, msg)
        return _events(p, p.listen(token), {"start": {"pid": p.pid}}, keepalive)
    raise ConnectError("unimplemented", "%s is not served here" % method)


def unary(box: Box, method: str, msg: dict[str, Any]) -> dict[str, Any]:
    """One unary call (run in a worker thread)."""
    if method == "process.Process/List":
        with box.lock:
            return {"processes": [{"config": p.config, "pid": p.pid, **({"tag": p.tag} if p.tag else {})}
                                  for p in box.procs.values() if p.end is None]}
    if method == "process.Process/SendInput":
        p = _process_selector(box, msg)
        data = (msg.get("input") or {}).get("stdin", "")
        try:
            p.send_input(base64.b64decode(data, validate=True))
        except (ValueError, OSError) as e:
            raise ConnectError("failed_precondition", "stdin: %s" % e) from None
        return {}
    if method == "process.Process/CloseStdin":
        _process_selector(box, msg).close_stdin()
        return {}
    if method == "process.Process/SendSignal":
        p = _process_selector(box, msg)
        signo = SIGNALS.get(str(msg.get("signal")))
        if signo is None:
            raise ConnectError("invalid_argument", "signal must be one of %s" % ", ".join(sorted(SIGNALS)))
        p.signal(signo)
        return {}
    if method == "process.Process/Update":
        raise ConnectError("unimplemented", "a pty is not available in tollgate sandboxes")
    if method == "filesystem.Filesystem/Stat":
        return fs_call(box, "stat", resolve(msg.get("path")))
    if method == "filesystem.Filesystem/ListDir":
        depth = msg.get("depth") or 1
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 16:
            raise ConnectError("invalid_argument", "depth is 1 to 16")
        return fs_call(box, "list", resolve(msg.get("path")), str(depth))
    if method == "filesystem.Filesystem/MakeDir":
        return fs_call(box, "mkdir", resolve(msg.get("path")))
    if method == "filesystem.Filesystem/Move":
        return fs_call(box, "move", resolve(msg.get("source")), resolve(msg.get("destination")))
    if method == "filesystem.Filesystem/Remove":
        return fs_call(box, "remove", resolve(msg.get("path")))
    raise ConnectError("unimplemented", "%s is not served here" % method)

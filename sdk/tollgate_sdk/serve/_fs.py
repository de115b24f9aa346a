"""The filesystem side of envd, done inside the sandbox's container by a
short python3 program (FS_PROGRAM) run through `tollgate exec`, so the
host never touches the container's files: its answer is one bounded JSON
document, and nothing it names is opened on the host."""
from __future__ import annotations

import json
import posixpath
import subprocess
from typing import TYPE_CHECKING, Any

from .._capture import Capture, wait_capture
from ._boxes import INTERPRETER_ENDED, Box, ended_error
from ._service_error import ServiceError
from ._connect import ConnectError, connect_error

if TYPE_CHECKING:
    from .._session import Session

__all__ = ["HOME", "resolve", "fs_call", "read_file", "write_file", "FILE_MAX"]

HOME = "/tmp"            # the sandbox user's home: the container's writable area
FILE_MAX = 64 << 20      # bytes per /files upload or download
ANSWER_MAX = 16 << 20    # bytes of a filesystem answer (a large ListDir)

FS_PROGRAM = r'''
import json, os, stat, sys, time
def info(p):
    st = os.lstat(p)
    kind = "FILE_TYPE_DIRECTORY" if stat.S_ISDIR(st.st_mode) else "FILE_TYPE_FILE"
    e = {"name": os.path.basename(p) or "/", "type": kind, "path": p, "size": str(st.st_size),
         "mode": st.st_mode & 0o7777, "permissions": stat.filemode(st.st_mode),
         "owner": str(st.st_uid), "group": str(st.st_gid),
         "modifiedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime))}
    if stat.S_ISLNK(st.st_mode):
        e["symlinkTarget"] = os.readlink(p)
    return e
def walk(p, depth):
    out = []
    for n in sorted(os.listdir(p)):
        q = os.path.join(p, n)
        out.append(info(q))
        if depth > 1 and stat.S_ISDIR(os.lstat(q).st_mode):
            out.extend(walk(q, depth - 1))
    return out
op, a = sys.argv[1], sys.argv[2]
try:
    if op == "stat":
        r = {"entry": info(a)}
    elif op == "list":
        if not stat.S_ISDIR(os.lstat(a).st_mode):
            raise NotADirectoryError(20, "not a directory", a)
        r = {"entries": walk(a, max(1, int(sys.argv[3])))}
    elif op == "mkdir":
        if os.path.lexists(a):
            raise FileExistsError(17, "exists", a)
        os.makedirs(a)
        r = {"entry": info(a)}
    elif op == "move":
        os.rename(a, sys.argv[3])
        r = {"entry": info(sys.argv[3])}
    elif op == "remove":
        if stat.S_ISDIR(os.lstat(a).st_mode):
            import shutil
            shutil.rmtree(a)
        else:
            os.unlink(a)
        r = {}
    elif op == "isdir":
        r = {"dir": stat.S_ISDIR(os.lstat(a).st_mode)}
    else:
        raise ValueError(op)
except FileNotFoundError as e:
    r = {"error": "not_found", "message": "%s: no such file or directory" % a}
except FileExistsError:
    r = {"error": "already_exists", "message": "%s already exists" % a}
except NotADirectoryError:
    r = {"error": "invalid_argument", "message": "%s is not a directory" % a}
except OSError as e:
    r = {"error": "permission_denied" if e.errno in (1, 13, 30) else "internal",
         "message": "%s: %s" % (a, e.strerror)}
sys.stdout.write(json.dumps(r))
'''


def resolve(path: Any) -> str:
    """An absolute, normalised path: relative ones (and ~) against HOME."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ConnectError("invalid_argument", "path must be a non-empty string")
    if path == "~" or path.startswith("~/"):
        path = HOME + path[1:]
    if not path.startswith("/"):
        path = posixpath.join(HOME, path)
    return str(posixpath.normpath(path))


def fs_call(box: Box, op: str, *args: str) -> dict[str, Any]:
    from .._errors import SessionClosed
    session = box.session
    if session is None:
        raise ConnectError("unavailable", "the sandbox is paused")
    cap: Capture | None = None
    try:
        # Busy: a pause waits for the helper, which a saved sandbox could
        # not have restored (its stdio are the host's pipes).
        with session.busy() as cid:
            argv = session.sb._tg("exec", cid, "python3", "-c", FS_PROGRAM, op, *args)
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # What the container prints is kept to ANSWER_MAX + 1 bytes (the
            # rest counted and dropped), not all held before it is measured.
            cap, timed_out = wait_capture(p, ANSWER_MAX + 1, 60, p.kill)
    except SessionClosed:
        pass
    r: Any = None
    out = bytes(cap.out.buf) if cap is not None else b""
    if cap is not None and p.returncode == 0 and len(out) <= ANSWER_MAX:
        try:
            r = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            r = None
    if not isinstance(r, dict):
        changed = box.changed_under(session)
        if changed is not None:  # a pause or a kill took the container first or meanwhile
            raise connect_error(changed.status, changed.message)
        if cap is None:
            raise ConnectError("unavailable", "the sandbox is paused")
        if timed_out:
            raise ConnectError("deadline_exceeded", "the filesystem helper took more than 60 s")
        if p.returncode != 0 or len(out) > ANSWER_MAX:
            raise ConnectError("internal", "the filesystem helper failed: %s"
                               % cap.text(cap.err).strip()[-300:])
        raise ConnectError("internal", "the filesystem helper gave an unreadable answer")
    if "error" in r:
        raise ConnectError(str(r["error"]), str(r.get("message", "")))
    return r


def _area(path: str) -> None:
    if path != HOME and not path.startswith(HOME + "/"):
        raise ServiceError(400, "%s is outside the sandbox's writable area %s: files are read and written "
                                "only there" % (path, HOME))


def _session_failure(box: Box, session: Session, e: Exception) -> ServiceError | None:
    """What a file operation on session that raised e answers when the
    sandbox changed meanwhile (Box.changed_under) or its interpreter ended;
    None when e is the operation's own error."""
    from .._errors import SessionClosed
    changed = box.changed_under(session)
    if changed is not None:
        return changed
    if isinstance(e, SessionClosed):
        return ended_error(box.record.sandbox_id, INTERPRETER_ENDED)
    return None


def read_file(box: Box, path: str) -> bytes:
    _area(path)
    session = box.session
    if session is None:
        raise ServiceError(409, "the sandbox is paused")
    from .._errors import FileOperationError, SessionClosed
    try:
        return bytes(session.files.read(path))
    except (SessionClosed, FileOperationError) as e:
        failed = _session_failure(box, session, e)
        if failed is not None:
            raise failed from None
        msg = str(e)
        try:
            isdir = fs_call(box, "isdir", path).get("dir")
        except ConnectError as ce:
            if ce.code == "not_found":
                raise ServiceError(404, "%s: no such file" % path) from None
            raise ServiceError(400, msg) from None
        if isdir:
            raise ServiceError(400, "%s is a directory" % path) from None
        raise ServiceError(400, msg) from None


def write_file(box: Box, path: str, data: bytes) -> None:
    _area(path)
    if len(data) > FILE_MAX:
        raise ServiceError(413, "a file is at most %d bytes" % FILE_MAX)
    session = box.session
    if session is None:
        raise ServiceError(409, "the sandbox is paused")
    from .._errors import FileOperationError, SessionClosed
    try:
        session.files.write(path, data)
    except (SessionClosed, FileOperationError) as e:
        raise _session_failure(box, session, e) or ServiceError(400, str(e)) from None

"""Session: one container kept for several cells, with one persistent
Python interpreter in it (kernel.py), so variables, imports and files
persist between cells; session.files moves bytes in and out of its /tmp.

Every cell is `tollgate exec CID python3 kernel.py cell TOKEN` with the
code on stdin; that process hands its stdout and stderr to the session's
interpreter, which runs the cell into them.  The interpreter enforces the
cell's timeout (KeyboardInterrupt, then abandoning the cell); the host
only steps in when the interpreter itself does not answer.
"""
from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import secrets
import subprocess
import threading
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Iterator, Optional

from . import _cells as cells, _pause
from ._cell import Cell
from ._tree import remove_tree
from ._approvals import ApprovalWatcher
from ._capture import TextCallback, wait_capture
from ._errors import (ContainerError, CustomToolError, FileOperationError, InvalidArgument,
                      SandboxUnavailable, SessionClosed, SessionLimit)

if TYPE_CHECKING:
    from ._sandbox import Result, Sandbox
    from ._schema import JSONSchema
    from ._tools import Condition, Rule, Tool

CELL_MAX = 8 << 20   # bytes of code per cell (kernel.CELL_MAX)
FILE_MAX = 64 << 20  # bytes per files.write / files.read (kernel.FILE_MAX)
AREA = "/tmp"        # the writable area session.files may touch
KERNEL = "/app/.tollgate/kernel.py"
GRACE = cells.GRACE  # kernel.GRACE
DEFAULT_MAX_SESSIONS = 16

_live_lock = threading.Lock()
_live: set[Session] = set()
_max_sessions: int | None = None


def max_sessions() -> int:
    """The cap on live sessions in this process: set_max_sessions(), else
    $TOLLGATE_SDK_MAX_SESSIONS, else 16."""
    if _max_sessions is not None:
        return _max_sessions
    try:
        return max(1, int(os.environ.get("TOLLGATE_SDK_MAX_SESSIONS", DEFAULT_MAX_SESSIONS)))
    except ValueError:
        return DEFAULT_MAX_SESSIONS


def set_max_sessions(n: int | None) -> None:
    """Set this process's cap on live sessions (None: back to the default)."""
    global _max_sessions
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise InvalidArgument("the session cap must be a positive integer, not %r" % (n,))
    _max_sessions = n


def live_sessions() -> int:
    """How many sessions of this process are open now."""
    with _live_lock:
        return len(_live)


def check_area_path(path: object, what: str = "path") -> str:
    """A normalised absolute path under /tmp, or FileOperationError."""
    if not isinstance(path, str) or not path:
        raise FileOperationError("%s must be a string such as '/tmp/data.csv'" % what, path)
    if "\0" in path or posixpath.normpath(path) != path or not path.startswith("/"):
        raise FileOperationError("%s %r must be a normalised absolute path under %s (no '.', '..', "
                                 "'//' or trailing '/')" % (what, path, AREA), path)
    if path != AREA and not path.startswith(AREA + "/"):
        raise FileOperationError("%s %r is outside the session's writable area %s: session.files reads "
                                 "and writes only there" % (what, path, AREA), path)
    return path


@dataclasses.dataclass
class FileInfo:
    name: str
    path: str
    type: str   # "file", "dir", "link" or "other"
    size: int


class Files:
    """session.files: write(path, data), read(path) -> bytes, list(dir).
    Paths are confined to /tmp (the session's writable area); the work is
    done inside the container, by a process that never follows a link."""

    def __init__(self, session: Session) -> None:
        self.s = session

    def _op(self, op: str, path: str, data: bytes | None = None, cap: int = FILE_MAX) -> bytes:
        with self.s.busy() as cid:
            return self._op_open(cid, op, path, data, cap)

    def _op_open(self, cid: str, op: str, path: str, data: bytes | None, cap: int) -> bytes:
        s = self.s
        got = cells.files_op(s, op, path, data, cap)
        if got is not None:
            return got
        p = subprocess.Popen(s.sb._tg("exec", cid, "python3", KERNEL, "files", op, path),
                             stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if data is not None:
            assert p.stdin is not None
            feeder = threading.Thread(target=_feed, args=(p.stdin, data), daemon=True)
            feeder.start()
        cap_, timed_out = wait_capture(p, cap + 1, 120, p.kill)
        out = bytes(cap_.out.buf)
        err = cap_.text(cap_.err).strip()
        if timed_out:
            raise FileOperationError("files.%s %s took more than 120 s" % (op, path), path)
        if p.returncode != 0:
            raise FileOperationError("files.%s: %s" % (op, err or "exit status %d" % p.returncode), path)
        if len(out) > cap:
            raise FileOperationError("files.%s %s: more than %d bytes" % (op, path, cap), path)
        return out

    def write(self, path: str, data: bytes | bytearray | memoryview | str) -> int:
        """Write bytes (or str, as UTF-8) to path under /tmp, making its
        parent directories; at most 64 MiB.  Returns the size written."""
        check_area_path(path)
        if path == AREA:
            raise FileOperationError("%s is a directory; name a file under it" % AREA, path)
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidArgument("files.write takes bytes or str, not %s" % type(data).__name__)
        data = bytes(data)
        if len(data) > FILE_MAX:
            raise FileOperationError("files.write %s: %d bytes is more than the %d a write may carry"
                                     % (path, len(data), FILE_MAX), path)
        return int(self._op("write", path, data).decode() or 0)

    def read(self, path: str) -> bytes:
        """The bytes of the regular file path under /tmp (at most 64 MiB)."""
        check_area_path(path)
        return self._op("read", path)

    def list(self, dir: str = AREA) -> list[FileInfo]:
        """The entries of dir under /tmp: FileInfo(name, path, type, size)."""
        check_area_path(dir, "dir")
        raw = self._op("list", dir, cap=16 << 20)
        try:
            return [FileInfo(str(e["name"]), str(e["path"]), str(e["type"]), int(e["size"]))
                    for e in json.loads(raw.decode("utf-8"))]
        except (ValueError, KeyError, TypeError) as e:
            raise FileOperationError("files.list %s: an unreadable answer (%s)" % (dir, e), dir) from None


def _feed(f: IO[bytes], data: bytes) -> None:
    try:
        f.write(data)
    except (OSError, ValueError):
        pass
    finally:
        try:
            f.close()
        except OSError:
            pass


class Session:
    """A container kept for several cells (see Sandbox.session), with one
    Python interpreter in it: variables, imports and /tmp persist between
    cells, and so do the gate's budgets.  run_shell cells are sh processes
    beside it."""

    # What a session keeps between cells, in words (tollgate mcp quotes it).
    KEEPS = ("Python variables, imports and functions, files in /tmp and the budgets carry over from "
             "call to call (one Python interpreter per session); run_shell calls share /tmp, not variables")

    def __init__(self, sandbox: Sandbox) -> None:
        self.sb = sandbox
        self.cid: str | None = None
        self._watcher: ApprovalWatcher | None = None
        self._token = ""
        self._bundle_dir = ""
        self._opened = False
        self._lock = threading.Lock()
        # Held by a close (or a pause's release) throughout: a kill's close
        # and a cell's (its interpreter ended under it) ran at once, and the
        # second deleted a container whose id the first had just cleared.
        self._release_lock = threading.Lock()
        self.cells = 0
        self.files = Files(self)

    def open(self) -> Session:
        """Start the session's container (Sandbox.session() does); an open
        session is returned as it is.  A session once closed stays closed:
        sandbox.session() gives a new one."""
        if self.cid is not None:
            return self
        if self._opened:
            raise SessionClosed("this session is closed; sandbox.session() opens a new one")
        self._opened = True
        self._reserve()
        try:
            self._open()
        except BaseException:
            self._unreserve()
            raise
        return self

    def _reserve(self) -> None:
        with _live_lock:
            cap = max_sessions()
            if len(_live) >= cap:
                raise SessionLimit("%d sessions are open in this process, its cap (set_max_sessions(N) or "
                                   "TOLLGATE_SDK_MAX_SESSIONS raise it): close one (session.close(), or "
                                   "leave its with block) first" % len(_live))
            _live.add(self)

    def _unreserve(self) -> None:
        with _live_lock:
            _live.discard(self)

    def _adopt(self, cid: str, token: str, bundle: str) -> None:
        """Take over a running container whose init is kernel.py serve
        TOKEN (a restored session)."""
        sb = self.sb
        self._opened = True
        self.cid, self._token, self._bundle_dir = cid, token, bundle
        sb._sessions.add(self)
        sb.active.add(cid)
        if sb.approval is not None:
            self._watcher = ApprovalWatcher(sb, cid)
            self._watcher.start()

    def create_tool(self, name: str, source: str, *, description: str,
                    schema: JSONSchema | None = None, timeout: float = 30, cost: float = 0,
                    max_calls: int | None = None, approve: Condition = None, deny: Condition = None,
                    rules: list[Rule] | None = None) -> Tool:
        """Sandbox.create_tool on this session's Sandbox, and the tool
        added to this session's running gate (`tollgate tool add`): the
        session's next cell calls it (`from tollgate import NAME`), and so
        do the Sandbox's later runs and sessions.  The gate's budgets are
        the session's still: what earlier cells spent stays spent.  Raises
        CustomToolError when the gate refuses it (its max_custom_tools
        reached, say); the Sandbox keeps the tool for later sessions then."""
        cid = self._need_open()
        sb = self.sb
        t = sb.create_tool(name, source, description=description, schema=schema, timeout=timeout, cost=cost,
                           max_calls=max_calls, approve=approve, deny=deny, rules=rules)
        # The entry as the Sandbox's policy has it (the policy file's word
        # on governance merged in), so the session's gate and a later
        # session's govern the tool alike.
        assert sb.policy is not None  # create_tool started the Sandbox
        entry = sb.policy["tools"][name]
        path = os.path.join(self._bundle_dir, "tool-%s.json" % name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({name: entry}, f)
        try:
            p = subprocess.run(sb._tg("tool", "add", cid, path), capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=30)
        except subprocess.TimeoutExpired:
            raise CustomToolError("create_tool(%s): this session's gate did not answer within 30 s; "
                                  "the tool is the Sandbox's for later sessions" % name) from None
        finally:
            os.unlink(path)
        if p.returncode != 0:
            msg = (p.stderr.strip() or p.stdout.strip() or "refused").replace("tollgate: ", "", 1)
            raise CustomToolError("create_tool(%s): this session's gate refused it: %s (the tool is the "
                                  "Sandbox's for later sessions)" % (name, msg))
        return t

    def pause(self) -> str:
        """Checkpoint the session (runsc: processes and memory, so its
        variables) and remove its container; returns the id that
        sandbox.resume(id) takes.  The session object is closed after."""
        return _pause.pause(self)

    def _open(self) -> None:
        sb = self.sb
        sb.start()
        cid = self.cid = sb._new_id()
        self._token = secrets.token_hex(16)
        # With a pause_dir, the bundle lives there from the start: a paused
        # session's restore needs it at the same path after the Sandbox
        # that made it has closed (or in another process).  runsc only
        # (pause needs it), so runc's unprivileged ids never have to reach
        # a directory the caller chose.
        bundle = sb._bundle(cid, ["python3", KERNEL, "serve", self._token],
                            parent=_pause.bundles_dir(sb) if sb.pause_dir and sb.runtime == "runsc" else None)
        self._bundle_dir = bundle
        # Not pipes: the sidecar that create leaves running, and the
        # container's init, keep create's stdio open for the session's
        # life, so a pipe would never see its end.
        out_path = os.path.join(bundle, "create.out")
        with open(out_path, "w+b") as out:
            p = subprocess.run(sb._tg("create", "--bundle", bundle, "--policy", sb.policy_path, cid),
                               stdout=out, stderr=out, stdin=subprocess.DEVNULL)
            out.seek(0)
            msg = out.read(65536).decode("utf-8", "replace").strip()
        if p.returncode != 0:
            remove_tree(bundle)
            self.cid = None
            msg = msg or "tollgate create failed"
            if "(gVisor) not found" in msg:
                raise SandboxUnavailable(msg)
            raise ContainerError("tollgate create: %s" % msg)
        sb._sessions.add(self)
        sb.active.add(cid)
        try:
            p = subprocess.run(sb._tg("start", cid), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        except subprocess.TimeoutExpired:
            self.close()
            raise ContainerError("tollgate start %s did not answer within 120 s" % cid) from None
        if p.returncode != 0:
            self.close()
            raise ContainerError("tollgate start: %s" % p.stderr.decode("utf-8", "replace").strip())
        if sb.approval is not None:
            self._watcher = ApprovalWatcher(sb, cid)
            self._watcher.start()

    def __enter__(self) -> Session:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self.cid is None

    def close(self) -> None:
        """Remove the session's container; nothing of it is kept.  Closing
        a closed session does nothing."""
        self._release()

    def _release(self, keep_bundle: bool = False) -> None:
        with self._release_lock:
            cid = self.cid
            if cid is None:
                self._unreserve()
                return
            if self._watcher:
                self._watcher.stop()
                self._watcher = None
            self._delete(cid, keep_bundle)
            self.sb._sessions.discard(self)
            self.sb.active.discard(cid)
            self.cid = None
            self._unreserve()

    def _delete(self, cid: str, keep_bundle: bool = False) -> None:
        sb = self.sb
        subprocess.run(sb._tg("kill", cid, "KILL"), capture_output=True)
        p = subprocess.run(sb._tg("delete", "--force", cid), capture_output=True)
        if p.returncode == 0 and not keep_bundle:
            remove_tree(self._bundle_dir)

    @contextmanager
    def busy(self) -> Iterator[str]:
        """Hold the session open for an operation that is not a cell (a
        file operation, or the service's filesystem helper): a pause waits
        for it to end, and it raises SessionClosed when a pause or a close
        came first.  Yields the container's id.  A process such an
        operation starts with `tollgate exec` has the host's pipes for its
        stdio, and a sandbox saved while one ran could not be restored
        ("no host FD available")."""
        with cells.channel_lock(self):
            yield self._need_open()

    def _need_open(self) -> str:
        """The container's id, or SessionClosed."""
        if self.cid is None:
            raise SessionClosed("the session is closed (by close(), its with block, pause() or its "
                                "Sandbox's close()); sandbox.session() opens a new one")
        return self.cid

    def run(self, code: str, *, check: bool = True, timeout: float | None = None, shell: bool = False,
            on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None) -> Result:
        """Run one cell in the session's interpreter (or, with shell=True,
        a sh command beside it).  Result.calls are this cell's;
        Result.budget_used is the session's so far.  Past its timeout the
        cell is interrupted and CellTimeout is raised (with check=False:
        the Result has timed_out set); the session lives on."""
        self._need_open()
        if not isinstance(code, str):
            raise InvalidArgument("a cell is a str of code, not %s" % type(code).__name__)
        raw = code.encode("utf-8")
        if len(raw) > CELL_MAX:
            raise InvalidArgument("a session cell is at most %d bytes; put larger data in a file with "
                             "session.files.write and read it in the cell" % CELL_MAX)
        sb = self.sb
        timeout = timeout or sb.timeout
        with self._lock:
            return self._run(raw, check, timeout, shell, on_stdout or sb.on_stdout, on_stderr or sb.on_stderr)

    def _run(self, raw: bytes, check: bool, timeout: float, shell: bool,
             on_stdout: Optional[TextCallback], on_stderr: Optional[TextCallback]) -> Result:
        r = cells.run_cell(self, raw, check, timeout, shell, on_stdout, on_stderr)
        if r is not None:
            return r
        sb = self.sb
        cid = self._need_open()
        nonce = secrets.token_hex(16)
        head = json.dumps({"nonce": nonce, "timeout": timeout, "shell": bool(shell)}).encode() + b"\n"
        cell = Cell(self, cid, timeout, check)
        proc = subprocess.Popen(sb._tg("exec", cid, "python3", KERNEL, "cell", self._token),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdin is not None
        threading.Thread(target=_feed, args=(proc.stdin, head + raw), daemon=True).start()
        lost: list[bool] = []

        def lose() -> None:
            lost.append(True)
            proc.kill()
        cap, _ = wait_capture(proc, sb.output_max, timeout + GRACE + 30, lose, on_stdout, on_stderr,
                              abort=cell.memwatch.killed)
        verdict, trailer = _trailer(bytes(cap.err.tail), nonce)
        out = cap.text(cap.out)
        err = cap.text(cap.err, strip_tail=trailer)
        if verdict is None or verdict.get("gone"):
            # The interpreter is gone (a cell ended it with os._exit, the
            # OOM killer, a kill) or never answered: the session cannot go on.
            status = proc.returncode if proc.returncode and proc.returncode > 0 else 125
            cell.interpreter_gone(out, err, status, bool(lost))
        status = int(verdict.get("exit", 1)) & 0xFF
        return cell.answered(out, err, status, verdict, (cap.out.cut, cap.err.cut), list(cap.err.diverted))

    def run_shell(self, command: str, *, check: bool = True, timeout: float | None = None,
                  on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None) -> Result:
        """run(command, shell=True): a sh command beside the interpreter."""
        return self.run(command, shell=True, check=check, timeout=timeout, on_stdout=on_stdout,
                        on_stderr=on_stderr)


def _trailer(tail: bytes, nonce: str) -> tuple[dict[str, Any] | None, bytes]:
    """The interpreter's verdict from the end of the cell's stderr: the
    last 'tollgate-cell:NONCE:{json}' line (the nonce went to the cell
    process on stdin, so the cell cannot forge it).  (verdict, its bytes)."""
    mark = b"\ntollgate-cell:" + nonce.encode() + b":"
    i = tail.rfind(mark)
    if i < 0:
        return None, b""
    line = tail[i:]
    j = line.find(b"\n", 1)
    if j < 0:
        return None, b""
    try:
        v = json.loads(line[len(mark):j])
    except ValueError:
        return None, b""
    return (v if isinstance(v, dict) else None), line[:j + 1]

"""The cell channel, host side (issue 41): a session's cells and file
operations go to its interpreter through the bridge area instead of a
`tollgate exec` each, so a cell costs a round trip plus its work.

The area (<root>/<id>/bridge, a host tmpfs) holds two directories of it:

    cells/         the host's requests: root's, read-only in the container,
                   so no process there can write or replace one
    calls/cells/   the interpreter's answers and the cells' output: the
                   container's, so every byte read from it is untrusted

One request at a time (the session's lock): the host writes
cells/next.req (a JSON header line with a fresh random nonce, then the
code or the file's bytes) by rename; the interpreter (kernel.py serve)
runs it, copies the cell's stdout and stderr to calls/cells/<nonce>.out and
.err as they come, and ends with <nonce>.res and the <nonce>.done marker.
The host reads only those names of its own nonce, each opened without
following a link and without blocking (a FIFO or anything but a regular
file counts as missing), each read bounded; an answer must carry the
nonce; the directory is emptied before each request, so what a program
left there (fake answers, a flood) never meets the next one.  When no
answer comes in time the session is lost, as when a `tollgate exec`
never returned.
"""
import errno
import json
import os
import secrets
import shutil
import stat
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

if TYPE_CHECKING:
    from ._sandbox import Result

from ._cell import Cell
from ._capture import KeptOutput, TextCallback, stream_text
from ._errors import FileOperationError, InvalidArgument
from ._reap import init_pid, pid_ended

CHANNEL_MAX = 4 << 20   # payload bytes per request (kernel.CHANNEL_MAX)
STREAM_MAX = 8 << 20    # output bytes kept per stream (kernel.STREAM_MAX)
ANSWER_MAX = 64 << 10   # bytes of a <nonce>.res
CLEAN_MAX = 4096        # entries removed from calls/cells per request
GRACE = 2.0             # kernel.GRACE: seconds past a cell's timeout before it is abandoned


class _Lost(Exception):
    """No answer in time (or the area went away): the session is lost."""


class Channel:
    def __init__(self, root: str, cid: str) -> None:
        area = os.path.join(root, cid, "bridge")
        self.req_dir = os.path.join(area, "cells")
        self.ans_dir = os.path.join(area, "calls", "cells")

    @staticmethod
    def of(root: Optional[str], cid: Optional[str]) -> "Optional[Channel]":
        """The session's channel, or None when its bridge area has none (a
        tollgate without it: the SDK falls back to `tollgate exec`)."""
        if not root or not cid:
            return None
        ch = Channel(root, cid)
        for d in (ch.req_dir, ch.ans_dir):
            try:
                if not stat.S_ISDIR(os.lstat(d).st_mode):
                    return None
            except OSError:
                return None
        return ch

    # -- the container's directory --
    def _clean(self, keep: Optional[str] = None) -> None:
        """Empty calls/cells but for names starting with keep (names only;
        a directory a program made there goes without following links in
        it), at most CLEAN_MAX entries.  A regular file is cut to nothing
        first: a process holding it open would otherwise keep its space,
        and the area is small."""
        try:
            with os.scandir(self.ans_dir) as it:
                for i, e in enumerate(it):
                    if i >= CLEAN_MAX:
                        break
                    if keep is not None and e.name.startswith(keep):
                        continue
                    p = os.path.join(self.ans_dir, e.name)
                    try:
                        if e.is_dir(follow_symlinks=False):
                            shutil.rmtree(p, ignore_errors=True)
                            continue
                        if e.is_file(follow_symlinks=False):
                            _truncate(p)
                        os.unlink(p)
                    except OSError:
                        pass
        except OSError:
            pass

    def _open(self, name: str) -> Optional[int]:
        """A regular file of the container's, opened without following a
        link and without blocking, or None."""
        try:
            fd = os.open(os.path.join(self.ans_dir, name),
                         os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                return None
        except OSError:
            os.close(fd)
            return None
        return fd

    # -- one request --
    def request(self, head: Dict[str, Any], payload: bytes, streams: "List[_Sink]", deadline: float,
                abort: Optional[Callable[[], bool]] = None) -> Dict[str, Any]:
        """Send one request (head: a dict; payload: bytes) and wait for its
        answer until deadline (time.monotonic()), copying the output into
        streams (stdout, stderr: _Sink) as it comes.  The answer dict, or
        _Lost."""
        if len(payload) > CHANNEL_MAX:
            raise InvalidArgument("a channel request carries at most %d bytes" % CHANNEL_MAX)
        nonce = secrets.token_hex(16)
        self._clean()
        body = json.dumps(dict(head, nonce=nonce)).encode() + b"\n" + payload
        self._send(nonce, body, deadline, abort)
        final = os.path.join(self.req_dir, "next.req")
        fds: List[Optional[int]] = [None, None]
        try:
            wait = 0.00005
            next_clean = time.monotonic() + 0.05
            while True:
                if time.monotonic() > next_clean:
                    # What another process keeps putting there (a flood of
                    # the area) must not starve the interpreter's answer.
                    self._clean(keep=nonce)
                    next_clean = time.monotonic() + 0.05
                done = self._open(nonce + ".done")
                self._tail(nonce, fds, streams)
                if done is not None:
                    os.close(done)
                    break
                if time.monotonic() > deadline or (abort is not None and abort()):
                    raise _Lost("no answer from the session's interpreter in time")
                time.sleep(wait)
                wait = min(wait * 1.5, 0.001)
            self._tail(nonce, fds, streams)
            answer = self._answer(nonce)
        finally:
            for f in fds:
                if f is not None:
                    os.close(f)
            try:
                os.unlink(final)
            except OSError:
                pass
            self._clean()
        for s in streams:
            s.end()
        return answer

    def _send(self, nonce: str, body: bytes, deadline: float, abort: Optional[Callable[[], bool]]) -> None:
        """Write the request as next.req (whole, by a rename).  The area is
        one small tmpfs, and calls/cells in it is the container's: a
        program that fills it leaves no room for the request either.  So a
        full area is emptied and the write tried again until deadline
        (under load a flood refilled it between the clean and the write,
        and the session was lost)."""
        tmp = os.path.join(self.req_dir, ".next-" + nonce)
        final = os.path.join(self.req_dir, "next.req")
        wait = 0.001
        while True:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                try:
                    view = memoryview(body)
                    while view:
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
                os.rename(tmp, final)
                return
            except OSError as e:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                full = e.errno in (errno.ENOSPC, errno.EDQUOT)
                if not full or time.monotonic() > deadline or (abort is not None and abort()):
                    raise _Lost("the cell channel: %s" % e) from None
            self._clean()
            time.sleep(wait)
            wait = min(wait * 2, 0.05)

    def _tail(self, nonce: str, fds: List[Optional[int]], streams: "List[_Sink]") -> None:
        """Read what the output files hold now (each opened once)."""
        for i, ext in enumerate((".out", ".err")):
            fd = fds[i]
            if fd is None:
                fd = fds[i] = self._open(nonce + ext)
            if fd is not None:
                streams[i].take(fd)

    def _answer(self, nonce: str) -> Dict[str, Any]:
        fd = self._open(nonce + ".res")
        if fd is None:
            raise _Lost("the session's interpreter gave no readable answer")
        try:
            raw = os.read(fd, ANSWER_MAX + 1)
        finally:
            os.close(fd)
        try:
            a = json.loads(raw.decode("utf-8")) if len(raw) <= ANSWER_MAX else None
        except ValueError:
            a = None
        if not isinstance(a, dict) or a.get("nonce") != nonce:
            raise _Lost("the session's interpreter gave no valid answer")
        return a


def _truncate(path: str) -> None:
    """Cut a regular file of the container's to nothing: opened without
    following a link or blocking (a FIFO is closed untouched)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.ftruncate(fd, 0)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Sink(KeptOutput):
    """One output stream of a channel request, kept as _capture.Stream
    keeps it, for _capture.stream_text."""

    def __init__(self, name: str, cap: int, callback: Optional[TextCallback]) -> None:
        super().__init__(cap, callback)
        self.name = name
        self.read_cap = min(cap, STREAM_MAX)

    def take(self, fd: int) -> None:
        """Read what the file has now (at most what is kept)."""
        while True:
            want = self.read_cap + 1 - self.total
            if want <= 0:
                return
            try:
                chunk = os.read(fd, min(want, 1 << 20))
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self._keep(chunk)
            if self.callback is not None:
                self._call(chunk)

    def set_total(self, n: object) -> None:
        """The interpreter's count of the stream's bytes (what its cap
        dropped counts as cut); never below what was read."""
        if isinstance(n, int) and not isinstance(n, bool) and n > self.total:
            with self.lock:
                self.total = n


def sinks(cap: int, on_stdout: Optional[TextCallback] = None,
          on_stderr: Optional[TextCallback] = None) -> "List[_Sink]":
    return [_Sink("stdout", cap, on_stdout), _Sink("stderr", cap, on_stderr)]


# ---- the session's side (wired in by _session.py) ---------------------------------

_locks_guard = threading.Lock()
_locks: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()


def channel_lock(session: Any) -> threading.RLock:
    """One request at a time per session: cells hold the session's lock,
    file operations do not, so the channel has one of its own.  A pause
    holds it too (_pause.py): the interpreter must hold no file of the
    bridge area open when the sandbox is saved, and no process a file
    operation started with `tollgate exec` may run then (Session.busy).
    Reentrant: an operation that holds it may go over the channel."""
    with _locks_guard:
        lk = _locks.get(session)
        if lk is None:
            lk = _locks[session] = threading.RLock()
        return lk


class _Alive:
    """Whether the session's container still runs: its init (the sandbox
    under runsc) from tollgate's own state.json, asked at most every 50 ms
    (a cell that ended the interpreter must not wait out its timeout)."""

    def __init__(self, root: str, cid: str, also: Optional[Callable[[], bool]] = None) -> None:
        self.pid, self.also, self.next = init_pid(root, cid), also, 0.0
        self.dead = False  # sticky: asked again within 50 ms, the answer stands

    def __call__(self) -> bool:
        if self.dead or (self.also is not None and self.also()):
            self.dead = True
            return True
        now = time.monotonic()
        if self.pid <= 0 or now < self.next:
            return False
        self.next = now + 0.05
        self.dead = pid_ended(self.pid)
        return self.dead


def run_cell(session: Any, raw: bytes, check: bool, timeout: float, shell: bool,
             on_stdout: Optional[TextCallback], on_stderr: Optional[TextCallback]) -> Optional["Result"]:
    """A cell through the channel, with Session._run's semantics; None when
    the session has no channel (the caller runs it with `tollgate exec`)."""
    sb = session.sb
    cid = session.cid
    ch = Channel.of(sb.root, cid)
    if ch is None:
        return None
    cell = Cell(session, cid, timeout, check)
    gone = _Alive(sb.root, cid, cell.memwatch.killed)
    streams = sinks(sb.output_max, on_stdout, on_stderr)
    head = {"v": 1, "op": "cell", "timeout": timeout, "shell": bool(shell), "cap": min(sb.output_max, STREAM_MAX)}
    answer, lost = None, False
    try:
        with channel_lock(session):
            answer = ch.request(head, raw, streams, time.monotonic() + timeout + GRACE + 30, abort=gone)
    except _Lost:
        lost = not gone()
    if answer is not None:
        streams[0].set_total(answer.get("out_total"))
        streams[1].set_total(answer.get("err_total"))
    out, err = stream_text(streams[0]), stream_text(streams[1])
    if answer is None:
        cell.interpreter_gone(out, err, 125, lost)
    try:
        status = int(answer.get("exit", 1)) & 0xFF
    except (TypeError, ValueError):
        status = 1
    return cell.answered(out, err, status, answer, (streams[0].cut, streams[1].cut), [])


def files_op(session: Any, op: str, path: str, data: Optional[bytes], cap: int) -> Optional[bytes]:
    """A session.files operation through the channel: its bytes, or None
    when it must go by `tollgate exec` (no channel; more than the channel
    carries)."""
    sb = session.sb
    if data is not None and len(data) > CHANNEL_MAX:
        return None
    ch = Channel.of(sb.root, session.cid)
    if ch is None:
        return None
    streams = sinks(min(cap, CHANNEL_MAX) + 1)
    head = {"v": 1, "op": "files", "fop": op, "path": path, "cap": min(cap, CHANNEL_MAX) + 1}
    try:
        with channel_lock(session):  # Session.busy holds it already: a pause came first or waits
            answer = ch.request(head, data or b"", streams, time.monotonic() + 120,
                                abort=_Alive(sb.root, session.cid))
    except _Lost as e:
        raise FileOperationError("files.%s %s: %s" % (op, path, e), path) from None
    code = answer.get("exit")
    if code == 3:
        return None  # larger than the channel carries
    out = bytes(streams[0].buf)
    if code != 0:
        err = bytes(streams[1].buf).decode("utf-8", "replace").strip()
        raise FileOperationError("files.%s: %s" % (op, err or "exit status %s" % code), path)
    if streams[0].total > cap:
        raise FileOperationError("files.%s %s: more than %d bytes" % (op, path, cap), path)
    return out

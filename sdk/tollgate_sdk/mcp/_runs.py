"""The programs `tollgate mcp` runs, as the MCP client sees them while they
run and after: progress, cancellation, the calls parked for a person, and
each run's and session's audit log as a resource (docs/mcp.md).

A program runs through the Sandbox's public API (Sandbox.run,
Session.run) on a worker thread; this module finds its container id (the
id that appears in Sandbox.active while the launch lock is held, or the
session's), asks the container's control socket how far it got, and on
cancellation has the gate refuse every later call and record the
cancellation (the control socket's "cancel" verb, docs/policy.md) before
the container is killed.  Everything here blocks: the MCP side
(_server.py) calls it from worker threads.
"""
from __future__ import annotations

import collections
import inspect
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from ._sdk import control_request, one_line

PROGRESS_EVERY = 1.0        # seconds between progress notifications
CID_WAIT = 120.0            # seconds to wait for a run's container id (first run: spec, policy check)
RUNS_KEPT = 500             # run records (resources) kept per server
RESOURCE_MAX = 4 << 20      # bytes of one audit log a resources/read returns
URI_PREFIX = "tollgate://audit/"


def _snapshot(s: Any) -> set[str]:
    while True:
        try:
            return set(list(s))
        except RuntimeError:  # changed size while copied: copy again
            continue


def tollgate_argv(sb: Any, *args: str) -> list[str]:
    """`tollgate [--root R] [--config C] ARGS`, as the sandbox runs it."""
    cmd = [str(sb.tollgate)]
    if sb.root:
        cmd += ["--root", str(sb.root)]
    if sb.config_path:
        cmd += ["--config", str(sb.config_path)]
    return cmd + list(args)


class RunRecord:
    """One run or session: its container and audit log, for resources."""

    def __init__(self, sb: Any, cid: str, kind: str, label: str = "") -> None:
        # The session name is the client's: escaped, like all it sends.
        self.sb, self.cid, self.kind, self.label = sb, cid, kind, one_line(label, 64)
        self.audit_log = os.path.join(sb.audit_dir or "", cid + ".jsonl")
        self.started = time.time()
        self.ended: float | None = None
        self.exit_status: int | None = None
        self.cancelled = False
        self.calls = 0
        self.cells = 0
        self.verify = "not verified yet"

    @property
    def uri(self) -> str:
        return URI_PREFIX + self.cid

    def verify_now(self) -> str:
        """`tollgate audit verify` of the log (--open while it may still be
        written): its one-line verdict."""
        if not os.path.isfile(self.audit_log):
            self.verify = "no audit log (yet): %s" % self.audit_log
            return self.verify
        cmd = tollgate_argv(self.sb, "audit", "verify", self.audit_log)
        if self.ended is None:
            cmd.append("--open")
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            out = (p.stdout.strip() or p.stderr.strip() or "no answer").splitlines()[-1]
            self.verify = ("%s (exit %d)" % (one_line(out, 500), p.returncode))
        except (OSError, subprocess.TimeoutExpired) as e:
            self.verify = "tollgate audit verify failed: %s" % e
        return self.verify

    def describe(self) -> str:
        what = ("session %s" % self.label) if self.kind == "session" else "run"
        state = "running" if self.ended is None else (
            "cancelled" if self.cancelled else "exit status %s" % self.exit_status)
        return ("Audit log of %s %s (%s; %d governed calls%s). Verification: %s" %
                (what, self.cid, state, self.calls,
                 ", %d cells" % self.cells if self.kind == "session" else "", self.verify))

    def resource(self) -> dict[str, Any]:
        return {"uri": self.uri, "name": "audit-%s" % self.cid,
                "title": "Audit log: %s %s" % (self.kind, self.label or self.cid),
                "description": self.describe(), "mimeType": "application/x-ndjson"}


class Runs:
    """The records of this server's runs and sessions, newest last."""

    def __init__(self, notify: Callable[[], None]) -> None:
        self.notify = notify
        self.lock = threading.Lock()
        self.records: collections.OrderedDict[str, RunRecord] = collections.OrderedDict()

    def add(self, rec: RunRecord) -> None:
        with self.lock:
            self.records[rec.cid] = rec
            while len(self.records) > RUNS_KEPT:
                self.records.popitem(last=False)
        self.notify()

    def changed(self, rec: RunRecord) -> None:
        rec.verify_now()
        self.notify()

    def resources(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r.resource() for r in self.records.values()]

    def read(self, uri: object) -> list[dict[str, Any]] | None:
        """The contents of a resource URI, or None when it is not one of
        ours: the URI only ever selects a record, never a path."""
        if not isinstance(uri, str) or not uri.startswith(URI_PREFIX):
            return None
        with self.lock:
            rec = self.records.get(uri[len(URI_PREFIX):])
        if rec is None:
            return None
        text, size = _read_bounded(rec.audit_log, RESOURCE_MAX)
        verdict = rec.verify_now()
        if size > RESOURCE_MAX:
            verdict += "; the log is %d bytes, the first %d are shown" % (size, RESOURCE_MAX)
        return [{"uri": rec.uri, "mimeType": "application/x-ndjson", "text": text},
                {"uri": rec.uri + "#verify", "mimeType": "text/plain",
                 "text": "tollgate audit verify %s: %s\n%s\n" % (rec.audit_log, verdict, rec.describe())}]


def _read_bounded(path: str, cap: int) -> tuple[str, int]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "", 0
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return "", 0
        size = st.st_size
        data = f.read(cap)
    return data.decode("utf-8", "replace"), size


def _stream_kw(fn: Callable[..., Any], on_line: Callable[[Any], None]) -> dict[str, Any]:
    """{"on_stdout": ...} when the Sandbox's run() streams its output (the
    SDK's on_stdout callback), else {} (progress then names no output)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    return {"on_stdout": on_line} if "on_stdout" in params else {}


class Question:
    """A parked call put to the person at the MCP client: asked by the
    approval callback's thread, answered by whoever reaches the client (an
    elicitation, or a 2026-07-28 client's retried tools/call)."""

    def __init__(self, req: Any, message: str) -> None:
        self.req = req
        self.message = message
        self.key = "approve-%s" % one_line(req.call_id, 64)
        self.answer: dict[str, Any] | None = None
        self.error: str | None = None
        self.done = threading.Event()

    def settle(self, answer: dict[str, Any] | None, error: str | None = None) -> None:
        if not self.done.is_set():
            self.answer, self.error = answer, error
            self.done.set()


class Job:
    """One tools/call of run_python or run_shell: the program on a worker
    thread, its container id, progress, the questions for the person, and
    cancellation.  `launch_lock` serialises the launches of one server (a
    new container id in Sandbox.active is this job's)."""

    def __init__(self, sb: Any, launch_lock: threading.Lock, runs: Runs, *, session: Any = None,
                 session_record: RunRecord | None = None) -> None:
        self.sb, self.session, self.launch_lock, self.runs = sb, session, launch_lock, runs
        self.cid: str | None = session.cid if session is not None else None
        self.record = session_record
        self.cancelled = False      # the container was stopped for a cancel
        self.last_calls: dict[str, Any] = {}
        self.last_line = ""
        self.result: Any = None
        self.error: BaseException | None = None
        self.worker: threading.Thread | None = None
        self.questions: list[Question] = []
        self.qlock = threading.Lock()
        self.t0 = time.monotonic()
        self.finished = False

    # -- the program ---------------------------------------------------------

    def _on_stdout(self, chunk: Any) -> None:
        if isinstance(chunk, bytes):
            chunk = chunk.decode("utf-8", "replace")
        lines = [ln for ln in str(chunk).splitlines() if ln.strip()]
        if lines:
            self.last_line = one_line(lines[-1], 200)

    def start(self, code: str, timeout: float | None, shell: bool) -> None:
        """Start the program; returns once its container id is known (or
        it failed before it had one)."""
        target = self.session.run if self.session is not None else self.sb.run
        kw: dict[str, Any] = dict(check=False, timeout=timeout, shell=shell)
        kw.update(_stream_kw(target, self._on_stdout))

        def work() -> None:
            try:
                self.result = target(code, **kw)
            except BaseException as e:  # handed to the waiting thread
                self.error = e

        worker = self.worker = threading.Thread(target=work, name="tollgate-mcp-run", daemon=True)
        self.t0 = time.monotonic()
        if self.session is not None:
            worker.start()
            return
        with self.launch_lock:
            before = _snapshot(self.sb.active)
            worker.start()
            deadline = time.monotonic() + CID_WAIT
            while self.cid is None and worker.is_alive() and time.monotonic() < deadline:
                new = _snapshot(self.sb.active) - before
                if new:
                    self.cid = sorted(new)[0]
                    break
                time.sleep(0.01)
        if self.cid is not None:
            self.record = RunRecord(self.sb, self.cid, "run")
            self.runs.add(self.record)

    def running(self) -> bool:
        return self.worker is not None and self.worker.is_alive()

    def wait(self, seconds: float) -> bool:
        """Wait up to seconds for the program to end: has it?"""
        if self.worker is not None:
            self.worker.join(seconds)
        return not self.running()

    def finish(self) -> Any:
        """The program's Result once it ended (None when it was cancelled);
        raises what the Sandbox raised.  Records the run."""
        if self.worker is not None:
            self.worker.join(timeout=120 if self.cancelled else None)
            if self.worker.is_alive():
                print("tollgate mcp: the cancelled run %s did not end" % self.cid, flush=True)
        if not self.finished:
            self.finished = True
            self._record()
        if self.cancelled:
            return None
        if self.error is not None:
            raise self.error
        return self.result

    def _record(self) -> None:
        rec, r = self.record, self.result
        if rec is None:
            return
        rec.ended = time.time() if self.session is None else None
        rec.cancelled = self.cancelled
        if r is not None:
            rec.exit_status = r.exit_status
            rec.calls = len(r.calls) + (rec.calls if self.session is not None else 0)
            if r.audit_log:
                rec.audit_log = r.audit_log
        if self.session is not None:
            rec.cells += 1
            if self.cancelled:
                rec.ended = time.time()
        self.runs.changed(rec)

    # -- progress ------------------------------------------------------------

    def _control(self, req: dict[str, Any], timeout: float = 2.0) -> dict[str, Any] | None:
        if self.cid is None or not self.sb.root:
            return None
        try:
            r = control_request(os.path.join(self.sb.root, self.cid, "control.sock"), req, timeout=timeout)
        except (OSError, ValueError):
            return None
        return r if isinstance(r, dict) else None

    def progress_text(self) -> str:
        """How far the program got: seconds, governed calls, the budget,
        its last line of output."""
        # Between the program's end and the worker's return the control
        # socket is gone: what it said last still stands.
        r = self._control({"verb": "calls"}, timeout=0.8) or self.last_calls
        self.last_calls = r
        calls = r.get("calls") or []
        used = ((r.get("budget") or {}).get("calls") or {})
        parts = ["running %d s" % (time.monotonic() - self.t0)]
        if calls:
            last = calls[-1]
            parts.append("%d governed call%s (last: %s %s)" % (
                len(calls), "" if len(calls) == 1 else "s", one_line(last.get("tool"), 64),
                one_line(last.get("status"), 32)))
        else:
            parts.append("no governed calls yet")
        if used.get("max") is not None:
            parts.append("budget: %s of %s calls" % (used.get("used", len(calls)), used.get("max")))
        if self.last_line:
            parts.append("last output: %s" % self.last_line)
        return "; ".join(parts)

    # -- questions for the person ---------------------------------------------

    def ask(self, q: Question) -> None:
        with self.qlock:
            self.questions.append(q)

    def open_questions(self) -> list[Question]:
        with self.qlock:
            self.questions = [q for q in self.questions if not q.done.is_set()]
            return list(self.questions)

    def withdraw(self, why: str) -> None:
        """Every open question is moot: its run ended or was cancelled."""
        for q in self.open_questions():
            q.settle(None, why)

    # -- cancellation --------------------------------------------------------

    def cancel(self, reason: str, on_session_end: Callable[[], None] | None = None) -> None:
        """Stop the program: the gate refuses every later call and records
        the cancellation (naming reason), then the container is killed."""
        if self.cid is None or self.cancelled or not self.running():
            # No container yet (it failed first), or it ended: its answer stands.
            self.withdraw("the run ended")
            return
        self.cancelled = True
        reply = self._control({"verb": "cancel", "reason": reason}, timeout=5.0)
        if reply is None or not reply.get("ok"):
            print("tollgate mcp: the cancel record of %s was not written: %s" % (
                self.cid, (reply or {}).get("error", "no control socket")), flush=True)
        try:
            subprocess.run(tollgate_argv(self.sb, "kill", self.cid, "KILL"), capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            print("tollgate mcp: tollgate kill %s: %s" % (self.cid, e), flush=True)
        # A question still open for one of its parked calls is moot now.
        self.withdraw("the run was cancelled")
        if self.session is not None and on_session_end is not None:
            on_session_end()
        if self.worker is not None:
            self.worker.join(timeout=60)

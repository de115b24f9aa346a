"""The programs `tollgate mcp` runs, as the MCP client sees them while they
run and after: progress notifications, cancellation, and each run's and
session's audit log as a resource (docs/mcp.md).

A program runs through the Sandbox's public API (Sandbox.run,
Session.run) on a worker thread; this module finds its container id (the
id that appears in Sandbox.active while the launch lock is held, or the
session's), asks the container's control socket how far it got, and on
cancellation has the gate refuse every later call and record the
cancellation (the control socket's "cancel" verb, docs/policy.md) before
the container is killed.
"""
import collections
import inspect
import os
import stat
import subprocess
import threading
import time

from ._describe import one_line
from .._sandbox import control_request

PROGRESS_EVERY = 1.0        # seconds between progress notifications (the issue asks <= 2 s)
CID_WAIT = 120.0            # seconds to wait for a run's container id (first run: spec, policy check)
RUNS_KEPT = 500             # run records (resources) kept per server
RESOURCE_MAX = 4 << 20      # bytes of one audit log a resources/read returns
URI_PREFIX = "tollgate://audit/"


def _snapshot(s):
    while True:
        try:
            return set(list(s))
        except RuntimeError:  # changed size while copied: copy again
            continue


def _tg(sb, *args):
    cmd = [sb.tollgate]
    if sb.root:
        cmd += ["--root", sb.root]
    if sb.config_path:
        cmd += ["--config", sb.config_path]
    return cmd + list(args)


class RunRecord:
    """One run or session: its container and audit log, for resources."""

    def __init__(self, sb, cid, kind, label=""):
        # The session name is the client's: escaped, like all it sends.
        self.sb, self.cid, self.kind, self.label = sb, cid, kind, one_line(label, 64)
        self.audit_log = os.path.join(sb.audit_dir or "", cid + ".jsonl")
        self.started = time.time()
        self.ended = None
        self.exit_status = None
        self.cancelled = False
        self.calls = 0
        self.cells = 0
        self.verify = "not verified yet"

    @property
    def uri(self):
        return URI_PREFIX + self.cid

    def verify_now(self):
        """`tollgate audit verify` of the log (--open while it may still be
        written): its one-line verdict."""
        if not os.path.isfile(self.audit_log):
            self.verify = "no audit log (yet): %s" % self.audit_log
            return self.verify
        cmd = _tg(self.sb, "audit", "verify", self.audit_log)
        if self.ended is None:
            cmd.append("--open")
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            out = (p.stdout.strip() or p.stderr.strip() or "no answer").splitlines()[-1]
            self.verify = ("%s (exit %d)" % (one_line(out, 500), p.returncode))
        except (OSError, subprocess.TimeoutExpired) as e:
            self.verify = "tollgate audit verify failed: %s" % e
        return self.verify

    def describe(self):
        what = ("session %s" % self.label) if self.kind == "session" else "run"
        state = "running" if self.ended is None else (
            "cancelled" if self.cancelled else "exit status %s" % self.exit_status)
        return ("Audit log of %s %s (%s; %d governed calls%s). Verification: %s" %
                (what, self.cid, state, self.calls,
                 ", %d cells" % self.cells if self.kind == "session" else "", self.verify))

    def resource(self):
        return {"uri": self.uri, "name": "audit-%s" % self.cid,
                "title": "Audit log: %s %s" % (self.kind, self.label or self.cid),
                "description": self.describe(), "mimeType": "application/x-ndjson"}


class Runs:
    """The records of this server's runs and sessions, newest last."""

    def __init__(self, notify):
        self.notify = notify
        self.lock = threading.Lock()
        self.records = collections.OrderedDict()

    def add(self, rec):
        with self.lock:
            self.records[rec.cid] = rec
            while len(self.records) > RUNS_KEPT:
                self.records.popitem(last=False)
        self.notify()

    def changed(self, rec):
        rec.verify_now()
        self.notify()

    def list(self):
        with self.lock:
            return [r.resource() for r in self.records.values()]

    def read(self, uri):
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


def _read_bounded(path, cap):
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


def _stream_kw(fn, on_line):
    """{"on_stdout": ...} when the Sandbox's run() streams its output (the
    SDK's on_stdout callback), else {} (progress then names no output)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    return {"on_stdout": on_line} if "on_stdout" in params else {}


class Job:
    """One tools/call of run_python or run_shell: the program on a worker
    thread, progress while it runs, cancellation."""

    def __init__(self, server, sb, session=None, session_name=None, progress_token=None):
        self.srv, self.sb, self.session, self.session_name = server, sb, session, session_name
        self.token = progress_token
        self.cid = session.cid if session is not None else None
        self.cancel_reason = None
        self.cancel_event = threading.Event()
        self.cancelled = False      # the container was stopped for a cancel
        self.ticks = 0
        self.last_calls = {}
        self.last_line = ""
        self.result = None
        self.error = None
        self.record = None

    # -- the program ---------------------------------------------------------

    def _on_stdout(self, chunk):
        if isinstance(chunk, bytes):
            chunk = chunk.decode("utf-8", "replace")
        lines = [l for l in str(chunk).splitlines() if l.strip()]
        if lines:
            self.last_line = one_line(lines[-1], 200)

    def run(self, code, timeout, shell):
        """Run code; returns the Result, or None when it was cancelled.
        Raises what the Sandbox raised."""
        target = self.session.run if self.session is not None else self.sb.run
        kw = dict(check=False, timeout=timeout, shell=shell)
        kw.update(_stream_kw(target, self._on_stdout))

        def work():
            try:
                self.result = target(code, **kw)
            except BaseException as e:  # handed to the waiting thread
                self.error = e

        worker = threading.Thread(target=work, name="tollgate-mcp-run", daemon=True)
        self.t0 = time.monotonic()
        self.next_progress = self.t0 + PROGRESS_EVERY
        if self.session is None:
            with self.srv.launch_lock:
                before = _snapshot(self.sb.active)
                worker.start()
                deadline = time.monotonic() + CID_WAIT
                while self.cid is None and worker.is_alive() and time.monotonic() < deadline:
                    new = _snapshot(self.sb.active) - before
                    if new:
                        self.cid = sorted(new)[0]
                        break
                    self._maybe_progress()  # the first run's start-up can take seconds
                    time.sleep(0.01)
            if self.cid is not None:
                self.record = RunRecord(self.sb, self.cid, "run")
                self.srv.runs.add(self.record)
        else:
            self.record = self.srv.session_records.get(self.session_name)
            worker.start()
        while worker.is_alive():
            wait = max(0.0, self.next_progress - time.monotonic()) if self.token is not None else 0.2
            if self.cancel_event.wait(wait):
                self._cancel(worker)
                break
            self._maybe_progress()
        worker.join(timeout=120 if self.cancelled else None)
        if worker.is_alive():
            print("tollgate mcp: the cancelled run %s did not end" % self.cid, flush=True)
        if self.record is not None:
            r = self.result
            self.record.ended = time.time() if self.session is None else None
            self.record.cancelled = self.cancelled
            if r is not None:
                self.record.exit_status = r.exit_status
                self.record.calls = len(r.calls) + (self.record.calls if self.session else 0)
                if r.audit_log:
                    self.record.audit_log = r.audit_log
            if self.session is not None:
                self.record.cells += 1
                if self.cancelled:
                    self.record.ended = time.time()
            self.srv.runs.changed(self.record)
        if self.cancelled:
            return None
        if self.error is not None:
            raise self.error
        return self.result

    # -- progress ------------------------------------------------------------

    def _control(self, req, timeout=2.0):
        if self.cid is None or not self.sb.root:
            return None
        try:
            return control_request(os.path.join(self.sb.root, self.cid, "control.sock"), req,
                                   timeout=timeout)
        except (OSError, ValueError):
            return None

    def _maybe_progress(self):
        if self.token is None or time.monotonic() < self.next_progress:
            return
        self.ticks += 1
        self.next_progress = time.monotonic() + PROGRESS_EVERY
        self._progress(self.ticks)

    def _progress(self, tick):
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
        self.srv.send({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": self.token, "progress": tick,
                                  "message": "; ".join(parts)}})

    # -- cancellation --------------------------------------------------------

    def cancel(self, reason):
        """From notifications/cancelled (the dispatch thread): the waiting
        thread does the work."""
        if self.cancel_reason is None:
            self.cancel_reason = one_line(reason or "no reason given", 300)
            self.cancel_event.set()

    def _cancel(self, worker):
        # A cancel that came before the container id was known: it is
        # known now (run() waited for it), or the program never got a
        # container (it failed first), and its answer stands.
        if self.cid is None:
            return
        self.cancelled = True
        who = self.srv.client_identity()
        reply = self._control({"verb": "cancel", "reason": "cancelled by the MCP client %s: %s"
                               % (who, self.cancel_reason)}, timeout=5.0)
        if reply is None or not reply.get("ok"):
            print("tollgate mcp: the cancel record of %s was not written: %s" % (
                self.cid, (reply or {}).get("error", "no control socket")), flush=True)
        try:
            subprocess.run(_tg(self.sb, "kill", self.cid, "KILL"), capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            print("tollgate mcp: tollgate kill %s: %s" % (self.cid, e), flush=True)
        # A question still open for one of its parked calls is moot now.
        self.srv.outgoing.withdraw(self.cid, "the run was cancelled")
        if self.session is not None:
            self.srv.drop_session(self.session_name, self.session)
        worker.join(timeout=60)

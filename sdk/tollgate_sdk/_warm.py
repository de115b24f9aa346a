"""The warm pool: Sandbox(..., warm=N) keeps N containers created, started
and waiting, so a run skips create and start (most of a cold run's time).

Each warm container's init is `kernel.py warm`: it waits for the host to
write the job into its /app (a bind of the bundle's app directory), runs it
once in a child process, ends stdout and stderr with a trailer carrying the
job's nonce and the exit status, and exits, which stops the container.
So a container runs exactly one program and is never reused after untrusted
code; it is deleted in the background and a new one is made in its place.
Each has its own sidecar, policy, budgets and audit log, as a cold run does.
A run whose policy differs from the Sandbox's (repair's lowered budgets)
takes the cold path.
"""
import json
import os
import secrets
import shutil
import subprocess
import threading

from . import _oom as oom_watch
from ._capture import Capture, stream_text
from ._errors import CellTimeout, ProgramFailed


class _Warm:
    def __init__(self, cid, bundle, proc, capture):
        self.cid, self.bundle, self.proc, self.capture = cid, bundle, proc, capture


class WarmPool:
    def __init__(self, sb, n):
        self.sb = sb
        self.n = n
        self.ready = []
        self.making = 0
        self.lock = threading.Condition()
        self.closed = False
        self.errors = []          # why the last refills failed (shown by run when the pool is empty)
        self.cleaners = []

    # ---- filling ------------------------------------------------------------
    def fill(self):
        with self.lock:
            want = self.n - len(self.ready) - self.making
            if self.closed or want <= 0:
                return
            self.making += want
        for _ in range(want):
            threading.Thread(target=self._make_one, name="tollgate-sdk-warm", daemon=True).start()

    def _make_one(self):
        w = None
        try:
            w = self._create()
        except Exception as e:  # shown when a run finds the pool empty
            self.errors = (self.errors + ["%s: %s" % (type(e).__name__, e)])[-3:]
        with self.lock:
            if w is not None and not self.closed:
                self.ready.append(w)
                self.making -= 1
                self.lock.notify_all()
                return
        # Closed meanwhile: deleted before close() may see making reach 0.
        if w is not None:
            self._discard(w)
        with self.lock:
            self.making -= 1
            self.lock.notify_all()

    def _create(self):
        sb = self.sb
        cid = sb._new_id()
        from ._session import KERNEL
        bundle = sb._bundle(cid, ["python3", KERNEL, "warm"])
        # Pipes, read from now on: the init writes the run's output into
        # them; the sidecar holds them too, so the end of a run is its
        # trailer, never an end of file.
        proc = subprocess.Popen(sb._tg("create", "--bundle", bundle, "--policy", sb.policy_path, cid),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cap = Capture(proc, sb.output_max)
        w = _Warm(cid, bundle, proc, cap)
        w.notices = cap.err.diverted
        try:
            proc.wait(timeout=120)
            if proc.returncode != 0:
                raise RuntimeError("tollgate create: %s" % stream_text(cap.err).strip()[-2000:])
            p = subprocess.run(sb._tg("start", cid), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=120)
            if p.returncode != 0:
                raise RuntimeError("tollgate start: %s" % p.stderr.decode("utf-8", "replace").strip())
        except BaseException:
            self._discard(w)
            raise
        return w

    def wait_ready(self, timeout=120):
        """Wait until all N are started and waiting and no retired one is
        still being deleted.  True when they are."""
        import time
        end = time.monotonic() + timeout
        with self.lock:
            while len(self.ready) < self.n and not self.closed:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(min(left, 0.5))
                if not self.making and len(self.ready) < self.n:
                    self.lock.release()
                    try:
                        self.fill()
                    finally:
                        self.lock.acquire()
        for c in list(self.cleaners):
            c.join(max(0, end - time.monotonic()))
        return len(self.ready) >= self.n

    def take(self):
        """A ready container, or None (the caller runs cold)."""
        with self.lock:
            w = self.ready.pop(0) if self.ready else None
        if w is None:  # else the refill waits for the run's end (_retire):
            self.fill()  # a create beside it slows its first result
        return w

    # ---- one run --------------------------------------------------------------
    def run(self, w, code, shell, timeout, check, on_stdout, on_stderr):
        sb = self.sb
        nonce = secrets.token_hex(16)
        mark = b"\ntollgate-run:" + nonce.encode() + b":"
        for s, cb in ((w.capture.out, on_stdout), (w.capture.err, on_stderr)):
            s.reset(sb.output_max, cb)
        app = os.path.join(w.bundle, "app")
        if not shell:
            _write(os.path.join(app, "main.py"), code.encode("utf-8"))
        watcher = sb._approval_watcher(w.cid) if sb.approval is not None else None
        if watcher:
            watcher.start()
        sb.active.add(w.cid)
        memwatch = oom_watch.Watch(w.cid, sb.runtime)
        try:
            head = json.dumps({"nonce": nonce, "timeout": timeout, "shell": bool(shell)}).encode()
            _write(os.path.join(app, ".tollgate", "job.json"), head + b"\n" + code.encode("utf-8"))
            got_err = w.capture.err.wait_for(mark, timeout + 30, abort=memwatch.killed)
            got_out = got_err and w.capture.out.wait_for(mark, 10)
        finally:
            sb.active.discard(w.cid)
            if watcher:
                watcher.stop()
        verdict = _verdict(bytes(w.capture.err.tail), mark) if got_err else None
        lost = verdict is None
        out = stream_text(w.capture.out, _line(bytes(w.capture.out.tail), mark) if got_out else b"")
        err = stream_text(w.capture.err, _line(bytes(w.capture.err.tail), mark) if got_err else b"")
        if lost:
            subprocess.run(sb._tg("kill", w.cid, "KILL"), capture_output=True)
        oom = memwatch.killed()
        memwatch.close()
        status = int(verdict.get("exit", 1)) if verdict else 137
        timed_out = (lost and not oom) or bool(verdict and verdict.get("timed_out"))
        if timed_out:
            err += "\ntollgate_sdk: the program ran past %s s and was killed\n" % timeout
        result = sb._result(w.cid, out, err, status, timed_out, sb.policy)
        result.stdout_cut, result.stderr_cut = w.capture.out.cut, w.capture.err.cut
        result.warnings = list(w.notices)
        self._retire(w)
        if timed_out:
            result.timeout_how = "killed"
        if oom and status != 0:
            result.oom_killed, result.memory_limit = True, sb.memory_text()
            result.stderr += ("\ntollgate_sdk: the program ran out of memory and was killed "
                              "(memory limit %s; Sandbox(memory=...) raises it)\n" % result.memory_limit)
        if check and timed_out:
            raise CellTimeout(result, timeout, "killed")
        if check and status != 0:
            raise ProgramFailed(result)
        return result

    # ---- ending -----------------------------------------------------------------
    def _retire(self, w):
        self.fill()
        t = threading.Thread(target=self._discard, args=(w,), name="tollgate-sdk-warm-delete", daemon=True)
        self.cleaners = [c for c in self.cleaners if c.is_alive()] + [t]
        t.start()

    def _discard(self, w):
        sb = self.sb
        subprocess.run(sb._tg("kill", w.cid, "KILL"), capture_output=True)
        p = subprocess.run(sb._tg("delete", "--force", w.cid), capture_output=True)
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()
        w.capture.finish(linger=1)
        if p.returncode == 0:
            shutil.rmtree(w.bundle, ignore_errors=True)

    def close(self):
        with self.lock:
            self.closed = True
            while self.making:
                self.lock.wait(130)
            ready, self.ready = self.ready, []
        for w in ready:
            self._discard(w)
        for c in self.cleaners:
            c.join(60)


def _write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _line(tail, mark):
    i = tail.rfind(mark)
    j = tail.find(b"\n", i + 1) if i >= 0 else -1
    return tail[i:j + 1] if j >= 0 else b""


def _verdict(tail, mark):
    line = _line(tail, mark)
    if not line:
        return None
    try:
        v = json.loads(line[len(mark):-1])
    except ValueError:
        return None
    return v if isinstance(v, dict) else None

"""Programs that outlive one call of a framework's tool: what the LangGraph
and Pydantic AI adapters share.  Imports no framework.

Both frameworks answer an approval by running the tool again from the
start (LangGraph re-runs the node after Command(resume=...); Pydantic AI
calls the tool again with ctx.tool_call_approved).  Running the program
again would repeat its governed calls, so the program runs once, in a
tollgate session on a background thread, kept in a Jobs registry under a
stable key (the framework's tool call id).  A re-entry with the same key
finds it still parked and answers the parked call instead.

The programs of one conversation (LangGraph's thread_id, Pydantic AI's
conversation_id) share one session, so variables, imports and /tmp carry
over from one tool call to the next; a program started while another of
the same conversation still runs (parallel tool calls) gets a session of
its own, closed when it ends.

Nothing outlives its use: a job nobody has come back for in
`abandon_after` seconds (the graph or run was abandoned) has its parked
calls denied and its session closed, and so has a conversation's session
idle that long.  Jobs.close() (or the Sandbox's close()) ends them all.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Callable

from .. import InvalidArgument, Result, Sandbox, Session, TollgateSDKError

POLL = 0.05  # seconds between looks at the control socket for a parked call


@dataclasses.dataclass
class Parked:
    """A governed call of a job's program, parked by the gate for approval."""
    call_id: str
    tool: str
    args: dict[str, Any]
    reason: str
    container: str
    answered: bool = False

    def payload(self) -> dict[str, Any]:
        """What the framework shows whoever decides (JSON-safe)."""
        return {"type": "tollgate_approval", "call_id": self.call_id, "tool": self.tool,
                "args": self.args, "reason": self.reason, "container": self.container}


class Lease:
    """A session lent to one job: its conversation's, or one of its own."""

    def __init__(self, session: Session, conversation: str | None) -> None:
        self.session = session
        self.conversation = conversation  # None: the job's own, closed with it
        self.busy = False
        self.touched = time.monotonic()


class Job:
    """One program running in a session on a background thread."""

    def __init__(self, key: str, sandbox: Sandbox, code: str, timeout: float | None, lease: Lease,
                 release: Callable[[Lease, bool], None]) -> None:
        self.key = key
        self.sb = sandbox
        self.lease: Lease | None = lease
        self._release = release
        self.container = lease.session.cid or ""
        self.asked: list[Parked] = []     # parked calls shown to the framework, in order
        self.seen: set[str] = set()
        self.result: Result | None = None
        self.error: TollgateSDKError | None = None
        self.done = threading.Event()
        self.touched = time.monotonic()
        self.waiting = 0                  # callers inside wait(): never reaped then
        self._stopping = False            # abandon() began: the session goes, however the program ends
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(code, timeout), daemon=True,
                                        name="tollgate-job-" + key[:32])
        self._thread.start()

    def _run(self, code: str, timeout: float | None) -> None:
        broken = True
        lease = self.lease
        try:
            if lease is None:
                raise InvalidArgument("the job was stopped before its program started")
            self.result = lease.session.run(code, check=False, timeout=timeout)
            # A cell past its timeout was interrupted and the session lives
            # on; a lost interpreter or an OOM kill closed it.
            broken = lease.session.closed
        except TollgateSDKError as e:
            self.error = e
        finally:
            self.end(broken)
            self.done.set()

    def end(self, broken: bool) -> None:
        """Give the session back (closed when it was the job's own, or is
        broken, or the job was stopped)."""
        with self._lock:
            lease, self.lease = self.lease, None
            broken = broken or self._stopping
        if lease is not None:
            self._release(lease, broken)

    def wait(self) -> Parked | None:
        """Block until the program parks a call not yet shown (returned)
        or ends (None)."""
        self.waiting += 1
        try:
            while not self.done.wait(POLL):
                self.touched = time.monotonic()
                for p in self.sb.pending():
                    call = p.get("call")
                    if p.get("container") != self.container or not isinstance(call, str) or call in self.seen:
                        continue
                    self.seen.add(call)
                    args = p.get("args")
                    parked = Parked(call, str(p.get("tool") or ""), args if isinstance(args, dict) else {},
                                    str(p.get("reason") or ""), self.container)
                    self.asked.append(parked)
                    return parked
            return None
        finally:
            self.touched = time.monotonic()
            self.waiting -= 1

    def answer(self, parked: Parked, approve: bool, reason: str) -> None:
        """Approve or deny a parked call; a call that ended meanwhile (the
        gate's approval timeout) is left as it ended."""
        parked.answered = True
        self.touched = time.monotonic()
        self.sb.decide(parked.call_id, approve, reason[:500])

    def abandon(self, reason: str) -> None:
        """Deny whatever is parked and stop the program (its session,
        its conversation's too, is closed: the program was in it)."""
        # First: a program that ends of the denial below (it often does,
        # at once) must not hand its session back to the conversation.
        with self._lock:
            self._stopping = True
        for p in self.asked:
            if not p.answered:
                self.answer(p, False, reason)
        self.end(True)
        self.done.wait(30)


class Jobs:
    """The jobs of one adapter, by key, with the reaper for abandoned ones."""

    def __init__(self, sandbox: Sandbox, abandon_after: float, framework: str) -> None:
        if not isinstance(sandbox, Sandbox):
            raise InvalidArgument("%s: sandbox must be a tollgate_sdk.Sandbox, not %r" % (framework, sandbox))
        if sandbox.approval is not None:
            # Its own watcher would answer the parked calls before the framework saw them.
            raise InvalidArgument("%s decides approvals here: create the Sandbox with approval=None "
                                  "(its approval=%r would answer parked calls first)" % (framework, sandbox.approval))
        if isinstance(abandon_after, bool) or not isinstance(abandon_after, (int, float)) or abandon_after <= 0:
            raise InvalidArgument("abandon_after must be seconds, more than 0, not %r" % (abandon_after,))
        self.sb = sandbox
        self.abandon_after = float(abandon_after)
        self.framework = framework
        self._jobs: dict[str, Job] = {}
        self._sessions: dict[str, Lease] = {}   # by conversation
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None
        self._stop = threading.Event()

    def get(self, key: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(key)
        if job is not None:
            job.touched = time.monotonic()
        return job

    def _lease(self, conversation: str | None) -> Lease:
        """The conversation's session when it is free, else a new one."""
        with self._lock:
            lease = self._sessions.get(conversation) if conversation else None
            if lease is not None and not lease.busy and not lease.session.closed:
                lease.busy = True
                return lease
        lease = Lease(self.sb.session(), None)
        lease.busy = True
        if conversation:
            with self._lock:
                if conversation not in self._sessions or self._sessions[conversation].session.closed:
                    lease.conversation = conversation
                    self._sessions[conversation] = lease
        return lease

    def _give_back(self, lease: Lease, broken: bool) -> None:
        lease.touched = time.monotonic()
        if lease.conversation is not None and not broken and not lease.session.closed:
            lease.busy = False
            return
        with self._lock:
            if lease.conversation is not None and self._sessions.get(lease.conversation) is lease:
                del self._sessions[lease.conversation]
        lease.session.close()

    def start(self, key: str, conversation: str | None, code: str, timeout: float | None) -> Job:
        """Run code under key, in the conversation's session (None: a
        session of its own)."""
        job = Job(key, self.sb, code, timeout, self._lease(conversation), self._give_back)
        with self._lock:
            old = self._jobs.get(key)
            self._jobs[key] = job
            if self._reaper is None or not self._reaper.is_alive():
                self._stop.clear()
                self._reaper = threading.Thread(target=self._reap, daemon=True, name="tollgate-jobs-reaper")
                self._reaper.start()
        if old is not None:
            old.abandon("replaced by a new run of the same tool call (%s)" % self.framework)
        return job

    def finish(self, job: Job) -> None:
        """The job's outcome was handed to the framework: forget it."""
        with self._lock:
            if self._jobs.get(job.key) is job:
                del self._jobs[job.key]

    def live(self) -> int:
        """Programs running or parked now."""
        with self._lock:
            return len(self._jobs)

    def sessions(self) -> int:
        """Sessions kept for conversations now."""
        with self._lock:
            return len(self._sessions)

    def _reap(self) -> None:
        period = min(5.0, max(0.2, self.abandon_after / 4))
        while not self._stop.wait(period):
            now = time.monotonic()
            with self._lock:
                stale = [j for j in self._jobs.values()
                         if j.waiting == 0 and now - j.touched > self.abandon_after]
                for j in stale:
                    del self._jobs[j.key]
                quiet = [c for c, lease in self._sessions.items()
                         if not lease.busy and now - lease.touched > self.abandon_after]
                leases = [self._sessions.pop(c) for c in quiet]
            for j in stale:
                j.abandon("abandoned: nobody came back through %s within %g s" % (self.framework,
                                                                               self.abandon_after))
            for lease in leases:
                lease.session.close()
            with self._lock:
                if not self._jobs and not self._sessions:
                    self._reaper = None
                    return

    def close(self) -> None:
        """Deny what is parked and stop every program; forget them."""
        self._stop.set()
        with self._lock:
            jobs = list(self._jobs.values())
            self._jobs.clear()
        for j in jobs:
            j.abandon("closed: the %s adapter was closed" % self.framework)
        with self._lock:
            leases = list(self._sessions.values())
            self._sessions.clear()
        for lease in leases:
            lease.session.close()


def decision(answer: object, parked: Parked, framework: str) -> tuple[bool, str]:
    """A framework's answer -> (approve?, reason).  True, "approve",
    {"approve": True, "reason": ...} approve; False, "deny" and the like
    deny; anything else denies and says why (never approves).  An answer
    naming another call_id denies: it was meant for another call."""
    reason = ""
    if isinstance(answer, dict):
        other = answer.get("call_id")
        if other is not None and other != parked.call_id:
            return False, ("denied: the answer through %s named call %s, but %s was parked"
                           % (framework, other, parked.call_id))
        reason = str(answer.get("reason") or "")
        answer = answer.get("approve", answer.get("decision"))
    if isinstance(answer, str):
        word = answer.strip().lower()
        if word in ("allow", "approve", "approved", "yes", "y"):
            return True, reason or "approved through " + framework
        if word in ("deny", "denied", "no", "n", "reject"):
            return False, reason or "denied through " + framework
    elif answer is True or answer is False:
        return answer, reason or ("approved" if answer else "denied") + " through " + framework
    return False, ("denied: %s gave %r, which is not an answer (use True/False, \"approve\"/\"deny\" or "
                   "{\"approve\": bool, \"reason\": str})" % (framework, answer))


def report(job: Job) -> str:
    """The program's outcome as the model reads it."""
    if job.error is not None or job.result is None:
        return "tollgate could not run the program: %s" % (job.error or "it ended without a result")
    r = job.result
    parts = []
    if r.stdout:
        parts.append("stdout:\n" + r.stdout.rstrip("\n"))
    if r.stderr.strip():
        parts.append("stderr:\n" + r.stderr.rstrip("\n"))
    calls = ["  %s %s: %s (%s, %s)" % (c.tool, c.args, c.decision, c.approver, c.outcome) for c in r.calls]
    if calls:
        parts.append("governed calls:\n" + "\n".join(calls))
    parts.append("exit status %d%s; audit log: %s" % (r.exit_status, " (timed out)" if r.timed_out else "",
                                                      r.audit_log))
    return "\n".join(parts)



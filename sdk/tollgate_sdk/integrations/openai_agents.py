"""The OpenAI Agents SDK (openai-agents, import name `agents`) with
tollgate as its code-execution tool (docs/integrations.md, "OpenAI Agents
SDK").

    from agents import Agent, Runner
    from tollgate_sdk import tool
    from tollgate_sdk.integrations.openai_agents import TollgateCodeTool

    code = TollgateCodeTool(tools=[get_order, issue_refund], runtime="runsc")
    agent = Agent(name="ops", tools=[code.tool])
    result = await Runner.run(agent, "refund A-1004")
    while result.interruptions:              # a governed call parked for approval
        state = result.to_state()
        for item in result.interruptions:
            print(code.pending(item))        # tollgate's parked call: tool, args, rule's reason
            state.approve(item)              # or state.reject(item)
        result = await Runner.run(agent, state)
    code.close()

The model gets one function tool (`run_python`, a `code` argument) whose
programs run in one tollgate session: a hardened runsc (or runc)
container with one Python interpreter, so variables, imports and /tmp
carry over from call to call.  The host functions given as `tools=` are
the program's only way out (`from tollgate import NAME`), each call
decided by the gate (policy, budgets, audit log).

A call the gate parks for approval becomes the Agents SDK's own approval
interruption.  The SDK asks `needs_approval` before it runs a tool, so
that is where the program starts: on a thread of its own, and
`needs_approval` waits until it either ends (no approval needed: the tool
then returns its result) or has a call parked (approval needed: the run
stops with a ToolApprovalItem for the `run_python` call).  The program
stays parked in the session while the run is interrupted.  On resume the
SDK invokes the tool only if the person approved, and the tool then
approves the parked call and returns what the program did.  A rejected
call is never invoked, so the person's answer is also read where the SDK
asks the tool anything with the resumed run's context (`is_enabled`, which
it asks for the tool list of the resumed turn, `needs_approval`, the
invocation): a rejection denies the parked call, with the rejection
message as the reason, and the program goes on with `ToolDenied`.

One interruption per program: a second call of the same program parked
after the first approval is denied, with a reason telling the model to
make that call in a new `run_python` call (which asks the person again).
"Always approve" (`state.approve(item, always_approve=True)`) approves
every later parked call of this tool's programs.

Nothing outlives an abandoned run for long: a parked call waits at most
`approval_timeout` (default 300 s; the gate denies it then, and the
program goes on), every program at most `timeout` plus that wait, and
`close()` (or `with`, or the interpreter's exit through the Sandbox)
denies whatever is parked and removes the session's container.
"""
from __future__ import annotations

import asyncio
import collections
import json
import threading
import time
from typing import Any, Callable, Iterable

from agents import FunctionTool, RunContextWrapper, ToolApprovalItem
from agents.tool_context import ToolContext

from .. import (ApprovalRequest, ContainerError, InvalidArgument, PolicyError, Result, Sandbox,
                SandboxUnavailable, Session, SessionLimit, TollgateSDKError)
from ..mcp._describe import REFUSALS, effective_policy, session_keeps, tools_text

__all__ = ["TollgateCodeTool"]

DEFAULT_APPROVAL_TIMEOUT = 300.0
# The host's problems, raised out of the run rather than told to the model.
HOST_ERRORS = (SandboxUnavailable, ContainerError, PolicyError, SessionLimit)
KEEP_FINISHED = 16          # finished programs kept for a late resume of their run
OUTPUT_FOR_MODEL = 16000    # characters of stdout (and of stderr) the model is given

# Said to the program (and through it the model) when the adapter denies a
# parked call itself, not a person.
ONE_APPROVAL = ("this program already waited for one approval; one %(tool)s call asks the person "
                "once: make this call in a new %(tool)s call")
NOT_ASKED = ("this call needs a person's approval, and this %(tool)s call could not ask for it: "
             "make the call in a new %(tool)s call")
NOBODY_WAITING = "no run of the agent is waiting for this call (the tool was closed or the run ended)"
REJECTED = "rejected by a person (the Agents SDK's state.reject)"


class _Job:
    """One program: its thread, the call it has parked (if any) and its end."""

    def __init__(self, call_id: str, code: str, auto_approve: bool, interruptible: bool) -> None:
        self.call_id = call_id
        self.code = code
        self.auto_approve = auto_approve    # "always approve" was the person's answer for this tool
        # Started by needs_approval, so a parked call can still stop the run
        # (started by the invocation, nobody would see it: denied at once).
        self.interruptible = interruptible
        self.asked = False                  # the person was asked once already
        self.parked: ApprovalRequest | None = None
        self.answer: tuple[bool, str] | None = None
        self.result: Result | None = None
        self.error = ""                     # the session failed (not the program): said to the model
        self.exc: TollgateSDKError | None = None  # the host's problem (no runsc, a bad policy): raised
        self.new_session = False            # the program ran in a session opened for it after a loss
        self.done = False
        self.claimed = False                # its output went to the model
        self.thread: threading.Thread | None = None


class TollgateCodeTool:
    """A code-execution tool for the Agents SDK backed by one tollgate
    session (`.tool` is the FunctionTool to give an Agent).

    tools           host functions (@tool, plain, Tool, LangChain-shaped):
                    the program's governed way out, as for Sandbox
    sandbox         a Sandbox to use instead of making one (its approval
                    must be None: approvals go through the Agents SDK)
    name            the function tool's name (default run_python)
    description     what the model reads (default: the governed tools,
                    their signatures and budgets, how to call them)
    timeout         seconds a program may run, not counting the wait for
                    an approval (default 120)
    approval_timeout  seconds a parked call waits for the person (default
                    300; the gate denies it then)
    **options       the Sandbox's other options (policy=, budgets=,
                    runtime=, audit_dir=, memory=, ...), when no sandbox=
    """

    def __init__(self, tools: Iterable[object] = (), *, sandbox: Sandbox | None = None,
                 name: str = "run_python", description: str | None = None, timeout: float = 120,
                 approval_timeout: float | None = None, **options: Any) -> None:
        if "approval" in options:
            raise InvalidArgument("TollgateCodeTool takes no approval=: a parked call becomes the Agents "
                                  "SDK's approval interruption (result.interruptions); answer it with "
                                  "state.approve(item) or state.reject(item) and run the state again")
        if sandbox is not None:
            tools = list(tools)
            if tools or options:
                raise InvalidArgument("give either sandbox= or the Sandbox's tools and options "
                                      "(tools=, %s), not both" % ", ".join(sorted(options)) if options
                                      else "give either sandbox= or tools=, not both: the Sandbox "
                                      "already has its tools")
            if not isinstance(sandbox, Sandbox):
                raise InvalidArgument("sandbox= takes a tollgate_sdk.Sandbox, not %s" % type(sandbox).__name__)
            if sandbox.approval is not None:
                raise InvalidArgument("the Sandbox given has approval=%r; make it with approval=None: "
                                      "TollgateCodeTool answers parked calls with the Agents SDK's "
                                      "interruptions" % (sandbox.approval,))
            if sandbox.root:
                raise InvalidArgument("the Sandbox given has started already; give TollgateCodeTool a "
                                      "new one (it installs its own approval callback before start)")
            self.sandbox = sandbox
            self._owns_sandbox = False
        else:
            self.sandbox = Sandbox(tools, **options)
            self._owns_sandbox = True
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidArgument("timeout=%r: seconds a program may run, more than 0" % (timeout,))
        if approval_timeout is None:
            approval_timeout = self.sandbox.approval_timeout or DEFAULT_APPROVAL_TIMEOUT
        if isinstance(approval_timeout, bool) or not isinstance(approval_timeout, (int, float)) \
                or approval_timeout <= 0:
            raise InvalidArgument("approval_timeout=%r: seconds a parked call waits, more than 0"
                                  % (approval_timeout,))
        self.timeout = float(timeout)
        self.approval_timeout = float(approval_timeout)
        # The gate's own timeout is the deadline that holds whatever this
        # object does: an abandoned run's parked call is denied by then.
        self.sandbox.approval_timeout = self.approval_timeout
        self.sandbox.approval = self._on_parked
        self.name = name
        self._description = description
        self._lock = threading.Condition()
        self._jobs: collections.OrderedDict[str, _Job] = collections.OrderedDict()
        self._current: _Job | None = None
        self._session: Session | None = None
        self._closed = False
        self._tool: FunctionTool | None = None

    # ---- what the Agent gets ------------------------------------------------

    @property
    def tool(self) -> FunctionTool:
        """The Agents SDK function tool: `Agent(tools=[code.tool])`."""
        if self._tool is None:
            self._tool = FunctionTool(
                name=self.name,
                description=self.description(),
                params_json_schema={
                    "type": "object",
                    "properties": {"code": {"type": "string",
                                            "description": "the Python 3 program to run"}},
                    "required": ["code"],
                    "additionalProperties": False,
                },
                on_invoke_tool=self._invoke,
                strict_json_schema=True,
                is_enabled=self._is_enabled,
                needs_approval=self._needs_approval,
            )
        return self._tool

    def description(self) -> str:
        """What the model reads about the tool."""
        if self._description is not None:
            return self._description
        policy = effective_policy(self.sandbox)
        return "\n".join([
            "Run a Python 3 program in a hardened sandbox (gVisor, no network; at most %g s of "
            "running). Its only way out is the governed host tools below; every call is checked "
            "by policy on the host and audited." % self.timeout,
            tools_text(policy, "a person, asked through this run"),
            REFUSALS,
            "One session for all calls: " + session_keeps() + ".",
            "Returns the exit status, stdout, stderr and every governed call with its decision.",
        ])

    # ---- what the host program asks ----------------------------------------

    def pending(self, item: ToolApprovalItem | str) -> ApprovalRequest | None:
        """The call tollgate parked for the interruption `item` (a
        ToolApprovalItem of result.interruptions, or its call_id): the
        tool, its arguments and the rule's reason, for the person to read.
        None when the program behind it has no call parked."""
        call_id = item if isinstance(item, str) else item.call_id
        with self._lock:
            job = self._jobs.get(call_id or "")
            return job.parked if job is not None and job.answer is None else None

    def result(self, call_id: str) -> Result | None:
        """The tollgate Result of the program run for the tool call
        call_id (stdout, governed calls, audit log), once it has ended."""
        with self._lock:
            job = self._jobs.get(call_id)
            return job.result if job is not None and job.done else None

    def close(self) -> None:
        """Deny every parked call, end the session (its container is
        removed) and, when this object made the Sandbox, close it."""
        with self._lock:
            self._closed = True
            for job in self._jobs.values():
                if job.parked is not None and job.answer is None:
                    job.answer = (False, NOBODY_WAITING)
            self._lock.notify_all()
            threads = [j.thread for j in self._jobs.values() if j.thread is not None]
        # The programs go on from their denial; a bounded wait for them
        # first, so the session is not pulled from under a running cell.
        deadline = time.monotonic() + 10
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._owns_sandbox:
            self.sandbox.close()

    def __enter__(self) -> TollgateCodeTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the Agents SDK's calls -----------------------------------------------

    async def _needs_approval(self, ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        """Start the program (once per call_id) and wait until it ends or
        parks a call: a parked call is the approval the run stops for."""
        self._sweep(ctx)
        job = self._job_for(call_id, params.get("code"), auto_approve=False, interruptible=True)
        await asyncio.to_thread(self._wait, job, lambda: job.done or job.parked is not None)
        with self._lock:
            if job.done or job.parked is None or job.answer is not None:
                return False
            job.asked = True
            return True

    async def _invoke(self, ctx: ToolContext[Any], args: str) -> str:
        """The approved (or never parked) call: answer the parked call
        approved and return what the program did."""
        self._sweep(ctx)
        try:
            parsed = json.loads(args) if args else {}
        except ValueError:
            parsed = {}
        code = parsed.get("code") if isinstance(parsed, dict) else None
        always = self._always_approved(ctx)
        job = self._job_for(ctx.tool_call_id, code, auto_approve=always, interruptible=False)
        with self._lock:
            if always:
                job.auto_approve = True
            if job.parked is not None and job.answer is None:
                job.answer = (True, "approved by a person (the Agents SDK's state.approve)")
                self._lock.notify_all()
        await asyncio.to_thread(self._wait, job, lambda: job.done)
        with self._lock:
            job.claimed = job.done
        if job.exc is not None:
            # Nothing ran and the model cannot fix it: the run ends with the
            # SDK's error, for the host program to see and fix.
            raise job.exc
        return self._output(job)

    def _is_enabled(self, ctx: RunContextWrapper[Any], agent: object) -> bool:
        # The SDK asks this for the tool list of every turn, the resumed
        # one too: the one place a rejected call's answer is seen for sure.
        self._sweep(ctx)
        return True

    def _sweep(self, ctx: RunContextWrapper[Any]) -> None:
        """Deny each parked call the person has rejected in this run's
        context (state.reject).  Approvals are answered by the invocation
        alone, which the SDK makes only in the run that owns the call: an
        "always approve" in another run's context says True for any call
        id, and must not approve this one."""
        with self._lock:
            for job in self._jobs.values():
                if job.parked is None or job.answer is not None:
                    continue
                if ctx.is_tool_approved(self.name, job.call_id) is False:
                    why = ctx.get_rejection_message(self.name, job.call_id) or REJECTED
                    job.answer = (False, why)
            self._lock.notify_all()

    def _always_approved(self, ctx: RunContextWrapper[Any]) -> bool:
        """Whether the person chose "always approve" for this tool: then a
        call id never seen is approved too."""
        return ctx.is_tool_approved(self.name, "tollgate-probe-%d" % id(self)) is True

    # ---- programs ---------------------------------------------------------

    def _job_for(self, call_id: str, code: object, auto_approve: bool, interruptible: bool) -> _Job:
        """The program of call_id, started now if it was not."""
        with self._lock:
            job = self._jobs.get(call_id)
            # The same call id again after its output went to the model (or
            # with other code) is a new call: a scripted model, or a model
            # that reuses ids, must not be given an old program's output.
            if job is not None and not (job.done and (job.claimed or (isinstance(code, str)
                                                                       and code != job.code))):
                return job
            self._jobs.pop(call_id, None)
            job = _Job(call_id, code if isinstance(code, str) else "", auto_approve, interruptible)
            self._jobs[call_id] = job
            self._forget_old()
            if self._closed:
                self._finish(job, error="the tool was closed (TollgateCodeTool.close()); nothing ran")
            elif not isinstance(code, str) or not code.strip():
                self._finish(job, error='the call needs "code": the Python program to run; nothing ran')
            elif self._current is not None and self._current.parked is not None \
                    and self._current.answer is None:
                self._finish(job, error="another program of this session waits for a person's approval "
                             "(tool call %s); nothing ran: try again once it is answered"
                             % self._current.call_id)
            else:
                job.thread = threading.Thread(target=self._run, args=(job,), daemon=True,
                                              name="tollgate-openai-agents")
                job.thread.start()
            return job

    def _forget_old(self) -> None:
        done = [k for k, j in self._jobs.items() if j.done]
        for k in done[:max(0, len(done) - KEEP_FINISHED)]:
            del self._jobs[k]

    def _run(self, job: _Job) -> None:
        with self._lock:
            # One program at a time in the one interpreter: a program the
            # person rejected a call of is still finishing.
            while self._current is not None and not self._closed:
                self._lock.wait(0.5)
            if self._closed:
                self._finish(job, error="the tool was closed (TollgateCodeTool.close()); nothing ran")
                return
            self._current = job
        result: Result | None = None
        error = ""
        try:
            session = self._session
            if session is None or session.closed:
                job.new_session = session is not None
                session = self._session = self.sandbox.session()
            result = session.run(job.code, check=False, timeout=self.timeout + self.approval_timeout)
        except TollgateSDKError as e:
            error = "%s: %s" % (type(e).__name__, e)
            if isinstance(e, HOST_ERRORS):
                job.exc = e
            pr = getattr(e, "result", None)
            if isinstance(pr, Result):
                result = pr
        finally:
            with self._lock:
                self._current = None
                self._finish(job, result=result, error=error)

    def _finish(self, job: _Job, result: Result | None = None, error: str = "") -> None:
        # with self._lock held
        job.result, job.error, job.done = result, error, True
        self._lock.notify_all()

    def _wait(self, job: _Job, ready: Callable[[], bool]) -> None:
        """Block (on a worker thread) until ready(); bounded by the longest
        a program may take."""
        deadline = time.monotonic() + self.timeout + self.approval_timeout + 60
        with self._lock:
            while not ready() and not self._closed and time.monotonic() < deadline:
                self._lock.wait(0.5)

    def _on_parked(self, req: ApprovalRequest) -> tuple[bool, str]:
        """The Sandbox's approval callback (on the SDK's decider thread):
        park the request on the program it belongs to until the person's
        answer arrives through the Agents SDK, or the deadline."""
        deadline = time.monotonic() + self.approval_timeout
        with self._lock:
            job = self._current
            if job is None or self._closed:
                return False, NOBODY_WAITING
            if job.auto_approve:
                return True, "approved: the person chose to always approve %s" % self.name
            if not job.interruptible:
                return False, NOT_ASKED % {"tool": self.name}
            if job.asked or job.parked is not None:
                return False, ONE_APPROVAL % {"tool": self.name}
            job.parked = req
            self._lock.notify_all()
            while job.answer is None and time.monotonic() < deadline:
                self._lock.wait(0.5)
            answer = job.answer or (False, "nobody answered within %g s (approval_timeout)"
                                    % self.approval_timeout)
            job.answer = answer
            job.asked = True
            return answer

    # ---- what the model reads ----------------------------------------------

    def _output(self, job: _Job) -> str:
        r = job.result
        lines: list[str] = []
        if job.new_session:
            lines.append("(the session's interpreter had ended: this ran in a new one, so earlier "
                         "variables are gone)")
        if r is None:
            return "\n".join(lines + ["error: " + (job.error or "the tool was closed (TollgateCodeTool.close()) "
                                                 "while the program ran")])
        status = "exit status %d" % r.exit_status
        if r.timed_out:
            status += " (interrupted: it ran past its time)"
        lines.append(status)
        lines.append("stdout:\n" + _cut(r.stdout))
        if r.stderr.strip():
            lines.append("stderr:\n" + _cut(r.stderr))
        if r.calls:
            lines.append("governed calls:")
            for c in r.calls:
                what = c.decision or "?"
                if c.approver.startswith("uid:") and not c.refused:
                    what += " (approved by a person, %s)" % c.approver
                if c.refused and c.reason:
                    what += " (%s)" % c.reason
                elif c.outcome and c.outcome != "ok":
                    what += ", %s" % c.outcome
                lines.append("- %s %s: %s" % (c.tool, json.dumps(c.args, sort_keys=True), what))
        if job.error:
            lines.append("error: " + job.error)
        return "\n".join(lines)


def _cut(text: str) -> str:
    if len(text) <= OUTPUT_FOR_MODEL:
        return text
    return text[:OUTPUT_FOR_MODEL] + "\n[%d more characters cut]" % (len(text) - OUTPUT_FOR_MODEL)

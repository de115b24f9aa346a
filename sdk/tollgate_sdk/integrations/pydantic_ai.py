"""Pydantic AI: a toolset whose run_python tool runs model-written Python in
tollgate; a call the gate parks for approval becomes one of Pydantic AI's
deferred tool requests (ApprovalRequired), answered with
DeferredToolResults (docs/integrations.md, Pydantic AI).

    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
    from tollgate_sdk import Sandbox
    from tollgate_sdk.integrations.pydantic_ai import TollgateToolset

    code = TollgateToolset(Sandbox(tools=[lookup, refund]))     # approval=None
    agent = Agent(model, toolsets=[code], output_type=[str, DeferredToolRequests])
    r = agent.run_sync("...")
    while isinstance(r.output, DeferredToolRequests):           # a parked call
        call = r.output.approvals[0]
        parked = r.output.metadata[call.tool_call_id]["tollgate"]   # tool, args, reason
        r = agent.run_sync(message_history=r.all_messages(), deferred_tool_results=
                           DeferredToolResults(approvals={call.tool_call_id: True}))  # or ToolDenied("why")

Pydantic AI calls the tool again when the call is approved, so the
program is not started again: it runs once in a tollgate session in the
background (one per conversation_id, so variables carry over between
calls, unless keep_state=False), kept under the tool call's id, and the second call approves
its parked call and waits for the next one (the same tool call id can be
deferred again, once per parked call).  To deny one governed call and
let the program go on, approve the tool call with metadata
{"tollgate": {"approve": False, "reason": "..."}}.  A denial is not a call of the
tool: the toolset finds it (the tool return marked "denied") when the
resumed run next lists its tools, denies the parked call with the
denial's message and stops the program, whose output the model is not
shown.  A program nobody resumes within abandon_after seconds has its
parked calls denied and its session closed; close() ends them all.
"""
from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .. import Sandbox
from ._jobs import Job, Jobs, decision, report

__all__ = ["TollgateToolset"]

FRAMEWORK = "Pydantic AI"
DESCRIPTION = ("Run Python code in an isolated sandbox and return its output. The only way out is the "
               "governed tools, imported as `from tollgate import NAME` and called with keyword "
               "arguments; a refused call raises tollgate.ToolDenied.")


class TollgateToolset(FunctionToolset[Any]):
    """A FunctionToolset with one tool (run_python by default).

    sandbox        a Sandbox with approval=None (the run's deferred tool
                   results decide)
    name, description   the tool's, as the model sees them
    timeout        seconds a program may run (default: the Sandbox's)
    abandon_after  seconds a parked program waits for the run to be
                   resumed before its calls are denied and it is stopped
                   (and a conversation's session is kept while idle)
    keep_state     the programs of one conversation_id share a session,
                   so variables carry over (False: a fresh session each)
    """

    def __init__(self, sandbox: Sandbox, *, name: str = "run_python", description: str = DESCRIPTION,
                 timeout: float | None = None, abandon_after: float = 600, keep_state: bool = True,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.jobs = Jobs(sandbox, abandon_after, FRAMEWORK)
        self.keep_state = bool(keep_state)
        self.program_timeout = timeout  # not FunctionToolset.timeout: that one would cut the wait for approval short

        def run_python(ctx: RunContext[Any], code: str) -> str:
            """code: the Python program to run; print what you want to see"""
            return self.run_code(ctx, code)

        self.add_function(run_python, takes_ctx=True, name=name, description=description)

    def run_code(self, ctx: RunContext[Any], code: str) -> str:
        """The tool's body: start the program, or (approved) answer its
        parked call; then wait until it parks again or ends."""
        key = ctx.tool_call_id or ""
        job = self.jobs.get(key)
        if ctx.tool_call_approved:
            waiting = [p for p in job.asked if not p.answered] if job is not None else []
            if job is None or not waiting:
                # The approval was for a program that is gone (abandoned,
                # or another process): it approves nothing now.
                return ("tollgate did not run anything: the approval was for an earlier run of this tool "
                        "call, which ended (abandoned after %g s, or lost with its process); call the tool "
                        "again to start afresh" % self.jobs.abandon_after)
            # Approving the tool call lets the program go on; metadata
            # {"tollgate": {"approve": False, "reason": ...}} still denies
            # the one governed call (the program sees ToolDenied and goes
            # on too), where ToolDenied would stop the program.
            meta = (ctx.tool_call_metadata or {}).get("tollgate") if isinstance(
                ctx.tool_call_metadata, dict) else None
            answer: object = meta if isinstance(meta, dict) and "approve" in meta else True
            job.answer(waiting[0], *decision(answer, waiting[0], FRAMEWORK))
        elif job is None:
            conversation = ctx.conversation_id if self.keep_state else None
            job = self.jobs.start(key, conversation or None, code, self.program_timeout)
        return self._wait(job)

    def _wait(self, job: Job) -> str:
        parked = job.wait()
        if parked is not None:
            raise ApprovalRequired(metadata={"tollgate": parked.payload()})
        self.jobs.finish(job)
        return report(job)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        self._sweep_denials(ctx)
        return await super().get_tools(ctx)

    def _sweep_denials(self, ctx: RunContext[Any]) -> None:
        """Deny the parked calls whose tool call the run's approver denied
        (Pydantic AI answers those itself, without calling the tool)."""
        if not self.jobs.live():
            return
        # Only the latest request: the resumed run puts the answers to its
        # deferred calls there, and an older denial of a reused tool call
        # id must not stop a newer program.
        last = next((m for m in reversed(ctx.messages) if isinstance(m, ModelRequest)), None)
        if last is not None:
            for part in last.parts:
                if not isinstance(part, ToolReturnPart) or part.outcome != "denied":
                    continue
                job = self.jobs.get(part.tool_call_id)
                if job is None:
                    continue
                job.abandon("denied through %s: %s" % (FRAMEWORK, part.model_response_str()))
                self.jobs.finish(job)

    def live(self) -> int:
        """Programs running or parked now."""
        return self.jobs.live()

    def sessions(self) -> int:
        """Sessions kept for conversations now."""
        return self.jobs.sessions()

    def close(self) -> None:
        """Deny every parked call and stop every program of this toolset."""
        self.jobs.close()

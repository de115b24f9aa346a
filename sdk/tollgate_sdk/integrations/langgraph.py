"""LangGraph: a LangChain tool that runs model-written Python in tollgate,
whose parked calls become LangGraph interrupts (docs/integrations.md,
LangGraph).

    from langgraph.types import Command
    from tollgate_sdk import Sandbox
    from tollgate_sdk.integrations.langgraph import TollgateCodeTool

    code = TollgateCodeTool(Sandbox(tools=[lookup, refund]))   # approval=None
    graph = builder.compile(checkpointer=InMemorySaver())       # ToolNode([code.tool])
    out = graph.invoke(inputs, config)            # out["__interrupt__"][0].value: the parked call
    out = graph.invoke(Command(resume=True), config)            # approve it (False: deny)

A resume value is True/False, "approve"/"deny", or {"approve": bool,
"reason": str, "call_id": ...}; anything else denies.  LangGraph re-runs
the node from its start on resume, so the program is not started again:
it runs once in a tollgate session in the background, kept under the
graph's thread_id and the tool call's id, and the re-run answers its
parked call.  The programs of one thread_id share a session (variables,
imports and /tmp carry over) unless keep_state=False.  A program nobody resumes within abandon_after seconds has
its parked calls denied and its session closed; close() ends them all.
The graph needs a checkpointer (interrupt() does).
"""
from __future__ import annotations

from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.types import interrupt
from pydantic import BaseModel, Field

from .. import Sandbox
from ._jobs import Jobs, decision, report

__all__ = ["TollgateCodeTool"]

FRAMEWORK = "LangGraph"
DESCRIPTION = ("Run Python code in an isolated sandbox and return its output. The only way out is the "
               "governed tools, imported as `from tollgate import NAME` and called with keyword "
               "arguments; a refused call raises tollgate.ToolDenied.")


class CodeArgs(BaseModel):
    code: str = Field(description="the Python program to run; print what you want to see")
    tool_call_id: Annotated[str, InjectedToolCallId]


class TollgateCodeTool:
    """Holds the programs of one Sandbox's tool; .tool is the LangChain
    tool to give ToolNode or bind to a model.

    sandbox        a Sandbox with approval=None (the graph decides)
    name, description   the tool's, as the model sees them
    timeout        seconds a program may run (default: the Sandbox's)
    abandon_after  seconds a parked program waits for the graph to come
                   back before its calls are denied and it is stopped (and
                   a thread's session is kept while idle)
    keep_state     the programs of one thread_id share a session, so
                   variables carry over (False: a fresh session each)
    """

    def __init__(self, sandbox: Sandbox, *, name: str = "run_python", description: str = DESCRIPTION,
                 timeout: float | None = None, abandon_after: float = 600, keep_state: bool = True) -> None:
        self.jobs = Jobs(sandbox, abandon_after, FRAMEWORK)
        self.timeout = timeout
        self.keep_state = bool(keep_state)

        def run_python(code: str, tool_call_id: str, config: RunnableConfig) -> str:
            return self.run(code, tool_call_id, config)

        self.tool: BaseTool = StructuredTool.from_function(
            func=run_python, name=name, description=description, args_schema=CodeArgs)

    def run(self, code: str, tool_call_id: str, config: RunnableConfig | None = None) -> str:
        """The tool's body (inside a graph node: it may interrupt)."""
        thread = str(((config or {}).get("configurable") or {}).get("thread_id") or "")
        key = "%s/%s" % (thread, tool_call_id)
        job = self.jobs.get(key)
        started_here = job is None
        if job is None:
            job = self.jobs.start(key, thread if self.keep_state and thread else None, code, self.timeout)
        # The re-run after Command(resume=...): ask again, in order, every
        # call asked before; interrupt() hands back the answers it has.
        for parked in list(job.asked):
            answer = interrupt(parked.payload())
            if not parked.answered:
                job.answer(parked, *decision(answer, parked, FRAMEWORK))
        while True:
            new = job.wait()
            if new is None:
                break
            answer = interrupt(new.payload())   # the first time, this ends the node
            if started_here:
                # interrupt() returned for a call first shown in this very
                # run: the answer was given to an earlier program of this
                # tool call that is gone (abandoned, or another process).
                # It was never about this call, so the call is denied and
                # the program stopped rather than repeated half-way.
                job.abandon("denied: the answer through %s was for an earlier run of this tool call, "
                            "which is gone" % FRAMEWORK)
                self.jobs.finish(job)
                return ("tollgate stopped this program: the approval it was resumed with belonged to an "
                        "earlier run of this tool call, which ended (abandoned after %g s, or lost with "
                        "its process); call the tool again to start afresh" % self.jobs.abandon_after)
            job.answer(new, *decision(answer, new, FRAMEWORK))
        self.jobs.finish(job)
        return report(job)

    def live(self) -> int:
        """Programs running or parked now."""
        return self.jobs.live()

    def sessions(self) -> int:
        """Sessions kept for threads now."""
        return self.jobs.sessions()

    def close(self) -> None:
        """Deny every parked call and stop every program of this tool."""
        self.jobs.close()

    def __enter__(self) -> TollgateCodeTool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

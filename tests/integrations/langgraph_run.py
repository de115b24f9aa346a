"""LangGraph with tollgate, one backend per run: a graph whose model node
is langchain-core's scripted chat model, whose tool node runs the code in
tollgate; parked calls are interrupts resumed with Command(resume=...).

Usage: langgraph_run.py BACKEND WORKDIR    (as root, after `make`)
Prints ok/FAIL lines for tests/integration/test_int_langgraph_pydantic_ai.sh.
"""
import asyncio
import time

import common
from common import check
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from tollgate_sdk import InvalidArgument, live_sessions
from tollgate_sdk.integrations.langgraph import TollgateCodeTool


def graph(code_tool, program, call_id="call-1"):
    """agent (scripted: one tool call with program, then "done") -> tools -> agent."""
    model = GenericFakeChatModel(messages=iter([
        AIMessage("", tool_calls=[{"name": code_tool.tool.name, "args": {"code": program}, "id": call_id}]),
        AIMessage("done")]))

    def agent(state):
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([code_tool.tool]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=InMemorySaver())


def parked(out):
    """The payload of the graph's pending interrupt, or None."""
    intr = out.get("__interrupt__") or []
    return intr[0].value if intr else None


def tool_text(out):
    return next((m.content for m in out["messages"] if isinstance(m, ToolMessage)), "")


sb = common.sandbox("langgraph")
t0 = time.monotonic()
try:
    # ---- the program: allowed, denied by policy, two approvals -------------
    code = TollgateCodeTool(sb)
    g = graph(code, common.PROGRAM)
    cfg = {"configurable": {"thread_id": "lg-1"}}
    out = g.invoke({"messages": [("user", "refund A-1 and A-2")]}, cfg)
    p = parked(out)
    check("the first parked call is an interrupt naming issue_refund 80",
          p is not None and p["type"] == "tollgate_approval" and p["tool"] == "issue_refund"
          and p["args"].get("amount") == 80, out)
    check("nothing was refunded while it is parked", common.refunds == [], common.refunds)
    check("the program waits in the background (one live job)", code.live() == 1, code.live())
    out = g.invoke(Command(resume=True), cfg)
    p = parked(out)
    check("after Command(resume=True) the refund ran once and the next call is parked",
          common.refunds == [("A-1", 80.0)] and p is not None and p["args"].get("amount") == 500,
          (common.refunds, out))
    out = g.invoke(Command(resume={"approve": False, "reason": "too large for A-2"}), cfg)
    check("the graph finished: no interrupt, the model's last word", parked(out) is None and
          out["messages"][-1].content == "done", out)
    text = tool_text(out)
    print("   # the tool's report:\n" + "\n".join("   #   " + l for l in text.splitlines()))
    common.check_program_report(text, "LangGraph")
    check("the resume re-ran the node without re-running the program (one refund)",
          common.refunds == [("A-1", 80.0)], common.refunds)
    check("the resume's reason reaches the audit log", "too large for A-2" in open(
        common.audit_log_of(text)).read() if common.audit_log_of(text) else False)
    check("the program ended; the thread keeps its session", code.live() == 0 and code.sessions() == 1
          and live_sessions() == 1, (code.live(), code.sessions(), live_sessions()))
    out = graph(code, common.SECOND, "call-2").invoke({"messages": [("user", "and now?")]}, cfg)
    text = tool_text(out)
    check("the thread's next program sees the first one's variables (one session)",
          "state carried over: A-1" in text and common.audit_log_of(text) == common.audit_log_of(
              tool_text(g.get_state(cfg).values)), text)
    code.close()
    # The session's log is complete (and verifies) once the session is closed.
    log = common.audit_log_of(text)
    check("LangGraph: the audit log verifies", common.verifies(log), log)
    check("close() closes the thread's session", code.sessions() == 0 and live_sessions() == 0,
          (code.sessions(), live_sessions()))

    # ---- an abandoned graph: nothing leaks -------------------------------------
    quick = TollgateCodeTool(sb, abandon_after=0.5)
    g2 = graph(quick, common.PARKS)
    cfg2 = {"configurable": {"thread_id": "lg-2"}}
    # (asynchronously: the tool then runs on an executor thread, and
    # interrupt() must still find the graph's context)
    out = asyncio.run(g2.ainvoke({"messages": [("user", "refund A-9")]}, cfg2))
    p = parked(out) or {}
    check("abandoned (ainvoke): its call is parked", p.get("tool") == "issue_refund", out)
    deadline = time.monotonic() + 15
    while (quick.live() or quick.sessions() or live_sessions()) and time.monotonic() < deadline:
        time.sleep(0.2)
    check("abandoned: after abandon_after its job and session are gone",
          quick.live() == 0 and quick.sessions() == 0 and live_sessions() == 0,
          (quick.live(), quick.sessions(), live_sessions()))
    log = "%s/%s.jsonl" % (sb.audit_dir, p.get("container"))
    calls = common.calls_of(log) if p.get("container") else []
    check("abandoned: its parked call was denied as abandoned (uid:0)",
          any(c[0] == "issue_refund" and c[2] == "deny" and "abandoned" in (c[4] or "") for c in calls), calls)
    # The graph comes back late: the answer must not approve a new run's call.
    out = asyncio.run(g2.ainvoke(Command(resume=True), cfg2))
    text = tool_text(out)
    check("a late resume stops the restarted program instead of approving its call",
          "earlier run of this tool call" in text and ("A-9", 900.0) not in common.refunds, (text, common.refunds))
    check("a late resume leaves nothing running", quick.live() == 0 and quick.sessions() == 0
          and live_sessions() == 0, (quick.live(), quick.sessions(), live_sessions()))

    # ---- bad input --------------------------------------------------------------
    try:
        TollgateCodeTool(common.Sandbox(tools=[], approval=lambda r: True))
        check("a Sandbox with its own approval callback is refused", False)
    except InvalidArgument as e:
        check("a Sandbox with its own approval callback is refused, naming the fix",
              "approval=None" in str(e), e)
    common.run_doc_example("langgraph_example.py", "LangGraph", common.REFUND_EXAMPLE_PRINTS)
finally:
    sb.close()
print("   # langgraph %s: %.1f s" % (common.backend, time.monotonic() - t0))
common.exit_by_checks()

"""Pydantic AI with tollgate, one backend per run: an Agent whose model is
Pydantic AI's FunctionModel (scripted: one run_python call, then a final
answer), with TollgateToolset; parked calls are deferred tool requests
answered with DeferredToolResults.

Usage: pydantic_ai_run.py BACKEND WORKDIR    (as root, after `make`)
Prints ok/FAIL lines for tests/integration/test_int_langgraph_pydantic_ai.sh.
"""
import time

import common
from common import check
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tollgate_sdk import live_sessions
from tollgate_sdk.integrations.pydantic_ai import TollgateToolset


def scripted(program, call_id):
    """The model: call run_python with program once; then answer with
    what the tool returned."""
    def model(messages, info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
                   if isinstance(p, ToolReturnPart) and p.tool_call_id == call_id]
        if returns:
            return ModelResponse(parts=[TextPart("done: " + returns[-1].model_response_str())])
        return ModelResponse(parts=[ToolCallPart("run_python", {"code": program}, tool_call_id=call_id)])
    return FunctionModel(model)


def agent(toolset, program, call_id):
    return Agent(scripted(program, call_id), toolsets=[toolset], output_type=[str, DeferredToolRequests])


def parked_of(r, call_id):
    """The tollgate payload of the run's deferred approval for call_id."""
    out = r.output
    if not isinstance(out, DeferredToolRequests):
        return None
    if [c.tool_call_id for c in out.approvals] != [call_id]:
        return None
    return (out.metadata.get(call_id) or {}).get("tollgate")


def resume(a, r, answers):
    return a.run_sync(message_history=r.all_messages(), deferred_tool_results=DeferredToolResults(**answers))


sb = common.sandbox("pydantic_ai")
t0 = time.monotonic()
try:
    # ---- the program: allowed, denied by policy, two approvals -------------
    code = TollgateToolset(sb)
    a = agent(code, common.PROGRAM, "pc-1")
    r = a.run_sync("refund A-1 and A-2")
    p = parked_of(r, "pc-1")
    check("the first parked call is a deferred approval naming issue_refund 80",
          p is not None and p["tool"] == "issue_refund" and p["args"].get("amount") == 80, r.output)
    check("nothing was refunded while it is parked", common.refunds == [], common.refunds)
    check("the program waits in the background (one live job)", code.live() == 1, code.live())
    r = resume(a, r, {"approvals": {"pc-1": True}})
    p = parked_of(r, "pc-1")
    check("after approvals={id: True} the refund ran once and the same tool call is deferred again",
          common.refunds == [("A-1", 80.0)] and p is not None and p["args"].get("amount") == 500,
          (common.refunds, r.output))
    # Deny the one governed call, let the program go on: approve the tool
    # call with tollgate metadata saying no.
    r = resume(a, r, {"approvals": {"pc-1": ToolApproved()},
                      "metadata": {"pc-1": {"tollgate": {"approve": False, "reason": "too large for A-2"}}}})
    text = r.output if isinstance(r.output, str) else ""
    check("the run finished with the model's answer", text.startswith("done: "), r.output)
    print("   # the model's answer:\n" + "\n".join("   #   " + l for l in text.splitlines()))
    common.check_program_report(text, "Pydantic AI")
    check("the approvals never re-ran the program (one refund)", common.refunds == [("A-1", 80.0)],
          common.refunds)
    log = common.audit_log_of(text)
    check("the metadata's reason reaches the audit log", bool(log) and "too large for A-2" in open(log).read())
    check("the program ended; the conversation keeps its session", code.live() == 0 and code.sessions() == 1
          and live_sessions() == 1, (code.live(), code.sessions(), live_sessions()))
    r2 = agent(code, common.SECOND, "pc-1b").run_sync("and now?", message_history=r.all_messages())
    text2 = r2.output if isinstance(r2.output, str) else ""
    check("the conversation's next program sees the first one's variables (one session)",
          "state carried over: A-1" in text2 and common.audit_log_of(text2) == log, r2.output)
    code.close()
    # The session's log is complete (and verifies) once the session is closed.
    log = common.audit_log_of(text)
    check("Pydantic AI: the audit log verifies", common.verifies(log), log)
    check("close() closes the conversation's session", code.sessions() == 0 and live_sessions() == 0,
          (code.sessions(), live_sessions()))

    # ---- ToolDenied: the model is told, the program is stopped ------------------
    a2 = agent(code, common.PARKS, "pc-2")
    r = a2.run_sync("refund A-9")
    p = parked_of(r, "pc-2") or {}
    check("ToolDenied: the call is deferred", p.get("tool") == "issue_refund", r.output)
    r = resume(a2, r, {"approvals": {"pc-2": ToolDenied("not A-9, ever")}})
    check("ToolDenied: the model got the denial", r.output == "done: not A-9, ever", r.output)
    calls = common.calls_of("%s/%s.jsonl" % (sb.audit_dir, p.get("container"))) if p.get("container") else []
    check("ToolDenied: the parked call was denied with its message (uid:0), nothing refunded",
          any(c[0] == "issue_refund" and c[2] == "deny" and c[3] == "uid:0" and "not A-9, ever" in (c[4] or "")
              for c in calls) and ("A-9", 900.0) not in common.refunds, (calls, common.refunds))
    check("ToolDenied: the program was stopped, its session closed", code.live() == 0 and code.sessions() == 0
          and live_sessions() == 0, (code.live(), code.sessions(), live_sessions()))

    # ---- an abandoned run: nothing leaks ----------------------------------------
    quick = TollgateToolset(sb, abandon_after=0.5)
    a3 = agent(quick, common.PARKS, "pc-3")
    r = a3.run_sync("refund A-9")
    p = parked_of(r, "pc-3") or {}
    check("abandoned: its call is deferred", p.get("tool") == "issue_refund", r.output)
    deadline = time.monotonic() + 15
    while (quick.live() or quick.sessions() or live_sessions()) and time.monotonic() < deadline:
        time.sleep(0.2)
    check("abandoned: after abandon_after its job and session are gone",
          quick.live() == 0 and quick.sessions() == 0 and live_sessions() == 0,
          (quick.live(), quick.sessions(), live_sessions()))
    calls = common.calls_of("%s/%s.jsonl" % (sb.audit_dir, p.get("container"))) if p.get("container") else []
    check("abandoned: its parked call was denied as abandoned (uid:0)",
          any(c[0] == "issue_refund" and c[2] == "deny" and "abandoned" in (c[4] or "") for c in calls), calls)
    r = resume(a3, r, {"approvals": {"pc-3": True}})
    check("a late approval runs nothing and says so",
          isinstance(r.output, str) and "earlier run of this tool call" in r.output
          and ("A-9", 900.0) not in common.refunds, (r.output, common.refunds))
    check("a late approval leaves nothing running", quick.live() == 0 and quick.sessions() == 0
          and live_sessions() == 0, (quick.live(), quick.sessions(), live_sessions()))
    common.run_doc_example("pydantic_ai_example.py", "Pydantic AI", common.REFUND_EXAMPLE_PRINTS)
finally:
    sb.close()
print("   # pydantic_ai %s: %.1f s" % (common.backend, time.monotonic() - t0))
common.exit_by_checks()

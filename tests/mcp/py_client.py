"""`tollgate mcp` driven by the official MCP Python SDK (the pinned `mcp`
package in .venv), for tests/integration/test_mcp_py.sh:

    py_client.py LABEL REVISION AUDIT_DIR (stdio ARGV_JSON | http URL)

REVISION is `2025-11-25` (the initialize handshake; approvals by
elicitation/create) or `2026-07-28` (no handshake, no session; approvals
by input_required and a retried tools/call).  Over the transport given it
lists the tools, runs a program whose governed calls run, answers two
parked calls through the revision's input mechanism (one approved, one
denied), and cancels a running program, whose later call never runs.
Prints one `ok - ` or `FAIL - ` line per check.
"""
import json
import os
import sys
import time

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

label, revision, audit_dir, transport, target = sys.argv[1:6]
failed = 0


def check(name, cond, detail=""):
    global failed
    print("%s - %s: %s%s" % ("ok" if cond else "FAIL", label, name,
                             "" if cond else " (%s)" % str(detail)[:600]), flush=True)
    failed += 0 if cond else 1


asked = []


async def on_elicit(ctx, params):
    """The person: approves the refund of 80, denies any other."""
    asked.append(params.message)
    if '"amount": 80' in params.message:
        return types.ElicitResult(action="accept", content={"decision": "approve", "note": "ok by " + label})
    return types.ElicitResult(action="accept", content={"decision": "deny"})


def audit_text(marker, want_cancel, wait=30.0):
    """The audit log that names marker (and has its cancelled record, when
    asked), waited for: the server writes it as the run ends."""
    end = time.monotonic() + wait
    while True:
        for name in os.listdir(audit_dir):
            path = os.path.join(audit_dir, name)
            try:
                text = open(path, encoding="utf-8").read()
            except OSError:
                continue
            if marker in text and (not want_cancel or '"event":"cancelled"' in text):
                return text
        if time.monotonic() > end:
            return ""
        time.sleep(0.3)


async def main():
    server = (StdioServerParameters(command=json.loads(target)[0], args=json.loads(target)[1:])
              if transport == "stdio" else target)
    mode = "legacy" if revision == "2025-11-25" else revision
    async with Client(server, mode=mode, elicitation_callback=on_elicit,
                      client_info=types.Implementation(name="tollgate-py-test", version="1")) as c:
        check("the revision is %s" % revision, c.protocol_version == revision, c.protocol_version)
        tools = {t.name: t for t in (await c.list_tools()).tools}
        rp = tools.get("run_python")
        check("tools/list offers run_python, its description naming the governed tools",
              rp is not None and "refund(*, amount: float" in (rp.description or "")
              and rp.output_schema is not None and "calls" in rp.output_schema.get("properties", {}),
              sorted(tools))

        # Optional arguments are shown as the program may pass them (issue 39:
        # `region: str | None | None = None`, and `reason: str | None = None`
        # for `reason: str = ""`, which a program following it had refused).
        sig = "find_orders(*, customer: str, reason: str = '', region: str | None = None)"
        check("a Python tool's optional arguments are described as they may be passed",
              sig in (rp.description or "") and "| None | None" not in (rp.description or ""),
              rp.description)
        r = await c.call_tool("run_python", {"code": "from tollgate import find_orders\n"
                                             "print(find_orders(customer='c', reason='', region=None))"})
        s = r.structured_content or {}
        check("a program that passes what the description shows runs", not r.is_error
              and "'reason': ''" in s.get("stdout", ""), r.content)

        # A program whose governed calls run (a policy builtin, the SDK's Python tool).
        r = await c.call_tool("run_python", {"code": "from tollgate import echo, add\n"
                                             "print(echo(word='%s-ran')['word'], add(a=2, b=3))" % label})
        s = r.structured_content or {}
        check("a program's governed calls run", not r.is_error and s.get("stdout", "").strip() == "%s-ran 5" % label
              and [c["decision"] for c in s.get("calls", [])] == ["allow", "allow"], r.content)

        # A session whose interpreter ends: the cell that ended it is an
        # error; the next call of that name hears once that the session is
        # gone (its variables with it), and the one after opens a new one.
        sess = "ends-" + label.replace(" ", "-")
        await c.call_tool("run_python", {"code": "kept = 1", "session": sess})
        r = await c.call_tool("run_python", {"code": "import os\nos._exit(0)", "session": sess})
        check("session: a cell that ends the interpreter is an error", r.is_error, r.content)
        r = await c.call_tool("run_python", {"code": "print(kept)", "session": sess})
        text = " ".join(getattr(x, "text", "") for x in r.content)
        check("session: the next call hears that it ended and its variables are gone",
              r.is_error and "ended earlier" in text and "call again" in text, r.content)
        r = await c.call_tool("run_python", {"code": "print('kept' in globals())", "session": sess})
        check("session: the call after opens a new one, without the old variables",
              not r.is_error and (r.structured_content or {}).get("stdout", "").strip() == "False", r.content)
        await c.call_tool("end_session", {"session": sess})

        # Two parked calls put to the person: 80 approved, 90 denied.
        asked.clear()
        approvals = {"code": (
            "from tollgate import refund, ToolDenied\n"
            "print('first', refund(amount=80, note='%s')['amount'])\n"
            "try:\n    refund(amount=90)\nexcept ToolDenied as e:\n    print('second denied')\n") % label}
        if revision == "2026-07-28":
            # The first leg by hand: the call answers input_required (no
            # server-to-client request exists at this revision).
            first = await c.session.call_tool("run_python", approvals, allow_input_required=True)
            reqs = getattr(first, "input_requests", None) or {}
            check("2026-07-28: a parked call makes tools/call answer input_required with an elicitation",
                  isinstance(first, types.InputRequiredResult) and first.request_state
                  and [q.method for q in reqs.values()] == ["elicitation/create"], first)
            answers = {k: await on_elicit(None, q.params) for k, q in reqs.items()}
            r = await c.call_tool("run_python", approvals, input_responses=answers,
                                  request_state=getattr(first, "request_state", None))
        else:
            r = await c.call_tool("run_python", approvals)
        s = r.structured_content or {}
        calls = s.get("calls", [])
        check("the person was asked twice, through the revision's input mechanism", len(asked) == 2, asked)
        check("the approved call ran, the denied one was refused",
              s.get("stdout", "").split() == ["first", "80", "second", "denied"], r.content)
        who = "MCP client 'tollgate-py-test 1'"
        check("the audit names the client in the approval and the denial",
              len(calls) == 2 and calls[0]["decision"] == "allow" and who in calls[0]["reason"]
              and calls[1]["decision"] == "deny" and who in calls[1]["reason"], calls)

        # Cancel a running program after its first call: the later one never runs.
        marker = "%s-cancel" % label
        code = ("import time\nfrom tollgate import echo\necho(word='%s-before')\n"
                "time.sleep(5)\necho(word='%s-after')\n" % (marker, marker))
        outcome = []

        async def call():
            try:
                outcome.append(await c.call_tool("run_python", {"code": code}))
            except Exception as e:
                outcome.append(e)

        t0 = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.sleep(2.5)
            tg.cancel_scope.cancel()
        check("cancel: the client's call ends at once", not outcome and time.monotonic() - t0 < 4.5, outcome)
        # Still connected: the cancellation, not the client's leaving, stopped it.
        log = await anyio.to_thread.run_sync(audit_text, marker + "-before", True)
        check("cancel: the run's audit log records the cancellation by the client",
              "cancelled by the MCP client 'tollgate-py-test 1'" in log and "closed the connection" not in log,
              log[-800:])
        await anyio.sleep(3)  # past the program's later call, had it gone on
        log = await anyio.to_thread.run_sync(audit_text, marker + "-before", True)
        check("cancel: the call before it ran, the one after never did",
              marker + "-before" in log and marker + "-after" not in log, log[-800:])

    if revision == "2026-07-28":
        await tasks_extension(server)


class TaskRequest(types.Request):
    method: str
    params: dict


async def tasks_extension(server):
    """A client that declares io.modelcontextprotocol/tasks gets a task
    handle for run_python, polls it to completion, and cancels another."""
    from mcp.client.extension import advertise
    from pydantic import TypeAdapter

    async with Client(server, mode=revision, extensions=[advertise("io.modelcontextprotocol/tasks")],
                      client_info=types.Implementation(name="tollgate-py-test", version="1")) as c:
        async def send(method, **params):
            return await c.session.send_request(TaskRequest(method=method, params=params), TypeAdapter(dict))

        seed = await send("tools/call", name="run_python", arguments={
            "code": "from tollgate import echo\nprint(echo(word='%s-task')['word'])" % label})
        check("tasks: run_python answers a task handle", seed.get("resultType") == "task"
              and seed.get("status") == "working" and seed.get("taskId"), seed)
        t = seed
        for _ in range(120):
            t = await send("tasks/get", taskId=seed.get("taskId"))
            if t.get("status") not in ("working", "input_required"):
                break
            await anyio.sleep(0.25)
        res = t.get("result") or {}
        check("tasks: polled to completed, with the run's result", t.get("status") == "completed"
              and (res.get("structuredContent") or {}).get("stdout", "").strip() == "%s-task" % label, t)

        marker = "%s-taskcancel" % label
        seed = await send("tools/call", name="run_python", arguments={"code": (
            "import time\nfrom tollgate import echo\necho(word='%s-before')\ntime.sleep(5)\n"
            "echo(word='%s-after')\n" % (marker, marker))})
        await anyio.to_thread.run_sync(audit_text, marker + "-before", False)
        await send("tasks/cancel", taskId=seed.get("taskId"))
        t = await send("tasks/get", taskId=seed.get("taskId"))
        check("tasks: tasks/cancel stops it", t.get("status") == "cancelled", t)
        await anyio.sleep(3)
        log = await anyio.to_thread.run_sync(audit_text, marker + "-before", True)
        check("tasks: the cancelled task's later call never ran",
              "tasks/cancel" in log and marker + "-after" not in log, log[-800:])


anyio.run(main)
sys.exit(1 if failed else 0)

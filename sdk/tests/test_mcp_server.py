"""tollgate mcp without containers, through the official MCP client in
process (mcp.Client on the server's low-level Server), for both
revisions: the tools offered, errors, descriptions and signatures, schemas
and annotations, run_shell only with a shell, resources, the caps, the
questions put to the person (elicitation and input_required) and a
changed policy.  Progress, cancellation and approvals end to end, with
containers, are tests/integration/test_mcp.sh and test_mcp_py.sh."""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tollgate_sdk import ApprovalRequest, Sandbox, tool
from tollgate_sdk.mcp import _describe as describe
from tollgate_sdk.mcp._approve import decision, message
from tollgate_sdk.mcp._core import Caller, Core, Run, has_shell, run_result, session_cap
from tollgate_sdk.mcp._runs import Job, Question, Runs
from tollgate_sdk.mcp._server import Binding, parse_http

REVISIONS = ["legacy", "2026-07-28"]
NO_TOLLGATE = "/nonexistent/tollgate"
POLICY: dict[str, Any] = {
    "version": 1, "budgets": {"max_tool_calls": 7, "max_cost": 3},
    "tools": {
        "get_order": {"backend": {"type": "builtin", "name": "echo"}, "description": "One order.",
                      "args": {"type": "object", "required": ["order_id"],
                               "properties": {"order_id": {"type": "string"}, "verbose": {"type": "boolean"}}},
                      "rules": [{"effect": "allow"}]},
        "refund": {"backend": {"type": "builtin", "name": "echo"}, "description": "Refund\nmoney.",
                   "irreversible": True, "cost": 1,
                   "args": {"type": "object", "properties": {"amount": {"type": "number"}}},
                   "rules": [{"if": {"arg": "amount", "op": "<=", "value": 5}, "effect": "allow"},
                             {"effect": "approve", "reason": "big refunds need a person"}]},
        "wipe": {"backend": {"type": "builtin", "name": "echo"}, "irreversible": True,
                 "rules": [{"effect": "deny", "reason": "never"}]}}}


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@tool
def lookup(sku: str, reason: str = "", region: str | None = None, limit: int = 3) -> dict[str, Any]:
    """Look a product up."""
    return {}


def binding(policy: Any = POLICY, tools: tuple[Any, ...] = (), image: str | None = None,
            **kw: Any) -> Binding:
    sb = Sandbox(tools=list(tools), policy=policy, tollgate=NO_TOLLGATE, image=image)
    return Binding(Core(sb, **kw))


def run(fn: Any) -> Any:
    return anyio.run(fn)


async def tools_of(b: Binding, mode: str = "legacy", **kw: Any) -> dict[str, types.Tool]:
    async with Client(b.server, mode=mode, **kw) as c:
        return {t.name: t for t in (await c.list_tools()).tools}


# ---- the protocol, both revisions ----------------------------------------------

@pytest.mark.parametrize("mode", REVISIONS)
def test_each_revision_is_served(mode: str) -> None:
    async def go() -> None:
        async with Client(binding().server, mode=mode) as c:
            assert c.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
            if mode == "legacy":  # a pinned 2026-07-28 client skips server/discover
                assert c.server_info is not None and c.server_info.name == "tollgate"
                assert "get_order(*, order_id: str" in (c.instructions or "")
    run(go)


@pytest.mark.parametrize("mode", REVISIONS)
def test_approval_tools_only_when_the_host_allows(mode: str) -> None:
    async def go() -> None:
        assert set(await tools_of(binding(), mode)) == {"run_python", "end_session", "list_tools"}
        assert {"pending_approvals", "approve", "deny"} <= set(await tools_of(binding(allow_approve=True), mode))
        async with Client(binding().server, mode=mode) as c:
            with pytest.raises(MCPError) as e:
                await c.call_tool("approve", {"call_id": "x"})
            assert e.value.code == -32602 and "unknown tool: approve" in e.value.message
    run(go)


@pytest.mark.parametrize("mode", REVISIONS)
def test_bad_arguments_and_no_sandbox_are_error_results(mode: str) -> None:
    async def go() -> None:
        async with Client(binding().server, mode=mode) as c:
            for args, want in [({"code": 7}, "needs code, a string"),
                               ({"code": "1", "timeout": -1}, "timeout must be seconds"),
                               ({"code": "1", "session": ""}, "session must be a name")]:
                r = await c.call_tool("run_python", args)
                assert r.is_error and want in r.content[0].text, args  # type: ignore[union-attr]
            r = await c.call_tool("run_python", {"code": "print(1)"})
            assert r.is_error and "tollgate binary was not found" in r.content[0].text  # type: ignore[union-attr]
            # No structuredContent on an error: a client validates it against the outputSchema.
            assert r.structured_content is None
    run(go)


def test_a_stale_request_state_is_refused() -> None:
    async def go() -> None:
        async with Client(binding().server, mode="2026-07-28") as c:
            with pytest.raises(MCPError) as e:
                await c.session.call_tool("run_python", {"code": "1"}, request_state="forged",
                                          allow_input_required=True)
            assert "requestState names no run of this server" in e.value.message
    run(go)


def test_resources_are_only_this_servers_runs() -> None:
    async def go() -> None:
        async with Client(binding().server, mode="legacy") as c:
            caps = c.server_capabilities
            assert caps.tools is not None and caps.tools.list_changed
            assert caps.resources is not None and caps.resources.list_changed
            assert (await c.list_resources()).resources == []
            for uri in ["tollgate://audit/../../etc/passwd", "file:///etc/passwd", "tollgate://audit/x"]:
                with pytest.raises(MCPError) as e:
                    await c.read_resource(uri)
                assert e.value.code == -32002 and "no resource" in e.value.message
    run(go)


# ---- descriptions (issue 39's defects among them) ---------------------------------

def test_signatures_show_what_a_program_may_pass() -> None:
    async def go() -> None:
        d = (await tools_of(binding(tools=(add, lookup))))["run_python"].description or ""
        assert "get_order(*, order_id: str, verbose: bool = <omit>): One order." in d
        assert "add(*, a: int, b: int): Add two whole numbers." in d
        # A default is shown as it is; None only where null is allowed, once.
        assert "lookup(*, sku: str, limit: int = 3, reason: str = '', region: str | None = None)" in d
        assert "None | None" not in d
        assert "reason: str | None" not in d
        assert "refund(*, amount: float = <omit>) [irreversible; may need approval" in d
        assert "wipe(**args) [irreversible; always denied]" in d
        assert "at most 7 tool calls" in d and "a total cost of 3" in d
        assert "Sessions: pass `session`" in d
    run(go)


def test_a_signature_for_each_kind_of_optional_argument() -> None:
    spec = {"args": {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"}, "b": {"type": ["string", "null"]}, "c": {"type": "string", "default": "x"},
        "d": {}, "e": {"enum": ["p", None]}, "f": {"type": "array", "items": {"type": "integer"},
                                                  "default": [1]}}}}
    assert describe.signature("t", spec) == (
        "t(*, a: str, b: str | None = None, c: str = 'x', d: Any = None, "
        "e: Literal['p', None] = None, f: list[int] = [1])")


def test_how_approvals_are_decided_is_said() -> None:
    async def go() -> None:
        elicit = binding(allow_elicit=True)
        d = (await tools_of(elicit, elicitation_callback=_never))["run_python"].description or ""
        assert "a person is asked through this MCP client" in d
        d = (await tools_of(elicit))["run_python"].description or ""  # no elicitation: not asked
        assert "a person on the host" in d
    run(go)


async def _never(ctx: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def test_control_and_format_characters_in_a_description_are_escaped() -> None:
    p = json.loads(json.dumps(POLICY))
    p["tools"]["get_order"]["description"] = "safe\u202e\u200bevil\x1b[2J"

    async def go() -> None:
        d = (await tools_of(binding(policy=p)))["run_python"].description or ""
        assert "safe\\u202e\\u200bevil\\u001b[2J" in d and "\u202e" not in d
    run(go)


def test_many_tools_are_named_not_described() -> None:
    p = {"version": 1, "tools": {"t%03d" % i: {"backend": {"type": "builtin", "name": "echo"},
                                               "rules": [{"effect": "allow"}]} for i in range(80)}}

    async def go() -> None:
        d = (await tools_of(binding(policy=p)))["run_python"].description or ""
        assert "- t059(**args)" in d and "and 20 more (list_tools): t060, t061" in d
    run(go)


def test_output_schemas_and_annotations_follow_the_policy() -> None:
    async def go() -> None:
        t = await tools_of(binding(allow_approve=True))
        schema = t["run_python"].output_schema or {}
        for k in ("exit_status", "stdout", "calls", "budget_used", "audit_log", "audit_resource", "session"):
            assert k in schema["properties"] and k in schema["required"]
        for name in t:
            assert (t[name].output_schema or {}).get("type") == "object"
        a = t["run_python"].annotations
        assert a is not None and (a.destructive_hint, a.open_world_hint, a.read_only_hint) == (True, False, False)
        la = t["list_tools"].annotations
        assert la is not None and la.read_only_hint
        none = {"version": 1, "tools": {"x": {"backend": {"type": "builtin", "name": "echo"},
                                              "rules": [{"effect": "deny"}]}}}
        a = (await tools_of(binding(policy=none)))["run_python"].annotations
        assert a is not None and (a.destructive_hint, a.read_only_hint) == (False, True)
    run(go)


def test_the_containers_words_in_a_runs_text_are_escaped() -> None:
    class R:
        exit_status, stdout, stderr, timed_out, audit_log = 0, "", "", False, "/x.jsonl"
        budget_used = {"calls": 1, "cost": 0, "irreversible": 0, "tools": {}}
        calls = [type("C", (), dict(call_id="c1", tool="ref\u202eund", args={"n": "a\u202eb"}, decision="allow",
                                    reason="x\u200by\x1b[2J", approver="policy", outcome="ok"))()]
    out = run_result(R(), "tollgate://audit/x", None)
    text = out["content"][0]["text"]
    assert "\u202e" not in text and "ref\\u202eund" in text and '"a\\u202eb"' in text
    assert out["structuredContent"]["calls"][0]["tool"] == "ref\u202eund"


def test_run_shell_only_with_a_shell(tmp_path: Any) -> None:
    async def go() -> None:
        assert "run_shell" not in await tools_of(binding(image=str(tmp_path)))
        async with Client(binding(image=str(tmp_path)).server) as c:
            with pytest.raises(MCPError) as e:
                await c.call_tool("run_shell", {"command": "true"})
            assert "has no /bin/sh" in e.value.message and "--shell" in e.value.message
        (tmp_path / "usr" / "bin").mkdir(parents=True)
        (tmp_path / "usr" / "bin" / "dash").write_text("")
        (tmp_path / "bin").symlink_to("usr/bin")
        (tmp_path / "usr" / "bin" / "sh").symlink_to("/bin/dash")
        t = await tools_of(binding(image=str(tmp_path)))
        assert "tollgate-call TOOL" in (t["run_shell"].description or "")
    run(go)
    assert not has_shell(None)


def test_a_link_outside_or_a_loop_is_no_shell(tmp_path: Any) -> None:
    (tmp_path / "bin").symlink_to("/usr/bin")  # the host's, never followed there
    assert not has_shell(str(tmp_path))
    loop = tmp_path / "l"
    loop.mkdir()
    (loop / "bin").symlink_to("bin")
    assert not has_shell(str(loop))


# ---- caps ----------------------------------------------------------------------

def test_the_command_line_may_lower_the_hosts_cap_never_raise_it() -> None:
    assert (session_cap(16, None), session_cap(16, 2), session_cap(4, 99), session_cap(4, 0)) == (16, 2, 4, 0)


@pytest.mark.parametrize("mode", REVISIONS)
def test_past_the_cap_no_container_is_started(mode: str) -> None:
    b = binding(max_sessions=0)

    async def go() -> None:
        async with Client(b.server, mode=mode) as c:
            r = await c.call_tool("run_python", {"code": "1", "session": "s"})
            text = r.content[0].text  # type: ignore[union-attr]
            assert r.is_error and "0 sessions are open, the most this server keeps" in text
            assert "mcp_max_sessions" in text and "end_session" in text
            r = await c.call_tool("run_python", {"code": "1"})
            assert r.is_error and "0 programs are running" in r.content[0].text  # type: ignore[union-attr]
    run(go)
    assert (b.core.opening, b.core.sessions, b.core.running) == ({}, {}, 0)


def test_a_session_that_fails_to_open_is_not_counted() -> None:
    b = binding(max_sessions=1)

    async def go() -> None:
        async with Client(b.server) as c:
            for _ in range(2):
                r = await c.call_tool("run_python", {"code": "1", "session": "s"})
                assert r.is_error and "tollgate binary was not found" in r.content[0].text  # type: ignore[union-attr]
    run(go)
    assert (b.core.opening, b.core.sessions) == ({}, {})


class _SlowSession:
    """A session whose open takes a while (a container's start)."""
    made: list["_SlowSession"] = []

    def __init__(self) -> None:
        self.cid = "sdk-fake-%d" % len(_SlowSession.made)
        self.closed = False
        _SlowSession.made.append(self)

    def open(self) -> None:
        time.sleep(0.3)

    def close(self) -> None:
        self.closed = True


def test_first_calls_of_one_session_name_at_once_open_one_session() -> None:
    """Ten first calls of one name at once: one container, shared, and the
    cap counts it once (each had opened its own, nine of them lost)."""
    b = binding(max_sessions=2)
    _SlowSession.made.clear()
    b.core.sb.session = _SlowSession  # type: ignore[method-assign]
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(b.core._session("shared")[0])) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(_SlowSession.made) == 1 and len(got) == 10 and all(s is got[0] for s in got)
    assert b.core.opening == {} and list(b.core.sessions) == ["shared"]
    b.core._session("other")  # the second place is still free
    with pytest.raises(ValueError, match="2 sessions are open"):
        b.core._session("third")


def test_http_addresses() -> None:
    assert parse_http("8765") == ("127.0.0.1", 8765)
    assert parse_http("[::1]:9") == ("::1", 9)
    with pytest.raises(Exception):
        parse_http("host:port")


# ---- the person asked: both revisions, with a program that is only a thread ------------

class FakeJob(Job):
    """A program that parks one call: it asks the approval callback, then
    ends with what the answer was."""

    def __init__(self, core: Core, req: ApprovalRequest) -> None:
        super().__init__(core.sb, core.launch_lock, Runs(lambda: None))
        self.cid = req.container
        self.req, self.core, self.verdict = req, core, None

    def start(self, code: str, timeout: float | None, shell: bool) -> None:
        def work() -> None:
            assert self.core.sb.approval is not None
            self.verdict = self.core.sb.approval(self.req)
        self.worker = threading.Thread(target=work, daemon=True)
        self.worker.start()

    def finish(self) -> Any:
        super().finish()
        return type("R", (), dict(exit_status=0, stdout=json.dumps(self.verdict), stderr="", timed_out=False,
                                  audit_log="", calls=[],
                                  budget_used={"calls": 0, "cost": 0, "irreversible": 0, "tools": {}}))()


def request(**kw: Any) -> ApprovalRequest:
    d: dict[str, Any] = dict(call_id="c-1", tool="refund", args={"amount": 80, "note": "\u202eabc"},
                             reason="big refunds need a person", container="sdk-x", waiting_ms=0, timeout_ms=20000)
    d.update(kw)
    return ApprovalRequest(**d)


def with_fake_job(b: Binding, req: ApprovalRequest) -> None:
    def start_run(name: str, args: dict[str, Any], caller: Caller) -> Run:
        job = FakeJob(b.core, req)
        r = Run(job, caller, None, False)
        with b.core.live_lock:
            b.core.live[id(r)] = r
        job.start("", None, False)
        return r
    b.core.start_run = start_run  # type: ignore[method-assign]


@pytest.mark.parametrize("mode", REVISIONS)
@pytest.mark.parametrize("answer,approved,why", [
    ({"decision": "approve", "note": "fine"}, True,
     "approved by the person at MCP client 'chat\\u202eapp 9' (elicitation): fine"),
    ({"decision": "deny"}, False, "denied by the person at MCP client 'chat\\u202eapp 9' (elicitation)"),
    (None, False, "chose decline"),
])
def test_a_parked_call_is_put_to_the_person(mode: str, answer: Any, approved: bool, why: str) -> None:
    b = binding(allow_elicit=True)
    with_fake_job(b, request())
    asked: list[types.ElicitRequestParams] = []

    async def person(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)

    async def go() -> None:
        async with Client(b.server, mode=mode, elicitation_callback=person,
                          client_info=types.Implementation(name="chat\u202eapp", version="9")) as c:
            r = await c.call_tool("run_python", {"code": "x"})
            assert not r.is_error
            got = json.loads(r.structured_content["stdout"])  # type: ignore[index]
            assert got[0] == approved and why in got[1]
    run(go)
    assert len(asked) == 1
    msg = asked[0].message
    assert "refund" in msg and '"amount": 80' in msg and "big refunds need a person" in msg
    assert "\\u202eabc" in msg and "\u202e" not in msg
    assert asked[0].requested_schema["properties"]["decision"]["enum"] == ["approve", "deny"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", REVISIONS)
def test_a_client_without_elicitation_is_not_asked(mode: str) -> None:
    b = binding(allow_elicit=True)
    with_fake_job(b, request(timeout_ms=1200))

    async def go() -> None:
        async with Client(b.server, mode=mode) as c:
            r = await c.call_tool("run_python", {"code": "x"})
            assert json.loads(r.structured_content["stdout"]) == [  # type: ignore[index]
                False, "no MCP client of this run could be asked"]
    run(go)


def test_not_allowed_by_the_host_config_means_never_asked() -> None:
    assert binding(allow_elicit=False).core.sb.approval is None


def test_each_answer() -> None:
    who = "'c 1'"
    for answer, want, why in [
            ({"action": "accept", "content": {"decision": "deny", "note": "no\nway"}}, False,
             "denied by the person at MCP client 'c 1' (elicitation): no way"),
            ({"action": "cancel"}, False, "chose cancel"),
            ({"action": "accept", "content": {"decision": "yes"}}, False, "gave no decision"),
            ({"action": "accept"}, False, "gave no decision"),
            ("approve", False, "no result")]:
        ok, reason = decision(answer, who)
        assert ok == want and why in reason, answer


def test_no_answer_in_time_denies_and_withdraws() -> None:
    core = Core(Sandbox(tollgate=NO_TOLLGATE), allow_elicit=True)
    job = Job(core.sb, core.launch_lock, core.runs)
    job.cid = "sdk-y"
    r = Run(job, Caller.of("c", "1", True), None, False)
    core.live[id(r)] = r
    t0 = time.monotonic()
    ok, why = core.approver(request(container="sdk-y", timeout_ms=1500, waiting_ms=1000))
    assert not ok and "answered in time" in why and time.monotonic() - t0 < 5
    assert job.open_questions() == []
    q = Question(request(), message(request()))
    job.ask(q)
    job.withdraw("the run was cancelled")
    assert q.done.is_set() and q.error == "the run was cancelled"


# ---- a changed policy ------------------------------------------------------------

def test_a_changed_policy_file_regenerates_the_descriptions(tmp_path: Any) -> None:
    path = str(tmp_path / "policy.json")
    with open(path, "w") as f:
        json.dump(POLICY, f)
    core = Core(Sandbox(policy=path, tollgate=NO_TOLLGATE),
                factory=lambda: Sandbox(policy=path, tollgate=NO_TOLLGATE), watch=[path])
    said: list[str] = []
    core.notify = said.append
    with open(path, "w") as f:
        f.write("{not json")
    assert not core.reload() and said == []
    p = json.loads(json.dumps(POLICY))
    p["tools"]["lookup_stock"] = {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}],
                                  "args": {"type": "object", "properties": {"sku": {"type": "string"}},
                                           "required": ["sku"]}}
    with open(path, "w") as f:
        json.dump(p, f)
    assert core.reload() and said == ["notifications/tools/list_changed"]
    d = [t for t in core.tool_list() if t["name"] == "run_python"][0]["description"]
    assert "lookup_stock(*, sku: str)" in d
    core.close("the test ended")
    assert os.path.exists(path)


@pytest.mark.parametrize("mode", REVISIONS)
def test_progress_while_a_program_runs(mode: str, monkeypatch: Any) -> None:
    from tollgate_sdk.mcp import _server
    monkeypatch.setattr(_server, "PROGRESS_EVERY", 0.25)
    b = binding()
    with_fake_job(b, request())
    seen: list[str | None] = []
    # The program runs until two progress notes have come (30 s at most),
    # not for a fixed second: under load a second held only one.
    two = threading.Event()

    def slow_approval(req: Any) -> tuple[bool, str]:
        two.wait(30)
        return False, "slow"
    b.core.sb.approval = slow_approval

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)
        if len(seen) >= 2:
            two.set()

    async def go() -> None:
        async with Client(b.server, mode=mode) as c:
            await c.call_tool("run_python", {"code": "x"}, progress_callback=on_progress)
    run(go)
    assert len(seen) >= 2 and all("running" in (m or "") and "no governed calls yet" in (m or "") for m in seen)


# ---- the tasks extension (2026-07-28) ------------------------------------------

class TaskRequest(types.Request[Any, Any]):
    method: str
    params: Any


async def task_call(c: Client, method: str, **params: Any) -> dict[str, Any]:
    from pydantic import TypeAdapter
    r: dict[str, Any] = await c.session.send_request(TaskRequest(method=method, params=params),
                                                     TypeAdapter(dict[str, Any]))
    return r


def test_a_long_program_as_a_task_asks_and_completes() -> None:
    from mcp.client.extension import advertise
    from tollgate_sdk.mcp._tasks import EXTENSION
    b = binding(allow_elicit=True)
    with_fake_job(b, request())

    async def go() -> None:
        async with Client(b.server, mode="2026-07-28", elicitation_callback=_never,
                          extensions=[advertise(EXTENSION)]) as c:
            seed = await task_call(c, "tools/call", name="run_python", arguments={"code": "x"})
            assert seed["resultType"] == "task" and seed["status"] in ("working", "input_required"), seed
            tid = seed["taskId"]
            for _ in range(50):
                t = await task_call(c, "tasks/get", taskId=tid)
                if t["status"] == "input_required":
                    break
                await anyio.sleep(0.1)
            [(key, q)] = t["inputRequests"].items()
            assert q["method"] == "elicitation/create" and '"amount": 80' in q["params"]["message"]
            await task_call(c, "tasks/update", taskId=tid, inputResponses={
                key: {"action": "accept", "content": {"decision": "approve"}}})
            for _ in range(50):
                t = await task_call(c, "tasks/get", taskId=tid)
                if t["status"] == "completed":
                    break
                await anyio.sleep(0.1)
            assert t["status"] == "completed", t
            assert json.loads(t["result"]["structuredContent"]["stdout"])[0] is True
            with pytest.raises(MCPError):
                await task_call(c, "tasks/get", taskId="forged")
    run(go)


def test_a_task_is_only_for_a_client_that_declares_the_extension() -> None:
    b = binding(allow_elicit=True)
    with_fake_job(b, request(timeout_ms=1000))

    async def go() -> None:
        async with Client(b.server, mode="2026-07-28") as c:
            r = await c.call_tool("run_python", {"code": "x"})
            assert r.structured_content is not None
    run(go)

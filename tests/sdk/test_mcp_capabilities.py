"""tollgate mcp's MCP capabilities that need no container: descriptions,
output schemas and annotations from the policy; run_shell only on a
rootfs with a shell (symlinks resolved inside it); resources; the session
cap; elicitation approvals (the question, its escaping, each answer and
the timeout); a changed policy file's tools/list_changed.  Progress,
cancellation and elicitation end to end are tests/integration/test_mcp.sh."""
import io
import json
import os
import queue
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk"))
from tollgate_sdk import ApprovalRequest, Sandbox, tool  # noqa: E402
from tollgate_sdk.mcp import _describe as describe  # noqa: E402
from tollgate_sdk.mcp._server import Server, has_shell, session_cap  # noqa: E402
from tollgate_sdk.mcp._elicit import Elicitor  # noqa: E402

POLICY = {"version": 1, "budgets": {"max_tool_calls": 7, "max_cost": 3},
          "tools": {
              "get_order": {"backend": {"type": "builtin", "name": "echo"}, "description": "One order.",
                            "args": {"type": "object", "required": ["order_id"],
                                     "properties": {"order_id": {"type": "string"},
                                                    "verbose": {"type": "boolean"}}},
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


class Lines(io.TextIOBase):
    """A stdout for the server whose lines a test can wait for."""

    def __init__(self):
        self.q = queue.Queue()
        self.buf = ""

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.q.put(json.loads(line))
        return len(s)

    def flush(self):
        pass

    def next(self, pred=lambda m: True, timeout=10):
        end = time.monotonic() + timeout
        while True:
            m = self.q.get(timeout=max(0.01, end - time.monotonic()))
            if pred(m):
                return m


def server(policy=POLICY, tools=(), image=None, **kw):
    out = Lines()
    sb = Sandbox(tools=list(tools), policy=policy, tollgate="/nonexistent/tollgate", image=image)
    return Server(sb, kw.pop("allow_approve", False), out=out, **kw), out


def rpc(srv, out, mid, method, params=None):
    m = {"jsonrpc": "2.0", "id": mid, "method": method}
    if params is not None:
        m["params"] = params
    srv.dispatch(m)
    return out.next(lambda r: r.get("id") == mid)


def init(srv, out, caps=None):
    r = rpc(srv, out, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": caps or {},
                                         "clientInfo": {"name": "chat\u202eapp", "version": "9"}})
    srv.dispatch({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return r["result"]


def tools_of(srv, out):
    return {t["name"]: t for t in rpc(srv, out, 2, "tools/list")["result"]["tools"]}


class Descriptions(unittest.TestCase):
    def test_run_python_names_every_governed_tool_with_its_signature(self):
        srv, out = server(tools=[add])
        d = tools_of(srv, out)["run_python"]["description"]
        self.assertIn("get_order(*, order_id: str, verbose: bool | None = None): One order.", d)
        self.assertIn("add(*, a: int, b: int): Add two whole numbers.", d)
        self.assertRegex(d, r"refund\(\*, amount: float \| None = None\) \[irreversible; may need approval "
                            r"\([^)]*\); cost 1\]: Refund money\.")
        self.assertIn("wipe(**args) [irreversible; always denied]", d)
        self.assertIn("at most 7 tool calls", d)
        self.assertIn("a total cost of 3", d)
        self.assertIn("Sessions: pass `session`", d)
        self.assertIn(describe.session_keeps(), d)

    def test_what_a_session_keeps_is_the_sdks_word_when_it_says(self):
        from tollgate_sdk import _sandbox as sandbox
        cls = sandbox.Session
        had = cls.__dict__.get("KEEPS")
        cls.KEEPS = "variables, imports and /tmp persist"
        try:
            srv, out = server()
            t = tools_of(srv, out)["run_python"]
            self.assertIn("Sessions: pass `session` (a name) to keep one sandbox for several calls: "
                          "variables, imports and /tmp persist.", t["description"])
            self.assertIn("variables, imports and /tmp persist", t["inputSchema"]["properties"]["session"]["description"])
        finally:
            if had is None:
                del cls.KEEPS
            else:
                cls.KEEPS = had

    def test_instructions_name_the_tools_too(self):
        srv, out = server()
        ins = init(srv, out)["instructions"]
        self.assertIn("get_order(*, order_id: str", ins)
        self.assertIn("refund(", ins)
        self.assertIn("you do not need list_tools first", ins)

    def test_how_approvals_are_decided_is_said(self):
        srv, out = server(allow_elicit=True)
        init(srv, out, {"elicitation": {}})
        self.assertIn("a person is asked through this MCP client", tools_of(srv, out)["run_python"]["description"])
        srv, out = server(allow_elicit=True)
        init(srv, out, {})  # the client cannot ask anybody
        self.assertIn("a person on the host", tools_of(srv, out)["run_python"]["description"])

    def test_control_and_format_characters_in_a_description_are_escaped(self):
        p = json.loads(json.dumps(POLICY))
        p["tools"]["get_order"]["description"] = "safe\u202e\u200bevil\x1b[2J"
        srv, out = server(policy=p)
        d = tools_of(srv, out)["run_python"]["description"]
        self.assertIn("safe\\u202e\\u200bevil\\u001b[2J", d)
        self.assertNotIn("\u202e", d)

    def test_many_tools_are_named_not_described(self):
        p = {"version": 1, "tools": {"t%03d" % i: {"backend": {"type": "builtin", "name": "echo"},
                                                    "rules": [{"effect": "allow"}]} for i in range(80)}}
        srv, out = server(policy=p)
        d = tools_of(srv, out)["run_python"]["description"]
        self.assertIn("- t059(**args)", d)
        self.assertIn("and 20 more (list_tools): t060, t061", d)


class SchemasAndAnnotations(unittest.TestCase):
    def test_run_tools_have_the_output_schema_of_their_structured_content(self):
        srv, out = server()
        t = tools_of(srv, out)
        schema = t["run_python"]["outputSchema"]
        self.assertEqual(schema["type"], "object")
        for k in ("stdout", "stderr", "exit_status", "calls", "budget_used", "audit_log", "audit_resource"):
            self.assertIn(k, schema["properties"])
            self.assertIn(k, schema["required"])
        for name in ("end_session", "list_tools"):
            self.assertEqual(t[name]["outputSchema"]["type"], "object")

    def test_list_tools_result_matches_its_schema_keys(self):
        srv, out = server()
        r = rpc(srv, out, 5, "tools/call", {"name": "list_tools", "arguments": {}})["result"]
        self.assertEqual(set(r["structuredContent"]), {"tools", "budgets"})
        self.assertFalse(r["isError"])
        self.assertIn("refund(*, amount", r["content"][0]["text"])

    def test_annotations_follow_the_policy(self):
        srv, out = server()
        a = tools_of(srv, out)["run_python"]["annotations"]
        self.assertEqual((a["destructiveHint"], a["openWorldHint"], a["readOnlyHint"]), (True, False, False))
        self.assertTrue(tools_of(srv, out)["list_tools"]["annotations"]["readOnlyHint"])
        # Irreversible tools that no rule lets run: not destructive.
        p = json.loads(json.dumps(POLICY))
        del p["tools"]["refund"]
        srv, out = server(policy=p)
        a = tools_of(srv, out)["run_python"]["annotations"]
        self.assertEqual((a["destructiveHint"], a["readOnlyHint"]), (False, False))
        # Nothing reachable at all: the sandbox has no way out.
        srv, out = server(policy={"version": 1, "tools": {}})
        a = tools_of(srv, out)["run_python"]["annotations"]
        self.assertEqual((a["destructiveHint"], a["readOnlyHint"]), (False, True))


class RunText(unittest.TestCase):
    def test_the_containers_words_in_a_runs_text_are_escaped(self):
        from tollgate_sdk import Call, Result
        from tollgate_sdk.mcp._server import _run_result
        c = Call(call_id="c1", tool="ref\u202eund", args={"note": "a\u202eb"}, decision="deny",
                 reason="no tool named \"x\u200by\x1b[2J\"", approver="policy", outcome="unknown_tool")
        r = Result(stdout="out\n", stderr="", exit_status=0, calls=[c], budget_used={}, audit_log="/a/l.jsonl")
        out = _run_result(r, "tollgate://audit/x", None)
        text = out["content"][0]["text"]
        for raw in ("\u202e", "\u200b", "\x1b"):
            self.assertNotIn(raw, text)
        self.assertIn("ref\\u202eund", text)
        self.assertIn('"a\\u202eb"', text)
        self.assertIn("x\\u200by\\u001b[2J", text)
        # structuredContent keeps what was recorded.
        self.assertEqual(out["structuredContent"]["calls"][0]["tool"], "ref\u202eund")
        self.assertEqual(out["structuredContent"]["audit_resource"], "tollgate://audit/x")


class Shell(unittest.TestCase):
    def rootfs(self):
        d = tempfile.mkdtemp(prefix="tg-mcp-rootfs.")
        self.addCleanup(lambda: os.system("rm -rf '%s'" % d))
        os.makedirs(os.path.join(d, "usr", "bin"))
        os.symlink("usr/bin", os.path.join(d, "bin"))
        return d

    def test_a_shell_is_found_through_the_rootfs_own_symlinks(self):
        d = self.rootfs()
        self.assertFalse(has_shell(d))
        open(os.path.join(d, "usr", "bin", "busybox"), "w").close()
        os.symlink("busybox", os.path.join(d, "usr", "bin", "sh"))
        self.assertTrue(has_shell(d))

    def test_an_absolute_link_resolves_inside_the_rootfs_not_on_the_host(self):
        d = self.rootfs()
        os.symlink("/bin/dash-or-whatever-the-host-has", os.path.join(d, "usr", "bin", "sh"))
        self.assertFalse(has_shell(d))
        os.symlink("/usr/bin/python3", os.path.join(d, "usr", "bin", "sh2"))
        self.assertFalse(has_shell(None))

    def test_a_link_loop_is_no_shell(self):
        d = self.rootfs()
        os.symlink("sh", os.path.join(d, "usr", "bin", "sh"))
        self.assertFalse(has_shell(d))

    def test_run_shell_is_offered_only_with_a_shell(self):
        d = self.rootfs()
        srv, out = server(image=d)
        self.assertNotIn("run_shell", tools_of(srv, out))
        r = rpc(srv, out, 3, "tools/call", {"name": "run_shell", "arguments": {"command": "true"}})
        self.assertIn("has no /bin/sh", r["error"]["message"])
        self.assertIn("--shell", r["error"]["message"])
        open(os.path.join(d, "usr", "bin", "sh"), "w").close()
        t = tools_of(srv, out)
        self.assertIn("run_shell", t)
        self.assertIn("tollgate-call TOOL", t["run_shell"]["description"])


class Resources(unittest.TestCase):
    def test_resources_are_only_this_servers_runs(self):
        srv, out = server()
        caps = init(srv, out)["capabilities"]
        self.assertTrue(caps["resources"]["listChanged"])
        self.assertTrue(caps["tools"]["listChanged"])
        self.assertEqual(rpc(srv, out, 3, "resources/list")["result"], {"resources": []})
        for uri in ("tollgate://audit/../../etc/passwd", "file:///etc/passwd", "tollgate://audit/", 7):
            r = rpc(srv, out, 4, "resources/read", {"uri": uri})
            self.assertEqual(r["error"]["code"], -32002, uri)


class SessionCap(unittest.TestCase):
    def test_the_command_line_may_lower_the_hosts_cap_never_raise_it(self):
        self.assertEqual(session_cap(16, None), 16)
        self.assertEqual(session_cap(16, 2), 2)
        self.assertEqual(session_cap(4, 99), 4)
        self.assertEqual(session_cap(4, 0), 0)

    def test_past_the_cap_no_container_is_started(self):
        # The cap is checked before a session opens: with a cap of 0 the
        # error names it even where no sandbox could start at all.
        srv, out = server(max_sessions=0)
        r = rpc(srv, out, 3, "tools/call", {"name": "run_python",
                                            "arguments": {"code": "print(1)", "session": "a"}})["result"]
        self.assertTrue(r["isError"])
        text = r["content"][0]["text"]
        self.assertIn("0 sessions are open, the most this server keeps", text)
        self.assertIn("mcp_max_sessions", text)
        self.assertIn("end_session", text)
        self.assertEqual(srv.opening, 0)
        # A session that fails to open is not counted afterwards.
        srv, out = server(max_sessions=1)
        for mid in (4, 5):
            r = rpc(srv, out, mid, "tools/call", {"name": "run_python",
                                                  "arguments": {"code": "print(1)", "session": "a"}})["result"]
            self.assertIn("tollgate binary was not found", r["content"][0]["text"])
        self.assertEqual((srv.opening, srv.sessions), (0, {}))


def request(call="c-1", args=None, timeout_ms=60000, waiting_ms=0):
    return ApprovalRequest(call_id=call, tool="refund", args=args if args is not None else {"amount": 80},
                           reason="big refunds need a person", container="sdk-1-1-abc",
                           waiting_ms=waiting_ms, timeout_ms=timeout_ms)


class Elicitation(unittest.TestCase):
    def ask(self, answer, req=None):
        """Run the elicitor on req; answer(msg) is what the client sends
        back for the elicitation/create it got (None: nothing)."""
        srv, out = server(allow_elicit=True)
        init(srv, out, {"elicitation": {}})
        self.assertIsInstance(srv.sb.approval, Elicitor)
        got = {}
        t = threading.Thread(target=lambda: got.update(r=srv.sb.approval(req or request())))
        t.start()
        m = out.next(lambda m: m.get("method") == "elicitation/create")
        reply = answer(m)
        if reply is not None:
            srv.dispatch(dict(reply, jsonrpc="2.0", id=m["id"]))
        t.join(10)
        return m, got["r"], out

    def test_the_question_names_tool_escaped_arguments_and_reason(self):
        m, r, _ = self.ask(lambda m: {"result": {"action": "accept", "content": {"decision": "approve"}}},
                           request(args={"amount": 80, "note": "\u202eabc\u200b"}))
        msg = m["params"]["message"]
        self.assertIn("refund", msg)
        self.assertIn('"amount": 80', msg)
        self.assertIn("\\u202eabc\\u200b", msg)
        self.assertNotIn("\u202e", msg)
        self.assertIn("big refunds need a person", msg)
        self.assertEqual(m["params"]["requestedSchema"]["properties"]["decision"]["enum"], ["approve", "deny"])
        self.assertEqual(r[0], True)
        # The record names the client, escaped as well.
        self.assertIn("approved by the person at MCP client 'chat\\u202eapp 9'", r[1])

    def test_each_answer(self):
        cases = [({"result": {"action": "accept", "content": {"decision": "deny", "note": "no\nway"}}},
                  False, "denied by the person at MCP client 'chat\\u202eapp 9' (elicitation): no way"),
                 ({"result": {"action": "decline"}}, False, "chose decline"),
                 ({"result": {"action": "cancel"}}, False, "chose cancel"),
                 ({"result": {"action": "accept", "content": {"decision": "yes"}}}, False, "gave no decision"),
                 ({"result": {"action": "accept"}}, False, "gave no decision"),
                 ({"error": {"code": -32601, "message": "no elicitation here"}}, False, "could not ask"),
                 ({"result": "approve"}, False, "no result")]
        for reply, want, why in cases:
            _, r, _ = self.ask(lambda m, reply=reply: reply)
            self.assertEqual(r[0], want, reply)
            self.assertIn(why, r[1], reply)

    def test_no_answer_before_the_gate_times_out_denies_and_withdraws_the_question(self):
        t0 = time.monotonic()
        m, r, out = self.ask(lambda m: None, request(timeout_ms=2000, waiting_ms=1500))
        self.assertFalse(r[0])
        self.assertIn("answered in time", r[1])
        self.assertLess(time.monotonic() - t0, 10)
        c = out.next(lambda x: x.get("method") == "notifications/cancelled")
        self.assertEqual(c["params"]["requestId"], m["id"])

    def test_not_allowed_by_the_host_config_means_never_asked(self):
        srv, out = server(allow_elicit=False)
        init(srv, out, {"elicitation": {}})
        self.assertIsNone(srv.sb.approval)

    def test_a_response_to_nothing_we_asked_is_ignored(self):
        srv, out = server(allow_elicit=True)
        init(srv, out, {"elicitation": {}})
        srv.dispatch({"jsonrpc": "2.0", "id": "tollgate-99", "result": {"action": "accept"}})
        srv.dispatch({"jsonrpc": "2.0", "id": ["x"], "result": {}})
        self.assertEqual(rpc(srv, out, 9, "ping")["result"], {})


class PolicyChange(unittest.TestCase):
    def test_a_changed_policy_file_regenerates_the_descriptions(self):
        d = tempfile.mkdtemp(prefix="tg-mcp-policy.")
        self.addCleanup(lambda: os.system("rm -rf '%s'" % d))
        path = os.path.join(d, "policy.json")
        with open(path, "w") as f:
            json.dump(POLICY, f)

        def factory():
            return Sandbox(policy=path, tollgate="/nonexistent/tollgate")

        out = Lines()
        srv = Server(factory(), False, out=out, factory=factory, watch=[path])
        r, w = os.pipe()
        inp = os.fdopen(r, "r")
        feed = os.fdopen(w, "w")
        t = threading.Thread(target=srv.serve, args=(inp,), daemon=True)
        t.start()

        def send(m):
            feed.write(json.dumps(m) + "\n")
            feed.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
        out.next(lambda m: m.get("id") == 1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # Not JSON: the old policy stays, and nothing is announced.
        with open(path, "w") as f:
            f.write("{not json")
        time.sleep(4.5)
        self.assertTrue(out.q.empty(), list(out.q.queue))
        p = json.loads(json.dumps(POLICY))
        p["tools"]["lookup_stock"] = {"backend": {"type": "builtin", "name": "echo"},
                                      "args": {"type": "object", "properties": {"sku": {"type": "string"}},
                                               "required": ["sku"]},
                                      "rules": [{"effect": "allow"}]}
        with open(path, "w") as f:
            json.dump(p, f)
        out.next(lambda m: m.get("method") == "notifications/tools/list_changed", timeout=10)
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tl = out.next(lambda m: m.get("id") == 2)["result"]["tools"]
        self.assertIn("lookup_stock(*, sku: str)", [x for x in tl if x["name"] == "run_python"][0]["description"])
        feed.close()
        t.join(20)
        inp.close()
        self.assertFalse(t.is_alive())


if __name__ == "__main__":
    unittest.main()

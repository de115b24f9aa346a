"""tollgate mcp's JSON-RPC layer, without containers: version negotiation,
errors for malformed input, notifications, the approval tools offered
only when the host config allows (the flag shim/cli/cmd_mcp.c passes), the
descriptions, schemas and annotations made from the policy, run_shell
only on a rootfs with a shell, resources, the session cap, elicitation
approvals and a changed policy's tools/list_changed.  What needs a
container (progress, cancellation, elicitation end to end) is
tests/integration/test_mcp.sh."""
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "sdk"))
from tollgate_sdk import Sandbox  # noqa: E402
from tollgate_sdk.mcp._server import PROTOCOL_VERSION, Server  # noqa: E402


def session(lines, allow_approve=False):
    out = io.StringIO()
    srv = Server(Sandbox(tollgate="/nonexistent/tollgate"), allow_approve, out=out)
    srv.serve(io.StringIO("".join(l if isinstance(l, str) else json.dumps(l) + "\n" for l in lines)))
    return [json.loads(l) for l in out.getvalue().splitlines()]


def req(mid, method, params=None):
    m = {"jsonrpc": "2.0", "id": mid, "method": method}
    if params is not None:
        m["params"] = params
    return m


class Protocol(unittest.TestCase):
    def test_initialize_negotiates_the_version(self):
        [r] = session([req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}})])
        self.assertEqual(r["result"]["protocolVersion"], "2025-06-18")
        self.assertEqual(r["result"]["serverInfo"]["name"], "tollgate")
        [r] = session([req(1, "initialize", {"protocolVersion": "1999-01-01"})])
        self.assertEqual(r["result"]["protocolVersion"], PROTOCOL_VERSION)

    def test_errors_and_notifications(self):
        rs = session(["not json\n", "\n", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                      req(2, "no/such"), {"id": 3, "method": "ping"}, req(4, "ping"), "[1]\n"])
        self.assertEqual(rs[0]["error"]["code"], -32700)
        self.assertEqual(rs[1], {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "method not found: no/such"}})
        self.assertEqual(rs[2]["error"]["code"], -32600)   # no "jsonrpc": "2.0"
        self.assertEqual(rs[3]["result"], {})
        self.assertEqual(rs[4]["error"]["code"], -32600)
        self.assertEqual(len(rs), 5)

    def test_approval_tools_only_when_allowed(self):
        names = {t["name"] for t in session([req(1, "tools/list")])[0]["result"]["tools"]}
        self.assertEqual(names, {"run_python", "end_session", "list_tools"})
        names = {t["name"] for t in session([req(1, "tools/list")], allow_approve=True)[0]["result"]["tools"]}
        self.assertTrue({"pending_approvals", "approve", "deny"} <= names)
        # Calling one anyway, without the permission, is an unknown tool.
        [r] = session([req(1, "tools/call", {"name": "approve", "arguments": {"call_id": "x"}})])
        self.assertEqual(r["error"]["code"], -32602)

    def test_bad_tool_arguments_are_error_results(self):
        rs = session([req(1, "tools/call", {"name": "run_python", "arguments": {"code": 7}}),
                      req(2, "tools/call", {"name": "run_python", "arguments": "x"}),
                      req(3, "tools/call", {"name": "run_python", "arguments": {"code": "1", "timeout": -1}})])
        by_id = {r["id"]: r["result"] for r in rs}
        self.assertTrue(all(r["isError"] for r in by_id.values()))
        self.assertIn("needs code, a string", by_id[1]["content"][0]["text"])
        self.assertIn("arguments must be an object", by_id[2]["content"][0]["text"])
        self.assertIn("timeout must be seconds", by_id[3]["content"][0]["text"])

    def test_no_sandbox_is_an_error_result_naming_the_fix(self):
        [r] = session([req(1, "tools/call", {"name": "run_python", "arguments": {"code": "print(1)"}})])
        self.assertTrue(r["result"]["isError"])
        self.assertIn("tollgate binary was not found", r["result"]["content"][0]["text"])
        # An error result carries no structuredContent: run_python has an
        # outputSchema, and a client validates whatever structuredContent
        # it gets against it.
        self.assertNotIn("structuredContent", r["result"])


if __name__ == "__main__":
    unittest.main()

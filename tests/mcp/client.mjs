// The MCP client of tests/integration/test_mcp.sh: the official MCP
// TypeScript SDK (@modelcontextprotocol/sdk, installed by `make deps`)
// driving `tollgate mcp` over stdio.  Prints `ok - NAME` / `FAIL - NAME`.
//
// Usage: node client.mjs TOLLGATE_ARGV_JSON ALLOW_APPROVE(0|1) BACKEND SHELL(0|1)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [argvJson, allowApprove, backend, shell] = process.argv.slice(2);
const argv = JSON.parse(argvJson);
const tag = `${backend}${allowApprove === "1" ? " (approver)" : ""}${shell === "1" ? " (shell rootfs)" : ""}`;
let failures = 0;
function check(name, cond, detail) {
  if (cond) console.log(`ok - ${tag}: ${name}`);
  else { failures++; console.log(`FAIL - ${tag}: ${name}${detail ? ": " + detail : ""}`); }
}
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

const transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), stderr: "inherit" });
const client = new Client({ name: "tollgate-test-client", version: "1.0.0" });
await client.connect(transport);
check("the server names itself tollgate", client.getServerVersion()?.name === "tollgate");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check("run_python and list_tools are offered", ["list_tools", "run_python"].every((n) => names.includes(n)),
      names.join(","));
check(shell === "1" ? "run_shell is offered: the rootfs has a shell" : "run_shell is not offered: the rootfs has no shell",
      names.includes("run_shell") === (shell === "1"), names.join(","));
if (shell === "1") {
  const sh = await client.callTool({ name: "run_shell", arguments: { command:
    "echo from-sh; /run/tollgate/tollgate-call echo '{\"word\":\"sh\"}'" } });
  check("run_shell runs sh and its governed call", /from-sh/.test(sh.structuredContent?.stdout || "") &&
        (sh.structuredContent?.calls || [])[0]?.tool === "echo", text(sh));
} else {
  let e = null;
  try { await client.callTool({ name: "run_shell", arguments: { command: "echo x" } }); } catch (x) { e = x; }
  check("run_shell without a shell is refused once, naming the fix", /no \/bin\/sh.*--shell/.test(String(e)), String(e));
}
if (allowApprove === "1")
  check("approval tools are offered when the host config allows",
        ["approve", "deny", "pending_approvals"].every((n) => names.includes(n)), names.join(","));
else
  check("no approval tools unless the host config allows",
        !names.some((n) => ["approve", "deny", "pending_approvals"].includes(n)), names.join(","));

const lt = await client.callTool({ name: "list_tools", arguments: {} });
const inside = (lt.structuredContent?.tools || []).map((t) => t.name).sort().join(",");
check("list_tools names the governed tools inside", inside === "add,delete_all,echo,get_order,refund", inside);

// A governed call that is allowed: a policy builtin and a Python tool served by the SDK.
let r = await client.callTool({ name: "run_python", arguments: { code:
  "from tollgate import echo, add, get_order\nprint('echo', echo(word='hi')['word'])\nprint('sum', add(a=2, b=40))\n" +
  "print('amount', get_order(order_id='A-1003')['amount'])\n" } });
let s = r.structuredContent || {};
check("run_python: exit status 0", s.exit_status === 0 && r.isError === false, text(r));
check("run_python: the program's stdout comes back (builtin, SDK Python tool, exec tool)",
      /echo hi\nsum 42\namount 158.5/.test(s.stdout || ""), s.stdout + s.stderr);
check("run_python: the governed calls come back with their decisions",
      (s.calls || []).length === 3 && s.calls.every((c) => c.decision === "allow" && c.outcome === "ok"),
      JSON.stringify(s.calls));
check("run_python: the text content lists the calls", /echo \{"word": "hi"\}: allow by policy -> ok/.test(text(r)), text(r));

// A governed call that is denied: the program sees ToolDenied, the client sees the decision.
r = await client.callTool({ name: "run_python", arguments: { code:
  "from tollgate import delete_all, ToolDenied\ntry:\n    delete_all(what='orders')\nexcept ToolDenied as e:\n    print('refused:', e)\n" } });
s = r.structuredContent || {};
check("run_python: a denied call is refused inside", /refused: denied: .*deleting is never allowed/.test(s.stdout || ""), s.stdout + s.stderr);
check("run_python: the denied call is reported as denied",
      (s.calls || []).length === 1 && s.calls[0].tool === "delete_all" && s.calls[0].decision === "deny" &&
      s.calls[0].outcome === "denied", JSON.stringify(s.calls));

// A failing program: its exit status and stderr, marked as an error result.
r = await client.callTool({ name: "run_python", arguments: { code: "import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)\n" } });
check("run_python: a failing program's status and stderr", r.isError === true &&
      r.structuredContent?.exit_status === 3 && /oops/.test(r.structuredContent?.stderr), text(r));

// A session: two calls share /tmp and one budget.
r = await client.callTool({ name: "run_python", arguments: { session: "s1", code: "open('/tmp/note','w').write('kept')\n" } });
check("session: the first cell runs", r.structuredContent?.exit_status === 0, text(r));
r = await client.callTool({ name: "run_python", arguments: { session: "s1", code: "from tollgate import echo\nprint(open('/tmp/note').read()); echo(word='x')\n" } });
check("session: the second cell sees the first one's /tmp file", /kept/.test(r.structuredContent?.stdout || ""), text(r));
r = await client.callTool({ name: "end_session", arguments: { session: "s1" } });
check("session: end_session stops it", r.structuredContent?.ended === true, text(r));

if (allowApprove === "1") {
  // The large refund waits; the client approves it through the MCP tools.
  const running = client.callTool({ name: "run_python", arguments: { code:
    "from tollgate import refund\nprint('refund', refund(amount=80)['amount'])\n" } });
  let call = null;
  for (let i = 0; i < 200 && !call; i++) {
    const p = await client.callTool({ name: "pending_approvals", arguments: {} });
    call = (p.structuredContent?.pending || []).find((x) => x.tool === "refund");
    if (!call) await new Promise((res) => setTimeout(res, 100));
  }
  check("pending_approvals shows the parked refund", !!call);
  if (call) {
    const a = await client.callTool({ name: "approve", arguments: { call_id: call.call, reason: "test approves" } });
    check("approve succeeds", a.isError === false, text(a));
  }
  r = await running;
  check("the approved refund ran", /refund 80/.test(r.structuredContent?.stdout || ""), text(r));
  check("the audit records the approver", (r.structuredContent?.calls || [])[0]?.approver === "uid:0",
        JSON.stringify(r.structuredContent?.calls));
}
await client.close();
process.exit(failures ? 1 : 0);

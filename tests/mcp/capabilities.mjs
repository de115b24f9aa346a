// What MCP clients rely on, driven through the official TypeScript SDK
// (@modelcontextprotocol/sdk) against `tollgate mcp` (tests/integration/
// test_mcp.sh): the governed tools named in run_python's description,
// outputSchema and annotations, progress during a 4 s program, cancelling
// a 6 s program after 2 s (its later call never runs), approvals by
// elicitation (one approved, one denied), each run's audit log as a
// resource, tools/list_changed when the policy file changes, and the
// session cap.  Prints `ok - NAME` / `FAIL - NAME`.
//
// Usage: node capabilities.mjs TOLLGATE_ARGV_JSON BACKEND POLICY_FILE MAX_SESSIONS STREAMS(0|1)
import { readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ElicitRequestSchema, ResourceListChangedNotificationSchema, ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [argvJson, backend, policyFile, maxSessions, streams] = process.argv.slice(2);
const argv = JSON.parse(argvJson);
let failures = 0;
function check(name, cond, detail) {
  if (cond) console.log(`ok - ${backend}: ${name}`);
  else { failures++; console.log(`FAIL - ${backend}: ${name}${detail ? ": " + String(detail).slice(0, 1500) : ""}`); }
}
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

const transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), stderr: "inherit" });
const client = new Client({ name: "tollgate-capabilities-test", version: "2.0.0" },
                          { capabilities: { elicitation: {} } });
const elicitations = [];
let withdrawn = 0, asked95 = 0;
client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
  const msg = req.params.message;
  // The refund of 95 is never answered: its run is cancelled, and the
  // server withdraws the question (notifications/cancelled aborts this).
  if (/"amount": 95\b/.test(msg)) {
    asked95++;
    return await new Promise((res) => extra.signal.addEventListener("abort", () => { withdrawn++; res({ action: "cancel" }); }));
  }
  elicitations.push(msg);
  // The refund of 80 is approved, any other is denied.
  if (/"amount": 80\b/.test(msg)) return { action: "accept", content: { decision: "approve", note: "ok from the test" } };
  return { action: "accept", content: { decision: "deny", note: "too much" } };
});
let resourcesChanged = 0, toolsChanged = 0;
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { resourcesChanged++; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { toolsChanged++; });
await client.connect(transport);

// ---- descriptions, schemas, annotations --------------------------------------
let { tools } = await client.listTools();
const rp = tools.find((t) => t.name === "run_python");
check("run_python's description names the governed tools with their signatures",
      /get_order\(\*, order_id: str\)/.test(rp?.description) && /refund\(\*, amount: float[,)]/.test(rp?.description),
      rp?.description);
check("run_python's description marks refund irreversible and needing approval",
      /refund\([^\n]*irreversible; may need approval/.test(rp?.description), rp?.description);
check("run_python's description states the budget and what a session keeps",
      /at most 20 tool calls/.test(rp?.description) && /Sessions: .*\/tmp/.test(rp?.description), rp?.description);
check("the server's instructions name the governed tools",
      /get_order\(/.test(client.getInstructions() || ""), client.getInstructions());
const props = rp?.outputSchema?.properties || {};
check("run_python has an outputSchema for its structuredContent",
      rp?.outputSchema?.type === "object" &&
      ["stdout", "stderr", "exit_status", "calls", "budget_used", "audit_log"].every((k) => k in props),
      JSON.stringify(rp?.outputSchema));
check("annotations: destructive (an irreversible tool is reachable), closed world",
      rp?.annotations?.destructiveHint === true && rp?.annotations?.openWorldHint === false &&
      rp?.annotations?.readOnlyHint === false, JSON.stringify(rp?.annotations));
check("annotations: list_tools is read-only",
      tools.find((t) => t.name === "list_tools")?.annotations?.readOnlyHint === true);
check("run_shell is not offered: this rootfs has no shell", !tools.some((t) => t.name === "run_shell"),
      tools.map((t) => t.name).join(","));

// ---- a run, its structuredContent (validated by the SDK) and its resource ------
let r = await client.callTool({ name: "run_python", arguments: { code:
  "from tollgate import echo\nprint(echo(word='resource')['word'])\n" } });
let s = r.structuredContent || {};
check("a run's structuredContent passes the SDK's outputSchema validation", s.exit_status === 0 && /resource/.test(s.stdout), text(r));
await sleep(300);
check("notifications/resources/list_changed came when the run ended", resourcesChanged > 0, resourcesChanged);
let { resources } = await client.listResources();
const res = resources.find((x) => x.uri === s.audit_resource);
check("the run's audit log is listed as a resource", !!res, JSON.stringify(resources) + " " + s.audit_resource);
if (res) {
  const rr = await client.readResource({ uri: res.uri });
  const log = rr.contents[0]?.text || "";
  check("reading it gives the audit log with the run's call",
        /"event":"open"/.test(log) && /"tool":"echo"/.test(log) && /"word":"resource"/.test(log), log.slice(0, 500));
  check("and its verification", /verify .*: ok/.test(rr.contents[1]?.text || ""), rr.contents[1]?.text);
}
try {
  await client.readResource({ uri: "tollgate://audit/../../../etc/shadow" });
  check("a resource URI that is not one of the runs is refused", false);
} catch (e) {
  check("a resource URI that is not one of the runs is refused", /no resource/.test(String(e)), String(e));
}

// ---- progress: a 4 s program under a 3 s request timeout that progress resets -----
const progress = [];
r = await client.callTool({ name: "run_python", arguments: { code:
  "import time\nfrom tollgate import echo\nfor i in range(4):\n    print('tick', i, flush=True)\n    echo(word='p%d' % i)\n    time.sleep(1)\n" } },
  undefined, { onprogress: (p) => progress.push(p), timeout: 3000, resetTimeoutOnProgress: true });
check("progress: the 4 s program finished (its progress kept the 3 s request timeout from firing)",
      r.structuredContent?.exit_status === 0 && (r.structuredContent?.calls || []).length === 4, text(r));
check("progress: notifications came while it ran", progress.length >= 2, JSON.stringify(progress));
check("progress: they count the governed calls and the budget",
      progress.some((p) => /governed call/.test(p.message || "") && /budget: \d+ of 20 calls/.test(p.message || "")),
      JSON.stringify(progress));
if (streams === "1")
  check("progress: they name the program's last line of output (the SDK streams it)",
        progress.some((p) => /last output: tick [0-3]$/.test(p.message || "")), JSON.stringify(progress));
console.log(`# progress messages: ${JSON.stringify(progress.map((p) => p.message))}`);

// ---- cancellation: a 6 s program, cancelled after its first call --------------
// The abort waits for the progress that counts the first governed call (at
// most 1 s after it), not for a fixed 2 s: on a loaded machine the
// container had not made that call yet 2 s after the request.
const ac = new AbortController();
let t0 = Date.now();
const cancelled = client.callTool({ name: "run_python", arguments: { code:
  "import time\nfrom tollgate import echo\necho(word='before-cancel')\ntime.sleep(4)\necho(word='after-cancel')\ntime.sleep(2)\n" } },
  undefined, { signal: ac.signal, timeout: 120000, resetTimeoutOnProgress: true,
               onprogress: (p) => {
                 if (!ac.signal.aborted && /1 governed call/.test(p.message || "")) {
                   t0 = Date.now() - 2000;
                   ac.abort("the test cancels");
                 }
               } });
let err = null;
try { await cancelled; } catch (e) { err = e; }
check("cancel: the client's request ends with the abort", err !== null, String(err));
let cres = null;
for (let i = 0; i < 100 && !cres; i++) {
  ({ resources } = await client.listResources());
  cres = resources.find((x) => /cancelled/.test(x.description || ""));
  if (!cres) await sleep(100);
}
console.log(`# cancel: the run was recorded as cancelled ${Date.now() - t0 - 2000} ms after the abort`);
check("cancel: the run is listed as cancelled", !!cres, JSON.stringify(resources));
await sleep(Math.max(0, 7000 - (Date.now() - t0)));  // past the time its later call was due
if (cres) {
  const log = (await client.readResource({ uri: cres.uri })).contents[0]?.text || "";
  check("cancel: the call before the cancellation ran", /"word":"before-cancel"/.test(log), log.slice(0, 800));
  check("cancel: the audit log records the cancellation, who asked and the calls that had run",
        /"event":"cancelled"/.test(log) && /cancelled by the MCP client 'tollgate-capabilities-test 2.0.0'/.test(log) &&
        /"calls":\[\{"call":"[^"]+","tool":"echo","status":"ok"\}\]/.test(log), log);
  check("cancel: the call after it never ran", !/after-cancel/.test(log), log);
}

// ---- elicitation: one parked call approved, one denied -------------------------
r = await client.callTool({ name: "run_python", arguments: { code:
  "from tollgate import refund, ToolDenied\nprint('first', refund(amount=80)['amount'])\n" +
  "try:\n    refund(amount=90, note='\\u202eevil')\nexcept ToolDenied as e:\n    print('second refused:', e)\n" } });
s = r.structuredContent || {};
check("elicitation: the person was asked twice", elicitations.length === 2, JSON.stringify(elicitations));
check("elicitation: the question names the tool, the arguments and the rule's reason",
      /refund/.test(elicitations[0] || "") && /"amount": 80/.test(elicitations[0] || "") &&
      /refunds over 50 need a person/.test(elicitations[0] || ""), elicitations[0]);
check("elicitation: the arguments are escaped (no raw bidi override reaches the person)",
      !(elicitations[1] || "").includes("\u202e") && (elicitations[1] || "").includes("\\u202e"), elicitations[1]);
check("elicitation: the approved refund ran, the denied one was refused",
      /first 80/.test(s.stdout || "") && /second refused: denied/.test(s.stdout || ""), text(r));
const [c1, c2] = s.calls || [];
check("elicitation: the audit names the client in the approval and in the denial",
      c1?.decision === "allow" && /approved by the person at MCP client 'tollgate-capabilities-test 2.0.0'/.test(c1?.reason) &&
      c2?.decision === "deny" && /denied by the person at MCP client 'tollgate-capabilities-test 2.0.0'/.test(c2?.reason),
      JSON.stringify(s.calls));

// ---- cancelling while a call waits for the person; cancelling a session cell ----------
{
  const ac2 = new AbortController();
  const parked = client.callTool({ name: "run_python", arguments: { code:
    "from tollgate import refund\nrefund(amount=95)\nprint('never')\n" } }, undefined, { signal: ac2.signal });
  // Cancel only once the person has been asked: a fixed pause after the
  // run shows as running was too short on a loaded machine (the run was
  // cancelled before its call parked, so there was no question to withdraw).
  for (let i = 0; i < 600 && asked95 === 0; i++) await sleep(100);
  check("cancel: the parked call's question reached the person", asked95 === 1, asked95);
  ac2.abort("the test cancels a parked run");
  try { await parked; } catch { /* aborted */ }
  for (let i = 0; i < 100 && withdrawn === 0; i++) await sleep(100);
  check("cancel: the question for a parked call of the cancelled run is withdrawn", withdrawn === 1, withdrawn);

  r = await client.callTool({ name: "run_python", arguments: { session: "doomed", code: "open('/tmp/f','w').write('x')\n" } });
  const ac3 = new AbortController();
  const cell = client.callTool({ name: "run_python", arguments: { session: "doomed", code:
    "import time\nfrom tollgate import echo\necho(word='cell-before')\ntime.sleep(3)\necho(word='cell-after')\n" } },
    undefined, { signal: ac3.signal });
  setTimeout(() => ac3.abort("the test cancels a cell"), 1500);
  try { await cell; } catch { /* aborted */ }
  let sres = null;
  for (let i = 0; i < 100 && !sres; i++) {
    sres = (await client.listResources()).resources.find((x) => /session doomed/.test(x.description) && /cancelled/.test(x.description));
    if (!sres) await sleep(100);
  }
  check("cancel: a cancelled cell ends its session (listed as cancelled)", !!sres);
  await sleep(2500);
  if (sres) {
    const log = (await client.readResource({ uri: sres.uri })).contents[0]?.text || "";
    check("cancel: the session's log has the cancellation, the cell's first call and not its later one",
          /"event":"cancelled"/.test(log) && /cell-before/.test(log) && !/cell-after/.test(log), log);
  }
  r = await client.callTool({ name: "end_session", arguments: { session: "doomed" } });
  check("cancel: the cancelled session is gone", r.structuredContent?.ended === false, text(r));
}

// ---- the session cap ---------------------------------------------------------------
const cap = Number(maxSessions);
for (let i = 0; i < cap; i++) {
  r = await client.callTool({ name: "run_python", arguments: { session: `cap${i}`, code: "print('open')\n" } });
  check(`session cap: session ${i + 1} of ${cap} opens`, r.structuredContent?.exit_status === 0, text(r));
}
r = await client.callTool({ name: "run_python", arguments: { session: "one-too-many", code: "print('open')\n" } });
check("session cap: one more is refused, naming the cap and the fix",
      r.isError === true && new RegExp(`${cap} sessions are open.*mcp_max_sessions.*end_session`).test(text(r)), text(r));
r = await client.callTool({ name: "end_session", arguments: { session: "cap0" } });
r = await client.callTool({ name: "run_python", arguments: { session: "one-too-many", code: "print('now')\n" } });
check("session cap: after end_session there is room again", /now/.test(r.structuredContent?.stdout || ""), text(r));

// ---- a changed policy: regenerated descriptions ------------------------------------
const pol = JSON.parse(readFileSync(policyFile, "utf8"));
pol.tools.lookup_stock = { backend: { type: "builtin", name: "echo" }, description: "Units in stock of one item.",
  args: { type: "object", required: ["sku"], properties: { sku: { type: "string" } } },
  rules: [{ effect: "allow" }] };
writeFileSync(policyFile, JSON.stringify(pol));
for (let i = 0; i < 100 && toolsChanged === 0; i++) await sleep(100);
check("a changed policy sends notifications/tools/list_changed", toolsChanged > 0);
({ tools } = await client.listTools());
check("and run_python's description names the new tool",
      /lookup_stock\(\*, sku: str\)/.test(tools.find((t) => t.name === "run_python")?.description), "");
r = await client.callTool({ name: "run_python", arguments: { code: "from tollgate import lookup_stock\nprint(lookup_stock(sku='X1'))\n" } });
check("and a new run may call it", /X1/.test(r.structuredContent?.stdout || ""), text(r));

await client.close();
process.exit(failures ? 1 : 0);

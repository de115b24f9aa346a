"""`tollgate mcp`: an MCP server (stdio, JSON-RPC 2.0, one message per
line, protocol 2025-06-18) that gives an MCP client governed code
execution.  Started by `tollgate mcp` (shim/cmd_mcp.c), which passes the
tollgate binary, --root, --config, --runtime and, when the host config
says "mcp_allow_approve": true, --allow-approve.  docs/mcp.md.

Tools offered to the client:
  run_python(code, session?, timeout?)   a Python program in a fresh hardened
                                          container (or in the named session's)
  run_shell(command, session?, timeout?) the same for a sh command (the rootfs
                                          needs /bin/sh: python.sh --shell)
  end_session(session)                    stop a session's container
  list_tools()                            what the program may call inside
  pending_approvals(), approve(call_id, reason?), deny(call_id, reason?)
                                          only with --allow-approve
What the program calls inside is the policy file's tools (exec, socket and
mcp backends) and the Python tools of --tools FILE.py (its @tool functions,
or a TOOLS list), each governed by the gate as always.
"""
import argparse
import importlib.util
import json
import os
import sys
import threading
import traceback

from .errors import PolicyError, SandboxUnavailable, TollgateSDKError
from .sandbox import Sandbox
from .tools import Tool, as_tool

PROTOCOL_VERSION = "2025-06-18"
SUPPORTED_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
SERVER_VERSION = "0.1.0"
LINE_MAX = 4 << 20


def _schema(props, required=()):
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


_SESSION = {"type": "string", "description": "keep one container for several calls under this name: "
            "files in /tmp and the budgets carry over from call to call"}
_TIMEOUT = {"type": "number", "description": "seconds before the program is killed (default 300)"}


def load_python_tools(path):
    """The tools of a Python file: its TOOLS list if it has one, else every
    @tool-decorated function and Tool object in it."""
    spec = importlib.util.spec_from_file_location("tollgate_mcp_tools_%d" % abs(hash(path)), path)
    if spec is None:
        raise SystemExit("tollgate mcp: --tools %s is not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if hasattr(mod, "TOOLS"):
        return [as_tool(t) for t in mod.TOOLS]
    out = []
    for v in vars(mod).values():
        if isinstance(v, Tool):
            out.append(v)
        elif isinstance(getattr(v, "tollgate_tool", None), Tool):
            out.append(v.tollgate_tool)
    return out


class Server:
    def __init__(self, sandbox, allow_approve, out=sys.stdout):
        self.sb = sandbox
        self.allow_approve = allow_approve
        self.out = out
        self.write_lock = threading.Lock()
        self.sessions = {}
        self.sessions_lock = threading.Lock()
        self.threads = []

    # ---- transport ----

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.write_lock:
            self.out.write(line)
            self.out.flush()

    def reply(self, mid, result=None, error=None):
        msg = {"jsonrpc": "2.0", "id": mid}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result
        self.send(msg)

    def serve(self, inp=sys.stdin):
        for raw in inp:
            if len(raw) > LINE_MAX:
                self.reply(None, error={"code": -32600, "message": "message over %d bytes" % LINE_MAX})
                continue
            if not raw.strip():
                continue
            try:
                msg = json.loads(raw)
            except ValueError as e:
                self.reply(None, error={"code": -32700, "message": "parse error: %s" % e})
                continue
            msgs = msg if isinstance(msg, list) else [msg]
            for m in msgs:
                self.dispatch(m)
        for t in self.threads:
            t.join(timeout=600)
        self.shutdown()

    def shutdown(self):
        with self.sessions_lock:
            for s in list(self.sessions.values()):
                s.close()
            self.sessions.clear()
        self.sb.close()

    def dispatch(self, m):
        if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
            self.reply(m.get("id") if isinstance(m, dict) else None,
                       error={"code": -32600, "message": "not a JSON-RPC 2.0 message"})
            return
        method, mid, params = m.get("method"), m.get("id"), m.get("params") or {}
        if method is None:
            return  # a response to something we never ask
        is_request = "id" in m
        if method == "initialize":
            want = params.get("protocolVersion") if isinstance(params, dict) else None
            version = want if want in SUPPORTED_VERSIONS else PROTOCOL_VERSION
            self.reply(mid, {"protocolVersion": version,
                             "capabilities": {"tools": {"listChanged": False}},
                             "serverInfo": {"name": "tollgate", "version": SERVER_VERSION},
                             "instructions": "Run Python or shell code in a hardened gVisor sandbox with "
                                             "no network. Inside, `from tollgate import NAME` calls the "
                                             "host tools list_tools names; every call is governed by "
                                             "policy (allow, deny, approval, budgets) and audited."})
        elif method == "ping":
            self.reply(mid, {})
        elif method == "tools/list":
            self.reply(mid, {"tools": self.tool_list()})
        elif method == "tools/call":
            if not isinstance(params, dict):
                return self.reply(mid, error={"code": -32602, "message": "params must be an object"})
            t = threading.Thread(target=self.call_tool, args=(mid, params), daemon=True)
            self.threads = [x for x in self.threads if x.is_alive()] + [t]
            t.start()
        elif method.startswith("notifications/"):
            return
        elif is_request:
            self.reply(mid, error={"code": -32601, "message": "method not found: %s" % method})

    # ---- tools ----

    def tool_list(self):
        run = _schema({"code": {"type": "string", "description": "the Python program"},
                       "session": _SESSION, "timeout": _TIMEOUT}, ["code"])
        shell = _schema({"command": {"type": "string", "description": "the sh command line"},
                         "session": _SESSION, "timeout": _TIMEOUT}, ["command"])
        tools = [
            {"name": "run_python", "inputSchema": run,
             "description": "Run a Python program in a fresh hardened sandbox (gVisor, no network). "
                            "Inside, host tools are functions: `from tollgate import NAME` (see "
                            "list_tools); each call is checked by policy on the host. Returns stdout, "
                            "stderr, the exit status and every governed call with its decision."},
            {"name": "run_shell", "inputSchema": shell,
             "description": "Run a sh command in a fresh hardened sandbox (or the session's); host "
                            "tools via /run/tollgate/tollgate-call TOOL 'JSON-ARGS'."},
            {"name": "end_session", "inputSchema": _schema({"session": {"type": "string"}}, ["session"]),
             "description": "Stop a session's sandbox (its files and budget go with it)."},
            {"name": "list_tools", "inputSchema": _schema({}),
             "description": "The host tools the sandboxed program may call, with their argument schemas "
                            "and whether a call may need approval."},
        ]
        if self.allow_approve:
            tools += [
                {"name": "pending_approvals", "inputSchema": _schema({}),
                 "description": "Calls from running sandboxes that wait for approval."},
                {"name": "approve", "inputSchema": _schema({"call_id": {"type": "string"},
                                                            "reason": {"type": "string"}}, ["call_id"]),
                 "description": "Approve a waiting call (see pending_approvals)."},
                {"name": "deny", "inputSchema": _schema({"call_id": {"type": "string"},
                                                         "reason": {"type": "string"}}, ["call_id"]),
                 "description": "Deny a waiting call (see pending_approvals)."},
            ]
        return tools

    def call_tool(self, mid, params):
        name, args = params.get("name"), params.get("arguments") or {}
        try:
            if not isinstance(args, dict):
                raise ValueError("arguments must be an object")
            handler = {"run_python": self.t_run, "run_shell": self.t_run,
                       "end_session": self.t_end_session, "list_tools": self.t_list_tools}
            if self.allow_approve:
                handler.update({"pending_approvals": self.t_pending, "approve": self.t_decide,
                                "deny": self.t_decide})
            h = handler.get(name)
            if h is None:
                return self.reply(mid, error={"code": -32602, "message": "unknown tool: %s" % name})
            self.reply(mid, h(name, args))
        except (ValueError, TypeError, SandboxUnavailable, PolicyError, TollgateSDKError) as e:
            self.reply(mid, _text_result(str(e), {"error": str(e)}, True))
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            self.reply(mid, _text_result("internal error: %s" % e, {"error": str(e)}, True))

    def _session(self, name):
        if not isinstance(name, str) or not name or len(name) > 64:
            raise ValueError("session must be a name of 1 to 64 characters")
        with self.sessions_lock:
            s = self.sessions.get(name)
            if s is None:
                s = self.sb.session().open()
                self.sessions[name] = s
            return s

    def t_run(self, name, args):
        key = "code" if name == "run_python" else "command"
        code = args.get(key)
        if not isinstance(code, str):
            raise ValueError("%s needs %s, a string" % (name, key))
        timeout = args.get("timeout")
        if timeout is not None and (not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600):
            raise ValueError("timeout must be seconds, more than 0 and at most 3600")
        shell = name == "run_shell"
        if args.get("session") is not None:
            r = self._session(args["session"]).run(code, check=False, timeout=timeout, shell=shell)
        else:
            r = self.sb.run(code, check=False, timeout=timeout, shell=shell)
        return _run_result(r)

    def t_end_session(self, name, args):
        with self.sessions_lock:
            s = self.sessions.pop(args.get("session"), None)
        if s is None:
            return _text_result("no session named %r" % args.get("session"), {"ended": False}, True)
        s.close()
        return _text_result("session %s ended" % args["session"], {"ended": True}, False)

    def t_list_tools(self, name, args):
        self.sb.start()
        tools = []
        for tname, t in sorted((self.sb.policy.get("tools") or {}).items()):
            tools.append({"name": tname, "description": t.get("description", ""),
                          "args": t.get("args", {"type": "object"}),
                          "irreversible": bool(t.get("irreversible")), "cost": t.get("cost", 0),
                          "may_need_approval": any(r.get("effect") == "approve" for r in t.get("rules", []))})
        lines = ["%s(%s)%s: %s" % (t["name"], ", ".join(sorted((t["args"].get("properties") or {}))),
                                   " [may need approval]" if t["may_need_approval"] else "",
                                   t["description"]) for t in tools]
        text = ("Inside the sandbox: `from tollgate import NAME` then NAME(arg=value).\n" +
                ("\n".join(lines) if lines else "(no tools: every call is denied)"))
        return _text_result(text, {"tools": tools, "budgets": self.sb.policy.get("budgets", {})}, False)

    def t_pending(self, name, args):
        p = self.sb.pending()
        text = "\n".join("%s %s %s (%s), waiting %d ms of %d" % (
            x.get("call"), x.get("tool"), json.dumps(x.get("args")), x.get("reason"),
            x.get("waiting_ms", 0), x.get("timeout_ms", 0)) for x in p) or "nothing is waiting"
        return _text_result(text, {"pending": p}, False)

    def t_decide(self, name, args):
        call = args.get("call_id")
        if not isinstance(call, str):
            raise ValueError("call_id must be a string (see pending_approvals)")
        reason = args.get("reason") or ("%s by the MCP client" % ("approved" if name == "approve" else "denied"))
        r = self.sb.decide(call, name == "approve", str(reason)[:500])
        ok = bool(r.get("ok"))
        return _text_result("%s %s" % ("approved" if name == "approve" else "denied", call) if ok
                            else r.get("error", "refused"), r, not ok)


def _text_result(text, structured, is_error):
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured,
            "isError": bool(is_error)}


def _run_result(r):
    calls = [{"call_id": c.call_id, "tool": c.tool, "args": c.args, "decision": c.decision,
              "reason": c.reason, "approver": c.approver, "outcome": c.outcome} for c in r.calls]
    lines = ["exit status %d%s" % (r.exit_status, " (timed out)" if r.timed_out else "")]
    lines += ["--- stdout ---", r.stdout.rstrip("\n")] if r.stdout else []
    lines += ["--- stderr ---", r.stderr.rstrip("\n")[-8000:]] if r.stderr else []
    lines.append("--- governed calls (%d) ---" % len(calls))
    for c in calls:
        lines.append("%s %s: %s by %s -> %s%s" % (c["tool"], json.dumps(c["args"]), c["decision"],
                                                  c["approver"], c["outcome"],
                                                  (" (%s)" % c["reason"]) if c["reason"] else ""))
    structured = {"exit_status": r.exit_status, "stdout": r.stdout, "stderr": r.stderr[-65536:],
                  "calls": calls, "budget_used": r.budget_used, "audit_log": r.audit_log,
                  "timed_out": r.timed_out}
    return _text_result("\n".join(lines), structured, r.exit_status != 0)


def main(argv=None):
    # No abbreviations: "--allow" must never be read as --allow-approve,
    # which only shim/cmd_mcp.c passes, from the host config.
    p = argparse.ArgumentParser(prog="tollgate mcp", description=__doc__.split("\n")[0],
                                allow_abbrev=False)
    p.add_argument("--tollgate", required=True, help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--runtime", default="runsc", help=argparse.SUPPRESS)
    p.add_argument("--allow-approve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--policy", help="policy file: its tools are what the program may call")
    p.add_argument("--rootfs", help="the Python rootfs (default $TOLLGATE_ROOTFS or build/rootfs/python)")
    p.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                   help="Python tools: the file's @tool functions (or its TOOLS list)")
    p.add_argument("--audit-dir", help="audit logs (default: the host config's audit_dir)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per program (default 300)")
    a = p.parse_args(argv)
    tools = []
    for f in a.tools:
        tools += load_python_tools(os.path.abspath(f))
    sb = Sandbox(tools=tools, policy=a.policy, runtime=a.runtime, image=a.rootfs,
                 host_config=a.config, audit_dir=a.audit_dir, root=a.root, tollgate=a.tollgate,
                 timeout=a.timeout)
    # Nothing but JSON-RPC may reach stdout: a Python tool that prints
    # would break the stream, so print() goes to stderr from here on.
    out = sys.stdout
    sys.stdout = sys.stderr
    Server(sb, a.allow_approve, out=out).serve(sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())

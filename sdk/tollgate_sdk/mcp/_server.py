"""`tollgate mcp`: an MCP server (stdio, JSON-RPC 2.0, one message per
line, protocol 2025-06-18) that gives an MCP client governed code
execution.  Started by `tollgate mcp` (shim/cli/cmd_mcp.c), which passes the
tollgate binary, --root, --config, --runtime and what the host config
decides: --allow-approve (mcp_allow_approve), --allow-elicit
(mcp_elicit_approvals) and --host-max-sessions (mcp_max_sessions).
docs/mcp.md.

Tools offered to the client:
  run_python(code, session?, timeout?)   a Python program in a fresh hardened
                                          container (or in the named session's)
  run_shell(command, session?, timeout?) the same for a sh command (only when
                                          the rootfs has /bin/sh: python.sh --shell)
  end_session(session)                    stop a session's container
  list_tools()                            what the program may call inside
  pending_approvals(), approve(call_id, reason?), deny(call_id, reason?)
                                          only with --allow-approve
Their descriptions name the governed tools (mcp_describe.py); a run
reports progress and can be cancelled, and its audit log is a resource
(mcp_runs.py); parked calls go to the person by elicitation when allowed
(mcp_elicit.py).  What the program calls inside is the policy file's
tools (exec, socket and mcp backends) and the Python tools of --tools
FILE.py (its @tool functions, or a TOOLS list), each governed by the gate.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import traceback

from . import _describe as describe
from .._errors import PolicyError, SandboxUnavailable, TollgateSDKError
from ._elicit import Elicitor, Outgoing
from ._runs import Job, RunRecord, Runs
from .._sandbox import Sandbox
from .._session import set_max_sessions
from .._tools import Tool, as_tool

PROTOCOL_VERSION = "2025-06-18"
SUPPORTED_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
SERVER_VERSION = "0.2.0"
LINE_MAX = 4 << 20
DEFAULT_MAX_SESSIONS = 16
POLICY_POLL = 2.0           # seconds between looks at the policy and tools files


def _schema(props, required=()):
    return describe.obj(props, required)


def _session_arg():
    return {"type": "string", "description": "keep one sandbox for several calls under this name: "
            + describe.session_keeps()}
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


def has_shell(rootfs):
    """Does the rootfs have /bin/sh?  Symlinks are resolved inside the
    rootfs (an absolute /bin/sh -> /bin/dash, a usr-merged /bin -> usr/bin),
    never on the host's own tree."""
    if not rootfs:
        return False
    parts, hops = ["bin", "sh"], 0
    done = []
    while parts:
        name = parts.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            done = done[:-1]
            continue
        path = os.path.join(rootfs, *done, name)
        if os.path.islink(path):
            hops += 1
            if hops > 16:
                return False
            target = os.readlink(path)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/")] + parts
            continue
        done.append(name)
        if parts and not os.path.isdir(path):
            return False
    return os.path.isfile(os.path.join(rootfs, *done))


class Server:
    def __init__(self, sandbox, allow_approve, out=sys.stdout, *, allow_elicit=False,
                 max_sessions=DEFAULT_MAX_SESSIONS, factory=None, watch=()):
        self.sb = sandbox
        self.retired = []           # sandboxes of earlier policies (their sessions live on)
        self.allow_approve = allow_approve
        self.allow_elicit = allow_elicit
        self.max_sessions = max_sessions
        self.factory = factory      # () -> a new Sandbox, for a changed policy
        self.watch = list(watch)    # the files whose change means a new policy
        self.out = out
        self.write_lock = threading.Lock()
        self.sessions = {}
        self.session_records = {}
        self.sessions_lock = threading.Lock()
        self.opening = 0
        self.running = 0
        self.launch_lock = threading.Lock()
        self.threads = []
        self.jobs = {}
        self.jobs_lock = threading.Lock()
        self.outgoing = Outgoing(self.send)
        self.runs = Runs(self._resources_changed)
        self.client_info = {}
        self.client_caps = {}
        self.initialized = False
        self.closing = threading.Event()
        self._stamp = self._files_stamp()

    # ---- transport ----

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.write_lock:
            try:
                self.out.write(line)
                self.out.flush()
            except (OSError, ValueError):
                pass  # the client went away; serve() ends on its EOF

    def reply(self, mid, result=None, error=None):
        msg = {"jsonrpc": "2.0", "id": mid}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result
        self.send(msg)

    def notify(self, method, params=None):
        if self.initialized:
            m = {"jsonrpc": "2.0", "method": method}
            if params is not None:
                m["params"] = params
            self.send(m)

    def client_identity(self):
        ci = self.client_info if isinstance(self.client_info, dict) else {}
        return "'%s %s'" % (describe.one_line(ci.get("name") or "unnamed", 64),
                            describe.one_line(ci.get("version") or "", 32))

    def serve(self, inp=sys.stdin):
        watcher = None
        if self.watch and self.factory:
            watcher = threading.Thread(target=self._watch_policy, name="tollgate-mcp-policy", daemon=True)
            watcher.start()
        why = "the MCP client closed the connection"
        try:
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
        except Terminate as e:
            why = "the server got %s" % e
        # From here on a signal must not cut the clean-up short: a client
        # closes stdin and sends SIGTERM 2 s later, and a Terminate raised
        # inside the joins below would skip closing the sandboxes.
        _ignore_signals()
        # stdin closed (or a signal): the client is gone, so nobody hears
        # the answers; whatever still runs is cancelled rather than left
        # to finish.  Clients give a server about 2 s after closing stdin
        # before SIGTERM (the TypeScript SDK; then SIGKILL 2 s later), so
        # everything is stopped at once, not one after another.
        self.closing.set()
        with self.jobs_lock:
            jobs = list(self.jobs.values())
        for j in jobs:
            j.cancel(why)
        for t in self.threads:
            t.join(timeout=120)
        self.shutdown()

    def shutdown(self):
        with self.sessions_lock:
            sessions = list(self.sessions.values())
            self.sessions.clear()
        closers = [threading.Thread(target=s.close, daemon=True) for s in sessions]
        for t in closers:
            t.start()
        for t in closers:
            t.join(timeout=120)
        for sb in [self.sb] + self.retired:
            sb.close()

    def dispatch(self, m):
        if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
            self.reply(m.get("id") if isinstance(m, dict) else None,
                       error={"code": -32600, "message": "not a JSON-RPC 2.0 message"})
            return
        method, mid, params = m.get("method"), m.get("id"), m.get("params") or {}
        if method is None:
            self.outgoing.answer(m)  # a response to one of our requests (elicitation)
            return
        if not isinstance(params, dict):
            if "id" in m:
                self.reply(mid, error={"code": -32602, "message": "params must be an object"})
            return
        is_request = "id" in m
        if method == "initialize":
            self.initialize(mid, params)
        elif method == "ping":
            self.reply(mid, {})
        elif method == "tools/list":
            self.reply(mid, {"tools": self.tool_list()})
        elif method == "tools/call":
            t = threading.Thread(target=self.call_tool, args=(mid, params), daemon=True)
            self.threads = [x for x in self.threads if x.is_alive()] + [t]
            t.start()
        elif method == "resources/list":
            self.reply(mid, {"resources": self.runs.list()})
        elif method == "resources/templates/list":
            self.reply(mid, {"resourceTemplates": []})
        elif method == "resources/read":
            # On a thread: verifying a large log takes a while, and a
            # cancellation must not wait behind it.
            t = threading.Thread(target=self.read_resource, args=(mid, params), daemon=True)
            self.threads = [x for x in self.threads if x.is_alive()] + [t]
            t.start()
        elif method == "notifications/initialized":
            self.initialized = True
        elif method == "notifications/cancelled":
            with self.jobs_lock:
                job = self.jobs.get(_key(params.get("requestId")))
            if job is not None:
                job.cancel(params.get("reason"))
        elif method.startswith("notifications/"):
            return
        elif is_request:
            self.reply(mid, error={"code": -32601, "message": "method not found: %s" % method})

    def read_resource(self, mid, params):
        contents = self.runs.read(params.get("uri"))
        if contents is None:
            self.reply(mid, error={"code": -32002, "message": "no resource %s: resources/list names "
                                   "this server's runs" % describe.one_line(params.get("uri"), 200)})
        else:
            self.reply(mid, {"contents": contents})

    def initialize(self, mid, params):
        want = params.get("protocolVersion")
        version = want if want in SUPPORTED_VERSIONS else PROTOCOL_VERSION
        self.client_info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
        self.client_caps = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
        if self.allow_elicit and isinstance(self.client_caps.get("elicitation"), dict):
            for sb in [self.sb] + self.retired:
                sb.approval = Elicitor(self)
        self.reply(mid, {"protocolVersion": version,
                         "capabilities": {"tools": {"listChanged": True},
                                          "resources": {"listChanged": True}},
                         "serverInfo": {"name": "tollgate", "version": SERVER_VERSION},
                         "instructions": describe.instructions(
                             describe.effective_policy(self.sb), self.approvals_by(),
                             self.sb.timeout, self.shell_offered())})

    def approvals_by(self):
        if self.elicits():
            return "a person is asked through this MCP client"
        if self.allow_approve:
            return "the approve tool, or a person on the host"
        return "a person on the host, or it is denied after the timeout"

    def elicits(self):
        return isinstance(getattr(self.sb, "approval", None), Elicitor)

    def shell_offered(self):
        return has_shell(getattr(self.sb, "image", None))

    def _resources_changed(self):
        self.notify("notifications/resources/list_changed")

    # ---- a changed policy ----

    def _files_stamp(self):
        h = hashlib.sha256()
        for f in self.watch:
            try:
                with open(f, "rb") as fh:
                    h.update(hashlib.sha256(fh.read(16 << 20)).digest())
            except OSError as e:
                h.update(str(e.errno).encode())
        return h.hexdigest()

    def _watch_policy(self):
        while not self.closing.wait(POLICY_POLL):
            stamp = self._files_stamp()
            if stamp != self._stamp:
                self._stamp = stamp
                self.reload()

    def reload(self):
        """A new Sandbox for the changed policy; sessions of the old one
        keep the policy they started with.  A policy that does not load
        (or that tollgate refuses) leaves the old one in place."""
        try:
            new = self.factory()
            if getattr(self.sb, "policy", None) is not None:
                new.start()  # `tollgate policy check`, as the old one passed it
        except Exception as e:
            print("tollgate mcp: the changed policy is not used: %s" % e, file=sys.stderr, flush=True)
            return False
        if self.elicits():
            new.approval = self.sb.approval
        old, self.sb = self.sb, new
        self.retired.append(old)
        print("tollgate mcp: the policy changed; new runs use it", file=sys.stderr, flush=True)
        self.notify("notifications/tools/list_changed")
        return True

    # ---- tools ----

    def tool_list(self):
        policy = describe.effective_policy(self.sb)
        by = self.approvals_by()
        ann = describe.annotations(policy)
        run = _schema({"code": {"type": "string", "description": "the Python program"},
                       "session": _session_arg(), "timeout": _TIMEOUT}, ["code"])
        shell = _schema({"command": {"type": "string", "description": "the sh command line"},
                         "session": _session_arg(), "timeout": _TIMEOUT}, ["command"])
        tools = [
            {"name": "run_python", "inputSchema": run, "outputSchema": describe.RUN_OUTPUT,
             "description": describe.run_description(policy, False, by, self.sb.timeout)},
        ]
        if self.shell_offered():
            tools.append({"name": "run_shell", "inputSchema": shell, "outputSchema": describe.RUN_OUTPUT,
                          "description": describe.run_description(policy, True, by, self.sb.timeout)})
        tools += [
            {"name": "end_session", "inputSchema": _schema({"session": {"type": "string"}}, ["session"]),
             "outputSchema": describe.END_OUTPUT,
             "description": "Stop a session's sandbox (its files and budget go with it)."},
            {"name": "list_tools", "inputSchema": _schema({}), "outputSchema": describe.LIST_OUTPUT,
             "description": "The host tools the sandboxed program may call, with their argument schemas, "
                            "cost and whether a call may need approval, and the budgets (run_python's "
                            "description already names them)."},
        ]
        if self.allow_approve:
            tools += [
                {"name": "pending_approvals", "inputSchema": _schema({}), "outputSchema": describe.PENDING_OUTPUT,
                 "description": "Calls from running sandboxes that wait for approval."},
                {"name": "approve", "inputSchema": _schema({"call_id": {"type": "string"},
                                                            "reason": {"type": "string"}}, ["call_id"]),
                 "outputSchema": describe.DECIDE_OUTPUT,
                 "description": "Approve a waiting call (see pending_approvals)."},
                {"name": "deny", "inputSchema": _schema({"call_id": {"type": "string"},
                                                         "reason": {"type": "string"}}, ["call_id"]),
                 "outputSchema": describe.DECIDE_OUTPUT,
                 "description": "Deny a waiting call (see pending_approvals)."},
            ]
        for t in tools:
            t["annotations"] = ann[t["name"]]
        return tools

    def call_tool(self, mid, params):
        name, args = params.get("name"), params.get("arguments") or {}
        try:
            if not isinstance(args, dict):
                raise ValueError("arguments must be an object")
            handler = {"run_python": self.t_run, "end_session": self.t_end_session,
                       "list_tools": self.t_list_tools}
            if self.shell_offered():
                handler["run_shell"] = self.t_run
            if self.allow_approve:
                handler.update({"pending_approvals": self.t_pending, "approve": self.t_decide,
                                "deny": self.t_decide})
            h = handler.get(name)
            if h is None:
                msg = "unknown tool: %s" % describe.one_line(name, 64)
                if name == "run_shell":
                    msg += " (the rootfs %s has no /bin/sh: build it with bundles/rootfs/python.sh " \
                           "DIR --shell)" % self.sb.image
                return self.reply(mid, error={"code": -32602, "message": msg})
            meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
            result = h(name, args, mid=mid, token=meta.get("progressToken"))
            if result is not None:  # None: cancelled, and a cancelled request gets no answer
                self.reply(mid, result)
        except (ValueError, TypeError, SandboxUnavailable, PolicyError, TollgateSDKError, RuntimeError) as e:
            self.reply(mid, _error_result(str(e)))
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            self.reply(mid, _error_result("internal error: %s" % e))

    def _session(self, name):
        """The named session, opened on first use.  At most max_sessions
        are open (or opening) at once: one more is refused with the cap's
        name, before any container starts."""
        if not isinstance(name, str) or not name or len(name) > 64:
            raise ValueError("session must be a name of 1 to 64 characters")
        with self.sessions_lock:
            s = self.sessions.get(name)
            if s is not None:
                return s
            if len(self.sessions) + self.opening >= self.max_sessions:
                raise ValueError(
                    "tollgate mcp: %d sessions are open, the most this server keeps (mcp_max_sessions "
                    "in the host config, or --max-sessions): end one with end_session first (open: %s)"
                    % (len(self.sessions), ", ".join(sorted(self.sessions)) or "none"))
            self.opening += 1
        sb, s = self.sb, None
        try:
            with self.launch_lock:  # Session.open adds to sb.active: no run is looking
                s = sb.session()
                s.open()
        except BaseException:
            if s is not None:
                try:
                    s.close()  # a half-open session holds nothing afterwards
                except Exception:
                    pass
            with self.sessions_lock:
                self.opening -= 1
            raise
        rec = RunRecord(sb, s.cid, "session", name)
        with self.sessions_lock:
            self.opening -= 1
            self.sessions[name] = s
            self.session_records[name] = rec
        self.runs.add(rec)
        return s

    def drop_session(self, name, s):
        with self.sessions_lock:
            if self.sessions.get(name) is s:
                del self.sessions[name]
            rec = self.session_records.pop(name, None)
        try:
            s.close()
        finally:
            if rec is not None:
                rec.ended = rec.ended or time.time()
                self.runs.changed(rec)

    def t_run(self, name, args, mid=None, token=None):
        key = "code" if name == "run_python" else "command"
        code = args.get(key)
        if not isinstance(code, str):
            raise ValueError("%s needs %s, a string" % (name, key))
        timeout = args.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not 0 < timeout <= 3600):
            raise ValueError("timeout must be seconds, more than 0 and at most 3600")
        shell = name == "run_shell"
        session_name = args.get("session")
        session = self._session(session_name) if session_name is not None else None
        if session is None:
            with self.sessions_lock:
                if self.running >= self.max_sessions:
                    raise ValueError("tollgate mcp: %d programs are running, the most this server runs at "
                                     "once outside sessions (mcp_max_sessions in the host config, or "
                                     "--max-sessions): wait for one to finish" % self.running)
                self.running += 1
        job = Job(self, session.sb if session is not None else self.sb, session, session_name, token)
        k = _key(mid)
        with self.jobs_lock:
            self.jobs[k] = job
        if self.closing.is_set():  # the client left while this one was starting
            job.cancel("the MCP client closed the connection")
        try:
            r = job.run(code, timeout, shell)
        finally:
            with self.jobs_lock:
                self.jobs.pop(k, None)
            if session is None:
                with self.sessions_lock:
                    self.running -= 1
        if r is None:
            return None
        rec = job.record
        return _run_result(r, rec.uri if rec is not None else "", session_name)

    def t_end_session(self, name, args, **_):
        with self.sessions_lock:
            s = self.sessions.get(args.get("session"))
        if s is None:
            return _text_result("no session named %r" % args.get("session"), {"ended": False}, True)
        self.drop_session(args["session"], s)
        return _text_result("session %s ended" % args["session"], {"ended": True}, False)

    def t_list_tools(self, name, args, **_):
        try:
            self.sb.start()
        except SandboxUnavailable:
            pass  # the tools are still what the policy says
        policy = describe.effective_policy(self.sb)
        tools = []
        for tname, t in sorted((policy.get("tools") or {}).items()):
            f = describe.tool_facts(tname, t)
            tools.append({"name": tname, "signature": f["signature"], "description": t.get("description", ""),
                          "args": t.get("args", {"type": "object"}),
                          "irreversible": f["irreversible"], "cost": t.get("cost", 0),
                          "may_need_approval": f["may_need_approval"], "always_denied": f["always_denied"]})
        return _text_result(describe.tools_text(policy, self.approvals_by()),
                            {"tools": tools, "budgets": policy.get("budgets", {})}, False)

    def _sandboxes(self):
        return [self.sb] + self.retired

    def t_pending(self, name, args, **_):
        p = [x for sb in self._sandboxes() for x in sb.pending()]
        # The text a person reads to decide: the container's words escaped.
        text = "\n".join("%s %s %s (%s), waiting %d ms of %d" % (
            describe.one_line(x.get("call"), 64), describe.one_line(x.get("tool"), 64),
            describe.escape_json(x.get("args")),
            describe.one_line(x.get("reason")), x.get("waiting_ms", 0), x.get("timeout_ms", 0))
            for x in p) or "nothing is waiting"
        return _text_result(text, {"pending": p}, False)

    def t_decide(self, name, args, **_):
        call = args.get("call_id")
        if not isinstance(call, str):
            raise ValueError("call_id must be a string (see pending_approvals)")
        reason = args.get("reason") or ("%s by the MCP client" % ("approved" if name == "approve" else "denied"))
        reason = "%s (MCP client %s)" % (str(reason)[:400], self.client_identity())
        r = {"ok": False, "error": "no call %s is waiting for approval" % call}
        for sb in self._sandboxes():
            r = sb.decide(call, name == "approve", reason)
            if r.get("ok"):
                break
        ok = bool(r.get("ok"))
        return _text_result("%s %s" % ("approved" if name == "approve" else "denied", call) if ok
                            else r.get("error", "refused"), r, not ok)


class Terminate(Exception):
    """SIGTERM, SIGHUP or SIGINT: stop serving and clean up (main())."""


def _ignore_signals():
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)


def _on_signal(signum, frame):
    # Once: the clean-up that follows must not be cut short by the next
    # signal (a client sends SIGTERM, then SIGKILL).
    _ignore_signals()
    raise Terminate(signal.Signals(signum).name)


def _key(mid):
    """A request id as a dict key (ids are strings or numbers)."""
    return json.dumps(mid)


def _text_result(text, structured, is_error):
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured,
            "isError": bool(is_error)}


def _error_result(text):
    # No structuredContent: a tool with an outputSchema may leave it out of
    # an error, and a client validates any it gets against the schema.
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _run_result(r, uri, session):
    calls = [{"call_id": c.call_id, "tool": c.tool, "args": c.args, "decision": c.decision,
              "reason": c.reason, "approver": c.approver, "outcome": c.outcome} for c in r.calls]
    lines = ["exit status %d%s" % (r.exit_status, " (timed out)" if r.timed_out else "")]
    lines += ["--- stdout ---", r.stdout.rstrip("\n")] if r.stdout else []
    lines += ["--- stderr ---", r.stderr.rstrip("\n")[-8000:]] if r.stderr else []
    lines.append("--- governed calls (%d) ---" % len(calls))
    # What a person may read in the client: the container's words (tool
    # names it asked for, reasons quoting its arguments) escaped, as
    # `tollgate pending` and `audit show` do; structuredContent keeps them.
    esc = describe.one_line
    for c in calls:
        lines.append("%s %s: %s by %s -> %s%s" % (esc(c["tool"], 128), describe.escape_json(c["args"]),
                                                  esc(c["decision"], 16), esc(c["approver"], 128),
                                                  esc(c["outcome"], 64),
                                                  (" (%s)" % esc(c["reason"], 500)) if c["reason"] else ""))
    lines.append("audit log: %s (resource %s)" % (r.audit_log, uri))
    structured = {"exit_status": r.exit_status, "stdout": r.stdout, "stderr": r.stderr[-65536:],
                  "calls": calls, "budget_used": r.budget_used, "audit_log": r.audit_log,
                  "audit_resource": uri, "timed_out": bool(r.timed_out), "session": session}
    return _text_result("\n".join(lines), structured, r.exit_status != 0)


def session_cap(host, asked):
    """The host config's cap (mcp_max_sessions), or the command line's
    --max-sessions when that is lower: a user may lower it, never raise it."""
    return host if asked is None else min(host, asked)


def main(argv=None):
    # No abbreviations: "--allow" must never be read as --allow-approve,
    # which only shim/cli/cmd_mcp.c passes, from the host config.
    p = argparse.ArgumentParser(prog="tollgate mcp", description=__doc__.split("\n")[0],
                                allow_abbrev=False)
    p.add_argument("--tollgate", required=True, help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--runtime", default="runsc", help=argparse.SUPPRESS)
    p.add_argument("--allow-approve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--allow-elicit", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--host-max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, help=argparse.SUPPRESS)
    p.add_argument("--policy", help="policy file: its tools are what the program may call")
    p.add_argument("--rootfs", help="the Python rootfs (default $TOLLGATE_ROOTFS or build/rootfs/python)")
    p.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                   help="Python tools: the file's @tool functions (or its TOOLS list)")
    p.add_argument("--audit-dir", help="audit logs (default: the host config's audit_dir)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per program (default 300)")
    p.add_argument("--max-sessions", type=int, metavar="N",
                   help="sessions open at once, and programs running at once outside them (at most "
                        "the host config's mcp_max_sessions, default 16)")
    a = p.parse_args(argv)
    if a.max_sessions is not None and a.max_sessions < 0:
        p.error("--max-sessions must be 0 or more")
    cap = session_cap(a.host_max_sessions, a.max_sessions)
    # The SDK's own per-process cap (tollgate_sdk.session) must not stop
    # this server short of the cap the operator set for it.
    set_max_sessions(max(cap, 1))
    tool_files = [os.path.abspath(f) for f in a.tools]

    def factory():
        tools = []
        for f in tool_files:
            tools += load_python_tools(f)
        return Sandbox(tools=tools, policy=a.policy, runtime=a.runtime, image=a.rootfs,
                       host_config=a.config, audit_dir=a.audit_dir, root=a.root, tollgate=a.tollgate,
                       timeout=a.timeout)

    sb = factory()
    # Nothing but JSON-RPC may reach stdout: a Python tool that prints
    # would break the stream, so print() goes to stderr from here on.
    out = sys.stdout
    sys.stdout = sys.stderr
    watch = ([os.path.abspath(a.policy)] if a.policy else []) + tool_files
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    Server(sb, a.allow_approve, out=out, allow_elicit=a.allow_elicit, max_sessions=cap,
           factory=factory, watch=watch).serve(sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())

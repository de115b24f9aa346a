"""What `tollgate mcp` serves, whatever the transport and the protocol
revision: the tools offered (from the policy), the runs and sessions, the
caps, the approval tools, the resources and a changed policy (docs/mcp.md).

Everything here blocks (containers start, control sockets answer): the MCP
binding (_server.py) calls it on worker threads.  Untrusted input is the
client's: tool arguments, session names, resource URIs; each is checked
here before it selects anything.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from . import _describe as describe
from ._approve import Approver
from ._runs import Job, RunRecord, Runs
from .. import Tool
from ._sdk import as_tool

DEFAULT_MAX_SESSIONS = 16
POLICY_POLL = 2.0           # seconds between looks at the policy and tools files
PARKED_KEEP = 600.0         # seconds a 2026-07-28 run waiting for its client's retry is kept after it ends


class ToolError(ValueError):
    """A tools/call the server cannot take (unknown tool): a protocol error."""


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who sent a request: the client's name and version (escaped) for the
    audit log's reasons, and whether its person can be asked (the host
    allows elicitation approvals and the client declared elicitation)."""
    who: str = "'unnamed '"
    can_ask: bool = False

    @staticmethod
    def of(name: object, version: object, can_ask: bool) -> Caller:
        return Caller("'%s %s'" % (describe.one_line(name or "unnamed", 64),
                                   describe.one_line(version or "", 32)), can_ask)


@dataclasses.dataclass
class Run:
    """A run_python/run_shell call in flight: its job, who asked, and the
    accounting to undo when it ends."""
    job: Job
    caller: Caller
    session_name: str | None
    counted: bool               # holds one of the one-shot run slots
    token: str = ""             # names it in a 2026-07-28 requestState
    ended_at: float | None = None


def _session_arg() -> dict[str, Any]:
    return {"type": "string", "description": "keep one sandbox for several calls under this name: "
            + describe.session_keeps()}


_TIMEOUT = {"type": "number", "description": "seconds before the program is killed (default 300)"}


def load_python_tools(path: str) -> list[Any]:
    """The tools of a Python file: its TOOLS list if it has one, else every
    @tool-decorated function and Tool object in it."""
    spec = importlib.util.spec_from_file_location("tollgate_mcp_tools_%d" % abs(hash(path)), path)
    if spec is None or spec.loader is None:
        raise SystemExit("tollgate mcp: --tools %s is not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if hasattr(mod, "TOOLS"):
        return [as_tool(t) for t in mod.TOOLS]
    out: list[Any] = []
    for v in vars(mod).values():
        if isinstance(v, Tool):
            out.append(v)
        elif isinstance(getattr(v, "tollgate_tool", None), Tool):
            out.append(v.tollgate_tool)
    return out


def has_shell(rootfs: str | None) -> bool:
    """Does the rootfs have /bin/sh?  Symlinks are resolved inside the
    rootfs (an absolute /bin/sh -> /bin/dash, a usr-merged /bin -> usr/bin),
    never on the host's own tree."""
    if not rootfs:
        return False
    parts, hops = ["bin", "sh"], 0
    done: list[str] = []
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
            parts = target.split("/") + parts
            continue
        done.append(name)
        if parts and not os.path.isdir(path):
            return False
    return os.path.isfile(os.path.join(rootfs, *done))


def session_cap(host: int, asked: int | None) -> int:
    """The host config's cap (mcp_max_sessions), or the command line's
    --max-sessions when that is lower: a user may lower it, never raise it."""
    return host if asked is None else min(host, asked)


def text_result(text: str, structured: dict[str, Any] | None, is_error: bool) -> dict[str, Any]:
    r: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": bool(is_error)}
    # No structuredContent on an error: a tool with an outputSchema may
    # leave it out, and a client validates any it gets against the schema.
    if structured is not None:
        r["structuredContent"] = structured
    return r


def run_result(r: Any, uri: str, session: str | None) -> dict[str, Any]:
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
    text = "\n".join(lines)
    if r.exit_status != 0:
        # A failed program is an error result, with its structured result
        # too: it follows the schema, and the model sees its stderr.
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured,
                "isError": True}
    return text_result(text, structured, False)


class Core:
    """The server's state: the sandbox of the current policy (and those of
    earlier ones, whose sessions live on), sessions, runs and the caps."""

    def __init__(self, sb: Any, *, allow_approve: bool = False, allow_elicit: bool = False,
                 max_sessions: int = DEFAULT_MAX_SESSIONS, factory: Callable[[], Any] | None = None,
                 watch: tuple[str, ...] | list[str] = (),
                 notify: Callable[[str], None] = lambda method: None) -> None:
        self.sb = sb
        self.retired: list[Any] = []
        self.allow_approve = allow_approve
        self.allow_elicit = allow_elicit
        self.max_sessions = max_sessions
        self.factory = factory
        self.watch = list(watch)
        self.notify = notify
        self.sessions: dict[str, Any] = {}
        self.session_records: dict[str, RunRecord] = {}
        self.sessions_lock = threading.Lock()
        self.opening: dict[str, threading.Event] = {}  # sessions being opened, by name
        self.running = 0
        self.launch_lock = threading.Lock()
        self.runs = Runs(lambda: self.notify("notifications/resources/list_changed"))
        self.live: dict[int, Run] = {}          # every run in flight, by id()
        self.parked: dict[str, Run] = {}        # 2026-07-28 runs waiting for their client's retry
        self.live_lock = threading.Lock()
        self.closing = threading.Event()
        self.closing_reason: str | None = None
        self.approver = Approver(self._askable)
        if allow_elicit:
            sb.approval = self.approver
        self._stamp = self._files_stamp()
        self._watcher: threading.Thread | None = None

    # ---- what the client is told ----

    def approvals_by(self, caller: Caller) -> str:
        if self.allow_elicit and caller.can_ask:
            return "a person is asked through this MCP client"
        if self.allow_approve:
            return "the approve tool, or a person on the host"
        return "a person on the host, or it is denied after the timeout"

    def shell_offered(self) -> bool:
        return has_shell(getattr(self.sb, "image", None))

    def instructions(self, caller: Caller = Caller()) -> str:
        return describe.instructions(describe.effective_policy(self.sb), self.approvals_by(caller),
                                     self.sb.timeout, self.shell_offered())

    def tool_list(self, caller: Caller = Caller()) -> list[dict[str, Any]]:
        policy = describe.effective_policy(self.sb)
        by = self.approvals_by(caller)
        ann = describe.tool_annotations(policy)
        run = describe.obj({"code": {"type": "string", "description": "the Python program"},
                            "session": _session_arg(), "timeout": _TIMEOUT}, ["code"])
        shell = describe.obj({"command": {"type": "string", "description": "the sh command line"},
                              "session": _session_arg(), "timeout": _TIMEOUT}, ["command"])
        tools: list[dict[str, Any]] = [
            {"name": "run_python", "inputSchema": run, "outputSchema": describe.RUN_OUTPUT,
             "description": describe.run_description(policy, False, by, self.sb.timeout)},
        ]
        if self.shell_offered():
            tools.append({"name": "run_shell", "inputSchema": shell, "outputSchema": describe.RUN_OUTPUT,
                          "description": describe.run_description(policy, True, by, self.sb.timeout)})
        tools += [
            {"name": "end_session", "inputSchema": describe.obj({"session": {"type": "string"}}, ["session"]),
             "outputSchema": describe.END_OUTPUT,
             "description": "Stop a session's sandbox (its files and budget go with it)."},
            {"name": "list_tools", "inputSchema": describe.obj({}), "outputSchema": describe.LIST_OUTPUT,
             "description": "The host tools the sandboxed program may call, with their argument schemas, "
                            "cost and whether a call may need approval, and the budgets (run_python's "
                            "description already names them)."},
        ]
        if self.allow_approve:
            decide = describe.obj({"call_id": {"type": "string"}, "reason": {"type": "string"}}, ["call_id"])
            tools += [
                {"name": "pending_approvals", "inputSchema": describe.obj({}),
                 "outputSchema": describe.PENDING_OUTPUT,
                 "description": "Calls from running sandboxes that wait for approval."},
                {"name": "approve", "inputSchema": decide, "outputSchema": describe.DECIDE_OUTPUT,
                 "description": "Approve a waiting call (see pending_approvals)."},
                {"name": "deny", "inputSchema": decide, "outputSchema": describe.DECIDE_OUTPUT,
                 "description": "Deny a waiting call (see pending_approvals)."},
            ]
        for t in tools:
            t["annotations"] = ann[t["name"]]
        return tools

    def tool_names(self) -> set[str]:
        names = {"run_python", "end_session", "list_tools"}
        if self.shell_offered():
            names.add("run_shell")
        if self.allow_approve:
            names |= {"pending_approvals", "approve", "deny"}
        return names

    def check_tool(self, name: object) -> str:
        """The tool's name, or ToolError naming the fix."""
        if isinstance(name, str) and name in self.tool_names():
            return name
        msg = "unknown tool: %s" % describe.one_line(name, 64)
        if name == "run_shell":
            msg += (" (the rootfs %s has no /bin/sh: build it with bundles/rootfs/python.sh DIR --shell)"
                    % self.sb.image)
        raise ToolError(msg)

    # ---- runs ----

    def _askable(self, cid: str) -> tuple[Job, str] | None:
        """The run of a container, when its client's person can be asked."""
        with self.live_lock:
            for r in self.live.values():
                if r.job.cid == cid and not r.job.cancelled:
                    return (r.job, r.caller.who) if r.caller.can_ask else None
        return None

    def _session(self, name: object) -> tuple[Any, RunRecord]:
        """The named session, opened on first use.  At most max_sessions
        are open (or opening) at once: one more is refused with the cap's
        name, before any container starts.  Calls naming a session that is
        being opened wait for it: each opened one of its own, and all but
        the last were lost (running, unnamed, beyond end_session's reach
        and the cap, until the server exited; seen with 10 clients' first
        calls of one name at once)."""
        if not isinstance(name, str) or not name or len(name) > 64:
            raise ValueError("session must be a name of 1 to 64 characters")
        while True:
            with self.sessions_lock:
                s = self.sessions.get(name)
                ended = s is not None and s.closed
                if s is not None and not ended:
                    return s, self.session_records[name]
                opened = self.opening.get(name) if s is None else None
                if s is None and opened is None:
                    if len(self.sessions) + len(self.opening) >= self.max_sessions:
                        raise ValueError(
                            "tollgate mcp: %d sessions are open, the most this server keeps (mcp_max_sessions "
                            "in the host config, or --max-sessions): end one with end_session first (open: %s)"
                            % (len(self.sessions), ", ".join(sorted(self.sessions)) or "none"))
                    self.opening[name] = threading.Event()
                    break
            if ended:
                # Its interpreter ended (a cell ended it, or its container
                # died): its place is freed, and the client hears it once,
                # since a session opened in its stead would not have its
                # variables.
                self.drop_session(name, s)
                raise ValueError("session %s ended earlier (its interpreter ended, or its container stopped) "
                                 "and its variables and files are gone; call again to open a new session of "
                                 "that name" % name)
            assert opened is not None
            opened.wait()  # then it is open, or its opening failed and this call tries itself
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
                self.opening.pop(name).set()
            raise
        rec = RunRecord(sb, s.cid, "session", name)
        with self.sessions_lock:
            self.sessions[name] = s
            self.session_records[name] = rec
            self.opening.pop(name).set()
        self.runs.add(rec)
        return s, rec

    def drop_session(self, name: str, s: Any) -> None:
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

    def start_run(self, name: str, args: dict[str, Any], caller: Caller) -> Run:
        """Check the arguments, take a slot (a session, or one of the
        one-shot runs), start the program.  Raises ValueError (and the
        SDK's errors) for the client to read."""
        key = "code" if name == "run_python" else "command"
        code = args.get(key)
        if not isinstance(code, str):
            raise ValueError("%s needs %s, a string" % (name, key))
        timeout = args.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not 0 < timeout <= 3600):
            raise ValueError("timeout must be seconds, more than 0 and at most 3600")
        session_name = args.get("session")
        session, rec = self._session(session_name) if session_name is not None else (None, None)
        if session is None:
            with self.sessions_lock:
                if self.running >= self.max_sessions:
                    raise ValueError("tollgate mcp: %d programs are running, the most this server runs at "
                                     "once outside sessions (mcp_max_sessions in the host config, or "
                                     "--max-sessions): wait for one to finish" % self.running)
                self.running += 1
        job = Job(session.sb if session is not None else self.sb, self.launch_lock, self.runs,
                  session=session, session_record=rec)
        run = Run(job, caller, session_name if isinstance(session_name, str) else None, session is None)
        with self.live_lock:
            self.live[id(run)] = run
        try:
            job.start(code, float(timeout) if timeout is not None else None, name == "run_shell")
        except BaseException:
            self._release(run)
            raise
        if self.closing.is_set():  # the client left while this one was starting
            self.cancel_run(run, self.closing_reason or "the MCP client closed the connection")
        return run

    def _release(self, run: Run) -> None:
        with self.live_lock:
            if self.live.pop(id(run), None) is None:
                return
            self.parked.pop(run.token, None)
        if run.counted:
            with self.sessions_lock:
                self.running -= 1

    def finish_run(self, run: Run) -> dict[str, Any] | None:
        """The run's tool result once its program ended (None: cancelled)."""
        try:
            r = run.job.finish()
        finally:
            self._release(run)
        if r is None:
            return None
        rec = run.job.record
        return run_result(r, rec.uri if rec is not None else "", run.session_name)

    def cancel_run(self, run: Run, reason: str) -> None:
        """Stop a run for its client: the gate records `reason`."""
        def end_session() -> None:
            if run.session_name is not None and run.job.session is not None:
                self.drop_session(run.session_name, run.job.session)
        run.job.cancel(reason, end_session)

    def park(self, run: Run) -> str:
        """Keep a 2026-07-28 run whose client was asked for input: the
        token (unguessable, it selects nothing else) comes back in the
        requestState of its retried tools/call."""
        if not run.token:
            run.token = secrets.token_urlsafe(24)
        with self.live_lock:
            self.parked[run.token] = run
        return run.token

    def unpark(self, token: object, caller: Caller) -> Run | None:
        if not isinstance(token, str):
            return None
        with self.live_lock:
            run = self.parked.pop(token, None)
        return run

    def _reap_parked(self) -> None:
        """Runs nobody came back for: finished and forgotten after a while."""
        now = time.monotonic()
        with self.live_lock:
            parked = list(self.parked.values())
        for run in parked:
            if run.job.running():
                continue
            if run.ended_at is None:
                run.ended_at = now
            elif now - run.ended_at > PARKED_KEEP:
                try:
                    self.finish_run(run)
                except Exception:
                    self._release(run)

    # ---- the other tools ----

    def call(self, name: str, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        if name == "end_session":
            return self.t_end_session(args)
        if name == "list_tools":
            return self.t_list_tools(caller)
        if name == "pending_approvals":
            return self.t_pending()
        return self.t_decide(name, args, caller)

    def t_end_session(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("session")
        with self.sessions_lock:
            s = self.sessions.get(name) if isinstance(name, str) else None
        if s is None or not isinstance(name, str):
            return text_result("no session named %s" % describe.one_line(repr(name), 80),
                               {"ended": False}, True)
        self.drop_session(name, s)
        return text_result("session %s ended" % describe.one_line(name, 64), {"ended": True}, False)

    def t_list_tools(self, caller: Caller) -> dict[str, Any]:
        try:
            self.sb.start()
        except Exception:
            pass  # the tools are still what the policy says
        policy = describe.effective_policy(self.sb)
        tools = []
        for tname, t in sorted((policy.get("tools") or {}).items()):
            f = describe.tool_facts(tname, t)
            tools.append({"name": tname, "signature": f["signature"], "description": t.get("description", ""),
                          "args": t.get("args", {"type": "object"}),
                          "irreversible": f["irreversible"], "cost": t.get("cost", 0),
                          "may_need_approval": f["may_need_approval"], "always_denied": f["always_denied"]})
        return text_result(describe.tools_text(policy, self.approvals_by(caller)),
                           {"tools": tools, "budgets": policy.get("budgets", {})}, False)

    def sandboxes(self) -> list[Any]:
        return [self.sb] + self.retired

    def t_pending(self) -> dict[str, Any]:
        p = [x for sb in self.sandboxes() for x in sb.pending()]
        # The text a person reads to decide: the container's words escaped.
        text = "\n".join("%s %s %s (%s), waiting %d ms of %d" % (
            describe.one_line(x.get("call"), 64), describe.one_line(x.get("tool"), 64),
            describe.escape_json(x.get("args")),
            describe.one_line(x.get("reason")), x.get("waiting_ms", 0), x.get("timeout_ms", 0))
            for x in p) or "nothing is waiting"
        return text_result(text, {"pending": p}, False)

    def t_decide(self, name: str, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        call = args.get("call_id")
        if not isinstance(call, str):
            raise ValueError("call_id must be a string (see pending_approvals)")
        verb = "approved" if name == "approve" else "denied"
        reason = args.get("reason") or ("%s by the MCP client" % verb)
        reason = "%s (MCP client %s)" % (str(reason)[:400], caller.who)
        r: dict[str, Any] = {"ok": False, "error": "no call %s is waiting for approval" % call}
        for sb in self.sandboxes():
            r = sb.decide(call, name == "approve", reason)
            if r.get("ok"):
                break
        ok = bool(r.get("ok"))
        return text_result("%s %s" % (verb, call) if ok else str(r.get("error", "refused")),
                           r, not ok)

    # ---- a changed policy ----

    def _files_stamp(self) -> str:
        h = hashlib.sha256()
        for f in self.watch:
            try:
                with open(f, "rb") as fh:
                    h.update(hashlib.sha256(fh.read(16 << 20)).digest())
            except OSError as e:
                h.update(str(e.errno).encode())
        return h.hexdigest()

    def start_watching(self) -> None:
        """The thread that reloads a changed policy and forgets parked runs."""
        def loop() -> None:
            while not self.closing.wait(POLICY_POLL):
                self._reap_parked()
                if self.watch and self.factory is not None:
                    stamp = self._files_stamp()
                    if stamp != self._stamp:
                        self._stamp = stamp
                        self.reload()
        self._watcher = threading.Thread(target=loop, name="tollgate-mcp-watch", daemon=True)
        self._watcher.start()

    def reload(self) -> bool:
        """A new Sandbox for the changed policy; sessions of the old one
        keep the policy they started with.  A policy that does not load
        (or that tollgate refuses) leaves the old one in place."""
        if self.factory is None:
            return False
        try:
            new = self.factory()
            if getattr(self.sb, "policy", None) is not None:
                new.start()  # `tollgate policy check`, as the old one passed it
        except Exception as e:
            print("tollgate mcp: the changed policy is not used: %s" % e, file=sys.stderr, flush=True)
            return False
        if self.allow_elicit:
            new.approval = self.approver
        old, self.sb = self.sb, new
        self.retired.append(old)
        print("tollgate mcp: the policy changed; new runs use it", file=sys.stderr, flush=True)
        self.notify("notifications/tools/list_changed")
        return True

    # ---- the end ----

    def close(self, why: str) -> None:
        """The client is gone (or a signal came): whatever still runs is
        cancelled, every session closed, at once rather than one after
        another (a client gives a server about 2 s after closing stdin
        before SIGTERM)."""
        self.closing_reason = self.closing_reason or why
        self.closing.set()
        with self.live_lock:
            runs = list(self.live.values())
        threads = [threading.Thread(target=self._cancel_and_finish, args=(r,), daemon=True) for r in runs]
        with self.sessions_lock:
            sessions = list(self.sessions.values())
            self.sessions.clear()
        threads += [threading.Thread(target=s.close, daemon=True) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        for sb in self.sandboxes():
            sb.close()

    def _cancel_and_finish(self, run: Run) -> None:
        self.cancel_run(run, "cancelled by the MCP client %s: %s" % (run.caller.who, self.closing_reason))
        try:
            self.finish_run(run)
        except Exception:
            pass

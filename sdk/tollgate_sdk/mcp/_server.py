"""`tollgate mcp`: governed code execution for any MCP client, on the
official MCP Python SDK (the `mcp` package), over stdio or Streamable
HTTP, for the 2025-11-25 revision (and earlier: initialize, elicitation)
and 2026-07-28 (stateless: server/discover, input_required) from one
server (docs/mcp.md).

Started by `tollgate mcp` (shim/cli/cmd_mcp.c), which passes the tollgate
binary, --root, --config, --runtime and what the host config decides:
--allow-approve (mcp_allow_approve), --allow-elicit (mcp_elicit_approvals)
and --host-max-sessions (mcp_max_sessions).  What it serves is _core.py's;
this module binds it to the protocol: tool calls on worker threads,
progress, cancellation, and approvals put to the person in the revision's
input mechanism.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import PolicyError, SandboxUnavailable, TollgateSDKError
from . import _describe as describe
from ._approve import SCHEMA
from ._core import Caller, Core, Run, ToolError, load_python_tools, session_cap, text_result
from ._runs import PROGRESS_EVERY, Question
from ._sdk import Sandbox, set_max_sessions
from ._tasks import EXTENSION, Task, TaskParams, Tasks, wants_task

SERVER_VERSION = "0.3.0"
POLL = 0.2                  # seconds between looks at a running program


def _caller(ctx: ServerRequestContext[Any, Any], core: Core) -> Caller:
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    caps = ctx.session.client_capabilities
    can_ask = core.allow_elicit and caps is not None and caps.elicitation is not None
    return Caller.of(info.name if info else None, info.version if info else None, can_ask)


def _connection_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The connection a request came on: its HTTP session, or stdio's one."""
    req = ctx.request
    sid = req.headers.get("mcp-session-id") if req is not None and hasattr(req, "headers") else None
    return str(sid) if sid else "stdio"


def _request_key(ctx: ServerRequestContext[Any, Any], rid: object) -> str:
    """A request id, which is unique only on its own connection."""
    return "%s %s" % (_connection_key(ctx), json.dumps(rid))


def _modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


class _Server(Server[Any]):
    """The low-level Server, announcing tools.listChanged and
    resources.listChanged on every transport (stdio, HTTP, in process)."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                                      extensions: dict[str, dict[str, Any]] | None = None) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True),
            experimental_capabilities, extensions)


class Binding:
    """The MCP handlers over a Core, and the connections that hear its
    list_changed notifications (2025-11-25 connections: a 2026-07-28
    client has no standing channel and lists again)."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.loop: Any = None
        self.listeners: dict[str, Any] = {}      # a connection's key -> a ServerSession of it
        self.cancel_reasons: dict[str, str] = {}
        self.lock = threading.Lock()
        core.notify = self.notify_threadsafe
        self.server: Server[Any] = _Server(
            "tollgate", version=SERVER_VERSION,
            instructions=core.instructions(Caller(can_ask=core.allow_elicit)),
            on_list_tools=self.list_tools,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource)
        self.server.middleware.append(self.observe)
        # tools/call may answer a task handle (resultType "task"), a shape
        # outside the typed on_call_tool's: registered as a plain handler.
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        self.tasks = Tasks(core)
        self.server.extensions[EXTENSION] = {}
        self.server.add_request_handler("tasks/get", TaskParams, self.task_get)
        self.server.add_request_handler("tasks/update", TaskParams, self.task_update)
        self.server.add_request_handler("tasks/cancel", TaskParams, self.task_cancel)

    def init_options(self) -> Any:
        return self.server.create_initialization_options()

    # ---- notifications ----

    def _listen(self, ctx: ServerRequestContext[Any, Any]) -> None:
        if _modern(ctx):
            return
        with self.lock:
            self.listeners[_connection_key(ctx)] = ctx.session

    def notify_threadsafe(self, method: str) -> None:
        """From any thread: tell every listening connection."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        import asyncio
        try:
            asyncio.run_coroutine_threadsafe(self._notify(method), loop)
        except RuntimeError:
            pass  # the loop is gone: nobody listens

    async def _notify(self, method: str) -> None:
        with self.lock:
            listeners = list(self.listeners.items())
        for key, s in listeners:
            try:
                if method == "notifications/tools/list_changed":
                    await s.send_tool_list_changed()
                else:
                    await s.send_resource_list_changed()
            except Exception:
                with self.lock:
                    self.listeners.pop(key, None)

    async def observe(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: a cancellation's reason, for the audit record."""
        if ctx.method == "notifications/cancelled" and isinstance(ctx.params, dict):
            rid, why = ctx.params.get("requestId"), ctx.params.get("reason")
            with self.lock:
                if len(self.cancel_reasons) > 1000:
                    self.cancel_reasons.clear()
                self.cancel_reasons[_request_key(ctx, rid)] = describe.one_line(why or "no reason given", 300)
        return await call_next(ctx)

    # ---- handlers ----

    async def list_tools(self, ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self._listen(ctx)
        tools = self.core.tool_list(_caller(ctx, self.core))
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in tools])

    async def list_resources(self, ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        self._listen(ctx)
        return types.ListResourcesResult.model_validate({"resources": self.core.runs.resources()})

    async def list_resource_templates(self, ctx: ServerRequestContext[Any, Any],
                                      params: types.PaginatedRequestParams | None
                                      ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        # On a thread: verifying a large log takes a while.
        contents = await anyio.to_thread.run_sync(self.core.runs.read, str(params.uri))
        if contents is None:
            raise MCPError(-32002, "no resource %s: resources/list names this server's runs"
                           % describe.one_line(str(params.uri), 200))
        return types.ReadResourceResult.model_validate({"contents": contents})

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
                        ) -> HandlerResult:
        self._listen(ctx)
        caller = _caller(ctx, self.core)
        try:
            name = self.core.check_tool(params.name)
        except ToolError as e:
            raise MCPError(-32602, str(e)) from None
        args = params.arguments or {}
        try:
            if name in ("run_python", "run_shell"):
                return await self._run(ctx, params, name, args, caller)
            result = await anyio.to_thread.run_sync(self.core.call, name, args, caller)
        except MCPError:
            raise
        except (ValueError, TypeError, SandboxUnavailable, PolicyError, TollgateSDKError, RuntimeError) as e:
            result = text_result(str(e), None, True)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            result = text_result("internal error: %s" % e, None, True)
        return types.CallToolResult.model_validate(result)

    async def _run(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams,
                   name: str, args: dict[str, Any], caller: Caller) -> HandlerResult:
        run = self.core.unpark(params.request_state, caller) if params.request_state else None
        if run is not None:
            # A 2026-07-28 client's retry: its answers go to the questions.
            for q in run.job.open_questions():
                answer = (params.input_responses or {}).get(q.key)
                if answer is not None:
                    q.settle(answer.model_dump(by_alias=True, mode="json", exclude_none=True))
        elif params.request_state:
            raise MCPError(-32602, "requestState names no run of this server (it ended, or was "
                                   "never this server's): call the tool again without it")
        else:
            run = await anyio.to_thread.run_sync(self.core.start_run, name, args, caller)
            if _modern(ctx) and wants_task(ctx.session.client_capabilities):
                return await anyio.to_thread.run_sync(self.tasks.start, run)
        try:
            return await self._follow(ctx, run)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.05)  # the cancellation's reason arrives just after it
                with self.lock:
                    why = self.cancel_reasons.pop(_request_key(ctx, ctx.request_id), None)
                why = self.core.closing_reason or why or "the request was cancelled"
                await anyio.to_thread.run_sync(
                    self.core.cancel_run, run, "cancelled by the MCP client %s: %s" % (caller.who, why))
                await anyio.to_thread.run_sync(self._finish_quietly, run)
            raise

    def _finish_quietly(self, run: Run) -> None:
        try:
            self.core.finish_run(run)
        except Exception:
            pass

    async def _follow(self, ctx: ServerRequestContext[Any, Any], run: Run
                      ) -> types.CallToolResult | types.InputRequiredResult:
        """Wait for the program: progress every second, the person asked
        for each parked call, the result at the end."""
        modern = _modern(ctx)
        job, tick, next_progress = run.job, 0, anyio.current_time() + PROGRESS_EVERY
        # Whether the caller asked for progress is the transport's to know
        # (a token in _meta, or an in-process callback): report_progress
        # sends nothing when it did not.
        asked: set[str] = set()
        async with anyio.create_task_group() as tg:
            while not await anyio.to_thread.run_sync(job.wait, POLL):
                open_q = job.open_questions()
                if open_q and modern:
                    # 2026-07-28: the answer comes back in a retry of this call.
                    tg.cancel_scope.cancel()
                    return types.InputRequiredResult(
                        input_requests={q.key: _elicit_request(q) for q in open_q},
                        request_state=self.core.park(run))
                for q in open_q:
                    if q.key not in asked:
                        asked.add(q.key)
                        tg.start_soon(self._elicit, ctx, q)
                if anyio.current_time() >= next_progress:
                    tick += 1
                    next_progress = anyio.current_time() + PROGRESS_EVERY
                    text = await anyio.to_thread.run_sync(job.progress_text)
                    await ctx.session.report_progress(tick, None, text)
            tg.cancel_scope.cancel()
        result = await anyio.to_thread.run_sync(self.core.finish_run, run)
        if result is None:  # cancelled meanwhile (the server is closing)
            result = text_result("the run was cancelled: %s" % self.core.closing_reason, None, True)
        return types.CallToolResult.model_validate(result)

    async def _elicit(self, ctx: ServerRequestContext[Any, Any], q: Question) -> None:
        """2025-11-25: ask by elicitation/create on the run's own request.
        Cancelled (the run ended, or was cancelled), the client is told."""
        try:
            r = await ctx.session.elicit_form(q.message, SCHEMA, related_request_id=ctx.request_id)
            q.settle(r.model_dump(by_alias=True, mode="json", exclude_none=True))
        except anyio.get_cancelled_exc_class():
            q.settle(None, "the run ended")
            raise
        except Exception as e:
            q.settle(None, describe.one_line(e, 200))


    # ---- the tasks extension (2026-07-28) ----

    def _task(self, params: TaskParams) -> Task:
        try:
            return self.tasks.get(params.task_id)
        except KeyError as e:
            raise MCPError(-32602, str(e.args[0])) from None

    async def task_get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        t = self._task(params)
        return await anyio.to_thread.run_sync(t.state)

    async def task_update(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        self._task(params)
        self.tasks.update(params.task_id, params.input_responses or {})
        return {}

    async def task_cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        self._task(params)
        await anyio.to_thread.run_sync(self.tasks.cancel, params.task_id, _caller(ctx, self.core).who)
        return {}


def _elicit_request(q: Question) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=q.message, requested_schema=SCHEMA))


# ---- transports ------------------------------------------------------------------

def serve_stdio(b: Binding) -> str:
    """Serve on stdin/stdout until the client closes stdin or a signal
    comes: returns why it ended."""
    from mcp.server.stdio import stdio_server
    why = ["the MCP client closed the connection"]

    async def main() -> None:
        import asyncio
        b.loop = asyncio.get_running_loop()
        async with anyio.create_task_group() as tg:
            async def signals() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP, signal.SIGINT) as sigs:
                    async for s in sigs:
                        why[0] = "the server got %s" % signal.Signals(s).name
                        b.core.closing_reason = why[0]
                        # The transport's reader thread blocks on stdin, which
                        # the client may keep open: clean up here, while the
                        # loop runs, and leave without waiting for it.
                        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                            signal.signal(sig, signal.SIG_IGN)
                        await anyio.to_thread.run_sync(b.core.close, why[0])
                        sys.stderr.flush()
                        os._exit(0)
            tg.start_soon(signals)
            async with stdio_server() as (read, write):
                await b.server.run(read, write, b.init_options())
            b.core.closing_reason = b.core.closing_reason or why[0]
            tg.cancel_scope.cancel()

    anyio.run(main)
    return why[0]


def serve_http(b: Binding, host: str, port: int) -> str:
    """Streamable HTTP at http://HOST:PORT/mcp until SIGTERM or SIGINT."""
    import asyncio

    import uvicorn

    from .._listener import Limits, guard_protocol, listener_bounds, raise_fd_limit, start_servers
    app = b.server.streamable_http_app(host=host)
    # An MCP client is untrusted before it says anything: idle or slow
    # connections are bounded (tollgate_sdk._listener).
    limits, fitted = listener_bounds(Limits(), raise_fd_limit())
    if fitted:
        sys.stderr.write("tollgate mcp: %s\n" % fitted)
    why = ["the server got SIGTERM"]
    srv = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                        http=guard_protocol(limits), timeout_graceful_shutdown=3,
                                        lifespan="on"))

    def stopped(sig: int) -> None:
        why[0] = "the server got %s" % signal.Signals(sig).name
        b.core.closing_reason = why[0]

    async def main() -> None:
        b.loop = asyncio.get_running_loop()
        # Not srv.serve(): it raises the signal again when it is done, and
        # the process died before core.close() below ended its sessions.
        await asyncio.gather(*start_servers([srv], stopped))

    asyncio.run(main())
    return why[0]


def parse_http(value: str) -> tuple[str, int]:
    """HOST:PORT, or PORT (loopback)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        n = int(port)
    except ValueError:
        n = -1
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError("--http wants HOST:PORT or PORT (e.g. 127.0.0.1:8765), not %r" % value)
    return host, n


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def main(argv: list[str] | None = None) -> int:
    # No abbreviations: "--allow" must never be read as --allow-approve,
    # which only shim/cli/cmd_mcp.c passes, from the host config.
    p = argparse.ArgumentParser(prog="tollgate mcp", description=(__doc__ or "").split("\n")[0],
                                allow_abbrev=False)
    p.add_argument("--tollgate", required=True, help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--runtime", default="runsc", help=argparse.SUPPRESS)
    p.add_argument("--allow-approve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--allow-elicit", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--host-max-sessions", type=int, default=16, help=argparse.SUPPRESS)
    p.add_argument("--policy", help="policy file: its tools are what the program may call")
    p.add_argument("--rootfs", help="the Python rootfs (default $TOLLGATE_ROOTFS or build/rootfs/python)")
    p.add_argument("--tools", action="append", default=[], metavar="FILE.py",
                   help="Python tools: the file's @tool functions (or its TOOLS list)")
    p.add_argument("--audit-dir", help="audit logs (default: the host config's audit_dir)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per program (default 300)")
    p.add_argument("--max-sessions", type=int, metavar="N",
                   help="sessions open at once, and programs running at once outside them (at most "
                        "the host config's mcp_max_sessions, default 16)")
    p.add_argument("--http", type=parse_http, metavar="HOST:PORT",
                   help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST: loopback "
                        "unless --http-any-host)")
    p.add_argument("--http-any-host", action="store_true",
                   help="allow --http on an address other than loopback (no authentication: put it "
                        "behind something that authenticates)")
    a = p.parse_args(argv)
    if a.max_sessions is not None and a.max_sessions < 0:
        p.error("--max-sessions must be 0 or more")
    if a.http is not None and a.http[0] not in LOOPBACK and not a.http_any_host:
        p.error("--http %s:%d is not loopback: anyone who reaches it runs programs with the policy's "
                "tools; add --http-any-host to mean it" % a.http)
    cap = session_cap(a.host_max_sessions, a.max_sessions)
    # The SDK's own per-process cap must not stop this server short of the
    # cap the operator set for it.
    set_max_sessions(max(cap, 1))
    tool_files = [os.path.abspath(f) for f in a.tools]

    def factory() -> Any:
        tools: list[Any] = []
        for f in tool_files:
            tools += load_python_tools(f)
        return Sandbox(tools=tools, policy=a.policy, runtime=a.runtime, image=a.rootfs,
                       host_config=a.config, audit_dir=a.audit_dir, root=a.root, tollgate=a.tollgate,
                       timeout=a.timeout)

    watch = ([os.path.abspath(a.policy)] if a.policy else []) + tool_files
    core = Core(factory(), allow_approve=a.allow_approve, allow_elicit=a.allow_elicit, max_sessions=cap,
                factory=factory, watch=watch)
    b = Binding(core)
    core.start_watching()
    if a.http is not None:
        why = serve_http(b, *a.http)
    else:
        # Nothing but JSON-RPC may reach stdout (stdio_server also points
        # fd 1 at stderr while it serves): print() goes to stderr.
        why = serve_stdio(b)
    # From here on a signal must not cut the clean-up short (a client
    # closes stdin, sends SIGTERM 2 s later, then SIGKILL).
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    core.close(why)
    return 0



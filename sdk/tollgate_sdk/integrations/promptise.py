"""tollgate as the sandbox of Promptise's code-action pattern.

Promptise's `agent_pattern="code-action"` (promptise 1.10) has the model
write one Python program over the agent's tools; a `CodeActionNode` runs it
in a session from its `sandbox_factory` and serves the program's tool calls
through a file rendezvous in `/workspace/_rpc`, which the node polls through
the session (`list_files`, `cat`, `write_file`).  The session talks to a
`promptise.sandbox.SandboxBackend`.  Those two are the extension points:
`build_agent` itself only ever builds Docker's backend (see
docs/integrations.md, "Promptise"), so the agent chooses tollgate by passing
the code-action graph with tollgate's factory:

    from tollgate_sdk.integrations.promptise import TollgateCodeAction

    tg = TollgateCodeAction(governance={"issue_refund": {"irreversible": True,
                                                         "approve": "amount > 50"}},
                            budgets={"max_tool_calls": 60}, approval=lambda call: False)
    agent = await build_agent(model=..., extra_tools=[get_order, issue_refund],
                              agent_pattern=tg.graph(max_repairs=1))   # was "code-action"

What then happens to a program: `TollgateBackend` keeps the session's
`/workspace` on the host (the node's files: the tools module, the program,
the rendezvous), and runs the program with `tollgate_sdk.Sandbox.run` in a
fresh hardened runsc (or runc) container.  Its first line, Promptise's
`from promptise_tools import *`, is replaced by one line that defines the
same functions over tollgate's in-container client, so every call crosses
tollgate's bridge and its gate (policy, approval, budgets, hard cap, audit
log) first.  A call the gate allows is handed to Promptise's own rendezvous,
so the node runs the real tool exactly as under Docker: through its hooks,
approval wrappers and its own `max_tool_calls`, recorded in the agent's
state.  A call the gate refuses never reaches Promptise; the program gets
`ToolDenied` (an exception, never a result string).
"""
from __future__ import annotations

import ast
import asyncio
import json
import posixpath
import shlex
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from promptise.engine import PromptGraph
from promptise.engine.code_action import CodeActionConfig
from promptise.sandbox import CommandResult, SandboxBackend, SandboxConfig, SandboxSession

from .. import InvalidArgument, Result, Sandbox, SessionClosed, TollgateSDKError, Tool

__all__ = ["TollgateBackend", "TollgateCodeAction", "parse_tools_module", "PROMPTISE_IMPORT", "GOVERNANCE_KEYS"]

# The first line of every program the node writes (code_action._run_program).
PROMPTISE_IMPORT = "from promptise_tools import *  # noqa"
# Where the node puts things in the sandbox (promptise.engine.code_action).
_WORKSPACE = "/workspace"
_RPC_DIR = "/workspace/_rpc"
_TOOLS_PATH = "/workspace/promptise_tools.py"

# What governance={name: {...}} may say about a tool: tollgate's Tool options.
GOVERNANCE_KEYS = frozenset(("irreversible", "cost", "timeout", "max_calls", "approve", "deny",
                             "rules", "args_schema", "description"))

# The in-container promptise_tools module: Promptise's names over tollgate's
# client.  ToolBudgetExceeded stays a RuntimeError, as Promptise's is, and is
# a tollgate BudgetExhausted too, so `except ToolDenied` still catches a cap.
_TOOLS_MODULE = '''\
import tollgate as _tollgate
from tollgate import ToolDenied, ToolFailed, TollgateError


class ToolBudgetExceeded(_tollgate.BudgetExhausted, RuntimeError):
    """A cap on tool calls was reached: tollgate's budget or Promptise's max_tool_calls."""


def _call(_tool, _args):
    try:
        return _tollgate.call(_tool, **_args)
    except _tollgate.BudgetExhausted as e:
        raise ToolBudgetExceeded(e.message, tool=e.tool, call_id=e.call_id) from None
    except _tollgate.ToolFailed as e:
        if (e.message or "").startswith("ToolBudgetExceeded:"):
            raise ToolBudgetExceeded(e.message, tool=e.tool, call_id=e.call_id) from None
        raise
'''


class ToolBudgetExceeded(TollgateSDKError, RuntimeError):
    """Promptise's bridge refused a call tollgate allowed: the node's own
    max_tool_calls is used up.  The program sees ToolBudgetExceeded."""


class PromptiseToolError(TollgateSDKError, RuntimeError):
    """Promptise's bridge ran the tool and it failed (its message is the
    node's answer)."""


@dataclass
class _Call:
    done: threading.Event = field(default_factory=threading.Event)
    answer: str = ""


def parse_tools_module(source: str) -> list[tuple[str, list[str]]]:
    """The tools the node's generated promptise_tools.py defines: (name,
    argument names) of each public top-level function, in order.  The
    source is the node's own rendering (trusted host text), parsed, never
    run."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise InvalidArgument("the code-action tools module does not parse (%s): is this "
                              "promptise 1.10's CodeActionNode?" % e) from None
    out: list[tuple[str, list[str]]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            out.append((node.name, [a.arg for a in node.args.args]))
    return out


class _Workspace:
    """One session's /workspace, kept on the host, and the rendezvous
    requests waiting in it for the node's bridge loop."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.dirs: set[str] = {_WORKSPACE}
        self.pending: dict[str, _Call] = {}
        self.lock = threading.Lock()
        self.closed = False

    def listing(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        with self.lock:
            names = {p[len(prefix):].split("/", 1)[0] for p in [*self.files, *self.dirs]
                     if p.startswith(prefix)}
        return sorted(n for n in names if n)

    def forward(self, tool: str, args: dict[str, Any], timeout: float) -> Any:
        """A call tollgate allowed, handed to the node's rendezvous: write
        req_<id>.json as the in-sandbox client would, wait for the node's
        .done marker, return its result or raise its error."""
        rid = uuid.uuid4().hex
        call = _Call()
        with self.lock:
            if self.closed:
                raise SessionClosed("the code-action session has ended")
            self.pending[rid] = call
            self.files["%s/req_%s.json" % (_RPC_DIR, rid)] = json.dumps({"tool": tool, "args": args})
        try:
            if not call.done.wait(timeout):
                raise TimeoutError("Promptise's bridge did not answer %s within %g s" % (tool, timeout))
        finally:
            with self.lock:
                self.pending.pop(rid, None)
                for name in ("req_%s.json", "resp_%s.json", "resp_%s.done"):
                    self.files.pop("%s/%s" % (_RPC_DIR, name % rid), None)
        if self.closed and not call.answer:
            raise SessionClosed("the code-action session ended before %s was answered" % tool)
        resp = json.loads(call.answer)
        if resp.get("budget_exceeded"):
            raise ToolBudgetExceeded(str(resp.get("error", "")))
        if "error" in resp:
            raise PromptiseToolError(str(resp["error"]))
        return resp.get("result")

    def write(self, path: str, content: str) -> None:
        with self.lock:
            self.files[path] = content
            self.dirs.add(posixpath.dirname(path))
            base = posixpath.basename(path)
            if posixpath.dirname(path) == _RPC_DIR and base.startswith("resp_") and base.endswith(".done"):
                rid = base[len("resp_"):-len(".done")]
                call = self.pending.get(rid)
                if call is not None:
                    call.answer = self.files.get("%s/resp_%s.json" % (_RPC_DIR, rid), "")
                    call.done.set()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for call in self.pending.values():
                call.done.set()


class TollgateBackend(SandboxBackend):
    """A Promptise SandboxBackend whose "containers" are host-side
    workspaces and whose programs run in tollgate containers.

    It serves the commands a CodeActionNode sends: `mkdir -p`, `ls -1 --`,
    `cat`, file writes, and `python3 FILE`, which runs FILE with
    Sandbox.run.  Any other command fails with exit status 126 and says
    why: a shell in a long-lived container is not what tollgate gives a
    code-action program (each program gets a fresh container)."""

    def __init__(self, owner: TollgateCodeAction, config: SandboxConfig | None = None) -> None:
        # model_validate: SandboxConfig's defaults, without pydantic's mypy plugin
        super().__init__(config or SandboxConfig.model_validate({}))
        self._owner = owner
        self._spaces: dict[str, _Workspace] = {}

    def _space(self, container_id: str) -> _Workspace:
        space = self._spaces.get(container_id)
        if space is None:
            raise SessionClosed("no tollgate code-action session %r (it was removed)" % container_id)
        return space

    async def create_container(self) -> str:
        cid = "tg-promptise-" + uuid.uuid4().hex[:12]
        self._spaces[cid] = _Workspace()
        return cid

    async def execute_command(self, container_id: str, command: str, timeout: int,
                              workdir: str) -> CommandResult:
        space = self._space(container_id)
        try:
            argv = shlex.split(command)
        except ValueError as e:
            return CommandResult(2, "", "tollgate backend: cannot parse %r: %s" % (command, e))
        if argv[:2] == ["mkdir", "-p"] and len(argv) == 3:
            with space.lock:
                space.dirs.add(posixpath.normpath(argv[2]))
            return CommandResult(0, "", "")
        if argv[:3] == ["ls", "-1", "--"] and len(argv) == 4:
            return CommandResult(0, "".join(n + "\n" for n in space.listing(argv[3])), "")
        if argv[0] == "cat" and len(argv) in (2, 3) and argv[1:2] in (["--"], argv[-1:]):
            with space.lock:
                text = space.files.get(posixpath.normpath(argv[-1]))
            if text is None:
                return CommandResult(1, "", "cat: %s: No such file or directory\n" % argv[-1])
            return CommandResult(0, text, "")
        if argv[0] in ("python3", "python") and len(argv) == 2:
            return await self._owner._run_program(space, posixpath.normpath(argv[1]), timeout)
        return CommandResult(126, "", "tollgate backend: %r is not a command it runs: it serves a "
                             "code-action node (mkdir -p, ls -1 --, cat, python3 FILE); each "
                             "program runs in a fresh tollgate container\n" % command)

    async def read_file(self, container_id: str, file_path: str) -> str:
        space = self._space(container_id)
        with space.lock:
            text = space.files.get(posixpath.normpath(file_path))
        if text is None:
            raise FileNotFoundError("File not found or not readable: %s" % file_path)
        return text

    async def write_file(self, container_id: str, file_path: str, content: str) -> None:
        self._space(container_id).write(posixpath.normpath(file_path), content)

    async def stop_container(self, container_id: str) -> None:
        space = self._spaces.get(container_id)
        if space is not None:
            space.close()

    async def remove_container(self, container_id: str) -> None:
        space = self._spaces.pop(container_id, None)
        if space is not None:
            space.close()

    async def health_check(self) -> bool:
        return True


class TollgateCodeAction:
    """The sandbox factory for a Promptise code-action node (its
    `sandbox_factory`: `await factory()` gives a SandboxSession), running
    each program under tollgate.

    governance: {tool name: options} for the agent's tools, the options of
        tollgate_sdk.tool: irreversible, cost, timeout, max_calls, approve,
        deny, rules, args_schema (the arguments' JSON schema; without it
        each argument the node's stub passes is required and may be any
        JSON value), description.  A tool without an entry is allowed
        (tollgate still counts, caps and audits it); deny every call with
        {"deny": True}.
    sandbox_options: tollgate_sdk.Sandbox's options (runtime, budgets,
        policy, approval, audit_dir, image, memory, ...), except tools,
        which come from the agent.

    One program runs at a time per factory: the tools tollgate serves hand
    allowed calls to the program that is running.  .results holds each
    program's tollgate Result (calls, budget used, audit log), newest last.
    close() (or `with`) ends the Sandboxes it made."""

    def __init__(self, *, governance: Mapping[str, Mapping[str, Any]] | None = None,
                 **sandbox_options: Any) -> None:
        if "tools" in sandbox_options:
            raise InvalidArgument("TollgateCodeAction takes no tools=: the tools are the agent's "
                                  "(build_agent's tools); say how to govern them with governance=")
        gov: dict[str, dict[str, Any]] = {}
        for name, opts in (governance or {}).items():
            if not isinstance(opts, Mapping):
                raise InvalidArgument("governance[%r] must be a dict of tool options, e.g. "
                                      "{'approve': 'amount > 50'}" % (name,))
            unknown = sorted(set(opts) - GOVERNANCE_KEYS)
            if unknown:
                raise InvalidArgument("governance[%r]: unknown option(s) %s; use %s"
                                      % (name, ", ".join(unknown), ", ".join(sorted(GOVERNANCE_KEYS))))
            gov[name] = dict(opts)
        self.governance = gov
        self.sandbox_options = dict(sandbox_options)
        self.backend = TollgateBackend(self)
        self.results: list[Result] = []
        self._sandboxes: dict[tuple[tuple[str, tuple[str, ...]], ...], Sandbox] = {}
        self._running: _Workspace | None = None
        self._serial = asyncio.Lock()
        self._closed = False

    # -- the factory Promptise calls --

    async def __call__(self) -> SandboxSession:
        if self._closed:
            raise SessionClosed("this TollgateCodeAction was closed")
        cid = await self.backend.create_container()
        return SandboxSession(cid, self.backend, self.backend.config)

    def graph(self, **code_action: Any) -> PromptGraph:
        """The code-action graph for build_agent(agent_pattern=...), with
        this factory as its sandbox; code_action takes what build_agent's
        code_action= does (exec_timeout, max_repairs, max_tool_calls)."""
        try:
            cfg = CodeActionConfig.model_validate(code_action)
        except ValueError as e:
            raise InvalidArgument("code-action options: %s" % e) from None
        graph: PromptGraph = PromptGraph.code_action(sandbox_factory=self, **cfg.model_dump())
        return graph

    # -- running a program --

    def _sandbox_for(self, tools: list[tuple[str, list[str]]]) -> Sandbox:
        key = tuple((name, tuple(args)) for name, args in tools)
        sb = self._sandboxes.get(key)
        if sb is not None:
            return sb
        names = {name for name, _ in tools}
        unknown = sorted(set(self.governance) - names)
        if unknown:
            raise InvalidArgument("governance names %s, which the agent's code-action tools do not "
                                  "include (they are: %s)" % (", ".join(unknown), ", ".join(sorted(names))))
        # (Sandbox(**options) matches both of its overloads: say which.)
        made: Sandbox = Sandbox(tools=[self._tool(name, args) for name, args in tools], **self.sandbox_options)
        self._sandboxes[key] = made
        return made

    def _tool(self, name: str, args: list[str]) -> Tool:
        opts = dict(self.governance.get(name, {}))
        schema = opts.pop("args_schema", None) or {
            "type": "object", "properties": {a: {} for a in args}, "required": list(args),
            "additionalProperties": False}
        description = opts.pop("description", None) or (
            "The agent's tool %s, run by Promptise on the host once tollgate allows the call." % name)
        timeout = float(opts.get("timeout", 30))

        def forward(call_args: dict[str, Any]) -> Any:
            space = self._running
            if space is None:
                raise SessionClosed("no code-action program is running")
            return space.forward(name, call_args, timeout)

        return Tool(name, description, schema, forward, False, **opts)

    async def _run_program(self, space: _Workspace, path: str, timeout: int) -> CommandResult:
        with space.lock:
            program = space.files.get(path)
            module = space.files.get(_TOOLS_PATH)
        if program is None:
            return CommandResult(2, "", "python3: can't open file %r: No such file\n" % path)
        first, sep, rest = program.partition("\n")
        if first.strip() != PROMPTISE_IMPORT or module is None:
            return CommandResult(126, "", "tollgate backend: %s is not a code-action program (its first "
                                 "line is not %r)\n" % (path, PROMPTISE_IMPORT))
        try:
            tools = parse_tools_module(module)
            sb = self._sandbox_for(tools)
        except InvalidArgument as e:
            return CommandResult(126, "", "tollgate backend: %s\n" % e)
        # The node's stubs, over tollgate's client instead of its rendezvous.
        stubs = "".join("\n\ndef %s(%s):\n    return _call(%r, {%s})\n"
                        % (name, ", ".join(args), name, ", ".join("%r: %s" % (a, a) for a in args))
                        for name, args in tools)
        # One line in place of one line: the model's line numbers in a
        # traceback stay the ones it wrote, so a repair prompt is right.
        loader = ("import sys as __s, types as __t; __m = __t.ModuleType('promptise_tools'); "
                  "exec(compile(%r, %r, 'exec'), __m.__dict__); __s.modules['promptise_tools'] = __m; "
                  "del __s, __t, __m; %s" % (_TOOLS_MODULE + stubs, _TOOLS_PATH, PROMPTISE_IMPORT))
        code = loader + sep + rest
        async with self._serial:
            self._running = space
            try:
                result = await asyncio.to_thread(sb.run, code, check=False, timeout=timeout)
            finally:
                self._running = None
        self.results.append(result)
        if result.timed_out:
            return CommandResult(-1, result.stdout, result.stderr + "\nCommand timed out after %d seconds"
                                 % timeout, timeout=True)
        return CommandResult(result.exit_status, result.stdout, result.stderr)

    # -- lifecycle --

    def close(self) -> None:
        self._closed = True
        for sb in self._sandboxes.values():
            sb.close()
        self._sandboxes.clear()

    def __enter__(self) -> TollgateCodeAction:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

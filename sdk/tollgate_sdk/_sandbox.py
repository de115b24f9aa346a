"""Sandbox: run model-written code in a fresh hardened container whose only
way out is a set of governed tools.

    sb = Sandbox(tools=[list_orders, get_order, issue_refund],
                 budgets={"max_tool_calls": 20}, approval=lambda call: call.args["amount"] < 100)
    result = sb.run(code)          # Result(stdout, stderr, exit_status, calls, budget_used, audit_log)
    with sb.session() as s:        # one container, several cells, one budget
        s.run(cell1); s.run(cell2)

What happens on sb.run(code): the Python tools are served on a Unix
socket the SDK owns (0600, in a 0700 directory); a policy file is written
with each of them as a `socket` tool (plus every tool of the policy file
or dict given as policy=) and checked with `tollgate policy check`; the
program is bind-mounted read-only at /app in a bundle made by `tollgate
spec` (the hardened profile) on the rootfs `image`; `tollgate run` runs it
under runsc (or runc, only when asked) with no network; every call from
inside is decided on the host by the gate, approvals by the callback (over
the container's control socket, as `tollgate approve` does), and recorded
in the audit log the Result points at.

Nothing ever runs on the host in place of the sandbox: when runsc, the
tollgate binary, root or the rootfs is missing, run() raises
SandboxUnavailable naming the fix before anything starts.
"""
from __future__ import annotations

import atexit
import dataclasses
import inspect
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Optional, Union, overload

from ._pid1 import PID1_FIX
from ._tree import remove_tree
from . import _audit as audit, _oom as oom_watch, _pause, _reap as reap
from ._approvals import ApprovalRequest, ApprovalWatcher, control_request
from ._audit import Call
from ._capture import TextCallback, wait_capture
from ._custom import (CALL_MEMORY, CALL_PIDS, CALL_TMP, DEFAULT_MAX_CUSTOM_TOOLS, RESULT_MAX, ceiling_refusal,
                      make_tool)
from ._errors import (CellTimeout, ContainerError, CustomToolError, InvalidArgument, PolicyError, ProgramFailed,
                      SandboxUnavailable)
from ._limits import RUNSC_HOST_TASKS_PER_GUEST, Size, check_mounts, check_resources, parse_size, size_text
from ._remote import RemoteSandbox
from ._server import ToolServer
from ._session import Session
from ._schema import JSONSchema
from ._tools import Condition, Rule, Tool, as_tool
from ._warm import WarmPool

if TYPE_CHECKING:
    from ._repair import Usage

# What Sandbox(approval=...) takes: nobody (None), a person at a terminal
# ("cli"), or a callback given the parked call that answers True/False,
# "allow"/"deny" or (answer, reason), or an awaitable of one.
ApprovalCallback = Callable[[ApprovalRequest], Any]
Approval = Union[None, Literal["cli"], ApprovalCallback]
Runtime = Literal["runsc", "runc"]
Policy = dict[str, Any]

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TREE = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_AUDIT_DIR = "/var/log/tollgate/audit"
# The in-container kernel lives with the other in-container clients
# (bridge/client/kernel.py); the package carries it as data in
# _container/ (a link in the source tree, a copy in a built wheel).
KERNEL_SOURCE = os.path.join(HERE, "_container", "kernel.py")
# Every Python process in the container line-buffers stdout and stderr
# (PYTHONPATH puts this first).  Not PYTHONUNBUFFERED: its unbuffered
# stdout loses the rest of a short write, and gVisor takes at most 64 KiB
# per pipe write, so 5 MiB printed arrived as 320 KiB; a BufferedWriter
# writes until every byte is out.
SITECUSTOMIZE = """import io, sys
for _n in ("stdout", "stderr"):
    _s = getattr(sys, _n)
    try:
        if isinstance(getattr(_s, "buffer", None), io.RawIOBase):
            # -u or PYTHONUNBUFFERED: put a buffered writer back under it
            setattr(sys, _n, io.TextIOWrapper(io.BufferedWriter(_s.buffer), encoding=_s.encoding,
                                             errors=_s.errors, line_buffering=True))
        else:
            _s.reconfigure(line_buffering=True)
    except Exception:
        pass
del _n, _s
"""


@dataclasses.dataclass
class Result:
    """What one program (or one session cell) did."""
    stdout: str
    stderr: str
    exit_status: int
    calls: list[Call]           # in order, denied ones too
    budget_used: dict[str, Any]  # {"calls", "cost", "irreversible", "tools": {name: n}, "anomalies"}
    audit_log: str              # the run's audit log (tollgate audit verify PATH)
    container_id: str = ""
    timed_out: bool = False
    stdout_cut: int = 0         # bytes of stdout past output_max, read and dropped
    stderr_cut: int = 0
    timeout_how: str = ""       # when timed_out: "killed", "interrupted" or "abandoned"
    oom_killed: bool = False    # the kernel's OOM killer ended it
    memory_limit: str = ""
    warnings: list[str] = dataclasses.field(default_factory=list)  # tollgate's own notices (not the program's stderr)
    stopped_by: str = ""        # the anomaly limit that stopped the run, in words (docs/policy.md)

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["calls"] = [c.as_dict() for c in self.calls]
        return d


def find_tollgate(explicit: str | None = None) -> str | None:
    """The tollgate binary: explicit, $TOLLGATE, the source tree's build/,
    then PATH.  None when there is none."""
    for c in (explicit, os.environ.get("TOLLGATE"), os.path.join(SOURCE_TREE, "build", "tollgate")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
        if c and c == explicit:
            return None
    return shutil.which("tollgate")


def find_rootfs(explicit: str | None = None, tollgate: str | None = None) -> str:
    """The Python rootfs: explicit, $TOLLGATE_ROOTFS, else the one `make`
    builds beside the tollgate binary (tollgate, default find_tollgate()):
    build/rootfs/python beside build/tollgate, PREFIX/lib/tollgate/rootfs/python
    beside PREFIX/bin/tollgate after `make install`; then the source
    tree's build/rootfs/python.  The first that holds usr/bin/python3, or
    the first of them, for the error that names it."""
    for c in (explicit, os.environ.get("TOLLGATE_ROOTFS")):
        if c:
            return os.path.abspath(c)
    tg = tollgate or find_tollgate()
    here = [os.path.join(os.path.dirname(tg), "rootfs", "python"),
            os.path.join(os.path.dirname(tg), "..", "lib", "tollgate", "rootfs", "python")] if tg else []
    candidates = [os.path.normpath(c) for c in here + [os.path.join(SOURCE_TREE, "build", "rootfs", "python")]]
    for c in candidates:
        if os.path.exists(os.path.join(c, "usr", "bin", "python3")):
            return c
    return candidates[0]


CLIENT_OPTIONS = {"server", "api_key", "tools", "template", "timeout", "lifetime", "metadata"}


class _Options:
    """A Sandbox's options on this host, kept (Sandbox.__init__).  A class
    of its own so that Sandbox.__new__, which makes a RemoteSandbox when
    given server=, is the constructor type checkers read."""

    def __init__(self, tools: Iterable[object] = (), *, policy: Policy | str | os.PathLike[str] | None = None,
                 budgets: Mapping[str, Any] | None = None, runtime: Runtime = "runsc",
                 image: str | None = None, approval: Approval = None,
                 approval_timeout: float | None = None, host_config: str | None = None,
                 runtime_path: str | None = None, audit_dir: str | None = None, root: str | None = None,
                 tollgate: str | None = None, timeout: float = 300, env: Iterable[str] | None = None,
                 output_max: int = 8 << 20, mounts: Mapping[str, str | os.PathLike[str]] | None = None,
                 on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None,
                 memory: Size | None = None, cpus: float | None = None, pids: int | None = None,
                 tmp: Size | None = None, warm: int = 0,
                 pause_dir: str | os.PathLike[str] | None = None,
                 max_custom_tools: int | None = None) -> None:
        self.tools: list[Tool] = [as_tool(t) for t in tools]
        names = [t.name for t in self.tools]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise InvalidArgument("two tools are named %s; names must be unique" % ", ".join(sorted(dup)))
        if runtime not in ("runsc", "runc"):
            raise InvalidArgument('runtime must be "runsc" or "runc", not %r' % (runtime,))
        if not (approval is None or approval == "cli" or callable(approval)):
            raise InvalidArgument('approval must be None, "cli" or a callable')
        self.base_policy, self.policy_dir = _load_policy(policy)
        self.budgets = dict(budgets or {})
        self.runtime: Runtime = runtime
        self.tollgate = find_tollgate(tollgate)
        self.image = find_rootfs(image, self.tollgate)
        self.approval: Approval = approval
        self.approval_timeout = approval_timeout
        self.host_config_path = host_config
        self.runtime_path = runtime_path
        self.audit_dir_arg = audit_dir
        self.root_arg = root
        self._tollgate_arg = tollgate
        self.timeout = timeout
        self.output_max = output_max
        self.env = list(env or [])
        self.mounts = check_mounts(mounts)
        self.resources = check_resources(memory, cpus, pids, tmp)
        if isinstance(warm, bool) or not isinstance(warm, int) or not 0 <= warm <= 16:
            raise InvalidArgument("warm=%r: the number of containers kept started, 0 to 16" % (warm,))
        self.warm = warm
        if max_custom_tools is not None and (isinstance(max_custom_tools, bool) or
                                             not isinstance(max_custom_tools, int) or max_custom_tools < 0):
            raise InvalidArgument("max_custom_tools=%r: how many tools create_tool may add, a whole "
                                  "number, 0 or more (0 forbids them)" % (max_custom_tools,))
        self._max_custom_tools = max_custom_tools
        self._runner: Sandbox | None = None  # where agent-written tools' calls run
        self._pool: WarmPool | None = None
        self.pause_dir = os.path.abspath(pause_dir) if pause_dir else None
        for name, cb in (("on_stdout", on_stdout), ("on_stderr", on_stderr)):
            if cb is not None and not callable(cb):
                raise InvalidArgument("%s must be a callable taking the text as it arrives" % name)
        self.on_stdout, self.on_stderr = on_stdout, on_stderr
        self._server: ToolServer | None = None
        self._state: str | None = None
        self._spec: dict[str, Any] | None = None
        self._count = 0
        self._lock = threading.Lock()
        self._sessions: set[Session] = set()
        self.active: set[str] = set()  # ids of the containers running now (for approvals)
        # set by start():
        self.root = ""
        self.audit_dir = ""
        self.config_path = ""
        self.policy_path = ""
        self.policy: Policy | None = None  # the policy document, once started



class Sandbox(_Options):
    """Governed code execution with Python functions as the tools.

    tools       functions (@tool or plain, sync or async), Tool objects, or
                objects with LangChain's tool shape
    policy      None, a policy dict, or a policy file path: its budgets,
                approval settings and tools (exec, socket, mcp backends) are
                kept; a Python tool of the same name as one of its tools
                takes that tool's rules, cost, limits from it
    budgets     merged into the policy's budgets (max_tool_calls, max_cost,
                max_irreversible, repeat_limit)
    runtime     "runsc" (gVisor, the default) or "runc" (only when asked)
    image       the rootfs (default $TOLLGATE_ROOTFS, or the source tree's
                build/rootfs/python from bundles/rootfs/python.sh)
    approval    None (nobody answers; the timeout denies), a callback
                ApprovalRequest -> True/False/"allow"/"deny"/(answer, reason),
                or "cli" (a person runs the printed `tollgate approve`)
    approval_timeout   seconds a parked call waits (the policy's approval.timeout)
    host_config a tollgate host config to start from (its runtime_path,
                platform, profile, audit_dir...); runtime_path= and
                audit_dir= override it
    tollgate    the tollgate binary (default: $TOLLGATE, build/tollgate, PATH)
    timeout     seconds a program may run before it is killed (default 300)
    output_max  bytes of stdout and of stderr kept per program or cell
                (default 8 MiB; the rest is read and dropped, and the Result
                says so: a note at the end of the text, .stdout_cut and
                .stderr_cut in bytes)
    mounts      {"/data": "/host/dir"}: host directories (or files) bound
                read-only (nosuid, nodev, noexec) into every container
    on_stdout, on_stderr   callables given the text as it arrives
    memory, cpus, pids, tmp   lower limits than the profile's ("1g", 2,
                512, "256m"); above the host config's profile they are
                refused
    warm        containers kept created and started (0 to 16): a run takes
                one (never reused) and another is made in the background
    pause_dir   where session.pause() keeps its images (default: the
                Sandbox's state directory, gone at close())

    With server= ("http://HOST:PORT", "https://..." or "unix:/path") and
    api_key=, it is the client mode instead: a RemoteSandbox of that
    `tollgate serve` (docs/serve.md), unprivileged, whose tools are this
    process's functions governed by the service's policy; it takes tools,
    template, timeout, lifetime and metadata.
    """

    @overload
    def __new__(cls, tools: Iterable[object] = (), *, server: str,  # type: ignore[misc]
                api_key: str, template: str = "base", timeout: float = 300, lifetime: int = 600,
                metadata: dict[str, str] | None = None) -> RemoteSandbox: ...

    @overload
    def __new__(cls,
                tools: Iterable[object] = (), *, policy: Policy | str | os.PathLike[str] | None = None,
                budgets: Mapping[str, Any] | None = None, runtime: Runtime = "runsc",
                image: str | None = None, approval: Approval = None,
                approval_timeout: float | None = None, host_config: str | None = None,
                runtime_path: str | None = None, audit_dir: str | None = None, root: str | None = None,
                tollgate: str | None = None, timeout: float = 300, env: Iterable[str] | None = None,
                output_max: int = 8 << 20, mounts: Mapping[str, str | os.PathLike[str]] | None = None,
                on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None,
                memory: Size | None = None, cpus: float | None = None, pids: int | None = None,
                tmp: Size | None = None, warm: int = 0,
                pause_dir: str | os.PathLike[str] | None = None,
                max_custom_tools: int | None = None) -> Sandbox: ...

    def __new__(cls, *args: Any, **options: Any) -> Any:
        # server= is the client mode: a RemoteSandbox of the service at that
        # address (docs/serve.md), which takes no host option.
        if options.get("server") is not None:
            extra = sorted(set(options) - CLIENT_OPTIONS)
            if extra:
                raise InvalidArgument("Sandbox(server=...) is the client mode: the service's tenant decides how "
                                      "sandboxes are made, so %s %s not taken (docs/serve.md)"
                                      % (", ".join(extra), "is" if len(extra) == 1 else "are"))
            if len(args) > 1:
                raise InvalidArgument("Sandbox(tools, *, server=..., api_key=...): options are keyword-only")
            if args:
                options["tools"] = args[0]
            return RemoteSandbox(**options)
        if "server" in options:
            raise InvalidArgument("server=None: leave server out for a Sandbox on this host")
        return super().__new__(cls)

    # ---- set-up ------------------------------------------------------------

    def check_available(self) -> None:
        """Raise SandboxUnavailable, naming the fix, unless a hardened
        sandbox can start here.  Runs nothing."""
        if self.tollgate is None:
            where = self._tollgate_arg or "$TOLLGATE, %s/build/tollgate or PATH" % SOURCE_TREE
            raise SandboxUnavailable("the tollgate binary was not found (%s): build it with 'make' "
                                     "or install it with 'make install'; nothing was run" % where)
        if os.geteuid() != 0:
            raise SandboxUnavailable("tollgate starts containers and mounts the bridge tmpfs: run "
                                     "this program as root; nothing was run")
        if os.getpid() == 1:
            # The sandboxes' processes that outlive tollgate's calls would
            # become this program's children, and nothing would reap them:
            # removing a gVisor sandbox then waits minutes (_pid1.py).
            raise SandboxUnavailable("this program is PID 1 of its PID namespace, which must reap the "
                                     "orphaned processes of the sandboxes: %s; nothing was run" % PID1_FIX)
        cfg = self._user_host_config()
        path = self.runtime_path or (cfg.get("runtime_path") if cfg.get("runtime", "runsc")
                                     == self.runtime else None)
        fix = ("install it with 'make deps' or 'apt-get install %s'%s" %
               (self.runtime, ", or choose runtime=\"runc\" explicitly" if self.runtime == "runsc" else ""))
        if path:
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise SandboxUnavailable("%s (%s) not found at %s (runtime_path): %s, or fix "
                                         "runtime_path; nothing was run"
                                         % (self.runtime, "gVisor" if self.runtime == "runsc" else "runc",
                                            path, fix))
        elif shutil.which(self.runtime) is None:
            raise SandboxUnavailable("%s (%s) not found in PATH: %s; nothing was run"
                                     % (self.runtime, "gVisor" if self.runtime == "runsc" else "runc", fix))
        if not os.path.exists(os.path.join(self.image, "usr", "bin", "python3")):
            raise SandboxUnavailable("no Python rootfs at %s: 'make' in the tollgate checkout builds "
                                     "build/rootfs/python (and 'make install' installs it beside "
                                     "tollgate), or build one with 'bash bundles/rootfs/python.sh DIR' "
                                     "and pass image=DIR (or set TOLLGATE_ROOTFS); nothing was run"
                                     % self.image)

    def _user_host_config(self) -> dict[str, Any]:
        if not self.host_config_path:
            return {}
        try:
            with open(self.host_config_path, encoding="utf-8") as f:
                cfg = json.load(f)
        except (OSError, ValueError) as e:
            raise SandboxUnavailable("the host config %s cannot be read: %s"
                                     % (self.host_config_path, e)) from None
        return cfg if isinstance(cfg, dict) else {}

    def start(self) -> None:
        """Check, serve the tools, write the host config and the policy.
        run() calls it on first use; calling it again does nothing."""
        with self._lock:
            if self._state is not None:
                return
            self.check_available()
            # What dead SDK programs (kill -9) left: reaped before we add ours.
            assert self.tollgate is not None  # check_available() says so
            reap.sweep(self.tollgate, self.root_arg, self.host_config_path)
            state = tempfile.mkdtemp(prefix=reap.STATE_PREFIX)
            os.chmod(state, 0o755)  # the container's uid 65534 reads /app below it
            try:
                reap.mark_owner(state)
                cfg = self._user_host_config()
                # The host config's runtime_path is its runtime's binary
                # (runsc when it names none): not this sandbox's when the
                # caller chose the other backend.
                if cfg.get("runtime", "runsc") != self.runtime:
                    cfg.pop("runtime_path", None)
                cfg["runtime"] = self.runtime
                if self.runtime_path:
                    cfg["runtime_path"] = self.runtime_path
                self.audit_dir = os.path.abspath(self.audit_dir_arg or cfg.get("audit_dir") or DEFAULT_AUDIT_DIR)
                cfg["audit_dir"] = self.audit_dir
                cfg.setdefault("policy_dir", os.path.join(state, "policies"))
                self.config_path = os.path.join(state, "config.json")
                _write_json(self.config_path, cfg, 0o600)
                self.root = os.path.abspath(self.root_arg or os.path.join(state, "root"))
                os.makedirs(self.root, exist_ok=True)
                # Its socket lives in the state directory, so that a
                # program killed -9 leaves it where the next Sandbox's
                # sweep (_reap.py) removes it with the rest.
                self._server = ToolServer(self.tools, directory=state) if self.tools else None
                self.policy = self._policy_document()
                self.policy_path = os.path.join(state, "policy.json")
                self._write_checked_policy(self.policy_path, self.policy)
                # The profile's limits are the ceilings for memory= & co.
                self._load_spec(state)
                self._check_resources()
                self._state = state
                if self.warm:
                    self._pool = WarmPool(self, self.warm)
                    self._pool.fill()
                # A program that forgets close() (or dies of an exception)
                # still leaves no container, sidecar or socket behind.
                atexit.register(_close_at_exit, weakref.ref(self))
            except BaseException:
                self._spec = None
                if self._server:
                    self._server.close()
                    self._server = None
                remove_tree(state)
                raise

    def _state_dir(self) -> str:
        if self._state is None:
            raise InvalidArgument("the Sandbox is not started (or closed): call start() or run() first")
        return self._state

    def close(self) -> None:
        """Close its sessions, stop serving the tools and remove the SDK's
        state (bundles, policies, sockets).  Audit logs stay in audit_dir;
        paused sessions stay in pause_dir, when it has one."""
        for s in list(self._sessions):
            s.close()
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        with self._lock:
            if self._server:
                self._server.close()
                self._server = None
            if self._state:
                remove_tree(self._state)
                self._state = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def pending(self) -> list[dict[str, Any]]:
        """The calls waiting for approval in this Sandbox's running
        containers, as the control sockets report them (each with its
        "container")."""
        out = []
        for cid in sorted(self.active):
            try:
                r = control_request(os.path.join(self.root, cid, "control.sock"), {"verb": "pending"})
            except (OSError, ValueError):
                continue
            for p in r.get("pending") or []:
                out.append(dict(p, container=cid))
        return out

    def decide(self, call_id: str, approve: bool, reason: str = "") -> dict[str, Any]:
        """Approve or deny a parked call of one of this Sandbox's
        containers, as `tollgate approve|deny` does.  Returns the control
        socket's reply ({"ok": true} or {"ok": false, "error": ...})."""
        for p in self.pending():
            if p.get("call") == call_id:
                req: dict[str, Any] = {"verb": "approve" if approve else "deny", "call": call_id}
                if reason:
                    req["reason"] = reason
                return control_request(os.path.join(self.root, p["container"], "control.sock"), req)
        return {"ok": False, "error": "no call %s is waiting for approval" % call_id}

    @property
    def tool_server(self) -> ToolServer | None:
        return self._server

    # ---- policy --------------------------------------------------------------

    def _policy_document(self, usage: Usage | None = None) -> Policy:
        p: Policy = json.loads(json.dumps(self.base_policy))
        p.setdefault("version", 1)
        tools = p.setdefault("tools", {})
        for t in self.tools:
            assert self._server is not None, "a Sandbox with tools serves them once started"
            entry = t.policy_entry(self._server.path)
            given = tools.get(t.name)
            if isinstance(given, dict):
                # The policy file's word on governance wins; the backend is ours.
                for k, v in given.items():
                    if k not in ("backend",):
                        entry[k] = v
            tools[t.name] = entry
        if self.budgets:
            p.setdefault("budgets", {}).update(self.budgets)
        if any(t.source_sha256 for t in self.tools):
            # The gate checks the count too (policy check, and the ceiling's).
            p.setdefault("budgets", {})["max_custom_tools"] = self.max_custom_tools
        if self.approval_timeout is not None:
            p.setdefault("approval", {})["timeout"] = self.approval_timeout
        if usage is not None:
            p = usage.lowered(p)
        return p

    # ---- agent-written tools (issue 43) ----------------------------------------

    @property
    def max_custom_tools(self) -> int:
        """How many tools create_tool may add: max_custom_tools=, else the
        policy's budgets.max_custom_tools, else 8; never above the policy's."""
        given = self.budgets.get("max_custom_tools",
                                 (self.base_policy.get("budgets") or {}).get("max_custom_tools"))
        limit = DEFAULT_MAX_CUSTOM_TOOLS if self._max_custom_tools is None else self._max_custom_tools
        if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
            limit = given if self._max_custom_tools is None else min(limit, given)
        return limit

    def create_tool(self, name: str, source: str, *, description: str,
                    schema: JSONSchema | None = None, timeout: float = 30, cost: float = 0,
                    max_calls: int | None = None, approve: Condition = None, deny: Condition = None,
                    rules: list[Rule] | None = None) -> Tool:
        """Make source (Python a model wrote, defining `def NAME(...)`) a
        governed tool that later programs call as `from tollgate import
        NAME`.  Each call runs the source in a container of its own (no
        tools, no mounts, no network, 128m), never on the host; the policy
        entry carries the source's SHA-256, which the audit log records on
        every call of it.  approve=/deny=/rules=, cost=, max_calls= and
        timeout= govern it as they do a @tool.  Raises ToolDefinitionError
        for a bad name or source, CustomToolError over max_custom_tools or
        when the host's policy ceiling forbids agent-written tools."""
        self.start()
        t = make_tool(self, name, source, description=description, schema=schema, timeout=timeout,
                      cost=cost, max_calls=max_calls, approve=approve, deny=deny, rules=rules)
        with self._lock:
            taken = {x.name for x in self.tools} | set((self.base_policy.get("tools") or {}))
            if name in taken:
                raise InvalidArgument("create_tool: a tool named %s exists already; choose another name"
                                      % name)
            n = sum(1 for x in self.tools if x.source_sha256)
            if n + 1 > self.max_custom_tools:
                raise CustomToolError("create_tool(%s): this Sandbox has %d agent-written tools, its "
                                      "max_custom_tools is %d: reuse one, or raise max_custom_tools= "
                                      "(or the policy's budgets.max_custom_tools)"
                                      % (name, n, self.max_custom_tools))
            self._count += 1
            path = os.path.join(self._state_dir(), "policy-tools-%d.json" % self._count)
            self.tools.append(t)
            try:
                if self._server is None:
                    self._server = ToolServer([], directory=self._state_dir())
                policy = self._policy_document()
                self._write_checked_policy(path, policy)
                ceiling = self._user_host_config().get("policy_ceiling")
                if isinstance(ceiling, str) and ceiling:
                    def check() -> tuple[int, str]:
                        p = subprocess.run(self._tg("policy", "check", "--within", ceiling, path),
                                           capture_output=True, text=True)
                        return p.returncode, p.stdout + p.stderr
                    why = ceiling_refusal(check)
                    if why is not None:
                        raise CustomToolError("create_tool(%s): the host's policy ceiling %s forbids it: "
                                              "%s" % (name, ceiling, why))
            except BaseException:
                self.tools.remove(t)
                raise
            self._server.tools[name] = t
            self.policy, self.policy_path = policy, path
            pool, self._pool = self._pool, None
        if pool is not None:
            # Its containers were made under the old policy: make new ones.
            pool.close()
            self._pool = WarmPool(self, self.warm)
            self._pool.fill()
        return t

    def custom_runner(self) -> Sandbox:
        """The Sandbox the calls of agent-written tools run in: no tools
        (its gate denies every call), no mounts, the small limits of
        _custom, this Sandbox's runtime, image and audit directory."""
        with self._lock:
            if self._runner is None:
                self._runner = Sandbox(runtime=self.runtime, image=self.image,
                                       host_config=self.host_config_path, runtime_path=self.runtime_path,
                                       audit_dir=self.audit_dir, tollgate=self.tollgate,
                                       budgets={"max_tool_calls": 0}, memory=CALL_MEMORY, pids=CALL_PIDS,
                                       tmp=CALL_TMP, output_max=2 * RESULT_MAX, max_custom_tools=0)
            return self._runner

    def _write_checked_policy(self, path: str, policy: Policy) -> None:
        _write_json(path, policy, 0o644)
        p = subprocess.run(self._tg("policy", "check", path), capture_output=True, text=True)
        if p.returncode != 0:
            msgs = [l for l in p.stderr.splitlines() if l.strip()] or [p.stdout.strip() or "refused"]
            raise PolicyError(msgs, path)

    def policy_for(self, usage: Usage) -> str:
        """Write and check a policy lowered by usage (see repair.Usage);
        returns its path."""
        self.start()
        with self._lock:
            self._count += 1
            n = self._count
        path = os.path.join(self._state_dir(), "policy-%d.json" % n)
        self._write_checked_policy(path, self._policy_document(usage))
        return path

    # ---- running -------------------------------------------------------------

    def _tg(self, *args: str) -> list[str]:
        if self.tollgate is None:
            self.check_available()
        assert self.tollgate is not None
        cmd = [self.tollgate]
        if self.root:
            cmd += ["--root", self.root]
        if self.config_path:
            cmd += ["--config", self.config_path]
        if args and args[0] in ("run", "create", "restore"):
            # This process owns every container it makes (docs/reliability.md).
            rt = ["--runtime", self.runtime] if args[0] != "restore" else []
            return cmd + rt + [args[0]] + reap.owner_args() + list(args[1:])
        return cmd + list(args)

    def _new_id(self) -> str:
        with self._lock:
            self._count += 1
            return "sdk-%d-%d-%s" % (os.getpid(), self._count, secrets.token_hex(3))

    def _bundle(self, cid: str, args: list[str], files: dict[str, str] | None = None,
                parent: str | None = None) -> str:
        """A bundle from `tollgate spec` (cached), with args as the process
        and files bind-mounted read-only at /app; in parent (default: the
        state directory's bundles/)."""
        with self._lock:
            spec = self._cache_spec()
        return self._bundle_from_spec(spec, cid, args, files, parent)

    def _cache_spec(self) -> dict[str, Any]:
        if self._spec is None:
            self._load_spec()
            self._check_resources()
        assert self._spec is not None
        return self._spec

    def _load_spec(self, state: str | None = None) -> dict[str, Any]:
        spec_dir = os.path.join(state or self._state_dir(), "spec")
        os.makedirs(spec_dir, exist_ok=True)
        p = subprocess.run(self._tg("spec", "--bundle", spec_dir, "--rootfs", self.image, "--force"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise ContainerError("tollgate spec: %s" % (p.stderr.decode("utf-8", "replace").strip()
                                                        or "exit status %d" % p.returncode))
        with open(os.path.join(spec_dir, "config.json"), encoding="utf-8") as f:
            spec: dict[str, Any] = json.load(f)
        self._spec = spec
        return spec

    def _bundle_from_spec(self, spec: dict[str, Any], cid: str, args: list[str],
                          files: dict[str, str] | None, parent: str | None) -> str:
        bundle = os.path.join(parent or os.path.join(self._state_dir(), "bundles"), cid)
        app = os.path.join(bundle, "app")
        os.makedirs(app)
        for d in (os.path.dirname(bundle), bundle, app):
            os.chmod(d, 0o755)
        with open(KERNEL_SOURCE, encoding="utf-8") as f:
            kernel = f.read()
        files = dict(files or {}, **{".tollgate/kernel.py": kernel,
                                     ".tollgate/site/sitecustomize.py": SITECUSTOMIZE})
        for name, text in files.items():
            fp = os.path.join(app, name)
            for d in _parents(app, name):
                os.makedirs(d, exist_ok=True)
                os.chmod(d, 0o755)
            with open(fp, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(fp, 0o644)
        config = json.loads(json.dumps(spec))
        proc = config.setdefault("process", {})
        proc["terminal"] = False
        proc["cwd"] = "/"
        proc["args"] = list(args)
        env = [e for e in proc.get("env", []) if not e.startswith(
            ("PYTHONPATH=", "PYTHONDONTWRITEBYTECODE=", "PYTHONUNBUFFERED="))]
        proc["env"] = env + ["PYTHONPATH=/app/.tollgate/site:/run/tollgate", "PYTHONDONTWRITEBYTECODE=1"] + self.env
        mounts = config.setdefault("mounts", [])
        mounts.append({"destination": "/app", "type": "bind", "source": app,
                       "options": ["rbind", "ro", "nosuid", "nodev"]})
        for dest, src in self.mounts:
            mounts.append({"destination": dest, "type": "bind", "source": src,
                           "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]})
        self._apply_resources(config)
        _write_json(os.path.join(bundle, "config.json"), config, 0o644)
        return bundle

    def _ceilings(self) -> dict[str, float]:
        """The profile's limits, as `tollgate spec` gave them for this
        host config and backend: what a Sandbox may ask for at most."""
        spec = self._spec or {}
        res = (spec.get("linux") or {}).get("resources") or {}
        mem = (res.get("memory") or {}).get("limit") or 0
        cpu = res.get("cpu") or {}
        cpus = (cpu.get("quota") or 0) / (cpu.get("period") or 100000) if cpu.get("quota") else 0
        pids = (res.get("pids") or {}).get("limit") or 0
        if self.runtime == "runsc":
            pids //= RUNSC_HOST_TASKS_PER_GUEST  # the guest processes the profile allows
        tmp = 0
        for m in spec.get("mounts") or []:
            if m.get("destination") == "/tmp":
                for o in m.get("options") or []:
                    if o.startswith("size="):
                        tmp = parse_size(o[5:], "tmp")
        return {"memory": mem, "cpus": cpus, "pids": pids, "tmp": tmp}

    def _check_resources(self) -> None:
        ceil = self._ceilings()
        for key, want in self.resources.items():
            top = ceil.get(key) or 0
            if top and isinstance(want, (int, float)) and want > top:
                def show(v: float) -> str:
                    return size_text(int(v)) if key in ("memory", "tmp") else str(v)
                raise InvalidArgument("Sandbox(%s=%s) is above the ceiling of %s that the host config's profile "
                                 "sets; ask for at most %s, or use a host config whose profile allows more "
                                 "(e.g. \"profile\": \"relaxed\")" % (key, show(want), show(top), show(top)))

    def _apply_resources(self, config: dict[str, Any]) -> None:
        r = self.resources
        res = config.setdefault("linux", {}).setdefault("resources", {})
        if "memory" in r:
            res.setdefault("memory", {}).update({"limit": r["memory"], "swap": r["memory"]})
        if "cpus" in r:
            period = (res.get("cpu") or {}).get("period") or 100000
            res.setdefault("cpu", {}).update({"period": period, "quota": max(1000, int(r["cpus"] * period))})
        if "pids" in r:
            # A number of processes under both backends: under runsc tollgate
            # makes it the guest's RLIMIT_NPROC and sizes the Sentry's host
            # tasks from it (oci/limits.c).
            res.setdefault("pids", {})["limit"] = r["pids"]
        if "tmp" in r:
            for m in config.get("mounts") or []:
                if m.get("destination") == "/tmp":
                    m["options"] = [o for o in m.get("options") or [] if not o.startswith("size=")] + \
                        ["size=%dk" % ((r["tmp"] + 1023) >> 10)]

    def memory_text(self) -> str:
        limit = self.resources.get("memory") or self._ceilings().get("memory") or 0
        return size_text(int(limit)) if limit else "the profile's"

    def _result(self, cid: str, out: str, err: str, status: int, timed_out: bool, policy: Policy | None,
                first: int = 0) -> Result:
        log = os.path.join(self.audit_dir, cid + ".jsonl")
        records = audit.read_records(log)
        all_calls = audit.calls_of_last_run(records)
        calls = all_calls[first:]
        result = Result(stdout=out, stderr=err, exit_status=status, calls=calls,
                        budget_used=audit.budget_used(all_calls, policy or {}, records), audit_log=log,
                        container_id=cid, timed_out=timed_out)
        stop = audit.anomaly_stop_of_last_run(records)
        if stop is not None:
            # Which limit and where its record is; said once on stderr too
            # (`tollgate run` says it itself; a warm run or a session cell
            # does not), so whoever reads the output sees it.
            result.stopped_by = "%s: %s (its record: call %s in %s)" % (
                stop.get("kind"), stop.get("reason"), stop.get("call"), log)
            if "an anomaly limit stopped the run" not in err:
                result.stderr += "\ntollgate_sdk: an anomaly limit stopped the run: %s\n" % result.stopped_by
        return result

    def run(self, code: str, *, check: bool = True, timeout: float | None = None, shell: bool = False,
            on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None) -> Result:
        """Run code (Python, or with shell=True a sh command: the image then
        needs /bin/sh, bundles/rootfs/python.sh --shell) in a fresh hardened
        container.  Returns a Result; with check=True (the default) a
        non-zero exit raises ProgramFailed, which carries the Result, and a
        program past its timeout raises CellTimeout (a ProgramFailed).
        on_stdout/on_stderr(text) see the output as it arrives."""
        return self._run(code, check=check, timeout=timeout, shell=shell, on_stdout=on_stdout,
                         on_stderr=on_stderr)

    def _run(self, code: str, *, check: bool = True, timeout: float | None = None, shell: bool = False,
             on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None,
             policy_path: str | None = None, policy: Policy | None = None) -> Result:
        """run(), or with policy_path and the policy it holds (repair's
        lowered budgets), a cold run under that policy."""
        self.start()
        pool = self._pool
        if pool is not None and policy_path is None and policy is None:
            w = pool.take()
            if w is not None:
                return pool.run(w, code, shell, timeout or self.timeout, check,
                                on_stdout or self.on_stdout, on_stderr or self.on_stderr)
        cid = self._new_id()
        if shell:
            args, files = ["sh", "-c", code], {}
        else:
            args, files = ["python3", "/app/main.py"], {"main.py": code}
        bundle = self._bundle(cid, args, files)
        watcher = ApprovalWatcher(self, cid) if self.approval is not None else None
        if watcher:
            watcher.start()
        self.active.add(cid)
        limit = timeout or self.timeout
        memwatch = oom_watch.Watch(cid, self.runtime)
        proc = subprocess.Popen(self._tg("run", "--bundle", bundle, "--policy",
                                         policy_path or self.policy_path, cid),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            cap, timed_out = wait_capture(
                proc, self.output_max, limit,
                lambda: subprocess.run(self._tg("kill", cid, "KILL"), capture_output=True),
                on_stdout or self.on_stdout, on_stderr or self.on_stderr, abort=memwatch.killed)
        finally:
            self.active.discard(cid)
            if watcher:
                watcher.stop()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            oom = memwatch.killed()
            memwatch.close()
            subprocess.run(self._tg("delete", "--force", cid), capture_output=True)
            remove_tree(bundle)
        out, err = cap.text(cap.out), cap.text(cap.err)
        status = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        if timed_out:
            err += "\ntollgate_sdk: the program ran past %s s and was killed\n" % limit
        result = self._result(cid, out, err, status, timed_out, policy or self.policy)
        result.stdout_cut, result.stderr_cut = cap.out.cut, cap.err.cut
        result.warnings = list(cap.err.diverted)
        if timed_out:
            result.timeout_how = "killed"
        if oom and not timed_out and status != 0:
            result.oom_killed, result.memory_limit = True, self.memory_text()
            result.stderr += ("\ntollgate_sdk: the program ran out of memory and was killed "
                              "(memory limit %s; Sandbox(memory=...) raises it)\n" % result.memory_limit)
        if status != 0 and not result.calls and "(gVisor) not found" in err:
            raise SandboxUnavailable(err.strip().splitlines()[-1])
        if check and timed_out:
            raise CellTimeout(result, limit, "killed")
        if check and status != 0:
            raise ProgramFailed(result)
        return result

    def run_shell(self, command: str, *, check: bool = True, timeout: float | None = None,
                  on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None) -> Result:
        """run(command, shell=True)."""
        return self.run(command, shell=True, check=check, timeout=timeout, on_stdout=on_stdout,
                        on_stderr=on_stderr)

    def session(self) -> Session:
        """An open session: one container for several cells, with one
        Python interpreter.  Cells share variables, imports, /tmp and one
        set of budgets; s.files reads and writes its /tmp.

            s = sb.session(); s.run("x = 41"); s.run("print(x + 1)"); s.close()
            with sb.session() as s: ...          # closed at the end of the block

        It is closed by s.close(), by the end of a with block, or by this
        Sandbox's close()."""
        return Session(self).open()

    def resume(self, pause_id: str) -> Session:
        """A session paused by session.pause(), restored (runsc): its
        processes and memory as they were; the bridge, the policy (this
        Sandbox's) and the budgets taken afresh; the audit log continued.
        A Sandbox with the same pause_dir resumes it after the one that
        paused it has closed, in this process or another."""
        s = Session(self)
        _pause.restore(s, pause_id)
        return s

    def wait_warm(self, timeout: float = 120) -> bool:
        """With warm=N: start, and wait until N containers are started and
        waiting (and retired ones deleted).  True when they are."""
        self.start()
        return self._pool.wait_ready(timeout) if self._pool is not None else False


# inspect.signature(Sandbox) and help() show the host options (__init__'s),
# as AsyncSandbox's; the client mode is __new__'s first overload.
setattr(Sandbox, "__signature__", inspect.signature(_Options))

def _parents(top: str, name: str) -> list[str]:
    """The directories between top and top/name, outermost first."""
    out: list[str] = []
    d = os.path.dirname(name)
    while d:
        out.insert(0, os.path.join(top, d))
        d = os.path.dirname(d)
    return out


def _close_at_exit(ref: weakref.ref[Sandbox]) -> None:
    sb = ref()
    if sb is not None:
        sb.close()


def _write_json(path: str, obj: object, mode: int) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _load_policy(policy: Policy | str | os.PathLike[str] | None) -> tuple[Policy, str | None]:
    """(policy dict, its directory) from None, a dict or a file path.  A
    file's relative exec argv[0], approval hook and MCP server argv[0] are
    made absolute, since tollgate resolves them against the policy file's
    directory and the SDK writes the policy elsewhere."""
    if policy is None:
        return {"version": 1, "tools": {}}, None
    if isinstance(policy, dict):
        return json.loads(json.dumps(policy)), None
    path = os.path.abspath(os.fspath(policy))
    try:
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
    except (OSError, ValueError) as e:
        raise PolicyError(["%s: cannot read it as JSON: %s" % (path, e)], path) from None
    if not isinstance(p, dict):
        raise PolicyError(["%s: a policy is a JSON object" % path], path)
    base = os.path.dirname(path)

    def absolute(x: Any) -> Any:
        return x if not isinstance(x, str) or os.path.isabs(x) else os.path.join(base, x)

    for t in (p.get("tools") or {}).values():
        b = t.get("backend") if isinstance(t, dict) else None
        if isinstance(b, dict) and b.get("type") == "exec" and isinstance(b.get("argv"), list) and b["argv"]:
            b["argv"][0] = absolute(b["argv"][0])
    for s in (p.get("mcp_servers") or {}).values():
        if isinstance(s, dict) and isinstance(s.get("argv"), list) and s["argv"] and "/" in str(s["argv"][0]):
            s["argv"][0] = absolute(s["argv"][0])
    a = p.get("approval")
    if isinstance(a, dict) and "hook" in a:
        if isinstance(a["hook"], str):
            a["hook"] = absolute(a["hook"])
        elif isinstance(a["hook"], list) and a["hook"]:
            a["hook"][0] = absolute(a["hook"][0])
    return p, base

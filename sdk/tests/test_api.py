"""The package's shape (issue 39): its public surface, keyword-only
options, one error tree, imports that point one way, and the defects a new
user met that need no container (float arguments, where the rootfs is
found)."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import pkgutil
import socket
import subprocess
import sys
from typing import Annotated, Optional, TypedDict

import pytest

import tollgate_sdk
from tollgate_sdk import (AsyncSandbox, InvalidArgument, Sandbox, SandboxUnavailable, SessionClosed,
                          TollgateSDKError, Tool, ToolServer, as_tool, find_rootfs, from_langchain, tool)

PKG = os.path.dirname(os.path.abspath(tollgate_sdk.__file__))
CORE = sorted(f for f in os.listdir(PKG) if f.endswith(".py"))


def _tree(name: str) -> ast.Module:
    with open(os.path.join(PKG, name), encoding="utf-8") as f:
        return ast.parse(f.read(), name)


# ---- the public surface ---------------------------------------------------------

def test_all_is_the_public_surface() -> None:
    names = tollgate_sdk.__all__
    assert len(names) == len(set(names))
    assert not [n for n in names if n.startswith("_")]
    for n in names:
        assert hasattr(tollgate_sdk, n), n
    ns: dict[str, object] = {}
    exec("from tollgate_sdk import *", ns)
    assert sorted(k for k in ns if k != "__builtins__") == sorted(names)
    # what __init__ holds beyond __all__ is its private submodules and the
    # public subpackages (mcp, serve, integrations) once imported
    extra = {k for k, v in vars(tollgate_sdk).items() if not k.startswith("__") and k not in names}
    assert all(k.startswith("_") or k in ("mcp", "serve", "integrations") for k in extra), extra
    assert os.path.isfile(os.path.join(PKG, "py.typed"))


def test_no_module_imports_a_private_name_of_another() -> None:
    """_ApprovalWatcher, _check_mounts & co. were imported across modules
    (and re-exported): a module's private names stay in it."""
    bad = []
    for name in CORE:
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module:
                bad += ["%s: from %s import %s" % (name, node.module, a.name)
                        for a in node.names if a.name.startswith("_") and a.name != "__version__"]
    assert bad == []


def test_every_exception_is_a_tollgate_sdk_error() -> None:
    for n in tollgate_sdk.__all__:
        obj = getattr(tollgate_sdk, n)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, TollgateSDKError), n
    assert issubclass(InvalidArgument, ValueError)  # as Sandbox's option errors were


# What the core may raise that is not an SDK error, and why.
RAISE_ALLOWED = {
    ("_tools.py", "TypeError"): "a call's unknown argument: the tool server answers it to the container",
    ("_server.py", "TypeError"): "json.dumps(default=...) protocol for a result that is not JSON",
    ("_approvals.py", "OSError"): "control_request: its callers catch it",
    ("_approvals.py", "ValueError"): "control_request: its callers catch it",
}


def test_the_core_raises_only_sdk_errors() -> None:
    sdk_errors = {n for n in tollgate_sdk.__all__
                  if isinstance(getattr(tollgate_sdk, n), type) and issubclass(getattr(tollgate_sdk, n), BaseException)}
    bad = []
    for name in CORE:
        for node in ast.walk(_tree(name)):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if not isinstance(exc, ast.Name) or exc.id in ("e",):
                continue
            if exc.id in sdk_errors or exc.id.startswith("_") or (name, exc.id) in RAISE_ALLOWED:
                continue
            bad.append("%s:%d raise %s" % (name, node.lineno, exc.id))
    assert bad == []


def test_a_closed_session_raises_session_closed() -> None:
    s = tollgate_sdk.Session(Sandbox(tollgate="/nonexistent/tollgate"))
    with pytest.raises(SessionClosed, match=r"sandbox\.session\(\)"):
        s.run("print(1)")
    with pytest.raises(SessionClosed):
        s.files.read("/tmp/x")


def test_session_on_a_machine_without_tollgate_is_sandbox_unavailable() -> None:
    with pytest.raises(SandboxUnavailable, match="nothing was run"):
        Sandbox(tollgate="/nonexistent/tollgate").session()


# ---- keyword-only options ------------------------------------------------------

@pytest.mark.parametrize("cls", [Sandbox, AsyncSandbox])
def test_sandbox_options_are_keyword_only(cls: type) -> None:
    params = list(inspect.signature(cls).parameters.values())
    assert params[0].name == "tools" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), params
    assert {"policy", "budgets", "runtime", "approval", "timeout", "memory", "warm", "pause_dir"} <= \
        {p.name for p in params}
    with pytest.raises(TypeError):
        cls([], None)


def test_sandbox_with_a_server_is_the_client_mode() -> None:
    key = "e2b_" + "0" * 40
    r = Sandbox([], server="unix:/nonexistent.sock", api_key=key, metadata={"job": "1"})
    assert isinstance(r, tollgate_sdk.RemoteSandbox) and r.metadata == {"job": "1"}
    assert type(Sandbox(tollgate="/nonexistent/tollgate")) is Sandbox
    with pytest.raises(InvalidArgument, match="policy is not taken"):
        Sandbox(server="http://127.0.0.1:1", api_key=key, policy={})
    with pytest.raises(InvalidArgument, match="server is http"):
        Sandbox(server="ftp://127.0.0.1", api_key=key)
    with pytest.raises(InvalidArgument, match="leave server out"):
        Sandbox(server=None)


def test_sandbox_and_async_sandbox_take_the_same_options() -> None:
    a = inspect.signature(Sandbox).parameters
    b = inspect.signature(AsyncSandbox).parameters
    assert list(a) == list(b)
    assert [a[k].default for k in a] == [b[k].default for k in b]


@pytest.mark.parametrize("fn", [Sandbox.run, Sandbox.run_shell, tollgate_sdk.Session.run,
                                AsyncSandbox.run, tollgate_sdk.AsyncSession.run])
def test_run_has_no_private_arguments(fn: object) -> None:
    params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    assert not [p for p in params if p.startswith("_") or p == "policy_path"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in params.items() if n not in ("self", "code", "command"))


def test_no_public_function_has_a_private_argument() -> None:
    """run(..., _policy=None) had a private argument in its public
    signature; hint_schema's _seen and to_policy_schema's _defs and _depth
    were the same."""
    bad = []
    for n in tollgate_sdk.__all__:
        obj = getattr(tollgate_sdk, n)
        fns = [(n, obj)] if not isinstance(obj, type) else \
            [("%s.%s" % (n, k), v) for k, v in vars(obj).items() if callable(v) and not k.startswith("_")]
        for name, fn in fns:
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            bad += ["%s(%s)" % (name, p) for p in params if p.startswith("_")]
    assert bad == []


@pytest.mark.parametrize("fn", [tool, as_tool, from_langchain, Tool.from_function])
def test_tool_options_are_spelled_out(fn: object) -> None:
    params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    assert not [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    for opt in ("name", "description", "args_schema", "irreversible", "cost", "timeout", "max_calls",
                "approve", "deny", "rules"):
        assert params[opt].kind is inspect.Parameter.KEYWORD_ONLY, opt


@pytest.mark.parametrize("fn", [Sandbox.create_tool, tollgate_sdk.Session.create_tool,
                                AsyncSandbox.create_tool, tollgate_sdk.AsyncSession.create_tool])
def test_create_tool_options_are_spelled_out(fn: object) -> None:
    """Session.create_tool and the async pair took **governance, hiding
    what Sandbox.create_tool spells out (as tool(fn=None, **opts) did)."""
    params = inspect.signature(fn).parameters  # type: ignore[arg-type]
    want = inspect.signature(Sandbox.create_tool).parameters
    assert not [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert [(p.name, p.kind, p.default) for p in params.values()] == \
        [(p.name, p.kind, p.default) for p in want.values()]


def test_tool_with_and_without_options() -> None:
    @tool
    def a(x: int) -> int:
        return x

    @tool(cost=2, approve="x > 5", name="bee")
    def b(x: int) -> int:
        return x

    assert a(3) == 3 and b(4) == 4
    ta, tb = as_tool(a), as_tool(b)
    assert (ta.name, ta.cost) == ("a", 0)
    assert (tb.name, tb.cost, tb.rules[0]["effect"]) == ("bee", 2, "approve")
    with pytest.raises(tollgate_sdk.ToolDefinitionError):
        as_tool(ta, cost=1)


# ---- imports point one way --------------------------------------------------------

def _sibling_imports(name: str) -> tuple[set[str], list[str]]:
    """(modules of the package name imports at its top level, imports of
    the package inside functions), TYPE_CHECKING blocks left out."""
    tree = _tree(name)
    top: set[str] = set()
    hidden: list[str] = []

    def targets(node: ast.ImportFrom) -> list[str]:
        if node.level != 1:
            return ["mcp" if (node.module or "").startswith("mcp") else "?"]
        if node.module:
            return [node.module.split(".")[0]]
        return [a.name for a in node.names]

    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    hidden += ["%s:%d" % (name, node.lineno)]
                top.update(targets(node))
    return top, hidden


def test_no_import_inside_a_function_and_no_cycle() -> None:
    graph = {}
    for name in CORE:
        deps, hidden = _sibling_imports(name)
        assert hidden == [], "imports of the package inside functions hide a cycle: %s" % hidden
        graph[name[:-3]] = deps - {name[:-3]}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        if state.get(m) == 1:
            raise AssertionError("import cycle: " + " -> ".join(path + [m]))
        if state.get(m) == 2:
            return
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            visit(d, path + [m])
        state[m] = 2

    for m in sorted(graph):
        visit(m, [])


def test_the_core_imports_only_the_standard_library_and_itself() -> None:
    """The core never imports tollgate_sdk.mcp, an integration or anything
    outside the standard library (the package has no dependencies)."""
    bad = []
    for name in CORE:
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                mods = [node.module or ""]
            elif isinstance(node, ast.ImportFrom):
                mods = ["tollgate_sdk.%s" % (node.module or "")] + (
                    ["tollgate_sdk.%s" % a.name for a in node.names] if not node.module else [])
                bad += ["%s: %s" % (name, m) for m in mods if m.split(".")[1] in ("mcp", "serve", "integrations")]
                continue
            else:
                continue
            bad += ["%s: %s" % (name, m) for m in mods if m.split(".")[0] not in sys.stdlib_module_names]
    assert bad == []


def test_every_module_imports_on_its_own() -> None:
    """Each module imported first, in a fresh interpreter: an import cycle
    shows as an ImportError for some order."""
    mods = ["tollgate_sdk"] + ["tollgate_sdk." + m.name for m in pkgutil.iter_modules([PKG])
                               if m.name != "_container"]
    for sub in ("mcp", "serve"):
        mods += ["tollgate_sdk.%s.%s" % (sub, m.name) for m in pkgutil.iter_modules([os.path.join(PKG, sub)])
                 if m.name != "__main__"]
    assert "tollgate_sdk._session" in mods and "tollgate_sdk._pause" in mods
    for m in mods:
        p = subprocess.run([sys.executable, "-c", "import %s" % m], capture_output=True, text=True)
        assert p.returncode == 0, (m, p.stderr)


# ---- float arguments (the gate writes 60.0 as 60) ----------------------------------

@dataclasses.dataclass
class Point:
    x: float
    n: int


class Box(TypedDict):
    w: float


def test_a_float_parameter_gets_a_float() -> None:
    seen = {}

    @tool
    def f(amount: float, opt: Optional[float] = None, xs: list[float] = [], d: dict[str, float] = {},
          n: int = 0, either: int | float = 0, note: Annotated[float, "a note"] = 0.0,
          p: Optional[Point] = None, box: Optional[Box] = None, t: tuple[float, ...] = (),
          alt: float | str = "") -> None:
        seen.update(locals())

    as_tool(f).call({"amount": 60, "opt": 1, "xs": [1, 2.5], "d": {"a": 3}, "n": 4, "either": 5,
                     "note": 6, "p": {"x": 7, "n": 8}, "box": {"w": 9}, "t": [10], "alt": 11})
    assert seen["amount"] == 60.0 and type(seen["amount"]) is float
    assert type(seen["opt"]) is float
    assert [type(v) for v in seen["xs"]] == [float, float]
    assert type(seen["d"]["a"]) is float
    assert type(seen["n"]) is int
    assert type(seen["either"]) is int  # int | float: a whole number is both
    assert type(seen["note"]) is float
    assert seen["p"] == Point(7.0, 8) and type(seen["p"].x) is float and type(seen["p"].n) is int
    assert type(seen["box"]["w"]) is float
    assert seen["t"] == (10.0,) and type(seen["t"][0]) is float
    assert type(seen["alt"]) is float
    seen.clear()
    as_tool(f).call({"amount": 2.5, "opt": None, "alt": "x"})
    assert seen["amount"] == 2.5 and seen["opt"] is None and seen["alt"] == "x"


def test_a_float_through_the_tool_server() -> None:
    got = []

    @tool
    def refund(amount: float) -> str:
        got.append(amount)
        return type(amount).__name__

    with ToolServer([as_tool(refund)]) as srv:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.settimeout(10)
            c.connect(srv.path)
            c.sendall(b'{"v":1,"call":"c1","tool":"refund","args":{"amount":60}}\n')
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = c.recv(65536)
                if not chunk:
                    break
                buf += chunk
    assert json.loads(buf) == {"ok": True, "result": "float"}
    assert got == [60.0]


# ---- the rootfs beside the tollgate binary ----------------------------------------------

def _exe(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(path, 0o755)
    return path


def _python_rootfs(d: str) -> str:
    os.makedirs(os.path.join(d, "usr", "bin"))
    with open(os.path.join(d, "usr", "bin", "python3"), "w"):
        pass
    return d


def test_the_rootfs_is_found_beside_tollgate(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOLLGATE_ROOTFS", raising=False)
    top = str(tmp_path)
    # a checkout: build/tollgate and build/rootfs/python (what make builds)
    tg = _exe(os.path.join(top, "co", "build", "tollgate"))
    fs = _python_rootfs(os.path.join(top, "co", "build", "rootfs", "python"))
    assert find_rootfs(None, tg) == fs
    # make install: PREFIX/bin/tollgate and PREFIX/lib/tollgate/rootfs/python
    tg = _exe(os.path.join(top, "prefix", "bin", "tollgate"))
    fs = _python_rootfs(os.path.join(top, "prefix", "lib", "tollgate", "rootfs", "python"))
    assert find_rootfs(None, tg) == fs
    # explicit and $TOLLGATE_ROOTFS come first
    assert find_rootfs("/x/y", tg) == "/x/y"
    monkeypatch.setenv("TOLLGATE_ROOTFS", "/z")
    assert find_rootfs(None, tg) == "/z"
    assert Sandbox(tollgate=tg).image == "/z"


def test_an_async_session_opens_on_await() -> None:
    import asyncio

    async def go() -> None:
        asb = AsyncSandbox(tollgate="/nonexistent/tollgate")
        with pytest.raises(SandboxUnavailable):
            await asb.session()
        with pytest.raises(SandboxUnavailable):
            await asb.session().run("print(1)")
    asyncio.run(go())


def test_the_local_overload_of_sandbox_names_every_option() -> None:
    # Sandbox.__new__'s overloads are what a type checker reads; the local
    # one must offer exactly the options __init__ takes (a new option added
    # to one and not the other type-checks wrongly for users).
    import inspect
    import typing
    from tollgate_sdk import Sandbox
    init = [p for p in inspect.signature(Sandbox.__init__).parameters if p != "self"]
    local = [o for o in typing.get_overloads(Sandbox.__new__)
             if "server" not in inspect.signature(o).parameters]
    assert len(local) == 1
    assert [p for p in inspect.signature(local[0]).parameters if p != "cls"] == init


# ---- one error tree in the subpackages too ------------------------------------------

def _every_module() -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), PKG) for d, _, fs in os.walk(PKG)
                  if "_container" not in d and "__pycache__" not in d for f in fs if f.endswith(".py"))


# Exception classes outside the tree, and why.
OUTSIDE_THE_TREE = {
    ("mcp/_core.py", "ToolError"): "carries a bad tool call to the MCP layer, which answers it as an error result",
    ("integrations/smolagents.py", "_TollgateFinalAnswer"): "control flow of final_answer(), never an error",
    ("_cells.py", "_Lost"): "a lost channel inside _cells, caught there (a lost cell, or FileOperationError)",
    ("_errors.py", "TollgateSDKError"): "the tree's root",
}


def test_no_module_of_the_package_raises_outside_the_error_tree() -> None:
    """RuntimeError and bare Exception were raised to callers (issue 39):
    mcp/, serve/ and integrations/ raise SDK errors too, and every exception
    class they define is a TollgateSDKError."""
    bad = []
    for name in _every_module():
        tree = _tree(name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name) and exc.id in ("RuntimeError", "Exception", "BaseException"):
                    bad.append("%s:%d raise %s" % (name, node.lineno, exc.id))
            if isinstance(node, ast.ClassDef) and (name, node.name) not in OUTSIDE_THE_TREE:
                bases = [ast.unparse(b) for b in node.bases]
                builtin = [b for b in bases if b in ("Exception", "BaseException", "RuntimeError", "ValueError")]
                if builtin and not any("Error" in b and b not in builtin for b in bases):
                    bad.append("%s:%d class %s(%s)" % (name, node.lineno, node.name, ", ".join(bases)))
    assert bad == []

"""AsyncSandbox and AsyncSession: the same methods as Sandbox and Session,
as coroutines, for agent frameworks that are async.

    async with AsyncSandbox(tools=[...]) as sb:
        r = await sb.run("print(1)")
        async with sb.session() as s:
            await s.run("x = 41")
            print((await s.run("print(x + 1)")).stdout)
            await s.files.write("/tmp/in.csv", data)

Each call runs the blocking SDK call on a worker thread (asyncio.to_thread),
so the event loop is never blocked.  on_stdout/on_stderr may be coroutine
functions: they are scheduled on the caller's loop, in order.  An approval
callback may be a coroutine function (the Sandbox awaits it).  Cancelling
a run's task stops waiting for it, not the run: the container finishes (or
meets its timeout) on its own.
"""
from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any, Awaitable, Callable, Generator, Iterable, Mapping, Optional, Union

from ._capture import TextCallback
from ._limits import Size
from ._sandbox import Approval, Policy, Result, Runtime, Sandbox
from ._schema import JSONSchema
from ._session import AREA, FileInfo, Files, Session
from ._tools import Condition, Rule, Tool

# on_stdout/on_stderr of the async classes: a plain callable, or a
# coroutine function scheduled on the caller's loop
AsyncTextCallback = Union[TextCallback, Callable[[str], Awaitable[Any]]]


def _bridge(cb: Optional[AsyncTextCallback], loop: asyncio.AbstractEventLoop) -> Optional[TextCallback]:
    """A thread-side callback for cb: plain callables are called on the
    SDK's reader thread, coroutine functions are scheduled on loop."""
    if cb is None or not inspect.iscoroutinefunction(cb):
        return cb
    acb = cb
    lock: list[asyncio.Lock] = []

    async def in_order(text: str) -> None:
        if not lock:
            lock.append(asyncio.Lock())
        async with lock[0]:  # FIFO: the chunks reach cb in the order they came
            await acb(text)

    def call(text: str) -> None:
        asyncio.run_coroutine_threadsafe(in_order(text), loop)
    return call


class AsyncSandbox:
    """Sandbox(...) with coroutine methods; takes the same arguments
    (on_stdout/on_stderr may be coroutine functions)."""

    def __init__(self, tools: Iterable[object] = (), *, policy: Policy | str | os.PathLike[str] | None = None,
                 budgets: Mapping[str, Any] | None = None, runtime: Runtime = "runsc",
                 image: str | None = None, approval: Approval = None,
                 approval_timeout: float | None = None, host_config: str | None = None,
                 runtime_path: str | None = None, audit_dir: str | None = None, root: str | None = None,
                 tollgate: str | None = None, timeout: float = 300, env: Iterable[str] | None = None,
                 output_max: int = 8 << 20, mounts: Mapping[str, str | os.PathLike[str]] | None = None,
                 on_stdout: Optional[AsyncTextCallback] = None, on_stderr: Optional[AsyncTextCallback] = None,
                 memory: Size | None = None, cpus: float | None = None, pids: int | None = None,
                 tmp: Size | None = None, warm: int = 0,
                 pause_dir: str | os.PathLike[str] | None = None,
                 max_custom_tools: int | None = None) -> None:
        self._loop_cbs = {"on_stdout": on_stdout, "on_stderr": on_stderr}
        self.sync = Sandbox(tools, policy=policy, budgets=budgets, runtime=runtime, image=image,
                            approval=approval, approval_timeout=approval_timeout, host_config=host_config,
                            runtime_path=runtime_path, audit_dir=audit_dir, root=root, tollgate=tollgate,
                            timeout=timeout, env=env, output_max=output_max, mounts=mounts, memory=memory,
                            cpus=cpus, pids=pids, tmp=tmp, warm=warm, pause_dir=pause_dir,
                            max_custom_tools=max_custom_tools)

    def _cbs(self, on_stdout: Optional[AsyncTextCallback],
             on_stderr: Optional[AsyncTextCallback]) -> dict[str, Optional[TextCallback]]:
        loop = asyncio.get_running_loop()
        return {"on_stdout": _bridge(on_stdout or self._loop_cbs["on_stdout"], loop),
                "on_stderr": _bridge(on_stderr or self._loop_cbs["on_stderr"], loop)}

    async def start(self) -> None:
        await asyncio.to_thread(self.sync.start)

    async def run(self, code: str, *, check: bool = True, timeout: float | None = None, shell: bool = False,
                  on_stdout: Optional[AsyncTextCallback] = None,
                  on_stderr: Optional[AsyncTextCallback] = None) -> Result:
        cbs = self._cbs(on_stdout, on_stderr)
        return await asyncio.to_thread(self.sync.run, code, check=check, timeout=timeout, shell=shell,
                                       on_stdout=cbs["on_stdout"], on_stderr=cbs["on_stderr"])

    async def run_shell(self, command: str, *, check: bool = True, timeout: float | None = None,
                        on_stdout: Optional[AsyncTextCallback] = None,
                        on_stderr: Optional[AsyncTextCallback] = None) -> Result:
        return await self.run(command, check=check, timeout=timeout, shell=True, on_stdout=on_stdout,
                              on_stderr=on_stderr)

    def session(self) -> AsyncSession:
        """A session, opened by `await sb.session()` or `async with
        sb.session() as s`, or by its first run."""
        return AsyncSession(self)

    async def resume(self, pause_id: str) -> AsyncSession:
        s = await asyncio.to_thread(self.sync.resume, pause_id)
        return AsyncSession(self, s)

    async def create_tool(self, name: str, source: str, *, description: str,
                          schema: JSONSchema | None = None, timeout: float = 30, cost: float = 0,
                          max_calls: int | None = None, approve: Condition = None,
                          deny: Condition = None, rules: list[Rule] | None = None) -> Tool:
        """Sandbox.create_tool, on a worker thread."""
        return await asyncio.to_thread(self.sync.create_tool, name, source, description=description,
                                       schema=schema, timeout=timeout, cost=cost,
                                       max_calls=max_calls, approve=approve, deny=deny, rules=rules)

    async def pending(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.pending)

    async def decide(self, call_id: str, approve: bool, reason: str = "") -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.decide, call_id, approve, reason)

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncFiles:
    def __init__(self, session: AsyncSession, files: Files) -> None:
        self._session = session
        self.sync = files

    async def write(self, path: str, data: bytes | bytearray | memoryview | str) -> int:
        await self._session.open()
        return await asyncio.to_thread(self.sync.write, path, data)

    async def read(self, path: str) -> bytes:
        await self._session.open()
        return await asyncio.to_thread(self.sync.read, path)

    async def list(self, dir: str = AREA) -> list[FileInfo]:
        await self._session.open()
        return await asyncio.to_thread(self.sync.list, dir)


class AsyncSession:
    """Session with coroutine methods (AsyncSandbox.session()).  Its
    container starts on `await`, `async with` or the first run; it is
    closed by close(), the end of the block, or its Sandbox's close()."""

    def __init__(self, asb: AsyncSandbox, sync: Session | None = None) -> None:
        self.asb = asb
        self.sync = sync if sync is not None else Session(asb.sync)
        self.files = AsyncFiles(self, self.sync.files)

    @property
    def cid(self) -> str | None:
        return self.sync.cid

    @property
    def closed(self) -> bool:
        return self.sync.closed

    async def open(self) -> AsyncSession:
        if self.sync.cid is None:
            await asyncio.to_thread(self.sync.open)
        return self

    def __await__(self) -> Generator[Any, None, AsyncSession]:
        return self.open().__await__()

    async def run(self, code: str, *, check: bool = True, timeout: float | None = None, shell: bool = False,
                  on_stdout: Optional[AsyncTextCallback] = None,
                  on_stderr: Optional[AsyncTextCallback] = None) -> Result:
        await self.open()
        cbs = self.asb._cbs(on_stdout, on_stderr)
        return await asyncio.to_thread(self.sync.run, code, check=check, timeout=timeout, shell=shell,
                                       on_stdout=cbs["on_stdout"], on_stderr=cbs["on_stderr"])

    async def run_shell(self, command: str, *, check: bool = True, timeout: float | None = None,
                        on_stdout: Optional[AsyncTextCallback] = None,
                        on_stderr: Optional[AsyncTextCallback] = None) -> Result:
        return await self.run(command, check=check, timeout=timeout, shell=True, on_stdout=on_stdout,
                              on_stderr=on_stderr)

    async def create_tool(self, name: str, source: str, *, description: str,
                          schema: JSONSchema | None = None, timeout: float = 30, cost: float = 0,
                          max_calls: int | None = None, approve: Condition = None,
                          deny: Condition = None, rules: list[Rule] | None = None) -> Tool:
        """Session.create_tool, on a worker thread."""
        return await asyncio.to_thread(self.sync.create_tool, name, source, description=description,
                                       schema=schema, timeout=timeout, cost=cost,
                                       max_calls=max_calls, approve=approve, deny=deny, rules=rules)

    async def pause(self) -> str:
        return await asyncio.to_thread(self.sync.pause)

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncSession:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
import asyncio
import inspect

from ._sandbox import Sandbox


def _bridge(cb, loop):
    """A thread-side callback for cb: plain callables are called on the
    SDK's reader thread, coroutine functions are scheduled on loop."""
    if cb is None or not inspect.iscoroutinefunction(cb):
        return cb

    lock = []

    async def in_order(text):
        if not lock:
            lock.append(asyncio.Lock())
        async with lock[0]:  # FIFO: the chunks reach cb in the order they came
            await cb(text)

    def call(text):
        asyncio.run_coroutine_threadsafe(in_order(text), loop)
    return call


class AsyncSandbox:
    """Sandbox(...) with coroutine methods; takes the same arguments."""

    def __init__(self, *args, **kw):
        self._loop_cbs = {k: kw.pop(k, None) for k in ("on_stdout", "on_stderr")}
        self.sync = Sandbox(*args, **kw)

    def _cbs(self, kw):
        loop = asyncio.get_running_loop()
        for k in ("on_stdout", "on_stderr"):
            kw[k] = _bridge(kw.get(k) or self._loop_cbs[k], loop)
        return kw

    async def start(self):
        await asyncio.to_thread(self.sync.start)

    async def run(self, code, **kw):
        return await asyncio.to_thread(self.sync.run, code, **self._cbs(kw))

    async def run_shell(self, command, **kw):
        return await asyncio.to_thread(self.sync.run, command, shell=True, **self._cbs(kw))

    def session(self):
        return AsyncSession(self)

    async def pending(self):
        return await asyncio.to_thread(self.sync.pending)

    async def decide(self, call_id, approve, reason=""):
        return await asyncio.to_thread(self.sync.decide, call_id, approve, reason)

    async def close(self):
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()


class AsyncFiles:
    def __init__(self, files):
        self.sync = files

    async def write(self, path, data):
        return await asyncio.to_thread(self.sync.write, path, data)

    async def read(self, path):
        return await asyncio.to_thread(self.sync.read, path)

    async def list(self, dir="/tmp"):
        return await asyncio.to_thread(self.sync.list, dir)


class AsyncSession:
    """Session with coroutine methods (AsyncSandbox.session())."""

    def __init__(self, asb):
        self.asb = asb
        self.sync = asb.sync.session()
        self.files = AsyncFiles(self.sync.files)

    @property
    def cid(self):
        return self.sync.cid

    async def open(self):
        await asyncio.to_thread(self.sync.open)
        return self

    async def run(self, code, **kw):
        return await asyncio.to_thread(self.sync.run, code, **self.asb._cbs(kw))

    async def run_shell(self, command, **kw):
        return await asyncio.to_thread(self.sync.run, command, shell=True, **self.asb._cbs(kw))

    async def close(self):
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self):
        return await self.open()

    async def __aexit__(self, *exc):
        await self.close()

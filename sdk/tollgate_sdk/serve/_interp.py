"""The code interpreter's side (port 49999): /execute runs Python in the
sandbox's one persistent interpreter (the SDK session's kernel), each
context a namespace of its own in it, and streams e2b's JSON lines."""
from __future__ import annotations

import json
import re
import secrets
import threading
import time
import traceback
from typing import Any, AsyncIterator

import anyio
import anyio.lowlevel

from .._cells import STREAM_MAX
from .._errors import TollgateSDKError
from ._boxes import Box
from ._service_error import ServiceError
from ._shares import Shares

__all__ = ["Contexts", "execute_lines"]

CELL_TRAILER = re.compile(r"^tollgate-cell:[0-9a-f]{32}:\{.*\}\n?$")

# The cell that runs the user's code: parse it, run all but a final
# expression, evaluate that expression as the main result, and report the
# result or the exception on stdout after a marker only this execution
# knows.  The marker guards nothing but the reply's shape: the code may
# print anything, and what it prints goes back to the same client.
WRAPPER = r'''
def _tollgate_execute(src, ctx, cwd, env, mark):
    import ast, json, os, sys, traceback
    spaces = globals().setdefault("_tollgate_contexts", {})
    ns = spaces.setdefault(ctx, {"__name__": "__main__", "__builtins__": __builtins__})
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        if cwd:
            os.chdir(cwd)
        tree = ast.parse(src, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), ns)
        reply = {}
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), ns)
            if value is not None:
                reply = {"text": repr(value)}
    except BaseException as e:
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        reply = {"error": {"name": type(e).__name__, "value": str(e), "traceback": "".join(tb)}}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    sys.stdout.flush()
    sys.stderr.flush()
    globals()["_tollgate_last_reply"] = (mark, reply)
    sys.stdout.write(mark + json.dumps(reply) + "\n")
    sys.stdout.flush()
_tollgate_execute(%s, %s, %s, %s, %s)
del _tollgate_execute
'''
# A cell's output past the session's cap (8 MiB a stream) is read and
# dropped, and the reply's marker line comes last: a program that printed
# more and then raised came back as a success with no error.  The wrapper
# also keeps its last reply in the interpreter, and this cell asks for it
# when the marker did not arrive and stdout was cut.
REPLY_AGAIN = r'''
import json as _tg_json, sys as _tg_sys
_tg_m, _tg_r = globals().get("_tollgate_last_reply", (None, None))
if _tg_m == %r:
    _tg_sys.stdout.write(_tg_m + _tg_json.dumps(_tg_r) + "\n")
del _tg_json, _tg_sys, _tg_m, _tg_r
'''


class Contexts:
    """The code contexts of one sandbox: id -> (language, cwd, executions),
    and its one interpreter's turn: an execution waits for the ones
    before it here, in the event loop, not in a worker thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.turn = anyio.Lock()
        self.items: dict[str, dict[str, Any]] = {"default": {"language": "python", "cwd": "/tmp", "count": 0}}

    def create(self, language: str | None, cwd: str | None) -> dict[str, Any]:
        if language not in (None, "python", "python3"):
            raise ServiceError(400, "language %r is not served here: Python only" % language)
        cid = secrets.token_hex(8)
        with self.lock:
            if len(self.items) >= 64:
                raise ServiceError(429, "a sandbox has at most 64 code contexts: remove one first")
            self.items[cid] = {"language": "python", "cwd": cwd or "/tmp", "count": 0}
        return {"id": cid, "language": "python", "cwd": cwd or "/tmp"}

    def listed(self) -> list[dict[str, Any]]:
        with self.lock:
            return [{"id": k, "language": v["language"], "cwd": v["cwd"]} for k, v in self.items.items()]

    def get(self, cid: str) -> dict[str, Any]:
        with self.lock:
            ctx = self.items.get(cid)
        if ctx is None:
            raise ServiceError(404, "context %s not found" % cid)
        return ctx

    def remove(self, cid: str) -> None:
        with self.lock:
            if cid not in self.items or cid == "default":
                raise ServiceError(404, "context %s not found" % cid)
            del self.items[cid]


def _line(kind: str, **fields: Any) -> bytes:
    return (json.dumps(dict(type=kind, **fields)) + "\n").encode()


async def execute_lines(shares: Shares, box: Box, contexts: Contexts,
                        body: dict[str, Any]) -> AsyncIterator[bytes]:
    code = body.get("code")
    if not isinstance(code, str):
        raise ServiceError(400, "code must be a string")
    ctx_id = body.get("context_id") or "default"
    if body.get("context_id") and body.get("language"):
        raise ServiceError(400, "give context_id or language, not both")
    if body.get("language") not in (None, "python", "python3"):
        raise ServiceError(400, "language %r is not served here: Python only" % body.get("language"))
    env = body.get("env_vars") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ServiceError(400, "env_vars must map names to strings")
    ctx = contexts.get(str(ctx_id))
    session = box.session
    if session is None:
        raise ServiceError(409, "the sandbox is paused: connect to resume it")
    with contexts.lock:
        ctx["count"] += 1
        count = ctx["count"]
    mark = "\x1etollgate-result:%s:" % secrets.token_hex(12)
    cell = WRAPPER % (repr(code), repr(str(ctx_id)), repr(ctx["cwd"]), repr(dict(env)), repr(mark))
    send, recv = anyio.create_memory_object_stream[bytes](256)
    token = anyio.lowlevel.current_token()
    reply: dict[str, Any] = {}
    pending = [""]

    def push(b: bytes) -> None:
        try:
            anyio.from_thread.run(send.send, b, token=token)
        except Exception:
            pass  # the client went away; the cell finishes on its own

    def stamp() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def on_stdout(text: str) -> None:
        pending[0] += text
        buf = pending[0]
        i = buf.find(mark)
        if i >= 0:
            if i:
                push(_line("stdout", text=buf[:i], timestamp=stamp()))
            j = buf.find("\n", i)
            if j < 0:
                pending[0] = buf[i:]
                return
            try:
                reply.update(json.loads(buf[i + len(mark):j]))
            except ValueError:
                pass
            pending[0] = buf[j + 1:]
            return
        # Keep back only what could be the start of the marker.
        keep = max((k for k in range(1, len(mark)) if buf.endswith(mark[:k])), default=0)
        out, pending[0] = buf[:len(buf) - keep], buf[len(buf) - keep:]
        if out:
            push(_line("stdout", text=out, timestamp=stamp()))

    err_pending = [""]

    def on_stderr(text: str) -> None:
        # Whole lines only, so that the session's own end-of-cell line
        # (its verdict to the SDK, not the program's output) is left out.
        err_pending[0] += text
        buf = err_pending[0]
        j = buf.rfind("\n")
        if j < 0:
            return
        lines = buf[:j + 1].splitlines(keepends=True)
        # The session writes its line as "\n" + the trailer: a lone
        # newline is held back until the next line shows what it was.
        hold = lines and lines[-1] == "\n"
        if hold:
            lines.pop()
        keep: list[str] = []
        for i, l in enumerate(lines):
            if CELL_TRAILER.match(l):
                if keep and keep[-1] == "\n":
                    keep.pop()
                continue
            keep.append(l)
        out = "".join(keep)
        err_pending[0] = ("\n" if hold else "") + buf[j + 1:]
        if out:
            push(_line("stderr", text=out, timestamp=stamp()))

    def run() -> None:
        try:
            r = session.run(cell, check=False, on_stdout=on_stdout, on_stderr=on_stderr)
            if pending[0] and mark not in pending[0]:
                push(_line("stdout", text=pending[0], timestamp=stamp()))
            if err_pending[0] and not CELL_TRAILER.match(err_pending[0]):
                push(_line("stderr", text=err_pending[0], timestamp=stamp()))
            for name, cut in (("stdout", r.stdout_cut), ("stderr", r.stderr_cut)):
                if cut:
                    push(_line("stderr", text="[tollgate: %d more bytes of %s were cut: a cell keeps %d MiB "
                                              "of each stream; write large output to a file]\n"
                                              % (cut, name, min(session.sb.output_max, STREAM_MAX) >> 20),
                                         timestamp=stamp()))
            if not reply and r.stdout_cut and not r.timed_out:
                again = session.run(REPLY_AGAIN % mark, check=False)
                i = again.stdout.find(mark)
                if i >= 0:
                    try:
                        reply.update(json.loads(again.stdout[i + len(mark):].split("\n", 1)[0]) or {})
                    except ValueError:
                        pass
            if "error" in reply:
                e = reply["error"]
                push(_line("error", name=str(e.get("name")), value=str(e.get("value")),
                           traceback=str(e.get("traceback"))))
            elif "text" in reply:
                push(_line("result", is_main_result=True, text=str(reply["text"])))
            elif r.exit_status != 0:
                push(_line("error", name="SandboxError", value="the cell ended with status %d%s"
                           % (r.exit_status, " (timed out)" if r.timed_out else ""), traceback=""))
        except TollgateSDKError as e:
            push(_line("error", name=type(e).__name__, value=str(e), traceback=""))
        except Exception as e:
            # A fault of the service's own: the stream still ends with an
            # error and end_of_execution (raised out of this thread, it cut
            # the connection, and the client was told the sandbox was
            # killed), and the traceback goes to the service's stderr.
            traceback.print_exc()
            push(_line("error", name="ServiceError", value="the service failed running the cell: %s: %s"
                       % (type(e).__name__, e), traceback=""))
        finally:
            push(_line("end_of_execution"))
            try:
                anyio.from_thread.run_sync(send.close, token=token)
            except Exception:
                pass

    async def lines() -> AsyncIterator[bytes]:
        yield _line("number_of_executions", execution_count=count)
        # Its turn, then its thread: a client that leaves while it waits
        # (the stream is cancelled) takes its cell with it.
        async with contexts.turn, anyio.create_task_group() as tg:
            tg.start_soon(shares.work, box.record.tenant, run)
            async with recv:
                async for b in recv:
                    yield b

    return lines()

"""Part of tests/sdk/integration.py (real containers, one backend per run):
large outputs, stateful sessions and cell timeouts, session.files and
read-only mounts, the refusal family, streaming and async, concurrent
approval callbacks, and the session cap."""
import asyncio
import json
import os
import threading
import time

import subprocess
import sys
import tempfile

from tollgate_sdk import (AsyncSandbox, CellTimeout, FileOperationError, PauseError, ProgramFailed, Sandbox,
                          SessionClosed, SessionLimit, TollgateSDKError, ToolDenied, set_max_sessions, tool)
from tollgate_sdk import _audit as sdk_audit


@tool(cost=1)
def lookup(key: str) -> dict:
    """Look a key up."""
    return {"key": key, "value": len(key)}


def large_output(backend, kw, check):
    sb = Sandbox(**kw)
    try:
        # 5 x 1 MiB: under runsc each write is taken 64 KiB at a time; every
        # byte must arrive.
        r = sb.run("import sys\nfor _ in range(5):\n    sys.stdout.write('x' * (1 << 20))\n")
        check("large output: 5 x 1 MiB to stdout arrives whole (5242880 bytes)",
              len(r.stdout) == 5 << 20 and r.stdout.count("x") == 5 << 20 and r.stdout_cut == 0,
              (len(r.stdout), r.stdout_cut, r.stdout[-300:]))
        # The same with PYTHONUNBUFFERED=1 asked for by the caller: the
        # SDK puts a buffered writer back under the unbuffered stream.
        unbuf = Sandbox(**dict(kw, env=["PYTHONUNBUFFERED=1"]))
        try:
            r = unbuf.run("import sys\nfor _ in range(5):\n    sys.stdout.write('u' * (1 << 20))\n"
                          "import os; print(os.environ['PYTHONUNBUFFERED'])\n")
            check("large output: 5 x 1 MiB whole even with PYTHONUNBUFFERED=1 in env",
                  len(r.stdout) == (5 << 20) + 2, (len(r.stdout), r.stdout[-100:]))
        finally:
            unbuf.close()
        # 50 MiB in 1 MiB writes, stdout and stderr, with a cap above it.
        big = Sandbox(**dict(kw, output_max=64 << 20))
        try:
            r = big.run("import sys\nfor i in range(50):\n    sys.stdout.write(chr(97 + i % 26) * (1 << 20))\n"
                        "    sys.stderr.write('e' * (1 << 19))\n")
            want = "".join(chr(97 + i % 26) * (1 << 20) for i in range(50))
            check("large output: 50 MiB in 1 MiB writes arrives whole and in order",
                  r.stdout == want and r.stdout_cut == 0, (len(r.stdout), r.stdout_cut))
            check("large output: 25 MiB of stderr beside it arrives whole",
                  len(r.stderr) == 25 << 20 and r.stderr_cut == 0, (len(r.stderr), r.stderr_cut))
        finally:
            big.close()
        # Over the cap (8 MiB by default): cut, and the Result says by how much.
        r = sb.run("import sys\nfor _ in range(50):\n    sys.stdout.write('y' * (1 << 20))\n")
        check("large output: over output_max the Result says it was cut, by exactly how much",
              r.stdout_cut == (50 - 8) << 20 and r.stdout.startswith("y" * (8 << 20)) and
              ("%d more bytes of stdout were cut (output_max %d)" % ((50 - 8) << 20, 8 << 20)) in r.stdout,
              (r.stdout_cut, r.stdout[-200:]))
        with sb.session() as s:
            r = s.run("import sys\nfor _ in range(5):\n    sys.stdout.write('z' * (1 << 20))\n")
            check("large output: a session cell's 5 x 1 MiB arrives whole", len(r.stdout) == 5 << 20,
                  len(r.stdout))
    finally:
        sb.close()


def sessions(backend, kw, check):
    sb = Sandbox(tools=[lookup], **kw)
    try:
        with sb.session() as s:
            s.run("x = 41\nimport json\nopen('/tmp/kept', 'w').write('yes')\n")
            r = s.run("print(x + 1)")
            check("session: x = 41, then print(x + 1) prints 42", r.stdout == "42\n", (r.stdout, r.stderr))
            r = s.run("def f(v):\n    return json.dumps({'v': v})\nprint(f(x))")
            check("session: imports and functions persist", r.stdout == '{"v": 41}\n', (r.stdout, r.stderr))
            t0 = time.monotonic()
            try:
                s.run("import time\nprint('before', flush=True)\nx = 7\ntime.sleep(30)\nx = 8\n", timeout=2)
                check("session: a cell past timeout=2 raises CellTimeout", False)
            except CellTimeout as e:
                took = time.monotonic() - t0
                check("session: a cell sleeping 30 s with timeout=2 raises CellTimeout (interrupted)",
                      e.interrupted and e.result.timed_out and "before" in e.result.stdout and
                      "KeyboardInterrupt" in e.result.stderr and took < 25, (str(e), took, e.result.stderr))
            r = s.run("print(x, open('/tmp/kept').read())")
            check("session: after the timeout the session lives and sees x (and /tmp)",
                  r.stdout == "7 yes\n", (r.stdout, r.stderr))
            # A cell that swallows KeyboardInterrupt is abandoned, not waited for.
            try:
                s.run("import time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
                      "    except KeyboardInterrupt:\n        pass\n", timeout=1)
                check("session: a cell ignoring KeyboardInterrupt raises CellTimeout", False)
            except CellTimeout as e:
                check("session: a cell ignoring KeyboardInterrupt is abandoned, and the message says so",
                      e.abandoned and "keeps running" in str(e), str(e))
            r = s.run("print(x * 6)")
            check("session: cells after an abandoned one still share its variables", r.stdout == "42\n",
                  (r.stdout, r.stderr))
            r = s.run("print(1 / 0)", check=False)
            check("session: an exception is exit 1 with the cell's own traceback",
                  r.exit_status == 1 and "ZeroDivisionError" in r.stderr and '<cell' in r.stderr and
                  "kernel.py" not in r.stderr, r.stderr)
            r = s.run("import time\ntime.sleep(30)\n", timeout=1, check=False)
            check("session: with check=False a timed-out cell returns its Result", r.timed_out, r)
            r = s.run("raise SystemExit(3)", check=False)
            check("session: SystemExit(3) is exit status 3 and the session goes on",
                  r.exit_status == 3 and s.run("print(x)").stdout == "7\n", r)
            r = s.run("from tollgate import lookup\nprint(lookup(key='abc')['value'])")
            check("session: tools are reachable from a cell, its calls are its own",
                  r.stdout == "3\n" and [c.tool for c in r.calls] == ["lookup"], (r.stdout, r.stderr, r.calls))
            big = "data = %r\nprint(len(data))" % ("q" * 300000)
            check("session: a cell larger than the old 100 KiB exec-argument limit runs",
                  s.run(big).stdout == "300000\n")
    finally:
        sb.close()


def files(backend, kw, check, work):
    sb = Sandbox(**kw)
    try:
        with sb.session() as s:
            s.files.write("/tmp/in/hello.txt", b"hello from the host")
            r = s.run("print(open('/tmp/in/hello.txt').read())")
            check("files: write, then the cell reads it", r.stdout == "hello from the host\n", r)
            r = s.run("import os\nblob = os.urandom(1000000)\nopen('/tmp/blob.bin', 'wb').write(blob)\n"
                      "import hashlib\nprint(hashlib.sha256(blob).hexdigest())")
            got = s.files.read("/tmp/blob.bin")
            import hashlib
            check("files: a 1 MB binary file written inside reads back byte for byte",
                  len(got) == 1000000 and hashlib.sha256(got).hexdigest() == r.stdout.strip(), len(got))
            names = {(f.name, f.type, f.size) for f in s.files.list("/tmp")}
            check("files: list names each entry with its type and size",
                  ("blob.bin", "file", 1000000) in names and any(n == "in" and t == "dir" for n, t, _ in names),
                  names)
            data = bytes(range(256)) * 4096
            s.files.write("/tmp/bin", data)
            check("files: 1 MiB of every byte value round-trips", s.files.read("/tmp/bin") == data)
            for bad in ("/etc/passwd", "/tmp/../etc/passwd", "tmp/x", "/tmp//x", "/app/main.py"):
                try:
                    s.files.read(bad)
                    check("files: %s is refused" % bad, False)
                except FileOperationError as e:
                    check("files: %s is refused (outside /tmp or not normalised)" % bad, "/tmp" in str(e), e)
            s.run("import os\nos.symlink('/etc', '/tmp/link')\nos.symlink('/etc/passwd', '/tmp/pw')")
            for bad, op in (("/tmp/link/passwd", "read"), ("/tmp/pw", "read"), ("/tmp/link/x", "write")):
                try:
                    if op == "read":
                        s.files.read(bad)
                    else:
                        s.files.write(bad, b"x")
                    check("files: %s through a symlink is refused" % op, False)
                except FileOperationError as e:
                    check("files: %s %s through a symbolic link is refused" % (op, bad),
                          "symbolic link" in str(e), e)
            try:
                s.files.read("/tmp/nope")
                check("files: a missing file is an error", False)
            except FileOperationError as e:
                check("files: a missing file is a FileOperationError naming it", "/tmp/nope" in str(e), e)
            try:
                s.files.write("/tmp/huge", b"\0" * ((64 << 20) + 1))
                check("files: over 64 MiB is refused", False)
            except FileOperationError as e:
                check("files: a write over 64 MiB is refused before anything is sent", "64" in str(e) or
                      str(64 << 20) in str(e), e)
    finally:
        sb.close()
    # Read-only host directories.
    data_dir = os.path.join(work, "dataset-" + backend)
    os.makedirs(data_dir, exist_ok=True)
    os.chmod(work, 0o755)
    os.chmod(data_dir, 0o777)  # writable by anyone on the host: only the read-only bind refuses
    with open(os.path.join(data_dir, "rows.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    os.chmod(os.path.join(data_dir, "rows.csv"), 0o644)
    sb = Sandbox(mounts={"/data": data_dir}, **kw)
    try:
        r = sb.run("print(open('/data/rows.csv').read().splitlines()[1])\n"
                   "try:\n    open('/data/new', 'w')\nexcept OSError as e:\n    print('refused', e.errno)\n")
        check("mounts: the host directory reads inside, read-only (EROFS though the directory is 0777)",
              r.stdout == "1,2\nrefused 30\n", (r.stdout, r.stderr))
    finally:
        sb.close()
    link = os.path.join(work, "dataset-link-" + backend)
    if not os.path.islink(link):
        os.symlink("/etc", link)
    for bad, why in (({"/data": "/"}, "host's /"), ({"/data": link}, "symbolic link"),
                     ({"/tmp": data_dir}, "sandbox owns"), ({"/run/tollgate/x": data_dir}, "sandbox owns"),
                     ({"/data": "/proc/sys"}, "/proc"), ({"data": data_dir}, "absolute")):
        try:
            Sandbox(mounts=bad, **kw)
            check("mounts: %s is refused" % bad, False)
        except ValueError as e:
            check("mounts: %s is refused (%s)" % (bad, why), why in str(e), e)


def refusals(backend, kw, check):
    sb = Sandbox(tools=[lookup], budgets={"max_tool_calls": 5},
                 policy={"version": 1, "tools": {"lookup": {"rules": [
                     {"if": {"arg": "key", "op": "==", "value": "secret"}, "effect": "deny", "reason": "no secrets"},
                     {"if": {"arg": "key", "op": "==", "value": "ask"}, "effect": "approve", "reason": "ask first"},
                     {"effect": "allow"}]}}},
                 approval_timeout=1, **kw)
    try:
        r = sb.run("from tollgate import lookup, call, ToolDenied\n"
                   "def attempt(f, **kw):\n"
                   "    try:\n        f(**kw)\n        print('ran')\n"
                   "    except ToolDenied as e:\n        print(type(e).__name__, '|', e)\n"
                   "for kw in ({'key': 'secret'}, {'key': 'ask'}, {'key': 5}, {'nokey': 1}):\n"
                   "    attempt(lookup, **kw)\n"
                   "attempt(lambda: call('no_such_tool'))\n"
                   "attempt(lookup, key='cap')\n")
        lines = r.stdout.splitlines()
        kinds = [l.split(" | ")[0] for l in lines]
        check("refusals: except ToolDenied catches denied, approval timeout, bad request, unknown tool, budget",
              kinds == ["ToolDenied", "ApprovalTimeout", "BadRequest", "BadRequest", "UnknownTool",
                        "BudgetExhausted"], r.stdout + r.stderr)
        check("refusals: no message repeats its prefix",
              all("denied: denied" not in l and "approval_timeout: approval" not in l for l in lines) and
              lines and lines[0] == "ToolDenied | denied: no secrets", lines)
        errs = [c.error() for c in r.calls]
        check("refusals: host side, every refused call's Call.error() is a ToolDenied",
              all(isinstance(e, ToolDenied) for e in errs) and
              [type(e).__name__ for e in errs][:3] == ["ToolDenied", "ApprovalTimeout", "BadRequest"],
              [(c.outcome, type(e).__name__) for c, e in zip(r.calls, errs)])
        capped = [rec for rec in sdk_audit.read_records(r.audit_log)
                  if rec.get("event") == "call" and rec.get("outcome") == "budget_exhausted"]
        check("refusals: the cap-hit audit record names the tool and its arguments",
              capped and capped[0].get("tool") == "lookup" and capped[0].get("args") == {"key": "cap"},
              capped)
    finally:
        sb.close()


def streaming_async(backend, kw, check):
    got = {"out": [], "err": []}
    sb = Sandbox(on_stdout=got["out"].append, on_stderr=got["err"].append, **kw)
    try:
        r = sb.run("import sys, time\nfor i in range(3):\n    print('line', i)\n    time.sleep(0.3)\n"
                   "sys.stderr.write('warn\\n')\n")
        check("streaming: on_stdout sees the output as it arrives, in chunks that add up",
              "".join(got["out"]) == r.stdout == "line 0\nline 1\nline 2\n" and len(got["out"]) >= 2,
              got["out"])
        check("streaming: on_stderr", "".join(got["err"]) == "warn\n", got["err"])
        seen = []
        with sb.session() as s:
            s.run("import time\nfor i in range(2):\n    print(i, flush=True)\n    time.sleep(0.3)",
                  on_stdout=seen.append)
        check("streaming: a session cell's output streams too", "".join(seen) == "0\n1\n", seen)
    finally:
        sb.close()

    async def agent():
        chunks = []

        async def on_out(text):
            await asyncio.sleep(0)
            chunks.append(text)

        async with AsyncSandbox(tools=[lookup], on_stdout=on_out, **kw) as asb:
            tick = []

            async def ticker():
                while True:
                    tick.append(1)
                    # 5 ms: a whole run, a session and its cells take well over
                    # 30 ms even with the cell channel (2.4 ms a cell under runc)
                    await asyncio.sleep(0.005)
            t = asyncio.create_task(ticker())
            r = await asb.run("from tollgate import lookup\nprint(lookup(key='ab')['value'])")
            async with asb.session() as s:
                await s.run("x = 41")
                r2 = await s.run("print(x + 1)")
                await s.files.write("/tmp/a", b"async bytes")
                back = await s.files.read("/tmp/a")
            t.cancel()
            return r, r2, back, len(tick), chunks

    r, r2, back, ticks, chunks = asyncio.run(agent())
    check("async: AsyncSandbox.run and AsyncSession.run/files, the loop keeps running meanwhile",
          r.stdout == "2\n" and r2.stdout == "42\n" and back == b"async bytes" and ticks > 5,
          (r.stdout, r2.stdout, back, ticks))
    check("async: a coroutine on_stdout is awaited on the loop", "".join(chunks) == "2\n42\n", chunks)


def approvals(backend, kw, check):
    shown = []

    @tool(approve="n >= 0")
    def step(n: int) -> int:
        """A step that needs approval."""
        return n

    def slow_callback(call):
        shown.append((call.args["n"], time.monotonic()))
        if call.args["n"] == 1:
            time.sleep(6)   # past the gate's 3 s timeout
        return True

    sb = Sandbox(tools=[step], approval=slow_callback, approval_timeout=3, **kw)
    try:
        r = sb.run("import threading, time\nfrom tollgate import step, ToolDenied\nout = {}\n"
                   "def go(n):\n    try:\n        out[n] = step(n=n)\n    except ToolDenied as e:\n"
                   "        out[n] = e.code\n"
                   "a = threading.Thread(target=go, args=(1,)); a.start()\ntime.sleep(0.5)\n"
                   "b = threading.Thread(target=go, args=(2,)); b.start()\na.join(); b.join()\nprint(out[1], out[2])\n")
        check("approvals: a slow callback does not keep the next parked call from being shown",
              sorted(n for n, _ in shown) == [1, 2] and r.stdout == "approval_timeout 2\n", (shown, r.stdout, r.stderr))
    finally:
        sb.close()

    async def async_callback(call):
        await asyncio.sleep(0.1)
        return ("deny", "async says no to %d" % call.args["n"])

    sb = Sandbox(tools=[step], approval=async_callback, approval_timeout=30, **kw)
    try:
        r = sb.run("from tollgate import step, ToolDenied\ntry:\n    step(n=4)\nexcept ToolDenied as e:\n    print(e)\n")
        check("approvals: an async callback is awaited", "async says no to 4" in r.stdout, (r.stdout, r.stderr))
    finally:
        sb.close()


def resources(backend, kw, check):
    for bad, words in (({"memory": "2g"}, "memory=2g) is above the ceiling of 512m"),
                       ({"cpus": 4}, "cpus=4.0) is above the ceiling of 1.0"),
                       ({"tmp": "1g"}, "tmp=1g) is above the ceiling of 64m"),
                       ({"pids": 100000}, "pids=100000) is above the ceiling of %d"
                        % (128 if backend == "runsc" else 256))):
        sb = Sandbox(**dict(kw, **bad))
        try:
            sb.run("print('ran')")
            check("resources: %s over the hardened profile is refused" % bad, False)
        except ValueError as e:
            check("resources: %s over the hardened profile's ceiling is refused, naming it" % bad,
                  words in str(e) and "host config" in str(e), e)
        finally:
            sb.close()
    for bad in ({"memory": "lots"}, {"cpus": -1}, {"pids": 2}, {"memory": "1m"}):
        try:
            Sandbox(**dict(kw, **bad))
            check("resources: %s is refused" % bad, False)
        except ValueError as e:
            check("resources: %s is refused with the accepted form" % bad, "=" in str(e), e)
    sb = Sandbox(**dict(kw, memory="96m", tmp="8m", cpus=0.5, pids=64))
    try:
        r = sb.run("try:\n    open('/tmp/f', 'wb').write(b'x' * (9 << 20))\nexcept OSError as e:\n"
                   "    print('tmp full', e.errno)\n")
        check("resources: tmp='8m' makes /tmp 8 MiB (9 MiB is ENOSPC)", r.stdout == "tmp full 28\n",
              (r.stdout, r.stderr))
        r = sb.run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n", check=False)
        check("resources: memory='96m': a program past it is reported as killed for running out of memory",
              r.oom_killed and r.exit_status != 0 and "ran out of memory" in r.stderr and r.memory_limit == "96m",
              (r.exit_status, r.oom_killed, r.stderr[-300:]))
        try:
            sb.run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n")
            check("resources: ProgramFailed says out of memory", False)
        except ProgramFailed as e:
            check("resources: ProgramFailed's message says out of memory", "out of memory" in str(e), str(e))
        r = sb.run("print('small is fine')")
        check("resources: a program within the limits runs", r.stdout == "small is fine\n", r)
        with sb.session() as s:
            s.run("x = 1")
            try:
                s.run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n")
                check("resources: a session cell past memory= fails", False)
            except ProgramFailed as e:
                check("resources: a session cell past memory= is reported out of memory, the session closed",
                      e.result.oom_killed and "ran out of memory" in e.result.stderr and s.closed, e)
    finally:
        sb.close()
    sb = Sandbox(**dict(kw, memory="96m", warm=1))
    try:
        sb.wait_warm(180)
        r = sb.run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n", check=False)
        check("resources: a warm run past memory= is reported out of memory",
              r.oom_killed and r.exit_status != 0 and not r.timed_out, (r.exit_status, r.stderr[-300:]))
    finally:
        sb.close()
    # A host config whose profile allows more raises the ceilings.
    cfg = os.path.join(os.path.dirname(kw["audit_dir"]), "relaxed-%s.json" % backend)
    with open(cfg, "w") as f:
        json.dump({"profile": "relaxed"}, f)
    sb = Sandbox(**dict(kw, host_config=cfg, memory="1g", cpus=2, tmp="256m"))
    try:
        r = sb.run("import os\nst = os.statvfs('/tmp')\nprint(st.f_blocks * st.f_frsize >> 20)")
        check("resources: under a relaxed host config memory='1g', cpus=2, tmp='256m' are accepted",
              r.stdout == "256\n", (r.stdout, r.stderr))
    finally:
        sb.close()


def warm_pool(backend, kw, check, tg):
    import subprocess
    sb = Sandbox(tools=[lookup], warm=2, budgets={"max_tool_calls": 2}, **kw)
    try:
        check("warm: the pool fills to 2 started containers", sb.wait_warm(180), sb._pool.errors)
        first = [w.cid for w in sb._pool.ready]
        r1 = sb.run("from tollgate import lookup\nopen('/tmp/mine', 'w').write('secret')\n"
                    "print(lookup(key='abcd')['value'])\nlookup(key='a'); lookup(key='b')\n", check=False)
        check("warm: a run in a warm container, its tool calls governed (its own budget of 2)",
              r1.stdout == "4\n" and [c.outcome for c in r1.calls] == ["ok", "ok", "budget_exhausted"] and
              r1.container_id in first, (r1.stdout, r1.stderr, r1.calls))
        r2 = sb.run("import os\nprint(os.path.exists('/tmp/mine'))\nfrom tollgate import lookup\n"
                    "print(lookup(key='xy')['value'])")
        check("warm: the next run gets a fresh container (no /tmp of the last, a fresh budget)",
              r2.stdout == "False\n2\n" and r2.container_id != r1.container_id, (r2.stdout, r2.stderr))
        check("warm: the pool refills in the background", sb.wait_warm(180) and
              not {w.cid for w in sb._pool.ready} & {r1.container_id, r2.container_id})
        listed = subprocess.run([tg, "--root", sb.root, "list", "-q"], capture_output=True, text=True).stdout
        check("warm: used containers are deleted", r1.container_id not in listed and r2.container_id not in listed,
              listed)
        r = sb.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nraise SystemExit(5)", check=False)
        check("warm: stdout, stderr and the exit status are the program's",
              (r.stdout, r.stderr, r.exit_status) == ("out\n", "err\n", 5), (r.stdout, r.stderr, r.exit_status))
        r = sb.run("import sys\nfor _ in range(5):\n    sys.stdout.write('w' * (1 << 20))\n")
        check("warm: 5 x 1 MiB arrives whole", len(r.stdout) == 5 << 20 and r.stdout_cut == 0, len(r.stdout))
        try:
            sb.run("import time\ntime.sleep(60)", timeout=2)
            check("warm: a timeout raises CellTimeout", False)
        except CellTimeout as e:
            check("warm: a program past its timeout is killed and raises CellTimeout", e.how == "killed", e)
        r = sb.run("1/0", check=False)
        check("warm: a traceback names /app/main.py and its line", 'File "/app/main.py", line 1' in r.stderr and
              "1/0" in r.stderr and "kernel.py" not in r.stderr, r.stderr)
        verified = subprocess.run([tg, "audit", "verify", r1.audit_log], capture_output=True)
        check("warm: its audit log verifies", verified.returncode == 0, verified.stdout + verified.stderr)
        pool = sb._pool
    finally:
        sb.close()
    listed = subprocess.run([tg, "--root", sb.root or "/nonexistent", "list", "-q"], capture_output=True,
                            text=True).stdout if sb.root else ""
    check("warm: close() deletes the waiting containers", not pool.ready and not listed.strip(), listed)


def pause_resume(backend, kw, check, tg):
    import subprocess
    sb = Sandbox(tools=[lookup], budgets={"max_tool_calls": 2}, **kw)
    try:
        s = sb.session().open()
        if backend != "runsc":
            try:
                s.pause()
                check("pause under runc is refused", False)
            except PauseError as e:
                check("pause under runc is refused naming criu, and the session keeps running",
                      "criu" in str(e) and s.run("print(1)").stdout == "1\n", e)
            s.close()
            return
        s.run("x = 41\nfrom tollgate import lookup\nprint(lookup(key='a')['value'])\n"
              "open('/tmp/f', 'w').write('kept')\n")
        pid = s.pause()
        check("pause: returns an id and closes the session object", isinstance(pid, str) and s.closed, pid)
        listed = subprocess.run([tg, "--root", sb.root, "list", "-q"], capture_output=True, text=True).stdout
        check("pause: the container is gone while paused", pid not in listed, listed)
        s2 = sb.resume(pid)
        r = s2.run("print(x + 1, open('/tmp/f').read())\nprint(lookup(key='bb')['value'], "
                   "lookup(key='ccc')['value'])\n")
        check("resume: the paused session keeps its variables, imports and /tmp",
              r.stdout.startswith("42 kept\n"), (r.stdout, r.stderr))
        check("resume: budgets are taken afresh from the policy (2 more calls pass)",
              r.stdout.endswith("2 3\n") and [c.outcome for c in r.calls] == ["ok", "ok"], (r.stdout, r.calls))
        log = r.audit_log
        s2.close()
        recs = sdk_audit.read_records(log)
        v = subprocess.run([tg, "audit", "verify", log], capture_output=True, text=True)
        check("resume: the audit log continues as one chain (two runs, both closed) and verifies",
              v.returncode == 0 and sum(1 for x in recs if x.get("event") == "open") == 2, v.stdout + v.stderr)
        try:
            sb.resume(pid)
            check("resume: an id resumes once", False)
        except PauseError as e:
            check("resume: an id resumes once", "no paused session" in str(e), e)
        for bad in ("../etc", "sdk-1-1-zzzzzz", 5):
            try:
                sb.resume(bad)
                check("resume: %r is refused" % (bad,), False)
            except PauseError as e:
                check("resume: %r is refused" % (bad,), True)
    finally:
        sb.close()


def pause_racing_files(backend, kw, check):
    """A pause while file writes go over the session's channel (runsc): the
    interpreter held files of the bridge area open when the sandbox was
    saved, the restore could not open them again in the new bridge area,
    and the sandbox never came back ("restoring container ...: no such file
    or directory", 2 of 4 tries).  Each round: the resumed session keeps its
    variables, and every write either landed or said the session closed."""
    if backend != "runsc":
        return
    sb = Sandbox(**kw)
    lost, said = [], []
    try:
        for r in range(3):
            s = sb.session().open()
            s.run("x = %d" % (41 + r))
            errors = []

            def writes():
                for _ in range(2000):
                    try:
                        s.files.write("/tmp/f", b"x" * 100000)
                    except SessionClosed:
                        return
                    except Exception as e:  # anything else is what the check reports
                        errors.append(repr(e)[:200])
                        return
            t = threading.Thread(target=writes)
            t.start()
            time.sleep(0.3 + 0.2 * r)
            pid = s.pause()
            t.join(60)
            said += errors
            try:
                s2 = sb.resume(pid)
                out = s2.run("print(x + 1)").stdout
                s2.close()
                if out != "%d\n" % (42 + r):
                    lost.append("round %d: %r" % (r + 1, out))
            except Exception as e:
                lost.append("round %d: %s" % (r + 1, str(e)[-300:]))
        check("pause racing file writes: each of 3 resumes keeps the session", lost == [], lost)
        check("pause racing file writes: a write either lands or says the session closed", said == [], said)
        # A program that holds a file of its bridge area open cannot be
        # resumed (gVisor opens it again by its path; the restore makes the
        # area anew): resume() says so and keeps the image.
        s = sb.session().open()
        s.run("held = open('/run/tollgate/calls/cells/held', 'w'); held.write('x'); held.flush()")
        pid = s.pause()
        try:
            sb.resume(pid).close()
            check("a session holding a file of /run/tollgate open: resume() says why it cannot", False)
        except PauseError as e:
            check("a session holding a file of /run/tollgate open: resume() says why it cannot, keeping "
                  "the image", "/run/tollgate" in str(e) and os.path.isdir(os.path.join(sb._state_dir(), "paused",
                                                                                        pid, "image")), e)
    finally:
        sb.close()


def closes_at_once(backend, kw, check):
    """A session closed by 8 threads at once, a cell running in it (as a
    service's kill closes it while the cell, whose interpreter it ended,
    closes it too): each close returns, the cell says the session ended,
    and the container is gone.  The second close deleted a container
    whose id the first had just cleared (TypeError out of the cell's
    thread; the service's stream was cut)."""
    sb = Sandbox(**kw)
    try:
        s = sb.session().open()
        cid = s.cid
        errors, cell = [], []

        def run_cell():
            try:
                s.run("import time; time.sleep(30)")
                cell.append("it ran to the end")
            except TollgateSDKError as e:
                cell.append(type(e).__name__)
            except Exception as e:
                cell.append(repr(e)[:200])

        def close():
            try:
                s.close()
            except Exception as e:
                errors.append(repr(e)[:200])
        ct = threading.Thread(target=run_cell)
        ct.start()
        time.sleep(1)
        ts = [threading.Thread(target=close) for _ in range(8)]
        for t in ts:  # spread over a close's own time, so some begin as others end
            t.start()
            time.sleep(0.04)
        for t in ts:
            t.join(60)
        ct.join(60)
        listed = subprocess.run([kw["tollgate"], "--root", sb.root, "list", "-q"], capture_output=True,
                                text=True).stdout
        check("8 closes at once, a cell running: each returns", errors == [], errors)
        check("... the cell fails with the SDK's error (the session ended)",
              len(cell) == 1 and cell[0] in ("SessionClosed", "CellTimeout", "ProgramFailed", "ContainerError"),
              cell)
        check("... the session is closed and its container gone", s.closed and cid not in listed, listed)
    finally:
        sb.close()


def open_session(backend, kw, check):
    """sb.session() is open: used without `with`, closed by close() or by
    its Sandbox's close() (issue 39: it raised "the session is closed")."""
    sb = Sandbox(**kw)
    try:
        s = sb.session()
        r = s.run("x = 6\nprint(x * 7)")
        check("session(): open without with, s.run answers", r.stdout == "42\n" and not s.closed,
              (r.stdout, r.stderr))
        check("session(): a second cell keeps its variables", s.run("print(x)").stdout == "6\n")
        s.close()
        try:
            s.run("print(1)")
            check("session(): run after close() raises SessionClosed", False)
        except SessionClosed as e:
            check("session(): run after close() raises SessionClosed, naming the fix",
                  "sandbox.session()" in str(e), e)
        t = sb.session()
        cid = t.cid
        sb.close()
        listed = subprocess.run([kw["tollgate"], "--root", sb.root, "list", "-q"], capture_output=True,
                                text=True).stdout
        check("session(): the Sandbox's close() closes its open sessions", t.closed and cid not in listed,
              listed)
    finally:
        sb.close()


# Run by pause_dir_resume in a process of its own: pause (or resume) one
# session with Sandbox(pause_dir=PD), print the id (or the cell's output)
# and exit, closing the Sandbox at exit.
_PAUSER = """
import sys
from tollgate_sdk import Sandbox
step, tg, audit_dir, pd = sys.argv[1:5]
sb = Sandbox(runtime="runsc", audit_dir=audit_dir, tollgate=tg, pause_dir=pd)
if step == "pause":
    s = sb.session()
    s.run("y = 'across processes'")
    print(s.pause())
else:
    s = sb.resume(sys.argv[5])
    print(s.run("print(y)").stdout.strip())
    s.close()
sb.close()
"""


def pause_dir_resume(backend, kw, check, tg):
    """Sandbox(pause_dir=PD): pause, close(), then another Sandbox with
    the same pause_dir resumes it, in this process and in another (issue
    39: "bundle ... is gone", the bundle lived in the closed state dir)."""
    if backend != "runsc":
        return
    pd = tempfile.mkdtemp(prefix="tg-sdk-pausedir.")
    try:
        sb = Sandbox(pause_dir=pd, **kw)
        try:
            s = sb.session()
            s.run("z = 41")
            pid = s.pause()
        finally:
            sb.close()
        sb2 = Sandbox(pause_dir=pd, **kw)
        try:
            s2 = sb2.resume(pid)
            r = s2.run("print(z + 1)")
            check("pause_dir: paused, its Sandbox closed, another Sandbox resumes it (one process)",
                  r.stdout == "42\n", (r.stdout, r.stderr))
            s2.close()
        except Exception as e:
            check("pause_dir: paused, its Sandbox closed, another Sandbox resumes it (one process)", False, e)
        finally:
            sb2.close()
        left = sorted(os.listdir(os.path.join(pd, "bundles"))) + sorted(x for x in os.listdir(pd) if x != "bundles")
        check("pause_dir: nothing of the session is left after the resumed one closed", left == [], left)
        env = dict(os.environ)
        p1 = subprocess.run([sys.executable, "-c", _PAUSER, "pause", tg, kw["audit_dir"], pd],
                            capture_output=True, text=True, timeout=300, env=env)
        pid = p1.stdout.strip().splitlines()[-1] if p1.stdout.strip() else ""
        check("pause_dir: a process pauses a session and exits", p1.returncode == 0 and pid.startswith("sdk-"),
              p1.stdout + p1.stderr)
        p2 = subprocess.run([sys.executable, "-c", _PAUSER, "resume", tg, kw["audit_dir"], pd, pid],
                            capture_output=True, text=True, timeout=300, env=env)
        check("pause_dir: another process resumes it with its variables",
              p2.returncode == 0 and p2.stdout.strip() == "across processes", p2.stdout + p2.stderr)
    finally:
        import shutil
        shutil.rmtree(pd, ignore_errors=True)


def session_cap(backend, kw, check):
    sb = Sandbox(**kw)
    set_max_sessions(2)
    try:
        a = sb.session().open()
        b = sb.session().open()
        try:
            sb.session().open()
            check("session cap: a third session over a cap of 2 is refused", False)
        except SessionLimit as e:
            check("session cap: a third session over a cap of 2 is refused, naming the fix",
                  "2 sessions are open" in str(e) and "close one" in str(e), e)
        a.close()
        c = sb.session().open()
        check("session cap: closing one makes room", c.run("print(5)").stdout == "5\n")
        c.close()
        b.close()
    finally:
        set_max_sessions(None)
        sb.close()


def main(backend, work, audit_dir, tg, check):
    kw = dict(runtime=backend, audit_dir=audit_dir, tollgate=tg)
    for name, fn in (("large_output", large_output), ("sessions", sessions), ("refusals", refusals),
                     ("streaming_async", streaming_async), ("approvals", approvals),
                     ("session_cap", session_cap), ("resources", resources)):
        try:
            fn(backend, kw, check)
        except Exception as e:  # one broken part must not hide the others
            import traceback
            check("%s ran to the end" % name, False, traceback.format_exc())
    try:
        pause_resume(backend, kw, check, tg)
    except Exception:
        import traceback
        check("pause_resume ran to the end", False, traceback.format_exc())
    try:
        pause_racing_files(backend, kw, check)
    except Exception:
        import traceback
        check("pause_racing_files ran to the end", False, traceback.format_exc())
    for name, fn in (("open_session", open_session), ("closes_at_once", closes_at_once),
                     ("pause_dir_resume", pause_dir_resume)):
        try:
            fn(backend, kw, check, tg) if fn is pause_dir_resume else fn(backend, kw, check)
        except Exception:
            import traceback
            check("%s ran to the end" % name, False, traceback.format_exc())
    try:
        warm_pool(backend, kw, check, tg)
    except Exception:
        import traceback
        check("warm_pool ran to the end", False, traceback.format_exc())
    try:
        files(backend, kw, check, work)
    except Exception:
        import traceback
        check("files ran to the end", False, traceback.format_exc())

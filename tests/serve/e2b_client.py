"""Drive `tollgate serve` with the unmodified e2b and e2b-code-interpreter
SDKs (tests/integration/test_serve.sh).  Each step prints "ok - NAME" or
"FAIL - NAME: why"; the environment names the service (E2B_API_URL,
E2B_SANDBOX_URL, E2B_API_KEY, E2B_DOMAIN=e2b.invalid).

    e2b_client.py basics|connect ID|gone ID|pause|governed|refusals|crowd N M|
                  before_kill|after_restart A B|hold|flood N|uploads N MIB PID|trickle N|
                  cells N PID
"""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from e2b import CommandExitException, SandboxQuery
from e2b.exceptions import AuthenticationException, NotFoundException
from e2b_code_interpreter import Sandbox

API = os.environ["E2B_API_URL"]


def check(name, cond, why=""):
    print("ok - %s" % name if cond else "FAIL - %s: %s" % (name, why), flush=True)
    return cond


def http(method, path, key=None, body=None, headers=None):
    h = dict(headers or {})
    if key is not None:
        h["X-API-Key"] = key
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(API + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode("utf-8", "replace")


def at_once(fns, timeout):
    """Run each of fns in its own thread, all at once; wait up to timeout
    seconds for each."""
    ts = [threading.Thread(target=f) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)


def basics():
    sbx = Sandbox.create(metadata={"suite": "basics"}, timeout=120)
    check("create answers a sandbox id of 20 characters", len(sbx.sandbox_id) == 20, sbx.sandbox_id)
    check("is_running", sbx.is_running())
    sbx.run_code("x = 41")
    e = sbx.run_code("print(x + 1)")
    check("run_code keeps x between cells (prints 42)", e.logs.stdout == ["42\n"], e.logs)
    check("a cell's own stderr carries no tollgate trailer", sbx.run_code("x").logs.stderr == [],
          sbx.run_code("x").logs.stderr)
    check("the main result is the last expression's repr", sbx.run_code("x + 1").text == "42")
    err = sbx.run_code("1/0").error
    check("an exception is the execution's error", err is not None and err.name == "ZeroDivisionError", err)
    # More than a cell keeps (8 MiB a stream), then an exception / a value:
    # the reply came after the cap and was lost, a failure read as success.
    big = sbx.run_code("import sys\nsys.stdout.write('x' * 9_000_000)\n1/0")
    check("9 MB of output then an exception: still the execution's error",
          big.error is not None and big.error.name == "ZeroDivisionError", big.error)
    check("... 8 MiB of the output kept, and the cut said on stderr",
          len("".join(big.logs.stdout)) == 8 << 20 and "of stdout were cut" in "".join(big.logs.stderr),
          (len("".join(big.logs.stdout)), big.logs.stderr))
    big = sbx.run_code("import sys\nsys.stdout.write('x' * 9_000_000)\n6 * 7")
    check("9 MB of output then a value: still the main result", big.text == "42", big.results)
    r = sbx.commands.run("echo hi")
    check("commands.run echo hi", (r.stdout, r.exit_code) == ("hi\n", 0), r)
    try:
        sbx.commands.run("exit 3")
        check("a failing command raises CommandExitException", False, "no exception")
    except CommandExitException as ex:
        check("a failing command raises CommandExitException with its status", ex.exit_code == 3, ex.exit_code)
    h = sbx.commands.run("read line; echo got:$line; sleep 100", background=True, stdin=True)
    check("a background command is listed", h.pid in [p.pid for p in sbx.commands.list()])
    sbx.commands.send_stdin(h.pid, "hello\n")
    time.sleep(1)
    check("kill of a background command", sbx.commands.kill(h.pid))
    try:
        res = h.wait()
        out = res.stdout
    except CommandExitException as ex:
        out = ex.stdout
    check("its stdin was fed (it printed got:hello)", "got:hello" in out, out)
    check("a killed command is no longer listed", h.pid not in [p.pid for p in sbx.commands.list()])
    try:
        sbx.commands.run("sleep 30", timeout=2)
        check("a command past its timeout fails", False, "no exception")
    except Exception as ex:  # the SDK's TimeoutException
        check("a command past its timeout fails", "imeout" in type(ex).__name__ or "deadline" in str(ex), ex)
    listing = "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done"
    for _ in range(30):
        left = sbx.commands.run(listing)
        if "sleep 30" not in left.stdout and "sleep 100" not in left.stdout:
            break
        time.sleep(0.1)
    check("and its process is gone in the sandbox", "sleep 30" not in left.stdout and "sleep 100" not in
          left.stdout, left.stdout.replace("\n", " | "))
    data = os.urandom(1 << 20)
    sbx.files.write("/tmp/blob.bin", data)
    check("files.write then files.read of 1 MiB are byte-identical",
          bytes(sbx.files.read("/tmp/blob.bin", format="bytes")) == data)
    # write_files of several sends one multipart body with no ?path=, each
    # part named by its path (it was refused: "path must be a non-empty string").
    many = [{"path": "/tmp/many/f%d.bin" % i, "data": os.urandom(1000 * i + 1)} for i in range(5)]
    many.append({"path": "/tmp/many/ünï cödé.txt", "data": b"line\r\n--not-the-boundary\r\n"})
    wrote = sbx.files.write_files(many)
    check("files.write_files of 6 files (one multipart body): each written and read back the same",
          len(wrote) == 6 and all(bytes(sbx.files.read(f["path"], format="bytes")) == f["data"] for f in many),
          [w.path for w in wrote])
    sbx.files.write("/tmp/zipped.bin", data, gzip=True)
    check("files.write with gzip: the same bytes", bytes(sbx.files.read("/tmp/zipped.bin", format="bytes")) == data)
    check("files.exists", sbx.files.exists("/tmp/blob.bin") and not sbx.files.exists("/tmp/nope"))
    check("files.make_dir", sbx.files.make_dir("/tmp/d1") and sbx.files.get_info("/tmp/d1").type.value == "dir")
    sbx.files.rename("/tmp/blob.bin", "/tmp/d1/blob.bin")
    check("files.list after a rename", [e.name for e in sbx.files.list("/tmp/d1")] == ["blob.bin"])
    sbx.files.remove("/tmp/d1")
    check("files.remove", not sbx.files.exists("/tmp/d1"))
    try:
        sbx.files.read("/tmp/absent")
        check("reading a missing file is NotFound", False, "no exception")
    except Exception as ex:
        check("reading a missing file is NotFound", "NotFound" in type(ex).__name__, type(ex).__name__)
    sbx.set_timeout(200)
    info = sbx.get_info()
    check("set_timeout moves endAt", info.end_at.timestamp() - time.time() > 150, info.end_at)
    page = Sandbox.list(query=SandboxQuery(metadata={"suite": "basics"})).next_items()
    check("Sandbox.list by metadata finds it", [s.sandbox_id for s in page] == [sbx.sandbox_id], page)
    page = Sandbox.list(query=SandboxQuery(metadata={"suite": "nothing"})).next_items()
    check("Sandbox.list with other metadata finds nothing", page == [], page)
    print("SANDBOX", sbx.sandbox_id, flush=True)


def connect(sid):
    c = Sandbox.connect(sid)
    check("a second process connects and sees x", c.run_code("print(x)").logs.stdout == ["41\n"])
    check("commands run through a connected sandbox", c.commands.run("echo ok").stdout == "ok\n")
    check("kill answers True", c.kill() is True)
    check("a second kill answers False (404)", Sandbox.kill(sid) is False)


def gone(_):
    sbx = Sandbox.create(timeout=5)
    end = sbx.get_info().end_at.timestamp()
    while sbx.sandbox_id in [s.sandbox_id for s in Sandbox.list().next_items()] and time.time() < end + 10:
        time.sleep(0.1)
    late = time.time() - end
    check("a sandbox with timeout=5 is gone from the list within 2 s of its deadline", late < 2.0,
          "%.2f s late" % late)
    print("CONTAINER", sbx.sandbox_id, flush=True)


def killed():
    """A sandbox whose container dies under it (killed here, as the OOM
    killer or a crash would): the service says at once that it ended and
    why, is_running() is False, and one nobody asks leaves the list and
    frees its place by itself."""
    tg = [os.environ["TG"], "--root", os.environ["SERVE_ROOT"]]

    def containers():
        return set(subprocess.run(tg + ["list", "-q"], capture_output=True, text=True).stdout.split())

    def ended(pid):
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                raw = f.read()
        except OSError:
            return True
        return raw[raw.rfind(b")") + 2:][:1] in (b"Z", b"X")

    def kill_new(before):
        """SIGKILL each new container's init, and wait (bounded) until it
        is gone: the kill is asynchronous, and the claim is about a
        sandbox whose container has died."""
        new = containers() - before
        for cid in new:
            st = json.loads(subprocess.run(tg + ["state", cid], capture_output=True, text=True).stdout)
            pid = int(st["pid"])
            os.kill(pid, 9)
            end = time.time() + 10
            while not ended(pid) and time.time() < end:
                time.sleep(0.01)
        return new

    before = containers()
    a = Sandbox.create(timeout=120)
    a.run_code("x = 1")
    check("killed: the sandbox had one container", len(kill_new(before)) == 1)
    t, err = time.time(), None
    try:
        a.run_code("print(x)")
    except NotFoundException as e:
        err = str(e)
    check("killed: the next run_code says the sandbox ended, and why, at once",
          err is not None and "ended" in err and "container stopped" in err and time.time() - t < 5,
          (err, time.time() - t))
    check("killed: is_running() is False", a.is_running() is False)
    check("killed: kill answers False (it is gone already)", a.kill() is False)
    before = containers()
    b = Sandbox.create(timeout=120)
    b.run_code("y = 2")
    gone_ids = kill_new(before)
    end = time.time() + 5

    def listed():
        return b.sandbox_id in [s.sandbox_id for s in Sandbox.list().next_items()]
    while (listed() or containers() & gone_ids) and time.time() < end:
        time.sleep(0.1)
    check("killed: one nobody asks leaves the list within 5 s", not listed())
    check("killed: and its container is deleted", not containers() & gone_ids, containers() & gone_ids)


def pause():
    sbx = Sandbox.create(timeout=120)
    sbx.run_code("y = 'kept'")
    check("pause answers True", sbx.pause() is True)
    check("a second pause answers False (409)", sbx.pause() is False)
    listed = {s.sandbox_id: s.state for s in Sandbox.list().next_items()}
    check("the list says paused", str(listed.get(sbx.sandbox_id)).endswith("paused"), listed)
    b = Sandbox.connect(sbx.sandbox_id)
    check("connect resumes it, and y is kept", b.run_code("print(y)").logs.stdout == ["kept\n"])
    b.kill()


def governed():
    key = os.environ["E2B_API_KEY"]
    sbx = Sandbox.create(timeout=120)
    e = sbx.run_code("from tollgate import echo\nprint(echo(text='hi'))")
    check("a governed call from inside a service sandbox is allowed by the tenant's policy",
          "hi" in "".join(e.logs.stdout), (e.logs, e.error))
    e = sbx.run_code("from tollgate import shout, ToolDenied\ntry:\n    shout(text='x')\nexcept ToolDenied as d:"
                     "\n    print('denied', d)")
    check("a call the policy denies is denied", "denied" in "".join(e.logs.stdout), e.logs)
    out = {}

    def parked():
        out["e"] = sbx.run_code("from tollgate import careful\nprint('answer', careful(text='ok'))")
    t = threading.Thread(target=parked)
    t.start()
    call = None
    for _ in range(200):
        st, pend = http("GET", "/tollgate/sandboxes/%s/pending" % sbx.sandbox_id, key)
        if st == 200 and pend:
            call = pend[0]["call"]
            break
        time.sleep(0.1)
    check("the parked call is listed by the extension API", call is not None, pend)
    st, r = http("POST", "/tollgate/sandboxes/%s/calls/%s/approve" % (sbx.sandbox_id, call), key, {})
    check("and approved through it", st == 200, (st, r))
    t.join(60)
    check("the approved call ran", "answer" in "".join(out["e"].logs.stdout), out["e"].logs)
    # The tollgate CLI on the service's root: the same containers, so the
    # same verbs (docs/serve.md).
    tg = [os.environ["TG"], "--root", os.environ["SERVE_ROOT"]]
    t = threading.Thread(target=lambda: out.update(cli=sbx.run_code(
        "from tollgate import careful\nprint('answer', careful(text='cli'))")))
    t.start()
    parked = None
    for _ in range(200):
        p = subprocess.run(tg + ["pending", "--format", "json"], capture_output=True, text=True)
        waiting = [c for c in (json.loads(p.stdout) if p.returncode == 0 else []) if c.get("tool") == "careful"]
        if waiting:
            parked = waiting[0]
            break
        time.sleep(0.1)
    check("tollgate pending on the service's root lists the parked call", parked is not None, p.stderr)
    p = subprocess.run(tg + ["approve", parked["container"], parked["call"], "--reason", "from the CLI"],
                       capture_output=True, text=True)
    check("tollgate approve decides it", p.returncode == 0, p.stderr)
    t.join(60)
    check("the call approved from the CLI ran", "answer" in "".join(out["cli"].logs.stdout), out["cli"].logs)
    p = subprocess.run(tg + ["calls", parked["container"], "--format", "json"], capture_output=True, text=True)
    calls = json.loads(p.stdout).get("calls", []) if p.returncode == 0 else []
    check("tollgate calls lists the sandbox's calls", [c.get("tool") for c in calls].count("careful") == 2,
          (p.stderr, calls))
    st, a = http("GET", "/tollgate/sandboxes/%s/audit" % sbx.sandbox_id, key)
    check("the tenant's audit log verifies", st == 200 and a["verify"]["ok"], a and a.get("verify"))
    check("and records the calls", sum(1 for r in a["records"] if r.get("tool") == "careful") >= 1)
    check("the audit log is in the tenant's audit directory",
          a["log"].startswith(os.environ["TENANT_AUDIT"] + "/"), a["log"])
    p = subprocess.run([os.environ["TG"], "audit", "show", a["log"]], capture_output=True, text=True)
    check("tollgate audit show reads it, with the CLI's approval", p.returncode == 0 and "from the CLI" in p.stdout,
          (p.stderr, p.stdout[-500:]))
    st, b = http("GET", "/tollgate/sandboxes/%s/budget" % sbx.sandbox_id, key)
    check("the budget use is served", st == 200 and b["calls"] >= 3, b)
    sbx.kill()


def refusals():
    key, other = os.environ["E2B_API_KEY"], os.environ["OTHER_KEY"]
    st, _ = http("GET", "/v2/sandboxes")
    check("no API key: 401", st == 401, st)
    st, body = http("GET", "/v2/sandboxes", "e2b_" + "0" * 40)
    check("a wrong API key: 401 with e2b's error shape", st == 401 and body.get("code") == 401, (st, body))
    try:
        Sandbox.create(api_key="e2b_" + "1" * 40)
        check("the SDK with a wrong key raises AuthenticationException", False, "created")
    except AuthenticationException:
        check("the SDK with a wrong key raises AuthenticationException", True)
    sbx = Sandbox.create(timeout=60)
    st, _ = http("GET", "/sandboxes/" + sbx.sandbox_id, other)
    check("another tenant's sandbox id: 404", st == 404, st)
    st, _ = http("DELETE", "/sandboxes/" + sbx.sandbox_id, other)
    check("another tenant cannot kill it: 404", st == 404, st)
    try:
        Sandbox.connect(sbx.sandbox_id, api_key=other)
        check("another tenant's SDK cannot connect", False, "connected")
    except NotFoundException:
        check("another tenant's SDK cannot connect", True)
    base = os.environ["E2B_SANDBOX_URL"]
    req = urllib.request.Request(base + "/process.Process/List", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json", "E2b-Sandbox-Id": sbx.sandbox_id,
                                          "E2b-Sandbox-Port": "49983", "Connect-Protocol-Version": "1"})
    try:
        urllib.request.urlopen(req, timeout=30)
        st = 200
    except urllib.error.HTTPError as e:
        st = e.code
    check("an envd call without the sandbox's access token: 401", st == 401, st)
    req = urllib.request.Request(base + "/files?path=/tmp/x", method="GET",
                                 headers={"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"})
    try:
        urllib.request.urlopen(req, timeout=30)
        st = 200
    except urllib.error.HTTPError as e:
        st = e.code
    check("/files without token or signature: 401", st == 401, st)
    # 12 creates at once with one running, against a quota of 12: the
    # count holds under concurrency (and the creates overlap: one after
    # another they took ~30 s of cold starts).
    made, refused = [sbx], []

    def one():
        try:
            made.append(Sandbox.create(timeout=60))
        except Exception as ex:
            refused.append(ex)
    at_once([one] * 12, 300)
    check("12 creates at once over a quota of 12 with one running: 11 made", len(made) == 12,
          "made %d, refused %s" % (len(made), refused))
    check("over the quota: e2b's error shape naming the quota",
          len(refused) == 1 and "max_sandboxes" in str(refused[0]), refused)
    # and killed at once (where the host's init reaps late, a runsc
    # container's removal waits for it: 1-2 s each, one after another)
    at_once([s.kill for s in made], 120)
    # The other tenant: 256 MiB sandboxes under a 512 MiB quota.
    theirs = [Sandbox.create(api_key=other, timeout=60) for _ in range(2)]
    try:
        Sandbox.create(api_key=other, timeout=60)
        check("the memory quota refuses a third sandbox", False, "made")
    except Exception as ex:
        check("the memory quota refuses a third sandbox, naming max_memory", "max_memory" in str(ex), ex)
    listed = Sandbox.list(api_key=other).next_items()
    check("a listed sandbox says its memory", all(s.memory_mb == 256 for s in listed), listed)
    check("a tenant lists only its own sandboxes", sorted(s.sandbox_id for s in listed) ==
          sorted(s.sandbox_id for s in theirs), listed)
    for s in theirs:
        s.kill()


def crowd(clients, each):
    errors, done = [], []

    def one(i):
        for j in range(each):
            try:
                s = Sandbox.create(timeout=120, metadata={"crowd": str(i)})
                r = s.run_code("print(%d * %d)" % (i, j))
                if r.logs.stdout != ["%d\n" % (i * j)]:
                    errors.append("client %d run %d: %s" % (i, j, r.logs))
                # A command that ends before its stream is read keeps its
                # output (it came back empty, exit 0, under a crowd).
                c = s.commands.run("echo crowd-%d-%d; echo to-stderr >&2" % (i, j))
                if (c.stdout, c.stderr, c.exit_code) != ("crowd-%d-%d\n" % (i, j), "to-stderr\n", 0):
                    errors.append("client %d command %d: %r %r %r" % (i, j, c.stdout, c.stderr, c.exit_code))
                if s.kill() is not True:
                    errors.append("client %d kill %d answered False" % (i, j))
                done.append(1)
            except Exception as ex:
                errors.append("client %d run %d: %s: %s" % (i, j, type(ex).__name__, ex))
    at_once([lambda i=i: one(i) for i in range(clients)], 900)
    check("%d clients x %d sandboxes: every request answered, every command's output whole" % (clients, each),
          not errors and len(done) == clients * each, errors[:3])
    check("none left in the list", Sandbox.list().next_items() == [])


def orphan(sid):
    time.sleep(4)   # past the service's grace for a client between two polls
    c = Sandbox.connect(sid)
    t = time.time()
    e = c.run_code("from tollgate import lookup\ntry:\n    lookup(order_id='B')\nexcept Exception as e:\n"
                   "    print('failed:', type(e).__name__, e)")
    took = time.time() - t
    check("a call whose client is gone fails at once (no hang)", "failed" in "".join(e.logs.stdout) and took < 10,
          (e.logs, took))
    c.kill()


def before_kill():
    """Three sandboxes for a kill -9 of the service: two to take back (one
    running, with x in its interpreter; one paused), and one with a
    deadline 8 s away, left to tollgate's reaper.  (4 s was over before
    the kill on a slower machine under the suite's load: the service
    itself removed that sandbox, and the restart had nothing to drop.)"""
    a = Sandbox.create(timeout=300, metadata={"suite": "adopt"})
    a.run_code("x = 41")
    a.files.write("/tmp/kept.txt", "kept across the restart")
    b = Sandbox.create(timeout=300, metadata={"suite": "adopt"})
    b.commands.run("echo b > /tmp/b.txt")
    check("the second is paused before the kill", b.pause() is True)
    c = Sandbox.create(timeout=8, metadata={"suite": "expires"})
    print("END", c.get_info().end_at.timestamp(), flush=True)
    print("SANDBOX", a.sandbox_id, flush=True)
    print("SANDBOX", b.sandbox_id, flush=True)


def after_restart(a_id, b_id):
    listed = sorted(s.sandbox_id for s in Sandbox.list(query=SandboxQuery(metadata={"suite": "adopt"})).next_items())
    check("the restarted service lists the two sandboxes it took back", listed == sorted([a_id, b_id]), listed)
    a = Sandbox.connect(a_id)
    e = a.run_code("print(x + 1)")
    check("connect reaches the first; its interpreter kept x", e.logs.stdout == ["42\n"], (e.logs, e.error))
    check("its files are kept", a.files.read("/tmp/kept.txt") == "kept across the restart")
    check("commands run in it", a.commands.run("echo hi").stdout == "hi\n")
    b = Sandbox.connect(b_id)
    check("connect resumes the paused one; its /tmp is kept", b.commands.run("cat /tmp/b.txt").stdout == "b\n")
    e = b.run_code("print(6 * 7)")
    check("the code interpreter answers in it", e.logs.stdout == ["42\n"], (e.logs, e.error))
    b.set_timeout(2)
    end = b.get_info().end_at.timestamp()
    while b_id in [s.sandbox_id for s in Sandbox.list().next_items()] and time.time() < end + 10:
        time.sleep(0.1)
    late = time.time() - end
    check("set_timeout applies to a sandbox taken back: gone within 2 s of its deadline", late < 2.0,
          "%.2f s late" % late)
    check("kill of a sandbox taken back answers True", a.kill() is True)


def say_end(name, f):
    """Call f and print how it ended ("ENDED NAME: returned" or the
    exception's type): for calls a killed or stopped service cuts short."""
    try:
        f()
        print("ENDED %s: returned" % name, flush=True)
    except Exception as e:
        print("ENDED %s: %s" % (name, type(e).__name__), flush=True)


def pause_setup():
    """Two sandboxes for a kill -9 of the service in the middle of a pause
    and of a resume: the first running (x in its interpreter, a file), the
    second paused (y, a file)."""
    a = Sandbox.create(timeout=300, metadata={"suite": "pausekill"})
    a.run_code("x = 41")
    a.files.write("/tmp/a.txt", "a, paused as the service died")
    b = Sandbox.create(timeout=300, metadata={"suite": "pausekill"})
    b.run_code("y = 6")
    b.files.write("/tmp/b.txt", "b, resumed as the service died")
    check("pausekill: the second is paused", b.pause() is True)
    print("SANDBOX", a.sandbox_id, flush=True)
    print("SANDBOX", b.sandbox_id, flush=True)


def pause_go(a_id, b_id):
    """Pause the first and resume the second at once; the service is
    killed meanwhile, so each call may fail: only what it says is shown."""
    ts = [threading.Thread(target=say_end, args=("pause", lambda: Sandbox.connect(a_id).pause())),
          threading.Thread(target=say_end, args=("resume", lambda: Sandbox.connect(b_id)))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def pause_after(a_id, b_id):
    """After the restart each is whole, whichever side of its pause or
    resume the kill fell on."""
    a = Sandbox.connect(a_id)
    e = a.run_code("print(x + 1)")
    check("pausekill: the one paused as the service died resumes with its interpreter's x",
          e.logs.stdout == ["42\n"], (e.logs, e.error))
    check("pausekill: ... and its file", a.files.read("/tmp/a.txt") == "a, paused as the service died")
    b = Sandbox.connect(b_id)
    e = b.run_code("print(y * 7)")
    check("pausekill: the one resumed as the service died answers with its interpreter's y",
          e.logs.stdout == ["42\n"], (e.logs, e.error))
    check("pausekill: ... and its file", b.files.read("/tmp/b.txt") == "b, resumed as the service died")
    check("pausekill: both are killed", a.kill() is True and b.kill() is True)


def races(rounds):
    """Two pauses, two resumes (a connect to a paused sandbox resumes it), a
    command, one in the background, a write, a read, a listing, a cell, a
    timeout and an info at once on one sandbox, and in the last round a
    kill beside them: each either works or says what happened to the
    sandbox (paused, or removed and why), never what a closed session or a
    removed container said (a 500 naming pause(), "container sdk-... does
    not exist", "no answer ... in time", an unreadable helper's answer), and
    every resume restores the sandbox: saved with a write's files open
    ("no such file or directory") or a helper of `tollgate exec` running
    ("no host FD available"), it never came back."""
    bad = []
    for r in range(rounds):
        sid = Sandbox.create(timeout=120).sandbox_id
        Sandbox.connect(sid).files.write("/tmp/r", "y" * 1000)
        out = []

        def go(name, f):
            try:
                f()
                out.append((name, "ok"))
            except CommandExitException as e:
                out.append((name, "exit %s: %s" % (e.exit_code, e.stderr[-200:])))
            except Exception as e:
                out.append((name, "%s: %s" % (type(e).__name__, str(e)[:300])))

        def on():
            return Sandbox.connect(sid)
        ops = [("pause", lambda: on().pause()), ("pause2", lambda: on().pause()),
               ("resume", lambda: on().commands.list()), ("resume2", lambda: on().files.list("/tmp")),
               ("cmd", lambda: on().commands.run("sleep 1; echo hi")),
               ("background", lambda: on().commands.run("sleep 30", background=True)),
               ("write", lambda: on().files.write("/tmp/f", "x" * 100000)),
               ("read", lambda: on().files.read("/tmp/r")),
               ("cell", lambda: on().run_code("import time; time.sleep(1)")),
               ("timeout", lambda: on().set_timeout(200)), ("info", lambda: Sandbox.get_info(sid))]
        if r == rounds - 1:
            ops.append(("kill", lambda: on().kill()))
        ts = [threading.Thread(target=go, args=o) for o in ops]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for name, what in out:
            said = what == "ok" or what.startswith("exit 137") or "paused" in what or "killed through the API" in what
            if not said and not (name != "kill" and r == rounds - 1 and "not found" in what):
                bad.append("round %d %s: %s" % (r + 1, name, what))
        try:  # by id, not through connect: a sandbox a failed round left paused is removed too
            Sandbox.kill(sid)
        except Exception:
            pass
    # Timeouts set while a kill removes the sandbox: one saved after the
    # kill left a record whose container was gone (test_serve then checks
    # that no record is left).
    late = []
    for _ in range(rounds):
        sbx = Sandbox.create(timeout=120)

        def timeouts():
            for _ in range(8):
                try:
                    sbx.set_timeout(150)
                except Exception as e:
                    if "not found" not in str(e):
                        late.append("%s: %s" % (type(e).__name__, str(e)[:200]))
                    return
        ts = [threading.Thread(target=timeouts) for _ in range(4)]
        for t in ts:
            t.start()
        time.sleep(0.05)
        sbx.kill()
        for t in ts:
            t.join()
    check("races: a timeout set as a kill removes the sandbox works or says it is not found", late == [], late)
    check("races: %d rounds of pauses, resumes, commands, files, a cell, a timeout and an info at once (a "
          "kill in the last) each work or say what happened to the sandbox" % rounds, bad == [], bad)


def pid1():
    """Against a service that is PID 1 of its PID namespace: two sandboxes,
    each run and killed; a kill waited minutes when that PID 1 reaped
    nothing (sdk/tollgate_sdk/_pid1.py)."""
    slow = []
    for i in range(2):
        sbx = Sandbox.create(timeout=120)
        e = sbx.run_code("print(%d * 7)" % (i + 6))
        check("as PID 1: sandbox %d runs code" % (i + 1), e.logs.stdout == ["%d\n" % ((i + 6) * 7)], e.logs)
        t = time.monotonic()
        gone = sbx.kill()
        took = time.monotonic() - t
        check("as PID 1: sandbox %d's kill answers True" % (i + 1), gone is True, gone)
        if took > 10:
            slow.append(took)
    check("as PID 1: no kill waited on an unreaped sandbox (over 10 s)", not slow, slow)
    check("as PID 1: none left in the list", Sandbox.list().next_items() == [])


def hold():
    """A sandbox with a long command and a long cell in flight, for a TERM
    of the service: each call must end, not hang, once the service stops."""
    s = Sandbox.create(timeout=300)
    threading.Thread(target=say_end, args=("cmd", lambda: s.commands.run("sleep 600", timeout=0)),
                     daemon=True).start()
    threading.Thread(target=say_end, args=("code", lambda: s.run_code("import time\ntime.sleep(600)", timeout=700)),
                     daemon=True).start()
    until = time.time() + 30
    while time.time() < until and len([p for p in s.commands.list()]) < 1:
        time.sleep(0.2)
    time.sleep(1)
    print("HOLDING %s" % s.sandbox_id, flush=True)
    time.sleep(120)


def flood(held):
    """held connections from 127.0.0.2 that never finish their headers
    (an unauthenticated client, before any key is checked), then the SDK
    from 127.0.0.1: it is served, at once, while they are held."""
    import resource
    import socket
    from urllib.parse import urlsplit
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    u = urlsplit(API)
    socks, opened = [], 0
    for _ in range(held):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        try:
            s.connect((u.hostname, u.port))
            s.sendall(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            opened += 1
        except OSError:
            s.close()
            continue
        socks.append(s)
    check("%d connections opened to the service" % held, opened == held, opened)
    time.sleep(2)
    t = time.time()
    out = {}

    def legit():
        sb = Sandbox.create(timeout=60)
        out["echo"] = sb.commands.run("echo served").stdout
        out["killed"] = sb.kill()
    at_once([legit], 60)
    took = time.time() - t
    check("with %d connections held by another client, the SDK's create, command and kill are served "
          "(%.1f s)" % (held, took), out.get("echo") == "served\n" and out.get("killed") is True and took < 20,
          (out, took))
    # Past its share each was answered 429 and closed (or reset: it was
    # closed with the partial request unread); its share is still open.
    still_open = 0
    for s in socks:
        s.settimeout(0.05)
        try:
            got = s.recv(100)
            if not got.startswith(b"HTTP/1.1 429 ") and got:
                still_open += 1
        except TimeoutError:
            still_open += 1
        except OSError:
            pass
        s.close()
    check("the client kept its share of 256 connections, the rest were refused (%d open)" % still_open,
          still_open == 256, still_open)

def uploads(n, mib, serve_pid):
    """n uploads of mib MiB at once to one path of one sandbox, each a
    valid request: the service held every body at once (16 x 24 MiB:
    790 MB, and the sandbox's helpers beside them ended it), and the
    sandbox's 64 MiB /tmp could not hold them all in flight; now a few
    at a time."""
    sb = Sandbox.create(timeout=120)
    data = os.urandom(mib << 20)
    errors, done = [], []

    def one(i):
        try:
            sb.files.write("/tmp/up", data)
            done.append(i)
        except Exception as e:
            errors.append("%s: %s" % (type(e).__name__, str(e)[:200]))
    # The peak from here on: 5 in clear_refs resets VmHWM (root).
    with open("/proc/%d/clear_refs" % serve_pid, "w") as f:
        f.write("5")
    try:
        at_once([lambda i=i: one(i) for i in range(n)], 300)
        with open("/proc/%d/status" % serve_pid) as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) >> 10
        check("%d uploads of %d MiB at once: every one written" % (n, mib), len(done) == n and not errors,
              errors[:2])
        try:
            size = sb.commands.run("wc -c < /tmp/up").stdout.strip()
        except Exception as e:
            size = "%s: %s" % (type(e).__name__, str(e)[:200])
        check("... the sandbox lives, the file whole", size == str(mib << 20), size)
        check("... the service's peak memory stays under %d MiB (%d MiB)" % (n * mib * 3 // 2, hwm),
              hwm < n * mib * 3 // 2, hwm)
    finally:
        try:
            sb.kill()
        except Exception:
            pass

def trickle(held):
    """held uploads of one tenant whose bodies never arrive (a few bytes,
    then nothing) take its places for /files; its next write waited 30 s
    and got 503, for as long as they were held.  Now each is cut at the
    service's --transfer-timeout (408) and the write lands."""
    import socket
    from urllib.parse import urlsplit
    sb = Sandbox.create(timeout=120)
    u = urlsplit(API)
    socks = []
    try:
        for i in range(held):
            s = socket.create_connection((u.hostname, u.port))
            s.sendall(("POST /files?path=/tmp/slow%d HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\n"
                       "E2b-Sandbox-Port: 49983\r\nX-Access-Token: %s\r\nContent-Type: application/octet-stream\r\n"
                       "Content-Length: 1048576\r\n\r\nfirst byte" % (i, sb.sandbox_id, sb._envd_access_token)).encode())
            socks.append(s)
        time.sleep(1)
        try:
            sb.files.write("/tmp/after", b"landed")
            got = sb.files.read("/tmp/after")
        except Exception as e:
            got = "%s: %s" % (type(e).__name__, str(e)[:200])
        check("beside %d uploads of its own that never finish, the tenant's next write lands" % held,
              got == "landed", got)
        answers = []
        for s in socks:
            s.settimeout(30)
            try:
                answers.append(s.recv(100).split(b"\r\n")[0].decode())
            except OSError as e:
                answers.append(str(e))
        check("... each of them was cut with 408", answers == ["HTTP/1.1 408 Request Timeout"] * held, answers)
    finally:
        for s in socks:
            s.close()
        sb.kill()


def _threads(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def cells(held, serve_pid):
    """held /execute requests of one sandbox, each a cell that sleeps 8 s,
    from one tenant over three addresses.  Each waited for the cells
    before it in a worker thread of the service's one pool of 256: no
    thread was left for another tenant's create (no answer in 120 s),
    and the cells of clients that had left still ran, one after the
    other.  Now a tenant holds 256 requests at once (the rest 429), its
    cells wait in the event loop, and a cell whose client left never
    runs.  Then streams: a Keepalive-Ping-Interval of 0 sent keepalives
    without pause."""
    import socket
    import struct
    from urllib.parse import urlsplit
    u = urlsplit(API)
    sb = Sandbox.create(timeout=300)
    body = json.dumps({"code": "import time; time.sleep(8)"}).encode()
    socks = []
    try:
        threads_before = _threads(serve_pid)
        for i in range(held):
            s = socket.socket()
            s.bind(("127.0.0.%d" % (2 + i // 200), 0))
            s.connect((u.hostname, u.port))
            s.sendall(("POST /execute HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 49999\r\n"
                       "X-Access-Token: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                       % (sb.sandbox_id, sb._envd_access_token, len(body))).encode() + body)
            socks.append(s)
        time.sleep(3)
        statuses = []
        for s in socks:
            s.settimeout(5)
            try:
                statuses.append(s.recv(12).decode(errors="replace"))
            except OSError as e:
                statuses.append(type(e).__name__)
        refused = statuses.count("HTTP/1.1 429")
        check("%d cells held by one tenant: 256 taken, the rest refused with 429 (%d)" % (held, refused),
              statuses.count("HTTP/1.1 200") == 256 and refused == held - 256,
              sorted(set(statuses)))
        threads = _threads(serve_pid)
        check("... the service's threads stay within the tenant's share (%d, %d before)" % (threads, threads_before),
              threads - threads_before <= 40, threads)
        out = {}
        t = time.time()

        def other():
            o = Sandbox.create(timeout=60, api_key=os.environ["OTHER_KEY"])
            out["echo"] = o.commands.run("echo served").stdout
            out["killed"] = o.kill()
        at_once([other], 60)
        took = time.time() - t
        check("... meanwhile another tenant's create, command and kill are served (%.1f s)" % took,
              out.get("echo") == "served\n" and out.get("killed") is True and took < 30, (out, took))
    finally:
        for s in socks:
            s.close()
    # The cell that was running ends within 8 s; the ones whose clients
    # left never run: the next cell waits for one, not for 255.
    t = time.time()
    try:
        got = sb.run_code("1 + 1", timeout=40).text
    except Exception as e:
        got = "%s: %s" % (type(e).__name__, str(e)[:200])
    took = time.time() - t
    check("... once their clients left, the sandbox's next cell runs after the one running (%.1f s)" % took,
          got == "2" and took < 20, (got, took))
    # A stream whose client asks for keepalives every 0 s gets them at
    # most every second.
    s = socket.create_connection((u.hostname, u.port))
    try:
        msg = json.dumps({"process": {"cmd": "sleep", "args": ["3"]}}).encode()
        msg = struct.pack(">BI", 0, len(msg)) + msg
        s.sendall(("POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\n"
                   "E2b-Sandbox-Port: 49983\r\nX-Access-Token: %s\r\nContent-Type: application/connect+json\r\n"
                   "Keepalive-Ping-Interval: 0\r\nContent-Length: %d\r\n\r\n"
                   % (sb.sandbox_id, sb._envd_access_token, len(msg))).encode() + msg)
        s.settimeout(10)
        raw, end = b"", time.time() + 2.5
        while time.time() < end:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
        pings = raw.count(b'"keepalive"')
        check("... a stream asking for keepalives every 0 s gets at most one a second (%d in 2.5 s)" % pings,
              pings <= 3, pings)
    finally:
        s.close()
        sb.kill()


if __name__ == "__main__":
    what = sys.argv[1]
    run = {"basics": lambda: basics(), "connect": lambda: connect(sys.argv[2]), "gone": lambda: gone(None),
           "killed": lambda: killed(), "pause": lambda: pause(), "governed": lambda: governed(),
           "refusals": lambda: refusals(), "orphan": lambda: orphan(sys.argv[2]),
           "crowd": lambda: crowd(int(sys.argv[2]), int(sys.argv[3])), "before_kill": lambda: before_kill(),
           "after_restart": lambda: after_restart(sys.argv[2], sys.argv[3]), "pid1": lambda: pid1(),
           "races": lambda: races(int(sys.argv[2])), "pause_setup": lambda: pause_setup(), "pause_go": lambda: pause_go(sys.argv[2], sys.argv[3]),
           "pause_after": lambda: pause_after(sys.argv[2], sys.argv[3]),
           "hold": lambda: hold(), "flood": lambda: flood(int(sys.argv[2])),
           "uploads": lambda: uploads(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])),
           "trickle": lambda: trickle(int(sys.argv[2])),
           "cells": lambda: cells(int(sys.argv[2]), int(sys.argv[3]))}[what]
    try:
        run()
    except Exception as e:  # a check that never ran is a failure, not a silence
        print("FAIL - %s raised %s: %s" % (what, type(e).__name__, e), flush=True)
        raise

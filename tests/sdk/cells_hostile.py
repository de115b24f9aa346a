"""The cell channel under a hostile program (issue 41), one backend per run.

Usage: cells_hostile.py BACKEND WORKDIR    (as root, after `make`)
Prints `ok - NAME` / `FAIL - NAME` lines for tests/integration/test_cells.sh.

What the program in the session tries, and what must hold:
  - writing a cell request (or anything) in the host's request directory,
    from a cell and from a separate process: refused (read-only), nothing
    the host did not send runs;
  - answers and output planted in calls/cells for other nonces, a FIFO, a
    symbolic link to a host file, a directory tree, a file held open:
    the host takes none of them, never blocks, and the next cells' results
    are theirs;
  - a flood of the area (a process filling calls/cells to ENOSPC, holding
    its files open and refilling): cells still answer with their own
    results, in bounded time;
  - output past output_max is cut, not stored without bound;
  - CellTimeout, then the session goes on; files.write/read of 1 MiB.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk"))
from tollgate_sdk import CellTimeout, Sandbox  # noqa: E402
from tollgate_sdk import _cells  # noqa: E402

backend, work = sys.argv[1], os.path.abspath(sys.argv[2])
failures = 0


def check(name, cond, detail=""):
    global failures
    if cond:
        print("ok - %s: %s" % (backend, name))
    else:
        failures += 1
        print("FAIL - %s: %s%s" % (backend, name, (": " + str(detail)[-800:]) if detail else ""))
    sys.stdout.flush()


def cells_counting(s, start, n):
    """Run n cells that each add one to x, which stands at start - 1:
    None when every cell printed its own number and exited 0, else what
    the first that did not answered (its number, output, status, stderr,
    whether it timed out, tollgate's notices).
    Every cell runs, so a failure midway does not end the session early."""
    first_wrong = None
    for i in range(n):
        r = s.run("x += 1\nprint(x)", check=False)
        if first_wrong is None and (r.stdout != "%d\n" % (start + i) or r.exit_status != 0):
            first_wrong = ("cell %d of %d" % (i + 1, n), r.stdout[-300:], r.exit_status, r.stderr[-300:],
                           r.timed_out, r.warnings)
    return first_wrong


FAKE_REQUEST = r'''
import json, os, subprocess
tries = []
for name in ("next.req", ".next-x", "evil"):
    try:
        with open("/run/tollgate/cells/" + name, "w") as f:
            f.write(json.dumps({"nonce": "0" * 32, "op": "cell"}) + "\nopen('/tmp/forged', 'w')")
        tries.append("written " + name)
    except OSError as e:
        tries.append("refused %d" % e.errno)
p = subprocess.run(["python3", "-c", "open('/run/tollgate/cells/next.req', 'w')"], capture_output=True)
tries.append("process %d" % p.returncode)
print(" ".join(tries))
'''

PLANT = r'''
import os, json
d = "/run/tollgate/calls/cells"
for i in range(500):
    n = "%032x" % (i + 1)
    with open("%s/%s.res" % (d, n), "w") as f:
        f.write(json.dumps({"nonce": n, "exit": 42}))
    open("%s/%s.done" % (d, n), "w").close()
    with open("%s/%s.out" % (d, n), "w") as f:
        f.write("FORGED\n")
os.mkfifo(d + "/fifo.res")
os.symlink("/etc/shadow", d + "/link.out")
os.makedirs(d + "/tree/a/b")
os.symlink("/", d + "/tree/a/b/root")
held = open(d + "/held.out", "w")
held.write("x" * 65536)
held.flush()
print("planted")
'''

FLOOD = r'''
import subprocess
flooder = subprocess.Popen(["python3", "-c", """
import os, time
d = "/run/tollgate/calls/cells"
held = []
end = time.monotonic() + 8
i = 0
while time.monotonic() < end:
    try:
        f = open("%s/flood-%d" % (d, i), "wb")
        held.append(f)
        f.write(b"z" * (1 << 20))
        f.flush()
    except OSError:
        time.sleep(0.005)
    i += 1
"""])
print("flooding")
'''


def main():
    audit = os.path.join(work, "audit-cells-" + backend)
    sb = Sandbox(runtime=backend, audit_dir=audit, output_max=1 << 20)
    try:
        with sb.session() as s:
            s.run("x = 1")
            ch = _cells.Channel.of(sb.root, s.cid)
            check("the session has a cell channel", ch is not None)
            r = s.run(FAKE_REQUEST)
            words = r.stdout.split()
            check("a cell cannot write a request (read-only)", "written" not in r.stdout and
                  words[:6] == ["refused", words[1], "refused", words[3], "refused", words[5]], r.stdout)
            check("a separate process cannot either", "process 0" not in r.stdout, r.stdout)
            r = s.run("import os\nprint(os.path.exists('/tmp/forged'))")
            check("the forged request never ran", r.stdout == "False\n", r.stdout)

            r = s.run(PLANT)
            check("planted fake answers, a FIFO, a link, a tree, a held file", r.stdout == "planted\n", r.stdout)
            t = time.monotonic()
            first_wrong = cells_counting(s, 2, 20)
            check("20 cells after the planting answer with their own results", first_wrong is None, first_wrong)
            check("... in bounded time", time.monotonic() - t < 60, time.monotonic() - t)
            left = os.listdir(ch.ans_dir)
            check("the host emptied the answer directory", left == [], left[:10])
            check("the host file behind the link is untouched", os.path.exists("/etc/shadow"))

            r = s.run(FLOOD)
            check("a flood of the area started", r.stdout == "flooding\n", r.stdout)
            t = time.monotonic()
            first_wrong = cells_counting(s, 22, 10)
            check("10 cells during the flood answer with their own results", first_wrong is None, first_wrong)
            check("... in bounded time", time.monotonic() - t < 120, time.monotonic() - t)
            time.sleep(8.5)  # the flooder ends; the next cells clean up after it

            r = s.run("print('y' * (3 << 20))", check=False)
            check("output past output_max is cut", len(r.stdout) < (1 << 20) + 200 and r.stdout_cut > 0,
                  (len(r.stdout), r.stdout_cut))
            data = os.urandom(1 << 20)
            n = s.files.write("/tmp/one.bin", data)
            check("files.write of 1 MiB through the channel", n == len(data))
            check("files.read gives the same bytes", s.files.read("/tmp/one.bin") == data)
            try:
                s.run("import time\nwhile True: time.sleep(0.05)", timeout=1)
                check("a cell past its timeout raises CellTimeout", False)
            except CellTimeout as e:
                check("a cell past its timeout raises CellTimeout", e.result.timeout_how == "interrupted", e)
            got = []
            r = s.run("import sys, time\nprint('a'); sys.stdout.flush(); time.sleep(0.5); print('b')",
                      on_stdout=got.append)
            check("output streams to on_stdout as it comes", "".join(got) == "a\nb\n" and len(got) >= 2, got)
            r = s.run("print(x)")
            check("the session keeps its state through all of it", r.stdout == "31\n", r.stdout)
    finally:
        sb.close()
    # Both streams past the default cap (8 MiB each): their files fill
    # the area, and the answer had no room left; the session was lost.
    sb = Sandbox(runtime=backend, audit_dir=audit)
    try:
        with sb.session() as s:
            s.run("x = 5")
            t = time.monotonic()
            r = s.run("import sys\nsys.stdout.write('o' * 9_000_000)\nsys.stderr.write('e' * 9_000_000)\n1/0",
                      check=False, timeout=60)
            check("a cell that fills both streams past the cap answers with its own status",
                  r.exit_status == 1 and not r.timed_out, (r.exit_status, r.timed_out, r.stderr[-300:]))
            check("... both cut, in bounded time", r.stdout_cut > 0 and r.stderr_cut > 0 and
                  time.monotonic() - t < 30, (r.stdout_cut, r.stderr_cut, time.monotonic() - t))
            check("... and the session goes on", s.run("print(x)").stdout == "5\n")
    finally:
        sb.close()
    print("== cells_hostile %s: %d failed" % (backend, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

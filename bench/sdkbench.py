"""sdkbench: the host SDK's first-result latency of Sandbox.run("print(1)"),
cold (a container created, started, run and deleted per run) against warm
(Sandbox(warm=2): a started container taken from the pool), side by side in
one run, and a session beside them: a cell (`x += 1`), files.write and
files.read of 1 MiB, and the governed tool call (a trivial tool) from the
same session's Python, in alternating rounds, with their ratios.

Usage: python3 bench/sdkbench.py BACKEND REPS    (as root, after `make`)
Prints one JSON line: {"reps", "cold_p50_ms", "cold_p90_ms", "warm_p50_ms",
"warm_p90_ms", "cell_p50_ms", "cold_over_warm", "warm_idle_cpu_pct", ...}.
warm_idle_cpu_pct is what one waiting warm container costs while the pool
is full and nothing is claimed (its processes' CPU over IDLE seconds, in
% of one core: the sandbox, gofer, sidecar and everything under its
init).  A warm sample is taken
with the pool full and quiet (its refill and the last run's delete done),
which is what warm=N is for: a run arriving at a Sandbox that had time to
get ready.  Cold and warm samples alternate, so drift hits both alike.
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk"))
from tollgate_sdk import Sandbox, tool  # noqa: E402


@tool
def ping(n: int) -> int:
    """Return n (the trivial tool a session's Python calls)."""
    return n


CALLS = r"""
import time, statistics
from tollgate import ping
ts = []
for i in range(%d):
    t = time.perf_counter()
    assert ping(n=i) == i
    ts.append(time.perf_counter() - t)
print(round(statistics.median(ts) * 1000, 3))
"""


IDLE = float(os.environ.get("SDKBENCH_IDLE", "5"))


def _ticks_of_pool(root):
    """CPU ticks so far of every process of the containers under root: a
    process whose command line names root (runsc's sandbox and gofer, the
    sidecar), and every descendant of a container's init."""
    inits = set()
    for cid in os.listdir(root):
        try:
            with open(os.path.join(root, cid, "state.json")) as f:
                inits.add(int(json.load(f).get("init_pid") or 0))
        except (OSError, ValueError):
            pass
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                rest = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        procs[int(pid)] = (int(rest[1]), int(rest[11]) + int(rest[12]), root.encode() in cmd)
    total = 0
    for pid, (ppid, ticks, named) in procs.items():
        p, seen = pid, 0
        while not named and p > 1 and seen < 64:
            if p in inits:
                named = True
            p, seen = procs.get(p, (0, 0, False))[0], seen + 1
        if named:
            total += ticks
    return total


def idle_cpu_pct(sb, n):
    """% of one core that each of the n containers of sb's full, unclaimed
    warm pool takes, over IDLE seconds."""
    hz = os.sysconf("SC_CLK_TCK")
    before, t0 = _ticks_of_pool(sb.root), time.monotonic()
    time.sleep(IDLE)
    after, t1 = _ticks_of_pool(sb.root), time.monotonic()
    return round(100.0 * (after - before) / hz / (t1 - t0) / n, 1)


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def main():
    backend = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    audit = tempfile.mkdtemp(prefix="tollgate-sdkbench.")
    kw = dict(runtime=backend, audit_dir=audit)
    cold, warm = Sandbox(tools=[ping], budgets={"max_tool_calls": 100000}, **kw), Sandbox(warm=2, **kw)
    tc, tw, tcell, twrite, tread = [], [], [], [], []
    call_p50 = None
    try:
        cold.run("print(1)")               # the spec and the tool server, once
        if not warm.wait_warm(180):
            raise SystemExit("sdkbench: the warm pool did not fill: %s" % warm._pool.errors)
        time.sleep(1)                      # the refills' own start-up over
        idle = idle_cpu_pct(warm, 2)
        for i in range(reps):
            t = time.perf_counter()
            r = cold.run("print(1)")
            tc.append(time.perf_counter() - t)
            assert r.stdout == "1\n", r
            warm.wait_warm(180)
            t = time.perf_counter()
            r = warm.run("print(1)")
            tw.append(time.perf_counter() - t)
            assert r.stdout == "1\n", r
        data = os.urandom(1 << 20)
        with cold.session() as s:
            s.run("x = 1")
            # The governed tool call from the same session's Python, and
            # the session's cells and files, interleaved round by round.
            calls = []
            for i in range(reps):
                r = s.run(CALLS % 20)
                calls.append(float(r.stdout))
                t = time.perf_counter()
                r = s.run("x += 1")
                tcell.append(time.perf_counter() - t)
                t = time.perf_counter()
                s.files.write("/tmp/bench.bin", data)
                twrite.append(time.perf_counter() - t)
                t = time.perf_counter()
                back = s.files.read("/tmp/bench.bin")
                tread.append(time.perf_counter() - t)
                assert back == data
            call_p50 = statistics.median(calls) / 1000
    finally:
        cold.close()
        warm.close()
        shutil.rmtree(audit, ignore_errors=True)
    ms = lambda v: round(v * 1000, 1)
    print(json.dumps({"reps": reps, "cold_p50_ms": ms(statistics.median(tc)), "cold_p90_ms": ms(q(tc, 0.9)),
                      "warm_p50_ms": ms(statistics.median(tw)), "warm_p90_ms": ms(q(tw, 0.9)),
                      "cell_p50_ms": ms(statistics.median(tcell)),
                      "tool_call_p50_ms": round(call_p50 * 1000, 3),
                      "files_write_1mib_p50_ms": ms(statistics.median(twrite)),
                      "files_read_1mib_p50_ms": ms(statistics.median(tread)),
                      "cell_over_call": round(statistics.median(tcell) / call_p50, 2),
                      "write_over_call": round(statistics.median(twrite) / call_p50, 2),
                      "read_over_call": round(statistics.median(tread) / call_p50, 2),
                      "cold_over_warm": round(statistics.median(tc) / statistics.median(tw), 2),
                      "warm_idle_cpu_pct": idle}))


if __name__ == "__main__":
    main()

"""sdkbench: the host SDK's first-result latency of Sandbox.run("print(1)"),
cold (a container created, started, run and deleted per run) against warm
(Sandbox(warm=2): a started container taken from the pool), side by side in
one run, and a session cell beside them.

Usage: python3 bench/sdkbench.py BACKEND REPS    (as root, after `make`)
Prints one JSON line: {"reps", "cold_p50_ms", "cold_p90_ms", "warm_p50_ms",
"warm_p90_ms", "cell_p50_ms", "cold_over_warm"}.  A warm sample is taken
with the pool full and quiet (its refill and the last run's delete done),
which is what warm=N is for: a run arriving at a Sandbox that had time to
get ready.  Cold and warm samples alternate, so drift hits both alike.
"""
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk"))
from tollgate_sdk import Sandbox  # noqa: E402


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def main():
    backend = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    audit = tempfile.mkdtemp(prefix="tollgate-sdkbench.")
    kw = dict(runtime=backend, audit_dir=audit)
    cold, warm = Sandbox(**kw), Sandbox(warm=2, **kw)
    tc, tw, tcell = [], [], []
    try:
        cold.run("print(1)")               # the spec and the tool server, once
        if not warm.wait_warm(180):
            raise SystemExit("sdkbench: the warm pool did not fill: %s" % warm._pool.errors)
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
        with cold.session() as s:
            s.run("x = 1")
            for i in range(reps):
                t = time.perf_counter()
                r = s.run("print(x)")
                tcell.append(time.perf_counter() - t)
                assert r.stdout == "1\n", r
    finally:
        cold.close()
        warm.close()
    ms = lambda v: round(v * 1000, 1)
    print(json.dumps({"reps": reps, "cold_p50_ms": ms(statistics.median(tc)), "cold_p90_ms": ms(q(tc, 0.9)),
                      "warm_p50_ms": ms(statistics.median(tw)), "warm_p90_ms": ms(q(tw, 0.9)),
                      "cell_p50_ms": ms(statistics.median(tcell)),
                      "cold_over_warm": round(statistics.median(tc) / statistics.median(tw), 2)}))


if __name__ == "__main__":
    main()

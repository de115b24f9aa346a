"""pybench: the Python client's round trip, measured inside the container.

Usage: python3 pybench.py N [WARMUP]

Imports the shipped client (/run/tollgate/tollgate.py, the module agents
use), makes WARMUP untimed calls and then N sequential calls to the echo
tool with distinct arguments, checks every result, and prints one JSON line:
  {"phase":"python","calls":N,"errors":E,"p50_us":...,"p90_us":...,
   "p99_us":...,"mean_us":...,"calls_per_s":...}
"""
import json
import math
import os
import sys
import time

sys.path.insert(0, os.environ.get("TOLLGATE_DIR") or "/run/tollgate")
import tollgate  # noqa: E402


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    k = max(1, min(len(sorted_values), math.ceil(p / 100.0 * len(sorted_values))))
    return sorted_values[k - 1]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    call = tollgate.call
    for i in range(warmup):
        call("echo", i=-1 - i, msg="bench")
    lat, errors = [], 0
    clock = time.perf_counter_ns
    t_start = clock()
    for i in range(n):
        t0 = clock()
        try:
            result = call("echo", i=i, msg="bench")
        except tollgate.TollgateError as e:
            errors += 1
            if errors <= 5:
                print("pybench: call failed: %s" % e, file=sys.stderr)
            continue
        t1 = clock()
        if not (isinstance(result, dict) and result.get("i") == i):
            errors += 1
            if errors <= 5:
                print("pybench: wrong result %r for i=%d" % (result, i), file=sys.stderr)
            continue
        lat.append((t1 - t0) / 1000.0)
    wall = (clock() - t_start) / 1e9
    lat.sort()
    print(json.dumps({
        "phase": "python", "threads": 1, "calls": n, "errors": errors,
        "p50_us": round(percentile(lat, 50), 1), "p90_us": round(percentile(lat, 90), 1),
        "p99_us": round(percentile(lat, 99), 1),
        "mean_us": round(sum(lat) / len(lat), 1) if lat else 0,
        "calls_per_s": round(n / wall) if wall > 0 else 0}), flush=True)


if __name__ == "__main__":
    main()

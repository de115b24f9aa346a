"""pausebench: session.pause() and sandbox.resume() under runsc, step by
step, and the first cell after resume.

Usage: python3 bench/pausebench.py REPS [MIB]   (as root, after `make`)
Each rep: a session, a cell that allocates MIB MiB (default 16) of
non-zero data, then pause() and resume(), timed as a whole and by step
(every `tollgate` process each makes, from the SDK's subprocess calls),
the image's size on disk, and the first cell after the resume.  Prints
one JSON line of medians (ms, MiB).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk"))
from tollgate_sdk import Sandbox  # noqa: E402
from tollgate_sdk import _pause  # noqa: E402

steps = []
_real_run = subprocess.run


def timed_run(argv, *a, **kw):
    t = time.perf_counter()
    try:
        return _real_run(argv, *a, **kw)
    finally:
        verb = next((x for x in argv[1:] if not x.startswith("-") and "/" not in x), "?")
        steps.append((verb, time.perf_counter() - t))


def du(path):
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                n += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return n


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    audit = tempfile.mkdtemp(prefix="tollgate-pausebench.")
    pdir = tempfile.mkdtemp(prefix="tollgate-pausebench-img.")
    sb = Sandbox(runtime="runsc", audit_dir=audit, pause_dir=pdir)
    subprocess.run = timed_run
    rows = []
    try:
        for _ in range(reps):
            s = sb.session().open()
            s.run("import os\ndata = os.urandom(%d << 20)\nx = 41" % mib)
            steps.clear()
            t = time.perf_counter()
            pid = s.pause()
            t_pause = time.perf_counter() - t
            pause_steps = dict(steps)
            size = du(os.path.join(pdir, pid))
            steps.clear()
            t = time.perf_counter()
            s2 = sb.resume(pid)
            t_resume = time.perf_counter() - t
            resume_steps = dict(steps)
            t = time.perf_counter()
            r = s2.run("x += 1\nprint(x, len(data))")
            t_first = time.perf_counter() - t
            assert r.stdout == "42 %d\n" % (mib << 20), r.stdout
            s2.close()
            rows.append({"pause": t_pause, "resume": t_resume, "first_cell": t_first, "image": size,
                         **{"pause_" + k: v for k, v in pause_steps.items()},
                         **{"resume_" + k: v for k, v in resume_steps.items()}})
    finally:
        subprocess.run = _real_run
        sb.close()
    out = {"reps": reps, "mib": mib}
    for k in rows[0]:
        vals = [r[k] for r in rows if k in r]
        out[k + ("_mib" if k == "image" else "_ms")] = round(statistics.median(vals) / (1 << 20), 1) \
            if k == "image" else round(statistics.median(vals) * 1000, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/steps.py PERF_DATA...: where a `tollgate run` under runc spends
its time, step by step, from uprobes on tollgate's own functions (the
backend calls from proc_spawn() to proc_finish()'s return, so spawning and
reaping runc count as the backend's) and the scheduler's exec and exit
events of tollgate's task (perf record --no-inherit -e 'tgbench:*' -e
sched:sched_process_exec -e sched:sched_process_exit, one file per run).  Prints one JSON object: the median of each step over the
runs, in µs, and the runs counted.  A step is the time between two
events of the run (bench/run.sh bench_steps lists the probes)."""
import json
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+?):(\S+):")


def events(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,pid,tid,time,event"],
                         capture_output=True, text=True, check=False).stdout
    main = None
    ev = []
    backend = []  # [spawned, reaped] of each backend process, in order
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        _comm, pid, tid, t, group, name = m.groups()
        pid, tid, t = int(pid), int(tid), float(t) * 1e6
        if name.endswith("__return"):  # perf's name for a %return probe
            name = name[: -len("__return")]
        if main is None and group == "sched" and name == "sched_process_exec":
            main = pid
            ev.append((t, "exec"))
        if pid != main or tid != main:
            continue
        if group == "sched" and name == "sched_process_exit":
            ev.append((t, "exit"))
        elif group == "tgbench" and name == "spawn":
            backend.append([t, None])
        elif group == "tgbench" and name == "reaped" and backend and backend[-1][1] is None:
            backend[-1][1] = t
        elif group == "tgbench":
            ev.append((t, name))
    return ev, [b for b in backend if b[1] is not None]


def first(ev, name):
    """The first time of event name (the last, for the process's exit)."""
    times = [t for t, n in ev if n == name]
    if not times:
        return None
    return times[-1] if name == "exit" else times[0]


def steps_of(ev, backend):
    """(step, µs) pairs for one run, or None when an event is missing."""
    if not backend:
        return None
    at = {}
    for name in ("exec", "main", "create", "floor_ret", "statedir", "idrange", "idrange_ret",
                 "harden", "harden_ret", "pins", "pins_ret", "points", "points_ret",
                 "bridge", "bridge_ret", "reach_ret", "strip", "strip_ret", "waited", "exit"):
        at[name] = first(ev, name)
    if (at["strip"] is None and len(backend) >= 2 and at["waited"] is not None
            and backend[-2][1] <= at["waited"] <= backend[-1][0]):
        # A governed one-call run (shim/lifecycle/run.c run_runc_direct):
        # `runc run --detach` (create and start in one), the init waited
        # for as tollgate's child, then `runc delete`.
        if any(v is None for k, v in at.items() if k not in ("strip", "strip_ret")):
            return None
        run, delete = backend[-2], backend[-1]
        s = [
            ("process start (exec to main)", at["main"] - at["exec"]),
            ("arguments, host config, console check", at["create"] - at["main"]),
            ("backend choice, runc version floor", at["floor_ret"] - at["create"]),
            ("bundle read and parse, effective mark", at["statedir"] - at["floor_ret"]),
            ("state directory, policy", at["idrange"] - at["statedir"]),
            ("user namespace: id range claim", at["idrange_ret"] - at["idrange"]),
            ("hardening (oci_harden)", at["harden_ret"] - at["idrange_ret"]),
            ("joins checked, CRI policy", at["pins"] - at["harden_ret"]),
            ("mount pins", at["pins_ret"] - at["pins"]),
            ("mount points", at["points_ret"] - at["points"]),
            ("bridge area", at["bridge_ret"] - at["bridge"]),
            ("reach view, config and state written, gate joined, bridge started, guard", run[0] - at["reach_ret"]),
            ("backend: runc run --detach (spawn to reaped)", run[1] - run[0]),
            ("init followed, the container runs (/bin/true) until tollgate sees it exit", at["waited"] - run[1]),
            ("gate closing begun, state loaded", delete[0] - at["waited"]),
            ("backend: runc delete", delete[1] - delete[0]),
            ("teardown: bridge, pins, state, id range, exit", at["exit"] - delete[1]),
        ]
        s.append(("total (exec to exit)", at["exit"] - at["exec"]))
        s.append(("backend calls", (run[1] - run[0]) + (delete[1] - delete[0])))
        return s
    if at["strip"] is None:
        # One `runc run` (shim/lifecycle/create_direct.c): no network
        # check between create and start, no separate delete.  The last
        # backend call is the run (a first run after a runc upgrade runs
        # `runc --version` before it).
        if any(v is None for k, v in at.items() if k not in ("strip", "strip_ret")):
            return None
        run = backend[-1]
        s = [
            ("process start (exec to main)", at["main"] - at["exec"]),
            ("arguments, host config, console check", at["create"] - at["main"]),
            ("backend choice, runc version floor", at["floor_ret"] - at["create"]),
            ("bundle read and parse, effective mark", at["statedir"] - at["floor_ret"]),
            ("state directory, policy", at["idrange"] - at["statedir"]),
            ("user namespace: id range claim", at["idrange_ret"] - at["idrange"]),
            ("hardening (oci_harden)", at["harden_ret"] - at["idrange_ret"]),
            ("joins checked, CRI policy", at["pins"] - at["harden_ret"]),
            ("mount pins", at["pins_ret"] - at["pins"]),
            ("mount points", at["points_ret"] - at["points"]),
            ("bridge area", at["bridge_ret"] - at["bridge"]),
            ("reach view, config and state written, gate joined, bridge started", run[0] - at["reach_ret"]),
            ("backend: runc run, the container's whole life (spawn to reaped)", run[1] - run[0]),
            ("gate closing, state loaded, teardown: bridge, pins, state, id range, exit", at["exit"] - run[1]),
        ]
        s.append(("total (exec to exit)", at["exit"] - at["exec"]))
        s.append(("backend calls", run[1] - run[0]))
        return s
    if len(backend) < 3 or any(v is None for v in at.values()):
        return None
    # The last three: a first create after a runc upgrade runs
    # `runc --version` before them.
    create, start, delete = backend[-3], backend[-2], backend[-1]
    s = [
        ("process start (exec to main)", at["main"] - at["exec"]),
        ("arguments, host config, console check", at["create"] - at["main"]),
        ("backend choice, runc version floor", at["floor_ret"] - at["create"]),
        ("bundle read and parse, effective mark", at["statedir"] - at["floor_ret"]),
        ("state directory, policy", at["idrange"] - at["statedir"]),
        ("user namespace: id range claim", at["idrange_ret"] - at["idrange"]),
        ("hardening (oci_harden)", at["harden_ret"] - at["idrange_ret"]),
        ("joins checked, CRI policy", at["pins"] - at["harden_ret"]),
        ("mount pins", at["pins_ret"] - at["pins"]),
        ("mount points", at["points_ret"] - at["points"]),
        ("bridge area", at["bridge_ret"] - at["bridge"]),
        ("reach view, config and state written, gate joined", create[0] - at["reach_ret"]),
        ("backend: runc create (spawn to reaped)", create[1] - create[0]),
        ("network namespace stripped to lo", at["strip_ret"] - at["strip"]),
        ("bridge service started, state", start[0] - at["strip_ret"]),
        ("backend: runc start", start[1] - start[0]),
        ("the container runs (/bin/true) until tollgate sees it exit", at["waited"] - start[1]),
        ("gate closing begun, state loaded", delete[0] - at["waited"]),
        ("backend: runc delete", delete[1] - delete[0]),
        ("teardown: bridge, pins, state, id range, exit", at["exit"] - delete[1]),
    ]
    s.append(("total (exec to exit)", at["exit"] - at["exec"]))
    s.append(("backend calls", sum(b[1] - b[0] for b in (create, start, delete))))
    return s


def main():
    runs = []
    for path in sys.argv[1:]:
        ev, backend = events(path)
        s = steps_of(ev, backend)
        if s is not None:
            runs.append(s)
    out = {"runs": len(runs), "steps_median_us": {}}
    if runs:
        for i, (name, _) in enumerate(runs[0]):
            out["steps_median_us"][name] = round(statistics.median(r[i][1] for r in runs))
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""bench/peers/table.py ROWS.jsonl OUT.json: the peers bench's rows (one
JSON object per peer, from peers.py) as bench/peers/results.json, with the
machine and the versions, and as the Markdown table docs/comparison.md
carries (printed)."""
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]


def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def runsc():
    try:
        return subprocess.run(["runsc", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError:
        return None


out = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"smolagents": version("smolagents"), "promptise": version("promptise"),
                    "llm-sandbox": version("llm-sandbox"), "docker (python)": version("docker"),
                    "runsc": runsc(), "dockerd": os.environ.get("PEERS_DOCKER_VERSION") or None},
       "rows": rows}
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)


def yn(v):
    return "yes" if v else "**no**"


print("| peer | per call | whole task (median of %s runs) |" % max([r.get("runs", 1) for r in rows] or [1]) + " refund over limit stopped? | the program saw | approval asked? | audit record? | call count capped? (100 tried) |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    if "skipped" in r or "failed" in r:
        why = " ".join(str(r.get("skipped") or r.get("failed")).split()).replace("|", "/")
        print("| %s | - | - | cannot run here: %s | | | | |" % (r["peer"], why))
        continue
    us = r.get("per_call_us")
    pc = "-" if us is None else "%.1f µs" % us if us < 1000 else "%.1f ms" % (us / 1000)
    print("| %s | %s | %.0f ms | %s (refunds made: %s) | %s | %s | %s | %s (%d ran) |" % (
        r["peer"], pc, r["task_wall_ms"], yn(r["over_limit_stopped"]),
        ", ".join("%g" % a for a in r["refunds_made"]) or "none", r.get("program_saw", "-"),
        yn(r["approval_asked"]), r["audit"],
        yn(r["call_count_capped"]), r["probe_calls_run"]))
for r in rows:
    if r.get("same_every_run") is False:
        r["note"] = (r.get("note", "") + "; what was governed differed between runs").lstrip("; ")
notes = [r for r in rows if r.get("note")]
if notes:
    print()
    for r in notes:
        print("- %s: %s." % (r["peer"], r["note"]))
print()
print("versions: %s" % ", ".join("%s %s" % kv for kv in out["versions"].items() if kv[1]))

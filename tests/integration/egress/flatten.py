# flatten.py OUT AUDIT_LOG < program output: one "KEY<TAB>VALUE" line per
# leaf of each case's JSON line (KEY = case.path.to.leaf), so that the
# test reads every field with awk instead of one python3 start each.  A
# string holding a JSON object is flattened too, under KEY~.  The audit
# log's http call records are added as audit_get.* (the first GET with a
# redacted query), audit_canon.* (the canonical-URL case) and
# audit_post.* (the first POST).
import json
import sys


def walk(prefix, v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(prefix + "." + k, x, out)
        return
    if isinstance(v, str):
        out.append((prefix, v))
        if v.startswith("{"):
            try:
                walk(prefix + "~", json.loads(v), out)
            except ValueError:
                pass
        return
    out.append((prefix, json.dumps(v)))


out = []
for line in sys.stdin:
    try:
        rec = json.loads(line)
    except ValueError:
        continue
    if isinstance(rec, dict) and "case" in rec:
        walk(rec["case"], {k: v for k, v in rec.items() if k != "case"}, out)
seen = set()
for line in open(sys.argv[2]):
    rec = json.loads(line)
    args = rec.get("args") or {}
    if rec.get("event") != "call" or "http" not in rec:
        continue
    if "audit_get" not in seen and "echo?[redacted]" in args.get("url", ""):
        seen.add("audit_get")
        walk("audit_get", rec, out)
    if "audit_canon" not in seen and "echo-canon" in args.get("url", ""):
        seen.add("audit_canon")
        walk("audit_canon", rec, out)
    if "audit_post" not in seen and args.get("method") == "POST":
        seen.add("audit_post")
        walk("audit_post", rec, out)
with open(sys.argv[1], "w") as f:
    for k, v in out:
        f.write(k + "\t" + v.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t") + "\n")

#!/usr/bin/env bash
# Start-up of `tollgate run` binaries side by side (issue 41): REPS rounds,
# each round one governed run of a busybox /bin/true bundle with every
# binary given and one bare `runc run` of the user's plain config, in an
# order that rotates from round to round, so that a drift of the shared
# machine's speed favours none.  Prints each kind's median and its paired
# ratio to bare, and new/old's paired ratio when binaries named old and
# new are given.  Binaries must live in build/ (they find their data
# beside them).  As root:
#   bash bench/startup_ab.sh 30 old=build/tollgate-old new=build/tollgate
# `bare` here is the plain config, not the hardened effective config
# `make bench` runs bare (docs/performance.md, "How each figure is
# measured"), so ratios to it are higher than bench's.
set -u
REPS=${1:?usage: startup_ab.sh REPS NAME=BINARY...}; shift
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/bundles/rootfs/busybox.sh" "$here/build/rootfs/busybox" >/dev/null 2>&1
W=$(mktemp -d /tmp/tollgate-startup-ab.XXXXXX); chmod 711 "$W"
mkdir -p "$W/audit" "$W/policies" "$W/root" "$W/bare-root"
printf '{"audit_dir": "%s", "policy_dir": "%s", "runtime": "runc", "data_dir": "%s"}\n' \
  "$W/audit" "$W/policies" "$here/bundles" >"$W/config.json"
cat >"$W/policies/echo.json" <<'J'
{"version": 1, "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"}, "description": "echo",
 "args": {"type": "object"}, "timeout": 5, "rules": [{"effect": "allow"}]}}}
J
B=$W/bundle; mkdir -p "$B"; (cd "$B" && runc spec)
python3 - "$B/config.json" "$here/build/rootfs/busybox" <<'P'
import json, sys
c = json.load(open(sys.argv[1])); c["root"] = {"path": sys.argv[2], "readonly": True}
c["process"]["terminal"] = False; c["process"]["args"] = ["/bin/true"]
json.dump(c, open(sys.argv[1], "w"))
P
cp -r "$B" "$W/bare"; chmod -R a+rX "$B" "$W/policies"
now() { echo "${EPOCHREALTIME/[.,]/}"; }
declare -A T
one() { # NAME BINARY ROUND
  local t0; t0=$(now)
  if [ "$1" = bare ]; then runc --root "$W/bare-root" run --bundle "$W/bare" "b$3" >/dev/null 2>>"$W/err" || echo "bare run $3 failed" >&2
  else "$2" --root "$W/root" --config "$W/config.json" run --policy "$W/policies/echo.json" -b "$B" "$1-$3" \
         >/dev/null 2>>"$W/err" || echo "$1 run $3 failed" >&2; fi
  T[$1]+="$(( $(now) - t0 )) "
}
list=("$@" "bare=-")
for nb in "${list[@]}"; do one "${nb%%=*}" "${nb#*=}" warm; done # page cache, runc's root
T=()
n=${#list[@]}
for i in $(seq "$REPS"); do
  for k in $(seq 0 $((n - 1))); do nb=${list[$(( (i + k) % n ))]}; one "${nb%%=*}" "${nb#*=}" "$i"; done
done
for k in "${!T[@]}"; do echo "$k ${T[$k]}"; done >"$W/times"
python3 - "$W/times" <<'P'
import statistics as s, sys
d = {l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(sys.argv[1])}
b = d["bare"]
for k, v in sorted(d.items()):
    pr = [x / y for x, y in zip(v, b)]
    q = s.quantiles(pr, n=4)
    print("%-6s median %7.1f ms  paired ratio to bare %.3f (p25 %.3f, p75 %.3f)" % (k, s.median(v) / 1000, s.median(pr), q[0], q[2]))
if "old" in d and "new" in d:
    pr = [x / y for x, y in zip(d["new"], d["old"])]
    q = s.quantiles(pr, n=4)
    print("new/old paired median %.3f (p25 %.3f, p75 %.3f)" % (s.median(pr), q[0], q[2]))
P
left=$(runc --root "$W/bare-root" list -q; ls "$W/root" | grep -v '^backend$')
# Nothing may be mounted under W before it goes (a state directory holds
# bind mounts of the image while its container lives).
if [ -z "$left" ] && ! grep -q " $W/" /proc/self/mounts; then rm -rf "$W"; else echo "left in $W: $left" >&2; fi

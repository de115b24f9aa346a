#!/usr/bin/env bash
# bench/profile-sidecar.sh [CALLS_PER_CALLER]: where the sidecar's time per
# call goes (docs/performance.md, finding 1).  Creates a runc container with
# the echo allow policy, drives its sidecar from the host with 8 callbench
# processes while `perf record --call-graph dwarf` samples it, counts its
# system calls with `strace -c`, and prints the top of both plus the CPU
# time per call.  Needs perf and strace; run after `make all` and one
# `make bench-smoke` (which builds build/bench/callbench).
set -euo pipefail
per=${1:-500}
repo=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$repo/build}
TG=$BUILD/tollgate
for t in perf strace "$BUILD/bench/callbench" "$TG"; do
  command -v "$t" >/dev/null || { echo "profile-sidecar: $t is missing (install perf/strace, run make all and make bench-smoke)" >&2; exit 1; }
done
W=$(mktemp -d /tmp/tollgate-profile.XXXXXX)
id=profile-$$
tg() { "$TG" --root "$W/root" --config "$W/config.json" "$@"; }
cleanup() { tg delete --force "$id" >/dev/null 2>&1 || true; rm -rf "$W"; }
trap cleanup EXIT
mkdir -p "$W/audit" "$W/bundle"
echo "{\"audit_dir\": \"$W/audit\"}" >"$W/config.json"
cat >"$W/policy.json" <<'EOF'
{"version": 1,
 "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"}, "args": {"type": "object"},
                    "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100000000}}
EOF
bash "$repo/bundles/rootfs/busybox.sh" "$BUILD/rootfs/busybox" 2>/dev/null
(cd "$W/bundle" && runc spec)
python3 - "$W/bundle/config.json" "$BUILD/rootfs/busybox" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["root"] = {"path": sys.argv[2], "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = ["sleep", "3600"]
json.dump(c, open(sys.argv[1], "w"))
PY
tg --runtime runc create --policy "$W/policy.json" -b "$W/bundle" "$id"
sidecar=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sidecar_pid"])' "$W/root/$id/state.json")
calls=$W/root/$id/bridge/calls
drive() { "$BUILD/bench/callbench" -d "$calls" -w 0 -n 0 -c 8 -m "$per"; }

echo "== CPU time per call (sidecar pid $sidecar)"
c0=$(awk '{print $14 + $15}' "/proc/$sidecar/stat")
drive
c1=$(awk '{print $14 + $15}' "/proc/$sidecar/stat")
echo "sidecar CPU per call: $(( (c1 - c0) * 1000000 / $(getconf CLK_TCK) / (8 * per) )) us"

echo "== system calls per call"
strace -q -c -f -p "$sidecar" -o "$W/strace" &
sp=$!
sleep 0.5
drive >/dev/null
kill -INT "$sp"; wait "$sp" 2>/dev/null || true
awk -v n=$((8 * per)) 'NR > 2 && $4 ~ /^[0-9]+$/ { printf "%-16s %6.2f per call\n", $NF, $4 / n }' "$W/strace" | head -15

echo "== perf: inclusive time by function (user space)"
perf record -q --call-graph dwarf,16384 -p "$sidecar" -o "$W/perf.data" &
pp=$!
sleep 0.5
drive >/dev/null
kill -INT "$pp"; wait "$pp" 2>/dev/null || true
perf report -i "$W/perf.data" --no-children --sort dso 2>/dev/null | grep -E '^ +[0-9.]+%' | head -8
perf report -i "$W/perf.data" --children --sort sym 2>/dev/null | grep -E '^ +[0-9.]+%' | grep -v '\[k\]' | head -30

#!/usr/bin/env bash
# bench/run.sh full|smoke: tollgate's benchmarks, each against a baseline
# measured in the same run, under runsc and runc.
#
#   bridge    in-container C client: N sequential calls (p50/p90/p99, calls/s)
#             then 8 concurrent callers (calls/s), governed (tollgate run,
#             allow policy, audit on) against a bare responder that speaks the
#             same file protocol with no governance; tollgate-call (a process
#             per call) beside it
#   python    tollgate.py round trip, governed and bare
#   startup   tollgate run of a /bin/true bundle against the bare backend's
#             run of the same effective config; breakdown of tollgate's time;
#             under runc also step by step (bench/steps.py, perf uprobes)
#   policy    ns per decision, 1,000 tools x 10 rules, in process
#   audit     records/s with group commit, synced intent latency, verify MB/s
#   memory    sidecar RSS at rest and under load, beside the backend's own
#             per-container footprint
#   sdk       the host SDK's Sandbox.run("print(1)") first-result latency,
#             cold against a warm pool (warm=2), and a session cell
#   peers     (full runs, or PARTS=peers; PEERS_REPS runs each, default 3)
#             the orders task on tollgate and on
#             its peers: smolagents' local executor, Promptise's Docker
#             sandbox, llm-sandbox; per-call latency, wall time and what each
#             governed (bench/peers/run.sh -> bench/peers/results.json)
#
# Writes bench/results.json (machine, versions, run counts, every figure)
# and prints a table.  smoke runs every part with small counts, in under a
# minute, and asserts nothing about speed: it fails only when a part that
# exists cannot run.  Parts whose pieces are missing are skipped with the
# reason printed.
#
# Environment: BUILD (default ./build), BACKENDS (default "runsc runc"),
# PARTS (default all: "bridge python startup memory sdk peers host policy audit"; a
# subset runs only those, for profiling one path), BENCH_OUT (default
# bench/results.json), RUNSC (a runsc binary to bench instead of the one in
# PATH, e.g. the backports one unpacked with dpkg-deb -x), RUNSC_PLATFORM
# (the host config's "platform" for the run: systrap or ptrace; default
# auto), ROUNDS and ROUND_PER (the alternating governed/bare rounds of
# CONC x ROUND_PER calls whose paired ratios decide the 8-caller target),
# and the counts below.  The runsc release and the --platform tollgate chose for it are
# printed and recorded (versions.runsc, versions.runsc_platform): the bare
# baseline runs with the same flags, so each ratio compares like with like.
set -u
# Under a subreaper that reaps at once (tests/subreaper.sh says why; the
# figures are the same, the runsc containers' removals no longer wait).
. "$(dirname "$0")/../tests/subreaper.sh"
mode=${1:-full}
case $mode in
  full)
    : "${SEQ:=5000}" "${CONC:=8}" "${PER:=2500}" "${CLI_CALLS:=200}" "${PY_SEQ:=2000}"
    : "${START_REPS:=30}" "${DECISIONS:=1000000}" "${AUDIT_RECORDS:=100000}"
    : "${INTENTS:=500}" "${MEM_PER:=1000}" "${SDK_REPS:=20}" "${ROUNDS:=5}" "${ROUND_PER:=500}"
    : "${SDK_IDLE:=5}" ;;
  smoke)
    : "${SEQ:=200}" "${CONC:=8}" "${PER:=25}" "${CLI_CALLS:=10}" "${PY_SEQ:=100}"
    : "${START_REPS:=2}" "${DECISIONS:=20000}" "${AUDIT_RECORDS:=4000}"
    : "${INTENTS:=20}" "${MEM_PER:=50}" "${SDK_REPS:=2}" "${ROUNDS:=2}" "${ROUND_PER:=25}"
    : "${SDK_IDLE:=1}" ;;
  *) echo "usage: bench/run.sh full|smoke" >&2; exit 2 ;;
esac
WARMUP=${WARMUP:-50}

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
BUILD=$(cd "${BUILD:-build}" 2>/dev/null && pwd) || { echo "bench: build/ is missing; run 'make all' first" >&2; exit 1; }
TG=$BUILD/tollgate
BACKENDS=${BACKENDS:-"runsc runc"}
OUT_JSON=${BENCH_OUT:-$repo/bench/results.json}
started=$(date +%s)

W=$(mktemp -d /tmp/tollgate-bench.XXXXXX)
chmod 755 "$W"
if [ -n "${RUNSC:-}" ]; then
  [ -x "$RUNSC" ] || { echo "bench: RUNSC=$RUNSC is not an executable file" >&2; rm -rf "$W"; exit 1; }
  mkdir -p "$W/runsc-bin"
  ln -s "$(realpath "$RUNSC")" "$W/runsc-bin/runsc"
  export PATH="$W/runsc-bin:$PATH"
fi
RESULTS=$W/results.jsonl
: >"$RESULTS"
TG_ROOT=$W/root
mkdir -p "$TG_ROOT" "$W/audit" "$W/policies" "$W/bundles" "$W/log"
BARE_PIDS=()
failures=0

# ---------------------------------------------------------------- cleanup
cleanup() {
  local p id r
  for p in "${BARE_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if [ -x "$TG" ]; then
    for id in $("$TG" --root "$TG_ROOT" list -q 2>/dev/null); do
      "$TG" --root "$TG_ROOT" --config "$W/config.json" delete --force "$id" >/dev/null 2>&1
    done
  fi
  for r in "$W"/bare-root/*; do
    [ -d "$r" ] || continue
    local b=${r##*/}
    for id in $("$b" --root "$r" list -q 2>/dev/null); do
      "$b" --root "$r" kill "$id" KILL >/dev/null 2>&1
      "$b" --root "$r" delete --force "$id" >/dev/null 2>&1
    done
  done
  [ -n "${STEPS_PROBED:-}" ] && perf probe -q -d 'tgbench:*' >/dev/null 2>&1
  grep -o " $W[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- helpers
say() { echo "bench: $*" >&2; }
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
# emit SECTION BACKEND VARIANT JSON-OBJECT: one result line.
emit() {
  local obj=$4
  echo "{\"section\":\"$1\",\"backend\":\"$2\",\"variant\":\"$3\",${obj#\{}" >>"$RESULTS"
}
# skip SECTION BACKEND WHY: record and print a skipped part.
skip() {
  say "SKIPPED $1${2:+ ($2)}: $3"
  echo "{\"section\":\"$1\",\"backend\":\"$2\",\"skipped\":$(jstr "$3")}" >>"$RESULTS"
}
# fail SECTION BACKEND WHY: a part that exists could not run.
fail() {
  say "FAILED $1${2:+ ($2)}: $3"
  echo "{\"section\":\"$1\",\"backend\":\"$2\",\"failed\":$(jstr "$3")}" >>"$RESULTS"
  failures=$((failures + 1))
}
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
# capture FILE CMD...: CMD's stdout and stderr into FILE through a pipe, and
# CMD's status.  A pipe, not the file itself: gVisor writes the container's
# stdout at its own offset, so it would overwrite what others wrote there.
capture() { local f=$1; shift; "$@" 2>&1 | cat >"$f"; return "${PIPESTATUS[0]}"; }
tg() { "$TG" --root "$TG_ROOT" --config "$W/config.json" "$@"; }

# ---------------------------------------------------------------- build
CFLAGS_B="-O2 -g -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I$repo"
PKGS="yajl libseccomp libcap-ng libmnl libcrypto"
LIBS="$(pkg-config --libs $PKGS 2>/dev/null) -lpthread -lm"
mkdir -p "$BUILD/bench"
build_log=$W/log/build
have() { [ -x "$BUILD/bench/$1" ]; }
cc $CFLAGS_B -static -pthread -o "$BUILD/bench/callbench" bench/callbench.c bench/client_call.c 2>>"$build_log" || say "callbench does not build: $(tail -3 "$build_log")"
cc $CFLAGS_B -pthread -o "$BUILD/bench/bench-bare" bench/bare.c 2>>"$build_log" || say "bench-bare does not build"
cc $CFLAGS_B -o "$BUILD/bench/bench-spy" bench/spy.c 2>>"$build_log" || say "bench-spy does not build"
cp bench/pybench.py "$BUILD/bench/pybench.py"
# The in-process benchmarks link the tollgate library; one whose API is not
# there yet is skipped, with the linker's reason.
# startbench sits next to build/tollgate so that it finds the data files
# (profiles, seccomp lists, clients) the way tollgate does.
for prog in policybench auditbench startbench gatebench; do
  dest=$BUILD/bench/$prog
  [ $prog = startbench ] && dest=$BUILD/tollgate-startbench
  rm -f "$dest"
  if ! cc $CFLAGS_B $(pkg-config --cflags yajl 2>/dev/null) -o "$dest" "bench/$prog.c" \
       "$BUILD/libtollgate.a" $LIBS >"$W/log/$prog.build" 2>&1; then
    echo "$(grep -m1 -E 'error|undefined' "$W/log/$prog.build" | sed 's/^.*: //')" >"$W/log/$prog.why"
  fi
done

# ---------------------------------------------------------------- fixtures
cat >"$W/policies/echo.json" <<'EOF'
{"version": 1,
 "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"},
                    "description": "Return the arguments unchanged.",
                    "args": {"type": "object"}, "timeout": 5,
                    "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100000000}}
EOF
# RUNSC_PLATFORM (systrap, ptrace; default: tollgate's own choice, "auto")
# goes into the host config; the bare baseline gets the same --platform.
cat >"$W/config.json" <<EOF
{"audit_dir": "$W/audit", "policy_dir": "$W/policies", "platform": "${RUNSC_PLATFORM:-auto}"}
EOF
bash bundles/rootfs/busybox.sh "$BUILD/rootfs/busybox" 2>/dev/null || say "busybox rootfs failed"
PY_ROOTFS=""
if [ -f bundles/rootfs/python.sh ] && bash bundles/rootfs/python.sh "$BUILD/rootfs/python" >/dev/null 2>&1; then
  PY_ROOTFS=$BUILD/rootfs/python
fi

# make_bundle DIR ROOTFS ARG...: a `runc spec` bundle (the shape users start
# from) on ROOTFS with the benchmark programs bind-mounted read-only at /bench.
make_bundle() {
  local dir=$1 rootfs=$2; shift 2
  mkdir -p "$dir"
  rm -f "$dir/config.json" "$dir"/config.json.*
  (cd "$dir" && runc spec)
  python3 - "$dir/config.json" "$rootfs" "$BUILD/bench" "$@" <<'PY'
import json, sys
path, rootfs, bench, *args = sys.argv[1:]
c = json.load(open(path))
c["root"] = {"path": rootfs, "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = args
c["mounts"].append({"destination": "/bench", "type": "bind", "source": bench,
                    "options": ["rbind", "ro"]})
json.dump(c, open(path, "w"), indent=2)
PY
}

# The spy stands in for a backend to record what tollgate ran and for how
# long (bench/spy.c).  spy_dir BACKEND prints its directory.
spy_dir() {
  local b=$1 d=$W/spy-$1
  if [ ! -d "$d" ]; then
    mkdir -p "$d"
    cp "$BUILD/bench/bench-spy" "$d/$b"
    ln -s "$(command -v "$b")" "$d/real-$b"
  fi
  echo "$d"
}

# bare_area BACKEND: a bridge area for the bare responder, laid out like
# tollgate's (tmpfs, nosuid,nodev,noexec; tools.json, bridge.json,
# tollgate.py, calls/req, calls/resp), served by bench-bare.
bare_area() {
  local b=$1 a=$W/bare-area-$1
  if [ ! -d "$a" ]; then
    mkdir -p "$a"
    mount -t tmpfs -o size=16m,mode=0755,nosuid,nodev,noexec tmpfs "$a"
    mkdir -p "$a/calls/req" "$a/calls/resp"
    chmod 700 "$a/calls/req" "$a/calls/resp"
    cp bridge/client/tollgate.py "$a/tollgate.py" 2>/dev/null
    : >"$a/tollgate-call"
    echo '{"v":1,"approval_timeout_ms":60000}' >"$a/bridge.json"
    echo '{"tools":[{"name":"echo","description":"Return the arguments unchanged.","args":{"type":"object"},"timeout":5}]}' >"$a/tools.json"
  fi
  echo "$a"
}

# bare_bundle EFFECTIVE_JSON OUT_DIR AREA ID ORIG_BUNDLE: the effective
# config tollgate produced, with the bridge mounts pointed at AREA (the
# static client stays tollgate-call from the build), the backend's cgroup
# named after ID, and the rootfs and bind sources tollgate pinned in its
# state directory (gone with the container) named as ORIG_BUNDLE's
# config.json.orig names them.
bare_bundle() {
  mkdir -p "$2"
  python3 - "$1" "$2/config.json" "$3" "$4" "$BUILD/tollgate-call" "$5" <<'PY'
import json, os, sys
src, dst, area, bid, client, orig_bundle = sys.argv[1:]
c = json.load(open(src))
orig = json.load(open(os.path.join(orig_bundle, "config.json.orig")))
def unpinned(path, was):
    if path and "/pins/" in path and was:
        return was if os.path.isabs(was) else os.path.join(orig_bundle, was)
    return path
c["root"]["path"] = unpinned(c["root"]["path"], orig.get("root", {}).get("path"))
orig_sources = {m.get("destination"): m.get("source") for m in orig.get("mounts", [])}
for m in c.get("mounts", []):
    m["source"] = unpinned(m.get("source"), orig_sources.get(m.get("destination")))
for m in c.get("mounts", []):
    d = m.get("destination", "")
    if d == "/run/tollgate/tollgate-call":
        m["source"] = client
    elif d == "/run/tollgate" or d.startswith("/run/tollgate/"):
        m["source"] = area + d[len("/run/tollgate"):]
lx = c.get("linux", {})
if "cgroupsPath" in lx:
    lx["cgroupsPath"] = "/tollgate-bench/" + bid
json.dump(c, open(dst, "w"), indent=2)
PY
}

# backend_globals BACKEND: the global flags tollgate gave the backend in the
# spy's last logged call, minus --root and the log flags.
backend_globals() {
  local b=$1 log=$W/spy-$1/log
  [ -f "$log" ] || return 1
  tail -1 "$log" | python3 -c '
import sys
verbs = {"create","run","start","delete","kill","state","exec","ps","list","events","pause","resume","update"}
out = []
for a in sys.stdin.read().split()[3:]:
    if a in verbs: break
    if a.startswith(("--root", "--log", "--debug")): continue
    out.append(a)
print(" ".join(out))'
}

# start_bare AREA: run bench-bare on AREA/calls; sets BARE_PID.
start_bare() {
  local out=$W/log/bare.$RANDOM
  "$BUILD/bench/bench-bare" -w 2 "$1/calls" >"$out" 2>&1 &
  BARE_PID=$!
  BARE_PIDS+=("$BARE_PID")
  local i
  for i in $(seq 100); do grep -q ready "$out" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
stop_bare() { kill "$BARE_PID" 2>/dev/null; wait "$BARE_PID" 2>/dev/null; }

# run_bare BACKEND BUNDLE ID: the backend's own run, with the flags tollgate
# gave it (GLOBALS[BACKEND], set by note_globals after a spied run).
declare -A GLOBALS
note_globals() { GLOBALS[$1]=$(backend_globals "$1"); }
run_bare() {
  local b=$1 bundle=$2 id=$3
  mkdir -p "$W/bare-root/$b"
  # shellcheck disable=SC2086
  "$b" --root "$W/bare-root/$b" ${GLOBALS[$b]:-} run --bundle "$bundle" "$id"
}

# phases FILE: keep the JSON result lines a client printed; tollgate-call
# --repeat's lines ({"calls":...,"concurrency":C,...}) become the phase
# "tollgate-call --repeat, C callers".
phases() {
  grep -E '^\{"phase":' "$1"
  grep -E '^\{"calls":' "$1" | sed -E 's/^\{("calls":[0-9]+,"concurrency":([0-9]+),)/{"phase":"tollgate-call-repeat-\2",\1/'
}
# shipped_failures SECTION BACKEND VARIANT FILE: record tollgate-call
# --repeat runs that failed, with its message.
shipped_failures() {
  local line
  grep '^shipped-failed: ' "$4" | while read -r line; do
    echo "{\"section\":\"$1\",\"backend\":\"$2\",\"skipped\":$(jstr "$3: ${line#shipped-failed: } failed: $(grep -m1 '^tollgate-call: ' "$4" | cut -c1-200)")}" >>"$RESULTS"
    say "SKIPPED $1 ($2): $3: ${line#shipped-failed: } failed"
  done
}

tg_ok=0 tg_why="$TG is not built (make all)"
if [ "$(id -u)" != 0 ]; then
  tg_why="not root: containers and tmpfs mounts need root"
elif [ -x "$TG" ] && "$TG" --help >/dev/null 2>&1 && ! "$TG" run --help 2>&1 | grep -q "not built yet"; then
  tg_ok=1
fi

# ---------------------------------------------------------------- bridge
bench_bridge() {
  local b=$1 id=gb-$b out=$W/log/bridge-$b
  # callbench, then the shipped client's own --repeat mode (one caller, then
  # CONC threads); a failure of the latter is reported, not fatal.
  local tc=/run/tollgate/tollgate-call
  local script="/bench/callbench -w $WARMUP -n $SEQ -c $CONC -m $PER -x $CLI_CALLS || exit 1
$tc --repeat $SEQ echo '{\"msg\":\"bench\"}' || echo 'shipped-failed: tollgate-call --repeat $SEQ'
$tc --repeat $((CONC * PER)) --concurrency $CONC echo '{\"msg\":\"bench\"}' || echo 'shipped-failed: tollgate-call --repeat --concurrency $CONC'
exit 0"
  local args=(sh -c "$script")
  if [ $tg_ok = 0 ]; then skip bridge "$b" "$tg_why"; return; fi
  if ! have callbench; then skip bridge "$b" "callbench did not build"; return; fi
  make_bundle "$W/bundles/bridge-$b" "$BUILD/rootfs/busybox" "${args[@]}"
  local spy
  spy=$(spy_dir "$b")
  say "bridge ($b): governed, $SEQ sequential + $CONC x $PER concurrent calls"
  if ! capture "$out.gov" tg --runtime "$spy/$b" run --policy "$W/policies/echo.json" -b "$W/bundles/bridge-$b" "$id"; then
    fail bridge "$b" "governed run failed: $(tail -3 "$out.gov" | tr '\n' ' ')"; return
  fi
  local line
  while read -r line; do
    emit bridge "$b" governed "$line"
  done < <(phases "$out.gov")
  shipped_failures bridge "$b" governed "$out.gov"
  if [ -f "$W/audit/$id.jsonl" ]; then
    local calls
    calls=$(grep -c '"event":"call"' "$W/audit/$id.jsonl")
    emit bridge "$b" governed-audit "{\"audit_call_records\":$calls}"
  fi
  cp "$spy/effective.json" "$W/effective-bridge-$b.json"
  note_globals "$b"

  say "bridge ($b): bare responder, same effective config"
  local area
  area=$(bare_area "$b")
  bare_bundle "$W/effective-bridge-$b.json" "$W/bundles/bare-bridge-$b" "$area" "bb-$b" "$W/bundles/bridge-$b"
  if ! start_bare "$area"; then fail bridge "$b" "bench-bare did not start"; return; fi
  if ! capture "$out.bare" run_bare "$b" "$W/bundles/bare-bridge-$b" "bb-$b"; then
    stop_bare; fail bridge "$b" "bare run failed: $(tail -3 "$out.bare" | tr '\n' ' ')"; return
  fi
  stop_bare
  while read -r line; do
    emit bridge "$b" bare "$line"
  done < <(phases "$out.bare")
  shipped_failures bridge "$b" bare "$out.bare"
}

# ---------------------------------------------------------------- bridge, rounds
# The 8-caller figure again, in ROUNDS rounds of a governed and a bare
# container of CONC x ROUND_PER calls each, alternating which goes first:
# the report takes the median of the rounds' ratios (bare calls/s over
# governed) and their spread, so one noisy moment decides nothing.  Needs
# bench_bridge's effective config.
bench_bridge_rounds() {
  local b=$1 r out=$W/log/rounds-$b k
  if [ $tg_ok = 0 ]; then skip bridge-rounds "$b" "$tg_why"; return; fi
  if [ ! -f "$W/effective-bridge-$b.json" ]; then skip bridge-rounds "$b" "the bridge part did not run"; return; fi
  make_bundle "$W/bundles/rounds-$b" "$BUILD/rootfs/busybox" /bench/callbench -w 10 -n 0 -c "$CONC" -m "$ROUND_PER"
  local area
  area=$(bare_area "$b")
  # The bridge part's effective config, with this part's command.
  bare_bundle "$W/effective-bridge-$b.json" "$W/bundles/bare-rounds-$b" "$area" "br-$b" "$W/bundles/bridge-$b"
  python3 - "$W/bundles/bare-rounds-$b/config.json" "$CONC" "$ROUND_PER" <<'PY'
import json, sys
p, conc, per = sys.argv[1:]
c = json.load(open(p))
c["process"]["args"] = ["/bench/callbench", "-w", "10", "-n", "0", "-c", conc, "-m", per]
json.dump(c, open(p, "w"), indent=2)
PY
  say "bridge rounds ($b): $ROUNDS x (governed, bare) of $CONC x $ROUND_PER calls, alternating"
  local gov=() bare=() v
  for r in $(seq "$ROUNDS"); do
    for k in $(( r % 2 )) $(( (r + 1) % 2 )); do
      if [ "$k" = 1 ]; then
        capture "$out.gov.$r" tg --runtime "$b" run --policy "$W/policies/echo.json" -b "$W/bundles/rounds-$b" "gr-$b-$r" \
          || { fail bridge-rounds "$b" "governed round $r failed: $(tail -3 "$out.gov.$r" | tr '\n' ' ')"; return; }
        v=$(grep -E '^\{"phase":"concurrent"' "$out.gov.$r" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["calls_per_s"])') \
          || { fail bridge-rounds "$b" "governed round $r printed no result"; return; }
        gov+=("$v")
      else
        start_bare "$area" || { fail bridge-rounds "$b" "bench-bare did not start"; return; }
        capture "$out.bare.$r" run_bare "$b" "$W/bundles/bare-rounds-$b" "br-$b-$r" \
          || { stop_bare; fail bridge-rounds "$b" "bare round $r failed: $(tail -3 "$out.bare.$r" | tr '\n' ' ')"; return; }
        stop_bare
        v=$(grep -E '^\{"phase":"concurrent"' "$out.bare.$r" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["calls_per_s"])') \
          || { fail bridge-rounds "$b" "bare round $r printed no result"; return; }
        bare+=("$v")
      fi
    done
  done
  emit bridge-rounds "$b" concurrent "{\"rounds\":$ROUNDS,\"callers\":$CONC,\"per_caller\":$ROUND_PER,\"governed_calls_per_s\":[$(IFS=,; echo "${gov[*]}")],\"bare_calls_per_s\":[$(IFS=,; echo "${bare[*]}")]}"
}

# ---------------------------------------------------------------- bridge, host side
# The same client on the host against a created container's sidecar and
# against the bare responder: the bridge without the container runtime or
# the profile's CPU limit in the way, and the host CPU each side spends per
# call (utime+stime of the responder process, so other load does not count).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
bench_bridge_host() {
  local b=runc id=host-runc out=$W/log/bridge-host
  command -v runc >/dev/null || b=runsc
  if [ $tg_ok = 0 ]; then skip bridge-host "" "$tg_why"; return; fi
  if ! have callbench; then skip bridge-host "" "callbench did not build"; return; fi
  local calls=$((WARMUP + SEQ + CONC * PER)) tck
  tck=$(getconf CLK_TCK)
  make_bundle "$W/bundles/host" "$BUILD/rootfs/busybox" sleep 3600
  say "bridge (host side): $SEQ sequential + $CONC x $PER concurrent calls from the host, sidecar and bare"
  if ! tg --runtime "$b" create --policy "$W/policies/echo.json" -b "$W/bundles/host" "$id" >"$out.create" 2>&1; then
    fail bridge-host "" "create failed: $(tail -3 "$out.create" | tr '\n' ' ')"; return
  fi
  local sidecar c0 c1
  sidecar=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("sidecar_pid") or "")' "$TG_ROOT/$id/state.json" 2>/dev/null)
  c0=$(cpu_ticks "$sidecar")
  capture "$out.gov" "$BUILD/bench/callbench" -d "$TG_ROOT/$id/bridge/calls" -w "$WARMUP" -n "$SEQ" -c "$CONC" -m "$PER"
  local rc=$?
  c1=$(cpu_ticks "$sidecar")
  tg delete --force "$id" >/dev/null 2>&1
  if [ $rc != 0 ]; then fail bridge-host "" "calls to the sidecar failed: $(tail -3 "$out.gov" | tr '\n' ' ')"; return; fi
  local line
  while read -r line; do emit bridge-host "" governed "$line"; done < <(phases "$out.gov")
  emit bridge-host "" governed-cpu "{\"responder_cpu_us_per_call\":$(( (c1 - c0) * 1000000 / tck / calls ))}"

  mkdir -p "$W/host-bare"
  mount -t tmpfs -o size=16m,mode=0755,nosuid,nodev,noexec tmpfs "$W/host-bare"
  mkdir -p "$W/host-bare/calls"
  if ! start_bare "$W/host-bare"; then fail bridge-host "" "bench-bare did not start"; return; fi
  c0=$(cpu_ticks "$BARE_PID")
  capture "$out.bare" "$BUILD/bench/callbench" -d "$W/host-bare/calls" -w "$WARMUP" -n "$SEQ" -c "$CONC" -m "$PER"
  rc=$?
  c1=$(cpu_ticks "$BARE_PID")
  stop_bare
  if [ $rc != 0 ]; then fail bridge-host "" "calls to bench-bare failed"; return; fi
  while read -r line; do emit bridge-host "" bare "$line"; done < <(phases "$out.bare")
  emit bridge-host "" bare-cpu "{\"responder_cpu_us_per_call\":$(( (c1 - c0) * 1000000 / tck / calls ))}"
}

# ---------------------------------------------------------------- python
bench_python() {
  local b=$1 id=py-$b out=$W/log/python-$b
  if [ $tg_ok = 0 ]; then skip python "$b" "$tg_why"; return; fi
  if [ -z "$PY_ROOTFS" ]; then skip python "$b" "no Python rootfs (bundles/rootfs/python.sh)"; return; fi
  if [ ! -f bridge/client/tollgate.py ]; then skip python "$b" "no bridge/client/tollgate.py"; return; fi
  make_bundle "$W/bundles/py-$b" "$PY_ROOTFS" python3 /bench/pybench.py "$PY_SEQ" "$WARMUP"
  local spy
  spy=$(spy_dir "$b")
  say "python ($b): governed, $PY_SEQ sequential calls through tollgate.py"
  if ! capture "$out.gov" tg --runtime "$spy/$b" run --policy "$W/policies/echo.json" -b "$W/bundles/py-$b" "$id"; then
    fail python "$b" "governed run failed: $(tail -3 "$out.gov" | tr '\n' ' ')"; return
  fi
  local line
  while read -r line; do emit python "$b" governed "$line"; done < <(phases "$out.gov")
  cp "$spy/effective.json" "$W/effective-py-$b.json"
  note_globals "$b"
  say "python ($b): bare responder"
  local area
  area=$(bare_area "$b")
  bare_bundle "$W/effective-py-$b.json" "$W/bundles/bare-py-$b" "$area" "bp-$b" "$W/bundles/py-$b"
  if ! start_bare "$area"; then fail python "$b" "bench-bare did not start"; return; fi
  if ! capture "$out.bare" run_bare "$b" "$W/bundles/bare-py-$b" "bp-$b"; then
    stop_bare; fail python "$b" "bare run failed: $(tail -3 "$out.bare" | tr '\n' ' ')"; return
  fi
  stop_bare
  while read -r line; do emit python "$b" bare "$line"; done < <(phases "$out.bare")
}

# ---------------------------------------------------------------- sdk
# The host SDK: Sandbox.run("print(1)") first-result latency, cold against
# warm=2, alternating in one run (bench/sdkbench.py), and a session cell.
bench_sdk() {
  local b=$1 out=$W/log/sdk-$b
  if [ $tg_ok = 0 ]; then skip sdk "$b" "$tg_why"; return; fi
  if [ -z "$PY_ROOTFS" ]; then skip sdk "$b" "no Python rootfs (bundles/rootfs/python.sh)"; return; fi
  say "sdk ($b): Sandbox.run(\"print(1)\") cold vs warm=2, $SDK_REPS each; the idle pool for ${SDK_IDLE}s"
  if ! SDKBENCH_IDLE=$SDK_IDLE TOLLGATE=$TG TOLLGATE_ROOTFS=$PY_ROOTFS timeout 900 python3 bench/sdkbench.py "$b" "$SDK_REPS" >"$out" 2>&1; then
    fail sdk "$b" "sdkbench failed: $(tail -3 "$out" | tr '\n' ' ')"; return
  fi
  emit sdk "$b" first-result "$(tail -1 "$out")"
}

# ---------------------------------------------------------------- peers
# The orders task on tollgate and on the executors an agent could use
# instead (smolagents' local one, Promptise's Docker sandbox, llm-sandbox):
# latency, wall time and what each governed (bench/peers/run.sh, which
# makes the peers' own venv once and runs a private dockerd).  Full runs
# only, or PARTS=peers: it takes a minute or two, past the smoke's budget.
bench_peers() {
  local out=$W/log/peers
  say "peers: the orders task on tollgate and its peers (bench/peers/run.sh)"
  if ! BUILD=$BUILD PEERS_OUT=$W/peers.json timeout 1200 bash bench/peers/run.sh >"$out" 2>"$out.err"; then
    fail peers "" "bench/peers/run.sh failed: $(tail -3 "$out.err" | tr '\n' ' ')"; return
  fi
  cat "$out" >&2
  cp "$W/peers.json" "$repo/bench/peers/results.json"
  emit peers "" table "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$W/peers.json")"
}

# ---------------------------------------------------------------- startup
# median and mean of whitespace-separated integers (µs) -> "median mean"
stats() { python3 -c 'import sys,statistics as s; v=[int(x) for x in sys.argv[1:]]; print(int(s.median(v)), int(s.mean(v)))' "$@"; }

bench_startup() {
  local b=$1
  if [ $tg_ok = 0 ]; then skip startup "$b" "$tg_why"; return; fi
  make_bundle "$W/bundles/true-$b" "$BUILD/rootfs/busybox" /bin/true
  local spy i t0 t1
  spy=$(spy_dir "$b")
  : >"$spy/log"
  say "startup ($b): $START_REPS x tollgate run vs $START_REPS x bare $b run of /bin/true, interleaved"
  # One spied run gives the effective config and the backend's flags.
  if ! tg --runtime "$spy/$b" run --policy "$W/policies/echo.json" -b "$W/bundles/true-$b" "st-spy-$b" >"$W/log/startup-$b" 2>&1; then
    fail startup "$b" "tollgate run of /bin/true failed: $(tail -3 "$W/log/startup-$b" | tr '\n' ' ')"; return
  fi
  note_globals "$b"
  local area
  area=$(bare_area "$b")
  bare_bundle "$spy/effective.json" "$W/bundles/bare-true-$b" "$area" "bt-$b" "$W/bundles/true-$b"
  # One untimed run of each first: page cache, the backend's root directory.
  tg --runtime "$b" run --policy "$W/policies/echo.json" -b "$W/bundles/true-$b" "st-$b-warm" >>"$W/log/startup-$b" 2>&1
  run_bare "$b" "$W/bundles/bare-true-$b" "bt-$b-warm" >>"$W/log/startup-$b" 2>&1 \
    || { fail startup "$b" "bare run failed: $(tail -2 "$W/log/startup-$b" | tr '\n' ' ')"; return; }
  local tgt=() bare=()
  # Pairs in ABBA order (tollgate first in odd pairs, bare first in even
  # ones), so a drift of the machine's speed favours neither side; the
  # report takes the median of the pairs' ratios and their spread.
  local k
  for i in $(seq "$START_REPS"); do
    for k in $(( i % 2 )) $(( (i + 1) % 2 )); do
      if [ "$k" = 1 ]; then
        t0=$(now_us)
        tg --runtime "$b" run --policy "$W/policies/echo.json" -b "$W/bundles/true-$b" "st-$b-$i" >>"$W/log/startup-$b" 2>&1 \
          || { fail startup "$b" "tollgate run $i failed: $(tail -2 "$W/log/startup-$b" | tr '\n' ' ')"; return; }
        t1=$(now_us); tgt+=($((t1 - t0)))
      else
        t0=$(now_us)
        run_bare "$b" "$W/bundles/bare-true-$b" "bt-$b-$i" >>"$W/log/startup-$b" 2>&1 \
          || { fail startup "$b" "bare run $i failed: $(tail -2 "$W/log/startup-$b" | tr '\n' ' ')"; return; }
        t1=$(now_us); bare+=($((t1 - t0)))
      fi
    done
  done
  local ts bs
  ts=($(stats "${tgt[@]}")); bs=($(stats "${bare[@]}"))
  emit startup "$b" ratio "{\"runs\":$START_REPS,\"tollgate_median_us\":${ts[0]},\"tollgate_mean_us\":${ts[1]},\"bare_median_us\":${bs[0]},\"bare_mean_us\":${bs[1]},\"tollgate_us\":[$(IFS=,; echo "${tgt[*]}")],\"bare_us\":[$(IFS=,; echo "${bare[*]}")]}"

  # Breakdown from outside: spied runs, where the backend's own intervals
  # are logged; tollgate's time is the rest (before, between and after).
  : >"$spy/log"
  local totals=() starts=()
  for i in $(seq "$START_REPS"); do
    echo "run $i" >>"$spy/log"
    t0=$(now_us)
    tg --runtime "$spy/$b" run --policy "$W/policies/echo.json" -b "$W/bundles/true-$b" "sb-$b-$i" >>"$W/log/startup-$b" 2>&1
    t1=$(now_us)
    echo "total $t0 $t1" >>"$spy/log"
  done
  local bd
  bd=$(python3 - "$spy/log" <<'PY'
import json, statistics as st, sys
runs, cur = [], None
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "run":
        cur = {"calls": []}
    elif f[0] == "total":
        cur["t0"], cur["t1"] = int(f[1]) * 1000, int(f[2]) * 1000
        runs.append(cur)
    elif cur is not None:
        verb = next((a for a in f[3:] if not a.startswith("-")), "?")
        cur["calls"].append((int(f[0]), int(f[1]), verb))
out = {"runs": len(runs)}
def med(xs): return round(st.median(xs) / 1000) if xs else 0
tot = [r["t1"] - r["t0"] for r in runs]
be = [sum(e - s for s, e, _ in r["calls"]) for r in runs]
pre = [r["calls"][0][0] - r["t0"] for r in runs if r["calls"]]
post = [r["t1"] - r["calls"][-1][1] for r in runs if r["calls"]]
between = [t - b - p - q for t, b, p, q in zip(tot, be, pre, post)]
verbs = {}
for r in runs:
    for s, e, v in r["calls"]:
        verbs.setdefault(v, []).append(e - s)
out.update(total_median_us=med(tot), backend_median_us=med(be),
           tollgate_own_median_us=med([t - b for t, b in zip(tot, be)]),
           before_backend_median_us=med(pre), between_backend_calls_median_us=med(between),
           after_backend_median_us=med(post),
           backend_calls={v: med(x) for v, x in verbs.items()})
print(json.dumps(out))
PY
)
  emit startup "$b" breakdown "$bd"

  # Breakdown from inside: the same module calls the lifecycle makes.
  if [ -x "$BUILD/tollgate-startbench" ]; then
    local sb
    mkdir -p "$W/startbench"
    if sb=$("$BUILD/tollgate-startbench" "$W/config.json" "$W/bundles/true-$b" "$W/policies/echo.json" "$W/startbench" "$START_REPS" "$b" 2>"$W/log/startbench-$b"); then
      emit startup "$b" in-process "$sb"
    else
      fail startup "$b" "startbench: $(tail -2 "$W/log/startbench-$b" | tr '\n' ' ')"
    fi
    # The same with the audit log on a tmpfs: what the log's fdatasyncs cost.
    if [ ! -f "$W/config-audit-tmpfs.json" ]; then
      mkdir -p "$W/audit-tmpfs"
      mount -t tmpfs -o size=64m tmpfs "$W/audit-tmpfs"
      echo "{\"audit_dir\": \"$W/audit-tmpfs\", \"policy_dir\": \"$W/policies\"}" >"$W/config-audit-tmpfs.json"
    fi
    if sb=$("$BUILD/tollgate-startbench" "$W/config-audit-tmpfs.json" "$W/bundles/true-$b" "$W/policies/echo.json" "$W/startbench" "$START_REPS" "$b" 2>>"$W/log/startbench-$b"); then
      emit startup "$b" in-process-audit-tmpfs "$sb"
    fi
  else
    skip startup-in-process "$b" "startbench does not link: $(cat "$W/log/startbench.why" 2>/dev/null)"
  fi
}

# ---------------------------------------------------------------- startup steps
# bench_steps BACKEND: runc only.  START_REPS `tollgate run`s of a copy of
# tollgate with uprobes on the functions of create's steps and on the
# spawn and reaping of each backend process (perf probe, group tgbench,
# removed afterwards), under `perf record` with the scheduler's exec and
# exit events of tollgate's own task; bench/steps.py
# turns each run's events into steps and prints their medians.
STEP_PROBES="main=main create=do_create floor_ret=runc_floor_check%return statedir=state_create_dir
idrange=idrange_claim idrange_ret=idrange_claim%return harden=oci_harden harden_ret=oci_harden%return
pins=mount_pin_all pins_ret=mount_pin_all%return points=mount_points_make points_ret=mount_points_make%return
bridge=bridge_prepare bridge_ret=bridge_prepare%return reach_ret=mount_reach_make%return
strip=oci_netns_strip_to_loopback strip_ret=oci_netns_strip_to_loopback%return waited=forward_until_exit%return
spawn=proc_spawn reaped=proc_finish%return"
bench_steps() {
  local b=$1 probed=$BUILD/tollgate-probed p i
  [ "$b" = runc ] || return 0
  if ! command -v perf >/dev/null; then skip startup-steps "$b" "perf is not installed"; return; fi
  perf probe -q -d 'tgbench:*' >/dev/null 2>&1
  rm -f "$probed"
  STEPS_PROBED=1
  cp "$TG" "$probed" # its own inode: the probes touch no other tollgate
  for p in $STEP_PROBES; do
    if ! perf probe -q -x "$probed" -a "tgbench:$p" >"$W/log/steps-probe" 2>&1; then
      perf probe -q -d 'tgbench:*' >/dev/null 2>&1
      skip startup-steps "$b" "perf probe $p: $(head -1 "$W/log/steps-probe")"; return
    fi
  done
  say "startup steps ($b): $START_REPS probed tollgate runs"
  mkdir -p "$W/steps"
  for i in $(seq "$START_REPS"); do
    # --no-inherit: tollgate's own task only (following runc's many Go
    # threads made perf itself a third of runc's time).
    perf record -q --no-inherit -o "$W/steps/$i.data" -e 'tgbench:*' -e sched:sched_process_exec -e sched:sched_process_exit -- \
      "$probed" --root "$TG_ROOT" --config "$W/config.json" --runtime "$b" run --policy "$W/policies/echo.json" \
      -b "$W/bundles/true-$b" "sp-$b-$i" >>"$W/log/steps-$b" 2>&1
  done
  perf probe -q -d 'tgbench:*' >/dev/null 2>&1
  rm -f "$probed"
  local r
  if r=$(python3 bench/steps.py "$W"/steps/*.data 2>>"$W/log/steps-$b") && [[ $r != *'"runs": 0'* ]]; then
    emit startup "$b" steps "$r"
  else
    fail startup-steps "$b" "no complete probed run: $(tail -2 "$W/log/steps-$b" | tr '\n' ' ')"
  fi
}

# ---------------------------------------------------------------- memory
# rss PID -> "rss_kib pss_kib hwm_kib"
rss() {
  local pid=$1 r p h
  r=$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status" 2>/dev/null)
  h=$(awk '/^VmHWM:/{print $2}' "/proc/$pid/status" 2>/dev/null)
  p=$(awk '/^Pss:/{print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null)
  echo "${r:-0} ${p:-0} ${h:-0}"
}
# backend_pids BACKEND ID: the processes the backend keeps for one container
# (runsc: sandbox and gofer; runc: the container's own processes).
backend_pids() {
  local b=$1 id=$2 pid
  if [ "$b" = runsc ]; then
    pgrep -f -- "--root=$TG_ROOT/backend/runsc" | while read -r pid; do
      tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE 'runsc-(sandbox|gofer)| boot | gofer ' && echo "$pid"
    done
  else
    pid=$(runc --root "$TG_ROOT/backend/runc" state "$id" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
    [ -n "$pid" ] && { echo "$pid"; pgrep -P "$pid"; }
  fi
}
sum_rss() { local t_r=0 t_p=0 pid r; for pid in "$@"; do r=($(rss "$pid")); t_r=$((t_r + r[0])); t_p=$((t_p + r[1])); done; echo "$t_r $t_p"; }

bench_memory() {
  local b=$1 id=mem-$b out=$W/log/memory-$b
  if [ $tg_ok = 0 ]; then skip memory "$b" "$tg_why"; return; fi
  make_bundle "$W/bundles/mem-$b" "$BUILD/rootfs/busybox" sh -c \
    "/bench/callbench -w 10 -n 0 -c $CONC -m $MEM_PER; echo load-done; exec sleep 3600"
  say "memory ($b): sidecar at rest, under $CONC x $MEM_PER calls, and the backend's footprint"
  if ! tg --runtime "$b" create --policy "$W/policies/echo.json" -b "$W/bundles/mem-$b" "$id" >"$out" 2>&1; then
    fail memory "$b" "create failed: $(tail -3 "$out" | tr '\n' ' ')"; return
  fi
  local sidecar
  sidecar=$(python3 - "$TG_ROOT/$id/state.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def find(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if "sidecar" in k and isinstance(v, int) and v > 0: return v
            r = find(v)
            if r: return r
print(find(s) or "")
PY
)
  if [ -z "$sidecar" ] || [ ! -d "/proc/$sidecar" ]; then
    tg delete --force "$id" >/dev/null 2>&1
    fail memory "$b" "no live sidecar pid in state.json"; return
  fi
  sleep 0.5
  local rest=($(rss "$sidecar"))
  local bk_rest=($(sum_rss $(backend_pids "$b" "$id")))
  tg start "$id" >"$out.start" 2>&1 || { tg delete --force "$id" >/dev/null 2>&1; fail memory "$b" "start failed"; return; }
  # Sample while the calls run; the backend's processes every fourth time
  # (finding them costs more than reading the sidecar's status).
  local peak=0 samples=0 sum=0 r i bk bk_load=(0 0) pids_list=""
  for i in $(seq 1200); do
    r=($(rss "$sidecar"))
    [ "${r[0]}" -gt "$peak" ] && peak=${r[0]}
    sum=$((sum + r[0])); samples=$((samples + 1))
    if [ $((i % 4)) = 1 ]; then
      local pids
      pids=$(backend_pids "$b" "$id" | tr '\n' ' ')
      bk=($(sum_rss $pids))
      [ "${bk[0]}" -gt "${bk_load[0]}" ] && { bk_load=("${bk[@]}"); pids_list=$pids; }
    fi
    grep -q load-done "$out" && break
    sleep 0.05
  done
  local hwm=($(rss "$sidecar"))
  sleep 0.5
  local after=($(rss "$sidecar"))
  local line
  line=$(phases "$out" | tail -1)
  tg kill "$id" KILL >/dev/null 2>&1
  for i in $(seq 50); do tg state "$id" 2>/dev/null | grep -q '"stopped"' && break; sleep 0.1; done
  tg delete --force "$id" >/dev/null 2>&1
  emit memory "$b" sidecar "{\"sidecar_rest_rss_kib\":${rest[0]},\"sidecar_rest_pss_kib\":${rest[1]},\"sidecar_load_peak_rss_kib\":$peak,\"sidecar_load_mean_rss_kib\":$((samples ? sum / samples : 0)),\"sidecar_hwm_kib\":${hwm[2]},\"sidecar_after_load_rss_kib\":${after[0]},\"samples\":$samples,\"backend_rest_rss_kib\":${bk_rest[0]},\"backend_rest_pss_kib\":${bk_rest[1]},\"backend_load_rss_kib\":${bk_load[0]},\"backend_load_pss_kib\":${bk_load[1]},\"backend_processes\":$(jstr "$pids_list"),\"load\":${line:-null}}"
}

# ---------------------------------------------------------------- policy
bench_policy() {
  if ! have policybench; then skip policy "" "policybench does not link: $(cat "$W/log/policybench.why")"; return; fi
  say "policy: $DECISIONS decisions per case, 1,000 tools x 10 rules"
  mkdir -p "$W/policy"
  local r
  if r=$("$BUILD/bench/policybench" "$W/policy" "$DECISIONS" 2>"$W/log/policy"); then
    emit policy "" decision "$r"
  else
    fail policy "" "$(tail -2 "$W/log/policy" | tr '\n' ' ')"
  fi
}

# ---------------------------------------------------------------- audit
bench_audit() {
  if ! have auditbench; then skip audit "" "auditbench does not link: $(cat "$W/log/auditbench.why")"; return; fi
  say "audit: $AUDIT_RECORDS records (1 and 8 writers), $INTENTS synced intents, verify"
  mkdir -p "$W/auditbench"
  local r
  if ! r=$("$BUILD/bench/auditbench" "$W/auditbench" "$AUDIT_RECORDS" "$INTENTS" 2>"$W/log/audit"); then
    fail audit "" "$(tail -2 "$W/log/audit" | tr '\n' ' ')"; return
  fi
  emit audit "" write "$r"
  local log bytes wall_s user_s sys_s
  log=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["log"])' "$r")
  bytes=$(stat -c %s "$log")
  cat "$log" >/dev/null # page cache warm: verify speed, not disk speed
  if [ $tg_ok = 0 ]; then skip audit-verify "" "$tg_why"; return; fi
  local best_wall=0 best_cpu=0 i t
  for i in 1 2 3; do
    # Wall and CPU (user+sys) time of the verifier, from bash's own timer.
    t=$( { TIMEFORMAT='%R %U %S'; time "$TG" audit verify "$log" >"$W/log/verify" 2>&1; } 2>&1 ) \
      || { fail audit-verify "" "$(cat "$W/log/verify")"; return; }
    read -r wall_s user_s sys_s <<<"$t"
    local wall cpu
    wall=$(python3 -c "print(int($wall_s*1e6))"); cpu=$(python3 -c "print(int(($user_s+$sys_s)*1e6))")
    { [ $best_wall = 0 ] || [ $wall -lt $best_wall ]; } && best_wall=$wall
    { [ $best_cpu = 0 ] || [ $cpu -lt $best_cpu ]; } && best_cpu=$cpu
  done
  emit audit "" verify "{\"bytes\":$bytes,\"wall_us\":$best_wall,\"cpu_us\":$best_cpu,\"mb_per_s\":$(python3 -c "print(round($bytes/1e6/($best_wall/1e6),1))"),\"mb_per_cpu_s\":$( [ $best_cpu -gt 0 ] && python3 -c "print(round($bytes/1e6/($best_cpu/1e6),1))" || echo null)}"
}

# ---------------------------------------------------------------- run
# want PART: whether PARTS (default: all of them) names PART.
want() { [ -z "${PARTS:-}" ] || [[ " $PARTS " == *" $1 "* ]]; }
for b in $BACKENDS; do
  if ! command -v "$b" >/dev/null; then skip all "$b" "$b is not installed"; continue; fi
  want bridge && bench_bridge "$b"
  want bridge && bench_bridge_rounds "$b"
  want python && bench_python "$b"
  want startup && bench_startup "$b"
  want startup && [ $tg_ok = 1 ] && bench_steps "$b"
  want memory && bench_memory "$b"
  want sdk && bench_sdk "$b"
done
if [ "$mode" = full ] || [[ " ${PARTS:-} " == *" peers "* ]]; then want peers && bench_peers; fi
want host && bench_bridge_host
want policy && bench_policy
want audit && bench_audit

elapsed=$(( $(date +%s) - started ))
RUNSC_FLAGS="${GLOBALS[runsc]:-}" RUNSC_PATH="$(realpath "$(command -v runsc)" 2>/dev/null)" \
python3 bench/report.py "$RESULTS" "$OUT_JSON" "$mode" "$elapsed" "$BUILD" \
  "SEQ=$SEQ CONC=$CONC PER=$PER CLI_CALLS=$CLI_CALLS PY_SEQ=$PY_SEQ START_REPS=$START_REPS DECISIONS=$DECISIONS AUDIT_RECORDS=$AUDIT_RECORDS INTENTS=$INTENTS MEM_PER=$MEM_PER SDK_REPS=$SDK_REPS ROUNDS=$ROUNDS ROUND_PER=$ROUND_PER WARMUP=$WARMUP" \
  || failures=$((failures + 1))
if [ "$failures" -gt 0 ]; then
  say "$failures part(s) failed to run"
  exit 1
fi
exit 0

#!/usr/bin/env bash
# Run every tests/integration/test_*.sh (or those named in $TESTS) against
# real runsc and runc.  Each script prints "ok - NAME" or "FAIL - NAME" per
# check; this runner adds them up and ends with "N passed, N failed".
#
#   run.sh [--runsc PATH] [--save-durations]
#
# --runsc PATH runs the suite against another runsc binary (for example
# the backports one unpacked with dpkg-deb -x, next to the system's):
# lib.sh's host configs name it as runtime_path, and a directory holding
# a `runsc` link to it goes first in PATH, so the scripts' own `runsc
# list` calls, containerd's shim and the installer image see the same
# binary.  TG_RUNSC may be set instead of the flag.  --save-durations
# writes this run's per-script seconds to tests/integration/durations.txt,
# the order a fresh clone schedules by.
set -u
# Under a subreaper that reaps at once (tests/subreaper.sh says why).
. "$(dirname "$0")/../subreaper.sh"
save_durations=0
while [ $# -gt 0 ]; do
  case $1 in
    --runsc) [ $# -ge 2 ] || { echo "run.sh: --runsc needs a PATH" >&2; exit 2; }
             TG_RUNSC=$2; shift 2 ;;
    --runsc=*) TG_RUNSC=${1#--runsc=}; shift ;;
    --save-durations) save_durations=1; shift ;;
    *) echo "run.sh: unknown argument '$1' (only --runsc PATH, --save-durations)" >&2; exit 2 ;;
  esac
done
if [ -n "${TG_RUNSC:-}" ]; then
  [ -x "$TG_RUNSC" ] || { echo "run.sh: --runsc $TG_RUNSC is not an executable file" >&2; exit 2; }
  TG_RUNSC=$(realpath "$TG_RUNSC")
  runsc_dir=$(mktemp -d /tmp/tollgate-runsc.XXXXXX)
  trap 'rm -rf "$runsc_dir"' EXIT
  ln -s "$TG_RUNSC" "$runsc_dir/runsc"
  export TG_RUNSC PATH="$runsc_dir:$PATH"
fi
echo "== runsc: $(command -v runsc) ($(runsc --version 2>/dev/null | head -n1))"
here=$(cd "$(dirname "$0")" && pwd)
export BUILD=${BUILD:-$(cd "$here/../.." && pwd)/build}
cd "$here/../.."
scripts=${TESTS:-$(ls tests/integration/test_*.sh 2>/dev/null)}
# Three scripts at a time by default (IT_JOBS): most of a script's time
# is spent waiting on a sandbox to start or stop, and the scripts share
# nothing but the host (each has its own --root, backend roots, private
# containerd/dockerd/podman, CNI bridge and id pool).  Container ids must
# differ between scripts: without a cgroupsPath, runc's and runsc's cgroup
# is /<id>, shared by two scripts that use the same id.  Two run with nothing
# beside them: test_bridge_faults asserts the 2 s bound on callers after
# a sidecar dies, and test_bridge_flood is a load generator.
JOBS=${IT_JOBS:-3}
ALONE="test_bridge_faults test_bridge_flood"
# The longest go first (so the lanes end close together), by measured
# durations: this machine's last run ($BUILD/it-durations.txt, written
# below) or, on a fresh clone, the committed tests/integration/durations.txt
# (refresh it from a run's "== NAME: ... (Ns)" lines with --save-durations).
# A script in neither counts as 60 s.
durations=tests/integration/durations.txt
[ -s "$BUILD/it-durations.txt" ] && durations=$BUILD/it-durations.txt
in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
ordered="" alone=""
for s in $(for s in $scripts; do
             name=$(basename "$s" .sh)
             secs=$(awk -v n="$name" '$1 == n {print $2; exit}' "$durations" 2>/dev/null)
             echo "${secs:-60} $s"
           done | sort -k1,1nr -k2,2 | cut -d' ' -f2); do
  name=$(basename "$s" .sh)
  if in_list "$name" "$ALONE"; then alone="$alone $s"; else ordered="$ordered $s"; fi
done
total_pass=0 total_fail=0 failing=""
log_dir=$(mktemp -d /tmp/tollgate-it.XXXXXX)
declare -A running=()   # pid -> script name

launch() {
  local s=$1 name
  name=$(basename "$s" .sh)
  ( start=$(date +%s)
    timeout --kill-after=10 ${TEST_TIMEOUT:-600} bash "$s" >"$log_dir/$name.log" 2>&1
    echo "$? $(( $(date +%s) - start ))" >"$log_dir/$name.rc" ) &
  running[$!]=$name
}

# report NAME: add up a finished script's checks and print its line (and,
# when it failed, its last lines).
report() {
  local name=$1 rc secs p f
  read -r rc secs <"$log_dir/$name.rc"
  p=$(grep -c '^ok - ' "$log_dir/$name.log")
  f=$(grep -c '^FAIL - ' "$log_dir/$name.log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1; echo "FAIL - $name exited $rc" >>"$log_dir/$name.log"
  fi
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  echo "$name $secs" >>"$log_dir/durations"
  echo "== $name: $p passed, $f failed (${secs}s)"
  if [ "$f" -ne 0 ]; then
    failing="$failing $name"
    sed 's/^/   | /' "$log_dir/$name.log" | tail -n 60
    # Again at the end, just the failed checks: a CI page that shows only
    # the last lines of the run still names them.  A check's detail may
    # span lines (a client printing a tool's text result): the lines up to
    # the next check are joined onto its FAIL line, " | " between them, so
    # the why survives that page too (no more than the 900 characters
    # kept: a check followed by megabytes of output costs no more).
    awk '/^(ok|FAIL) - / {if (f != "") print f; f = ""}
         /^FAIL - / {f = $0; next}
         f != "" && NF && length(f) < 900 {f = f " | " $0}
         END {if (f != "") print f}' "$log_dir/$name.log" |
      head -n 20 | cut -c1-900 | sed "s/^/$name: /" >>"$log_dir/failed-checks"
  fi
}

# reap_one: wait for a lane to end and report every lane that has (its
# exit status file is the last thing it writes).  Not by the pid `wait -n
# -p` names: once a lane's pid was given to the next lane at once (a
# test had set the host's pid counter back), bash named the new lane for
# the one that had ended, and the run stopped on its missing status.
reap_one() {
  local pid reported=0
  while [ "$reported" -eq 0 ]; do
    wait -n 2>/dev/null
    for pid in "${!running[@]}"; do
      [ -s "$log_dir/${running[$pid]}.rc" ] || continue
      report "${running[$pid]}"
      unset "running[$pid]"
      reported=1
    done
    [ "$reported" -eq 0 ] && sleep 0.2
  done
}

for s in $ordered; do
  while [ "${#running[@]}" -ge "$JOBS" ]; do reap_one; done
  launch "$s"
done
while [ "${#running[@]}" -gt 0 ]; do reap_one; done
for s in $alone; do launch "$s"; reap_one; done
if [ -n "$failing" ]; then
  echo "failing scripts:$failing"
  cat "$log_dir/failed-checks" 2>/dev/null
fi
# This run's durations order the next run on this machine (a partial run
# updates the scripts it ran and keeps the rest).
merge_durations() {  # merge_durations OLD NEW > OUT
  awk 'FNR == NR {d[$1] = $2; next} {d[$1] = $2} END {for (n in d) print n, d[n]}' "$1" "$2" | sort
}
if [ -s "$log_dir/durations" ]; then
  merge_durations "$durations" "$log_dir/durations" >"$log_dir/merged" 2>/dev/null &&
    cp "$log_dir/merged" "$BUILD/it-durations.txt" 2>/dev/null
  if [ "$save_durations" = 1 ]; then
    merge_durations tests/integration/durations.txt "$log_dir/durations" >"$log_dir/merged" &&
      cp "$log_dir/merged" tests/integration/durations.txt
  fi
fi
rm -rf "$log_dir"
echo "integration: $total_pass passed, $total_fail failed"
[ -n "${COUNTS_FILE:-}" ] && echo "integration $total_pass $total_fail" >>"$COUNTS_FILE"
[ "$total_fail" -eq 0 ]

#!/usr/bin/env bash
# Process and memory limits as a workload meets them (issues 38.2, 40.1;
# docs/hardening.md "Limits"), with `tollgate run`:
#   - runsc: 20 s of process churn (8 shell loops of /bin/true, at most 16
#     live guest processes) completes: the host cgroup bounds the Sentry's
#     own tasks (64 per guest process), which churn on the ptrace platform
#     runs up past a thousand; the sandbox used to die at 1024;
#   - a fork bomb is bounded under both backends: runc by the pids cgroup,
#     which `tollgate run` reports naming pids.max; runsc by RLIMIT_NPROC
#     inside the sandbox (the guest sees EAGAIN at 127; no host counter
#     sees it) with the sandbox alive;
#   - runsc: a caller's own pids.limit (40) bounds the guest, not the
#     Sentry's host tasks; a sandbox that does reach its host task limit
#     (lowered to 60 under it, as an operator could) ends with a message
#     naming pids.max, not exit 2 and silence, also when tollgate was not
#     scheduled while runsc removed the cgroup (the kernel's log says it);
#   - memory: a caller's limit stands (1 GiB is 1 GiB, not the profile's
#     512 MiB), the profile's applies where it gave none, one above the
#     host config's memory_ceiling_mib is refused naming the ceiling; a
#     hog past its own 64 MiB is OOM-killed and the run says so (under
#     runsc, with tollgate stopped until the sandbox's cgroup is gone:
#     the kernel's log says it).
set -u
. "$(dirname "$0")/lib.sh"
B=$TG_ROOT/b
probe_bundle "$B" true
cp "$B/config.json" "$TG_ROOT/spec.json"
# set_args ARGS...: the probe bundle again, running ARGS.
set_args() { fresh "$TG_ROOT/spec.json" "$B"; edit_json "$B/config.json" 'c["process"]["args"] = args' "$@"; }
eff() { json_get "$@" <"$TG_ROOT/eff.json" 2>&1; }

# --- runsc: process churn ---------------------------------------------------
write_config 'runtime="runsc"'
set_args sh -c 'for i in 1 2 3 4 5 6 7 8; do (end=$(($(date +%s) + 20)); n=0
  while [ "$(date +%s)" -lt "$end" ]; do /bin/true; n=$((n + 1)); done; echo "loop $n") & done; wait; echo churn-done'
out=$(tg run --bundle "$B" lim-churn 2>"$TG_ROOT/err")
rc=$?
check_eq "runsc: 20 s of churn under 16 live processes completes (exit 0)" 0 "$rc"
check_eq "runsc: ... every loop finished" 8 "$(grep -c '^loop [1-9]' <<<"$out")"
check_match "runsc: ... and the shell after them" 'churn-done' "$out"
check_eq "runsc: ... with no limit reported" "" "$(cat "$TG_ROOT/err")"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$TG_ROOT/err"

# --- fork bombs -------------------------------------------------------------
for be in runsc runc; do
  write_config "runtime=\"$be\""
  set_args /bin/tollgate-probe fork 2000
  out=$(tg run --bundle "$B" "lim-fork-$be" 2>"$TG_ROOT/err")
  rc=$?
  if [ "$be" = runc ]; then
    check_eq "$be: fork bomb stops at the pids cgroup" '{"started": 255, "error": "EAGAIN"}' "$out"
    check_match "$be: ... and run names the limit" "container lim-fork-runc reached its process limit \(pids.max 256, linux.resources.pids.limit\): [1-9][0-9]* forks were refused" \
      "$(cat "$TG_ROOT/err")"
  else
    check_eq "$be: fork bomb stops at the guest's RLIMIT_NPROC" '{"started": 127, "error": "EAGAIN"}' "$out"
    check_eq "$be: ... and the sandbox lives to the end (exit 0)" 0 "$rc"
  fi
done

# runsc: a caller's own pids.limit (40) is the guest's limit too, and the
# host cgroup gets 64 tasks for each guest process.
write_config 'runtime="runsc"'
set_args /bin/tollgate-probe fork 100
edit_json "$B/config.json" 'c["linux"].setdefault("resources", {})["pids"] = {"limit": 40}'
out=$(tg run --bundle "$B" lim-guest 2>"$TG_ROOT/err")
check_eq "runsc: a caller's pids.limit 40 bounds the guest" '{"started": 39, "error": "EAGAIN"}' "$out"
check_eq "runsc: ... and the sandbox lives (no limit reported)" "" "$(cat "$TG_ROOT/err")"

# A runsc sandbox at its host task limit (an operator lowered it to 60
# under the running sandbox; the Sentry then cannot make a thread).
# Lowered once the sandbox runs: lowered while the sandbox still starts
# (a loaded machine), runsc's create fails instead ("cannot read client
# sync file"), which is not the case under test.
running_now() { [ "$(tg state "$1" 2>/dev/null | json_get status 2>/dev/null)" = running ]; }
set_args sh -c 'sleep 3; /bin/tollgate-probe fork 100'
(wait_for 30 running_now lim-tasks && echo 60 >/sys/fs/cgroup/pids/lim-tasks/pids.max) &
tg run --bundle "$B" lim-tasks >/dev/null 2>"$TG_ROOT/err"
rc=$?
wait
check_fails "runsc: a sandbox at its host task limit fails" test "$rc" -eq 0
check_match "runsc: ... and run names the limit" 'container lim-tasks: its gVisor sandbox reached its host task limit \(pids.max 60' \
  "$(cat "$TG_ROOT/err")"

# The same while tollgate is not scheduled (a loaded machine; here it is
# stopped) from before the Sentry's death until runsc has removed the
# sandbox's cgroups: no tick reads their counters, and the kernel's log of
# the refusal (or the OOM kill, below) is what names the limit.  The
# program waits for SIGUSR1 (`wait` returns at once; no process is made
# until then), then runs ARGS.
# run_stopped ID CONTROLLER ARGS...: runs it so; $rc and $TG_ROOT/err.
run_stopped() {
  local id=$1 ctrl=$2 tgpid; shift 2
  set_args sh -c 'trap "$* ; exit 0" USR1; sleep 1000 & wait' sh "$@"
  [ -n "${limit_json:-}" ] && edit_json "$B/config.json" "$limit_json"
  "$TG" --root "$TG_ROOT" run --bundle "$B" "$id" >/dev/null 2>"$TG_ROOT/err" &
  tgpid=$!
  wait_for 30 running_now "$id"
  [ "$ctrl" = pids ] && echo 60 >"/sys/fs/cgroup/pids/$id/pids.max"
  sleep 0.3 # ticks read the limits as they are now
  kill -STOP "$tgpid"
  tg kill "$id" USR1
  cgroup_gone() { [ ! -d "/sys/fs/cgroup/$ctrl/$id" ]; }
  check "runsc, tollgate stopped ($id): the sandbox dies and its cgroup goes" wait_for 30 cgroup_gone
  kill -CONT "$tgpid"
  wait "$tgpid"
  rc=$?
}
run_stopped lim-stopped pids /bin/tollgate-probe fork 100
check_fails "runsc, tollgate stopped: the run fails" test "$rc" -eq 0
check_match "runsc, tollgate stopped: ... and run names the limit, from the kernel's log" \
  'container lim-stopped: its gVisor sandbox reached its host task limit \(pids.max 60, linux.resources.pids.limit\): host threads' \
  "$(cat "$TG_ROOT/err")"
# A hog past a 256 MiB limit: the kernel's OOM killer ends the Sentry.
limit_json='c["linux"].setdefault("resources", {})["memory"] = {"limit": 268435456}' \
  run_stopped lim-oom memory /bin/tollgate-probe hog 1024
check_eq "runsc, tollgate stopped: a hog past 256 MiB ends the sandbox (137)" 137 "$rc"
check_match "runsc, tollgate stopped: ... and run names the memory limit, from the kernel's log" \
  'container lim-oom reached its memory limit \(256 MiB, linux.resources.memory.limit\): the OOM killer ended 1 process of its gVisor sandbox' \
  "$(cat "$TG_ROOT/err")"

# --- memory -----------------------------------------------------------------
for be in runsc runc; do
  write_config "runtime=\"$be\"" memory_ceiling_mib=2048
  set_args sh -c 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null; true'
  edit_json "$B/config.json" 'c["linux"].setdefault("resources", {})["memory"] = {"limit": 1073741824}'
  check "$be: a 1 GiB limit within the ceiling: create" tg create --bundle "$B" "lim-mem-$be"
  cp "$TG_ROOT/lim-mem-$be/config.json" "$TG_ROOT/eff.json" 2>/dev/null
  check_eq "$be: ... keeps 1 GiB (not the profile's 512 MiB)" 1073741824 "$(eff linux.resources.memory.limit)"
  tg delete --force "lim-mem-$be" >/dev/null 2>&1
  set_args true
  check "$be: no limit asked: create" tg create --bundle "$B" "lim-mem-$be"
  cp "$TG_ROOT/lim-mem-$be/config.json" "$TG_ROOT/eff.json" 2>/dev/null
  check_eq "$be: ... gets the profile's 512 MiB" 536870912 "$(eff linux.resources.memory.limit)"
  tg delete --force "lim-mem-$be" >/dev/null 2>&1
  set_args true
  edit_json "$B/config.json" 'c["linux"].setdefault("resources", {})["memory"] = {"limit": 4294967296}'
  check_refused "$be: 4 GiB above a 2048 MiB ceiling is refused" \
    'linux.resources.memory.limit 4096 MiB is above this host.s memory ceiling of 2048 MiB.*memory_ceiling_mib' \
    tg create --bundle "$B" "lim-mem-$be"
  check_fails "$be: ... leaving nothing" test -d "$TG_ROOT/lim-mem-$be"
done
# A hog past its own 64 MiB limit (runc: the cgroup is the container's).
write_config 'runtime="runc"'
set_args /bin/tollgate-probe hog 512
edit_json "$B/config.json" 'c["linux"].setdefault("resources", {})["memory"] = {"limit": 67108864}'
tg run --bundle "$B" lim-hog >/dev/null 2>"$TG_ROOT/err"
check_eq "runc: a hog past its 64 MiB is OOM-killed" 137 "$?"
check_match "runc: ... and run names the limit" 'container lim-hog reached its memory limit \(64 MiB, linux.resources.memory.limit\): the OOM killer ended' \
  "$(cat "$TG_ROOT/err")"

check_eq "nothing left in tollgate" "" "$(tg list -q 2>&1)"
check_eq "nothing left in runsc" "" "$(runsc --root "$TG_ROOT/backend/runsc" list --quiet 2>/dev/null)"
check_eq "nothing left in runc" "" "$(runc --root "$TG_ROOT/backend/runc" list --quiet 2>/dev/null)"

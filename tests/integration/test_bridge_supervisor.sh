#!/usr/bin/env bash
# The sidecar's supervisor and the container's death, under runsc and runc,
# with the detached sidecar (create/start):
#  - kill -9 of the supervisor: the sidecar keeps serving, unsupervised (a
#    14 s call, past the heartbeat's 10 s bound, is answered); then kill -9
#    of that sidecar: its caller gives up on the stopped heartbeat after
#    10 s, not at its 60 s timeout; delete still stops everything;
#  - the container killed mid-call: the sidecar notices through its pidfd
#    and exits; after delete nothing is left (process, mount, state);
#  - the sidecar killed just as its container exits, mid-call: the
#    supervisor records its death and the call's unknown outcome, and the
#    log verifies.
# Apart from test_bridge_faults, which runs alone for its 2 s bound: these
# bounds (10 s, 40 s) hold beside other scripts, and most of this script's
# time is the 14 s call and the heartbeat's 10 s, which a lane can share.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

slow_tool_fixtures

# dead PID: gone, or a zombie its (stopped) parent has not reaped yet.
dead() { pid_gone "$1" || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

for rt in $BACKENDS; do
  # --- kill -9 of the supervisor: the sidecar serves on, unsupervised ---
  id=dsup-$rt
  out=$TG_ROOT/$id.out
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    'while [ ! -e /run/tollgate/calls/go ]; do sleep 0.1; done; /run/tollgate/tollgate-call --timeout 60 slow "{\"s\":14}"; echo "rc=$?";
     while [ ! -e /run/tollgate/calls/go2 ]; do sleep 0.1; done; /run/tollgate/tollgate-call --timeout 60 slow "{\"s\":30}"; echo "rc2=$?"; sleep 60'
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >"$out" 2>&1
  on_exit "tg delete --force $id"
  sc=$(state_of "$id" tollgate.sidecar.pid)
  sup=$(state_of "$id" tollgate.sidecar.supervisor_pid)
  tg start "$id"
  kill -9 "$sup"
  check "$rt: supervisor: gone after kill -9" wait_for 5 pid_gone "$sup"
  check_eq "$rt: supervisor: state says unsupervised" unsupervised "$(state_of "$id" tollgate.sidecar.status)"
  touch "$TG_ROOT/$id/bridge/calls/go"
  check "$rt: supervisor: a call after its death" wait_for 40 grep -q 'rc=[0-9]' "$out"
  check_eq "$rt: supervisor: ... of 14 s, past the heartbeat's 10 s bound, is answered by the sidecar" \
    "rc=0" "$(grep -o 'rc=[0-9]*' "$out")"
  # Then the sidecar dies too: nobody answers, and the caller gives up
  # once the heartbeat has stood still for 10 s (not at its 60 s timeout).
  touch "$TG_ROOT/$id/bridge/calls/go2"
  check "$rt: supervisor: a call in flight" wait_for 30 tools_running 1
  killed=$SECONDS
  kill -9 "$sc"
  check "$rt: heartbeat: the caller gave up" wait_for 40 grep -q 'rc2=[0-9]' "$out"
  echo "# $rt: with the supervisor and the sidecar dead, the caller gave up after $((SECONDS - killed)) s"
  check_eq "$rt: heartbeat: ... with no answer (12)" "rc2=12" "$(grep -o 'rc2=[0-9]*' "$out")"
  check_match "$rt: heartbeat: ... because the heartbeat stopped; the call may or may not have run" \
    'heartbeat.*stopped.*may or may not have run' "$(cat "$out")"
  check "$rt: heartbeat: ... before its own 60 s timeout" test $((SECONDS - killed)) -lt 40
  check "$rt: supervisor: delete" tg delete --force "$id"
  check "$rt: supervisor: delete stopped the unsupervised sidecar" wait_for 5 pid_gone "$sc"
  check "$rt: supervisor: no mount left" no_mounts "$id"

  # --- the container killed while a call is running ---
  id=ck-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    '/run/tollgate/tollgate-call slow "{\"s\":4}"; echo "rc=$?"; sleep 60'
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >/dev/null 2>&1
  on_exit "tg delete --force $id"
  sc=$(state_of "$id" tollgate.sidecar.pid)
  sup=$(state_of "$id" tollgate.sidecar.supervisor_pid)
  tg start "$id"
  check "$rt: tool call in flight" wait_for 10 tool_running
  tg kill "$id" KILL
  check "$rt: sidecar exits when the container dies" wait_for 15 pid_gone "$sc"
  check "$rt: ... and its supervisor, restarting nothing" wait_for 5 pid_gone "$sup"
  check "$rt: no tool process left" wait_for 5 tool_gone
  check "$rt: delete after the container died" tg delete --force "$id"
  check "$rt: no mount left" no_mounts "$id"
  check "$rt: no state left" test ! -e "$TG_ROOT/$id"
  check_eq "$rt: audit log closed and verifies" 0 "$(tg audit verify "$TG_ROOT/audit/$id.jsonl" >/dev/null 2>&1; echo $?)"

  # --- the sidecar killed just as its container exits, mid-call ---
  # The supervisor is held (SIGSTOP) while both die, so it sees the
  # worker's death with the init already gone: the path that used to
  # write neither sidecar_died nor closed (issue 38).
  id=ks-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    '/run/tollgate/tollgate-call slow "{\"s\":20}"; echo "rc=$?"; sleep 60'
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >/dev/null 2>&1
  on_exit "tg delete --force $id"
  on_exit "kill -CONT $(state_of "$id" tollgate.sidecar.supervisor_pid)"
  sc=$(state_of "$id" tollgate.sidecar.pid)
  sup=$(state_of "$id" tollgate.sidecar.supervisor_pid)
  init=$(state_of "$id" pid)
  tg start "$id"
  check "$rt: kill at exit: a tool call in flight" wait_for 10 tool_running
  kill -STOP "$sup"
  kill -9 "$sc"
  tg kill "$id" KILL
  check "$rt: kill at exit: the sidecar is dead" wait_for 10 dead "$sc"
  check "$rt: kill at exit: the container's init is gone" wait_for 15 pid_gone "$init"
  kill -CONT "$sup"
  check "$rt: kill at exit: the supervisor ends" wait_for 10 pid_gone "$sup"
  log=$TG_ROOT/audit/$id.jsonl
  check_eq "$rt: kill at exit: the log records the sidecar's death" 1 "$(events "$log" sidecar_died)"
  check_eq "$rt: kill at exit: ... and the call's unknown outcome" 1 "$(events "$log" unknown)"
  check_eq "$rt: kill at exit: the audit log verifies (no unresolved intent)" 0 \
    "$(tg audit verify "$log" >/dev/null 2>&1; echo $?)"
  check "$rt: kill at exit: delete" tg delete --force "$id"
  check "$rt: kill at exit: no tool process left" wait_for 5 tool_gone
  check "$rt: kill at exit: no mount left" no_mounts "$id"
done
check_eq "no tollgate containers left" "" "$(tg list -q 2>/dev/null)"

#!/usr/bin/env bash
# Faults, under runsc and runc, with the detached sidecar (create/start):
#  - kill -9 of the sidecar during 8 concurrent in-container callers (4 C
#    client, 4 tollgate.py): every caller hears outcome_unknown within 2 s
#    of the death (measured: the callers' end times in the container
#    against the host's time of the kill; the 2 s bound is issue 28's
#    functional requirement), the running tools die with the sidecar, a new
#    sidecar serves later calls, `state` tells the truth, and the audit log
#    records the restart and the eight unknown outcomes and verifies;
#  - the same with sidecar_on_death "stop": the container is killed, state
#    says stopped and the sidecar dead, the log says why and verifies;
#  - kill -9 of the supervisor: the sidecar keeps serving, unsupervised (a
#    14 s call, past the heartbeat's 10 s bound, is answered); then kill -9
#    of that sidecar: its caller gives up on the stopped heartbeat after
#    10 s, not at its 60 s timeout; delete still stops everything;
#  - the container killed mid-call: the sidecar notices through its pidfd
#    and exits; after delete nothing is left (process, mount, state);
#  - the sidecar killed just as its container exits, mid-call: the
#    supervisor records its death and the call's unknown outcome, and the
#    log verifies.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

bridge_fixtures
cp "$here/bridge/slow.py" "$POL/"
cat > "$POL/policy.json" <<'P'
{"version": 1,
 "tools": {"slow": {"backend": {"type": "exec", "argv": ["slow.py"]}, "timeout": 40,
                    "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100}}
P
chmod -R a+rX "$POL"

tools_running() { [ "$(pgrep -fc "$POL/slow.py")" -ge "$1" ]; }
events() { python3 - "$1" "$2" <<'PY'
import json, sys
print(sum(1 for r in map(json.loads, open(sys.argv[1])) if r.get("event") == sys.argv[2]))
PY
}
tool_running() { pgrep -f "$POL/slow.py" >/dev/null; }
tool_gone() { ! tool_running; }
no_mounts() { ! grep -q " $TG_ROOT/$1" /proc/self/mounts; }
# dead PID: gone, or a zombie its (stopped) parent has not reaped yet.
dead() { pid_gone "$1" || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# callers_report OUT KILL_TIME N: checks every caller's line in OUT.
callers_report() {
  python3 - "$@" <<'PY'
import json, sys
path, killed, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(l) for l in open(path) if l.startswith("{")]
calls = [l for l in lines if "caller" in l]
bad = []
for c in calls:
    code = c.get("code") if c["client"] == "py" else ("outcome_unknown" if c["rc"] == 14 else "rc=%s" % c["rc"])
    if code != "outcome_unknown" or "may or may not have run" not in c["msg"] or "killed by signal 9" not in c["msg"]:
        bad.append("%s: %s %s" % (c["caller"], code, c["msg"]))
waits = [c["end"] - killed for c in calls]
print("callers=%d bad=%s max_wait_after_kill=%.3f" % (len(calls), bad or "none", max(waits) if waits else -1))
PY
}

for rt in $BACKENDS; do
  # --- kill -9 of the sidecar during 8 concurrent callers: restart ---
  id=die-$rt
  log=$TG_ROOT/audit/$id.jsonl
  out=$TG_ROOT/$id.out
  py_bundle "$TG_ROOT/bundles/$id" python3 /t/dying.py 8
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >"$out" 2>&1
  on_exit "tg delete --force $id"
  sc=$(state_of "$id" tollgate.sidecar.pid)
  check "$rt: sidecar running after create (pid $sc)" kill -0 "$sc"
  check "$rt: the sidecar is not create's child" test "$(ps -o ppid= -p "$sc" | tr -d ' ')" != "$$"
  check_eq "$rt: state: sidecar running, no restart" "running 0" \
    "$(state_of "$id" tollgate.sidecar.status) $(state_of "$id" tollgate.sidecar.restarts)"
  tg start "$id"
  check "$rt: 8 tool calls in flight" wait_for 30 tools_running 8
  killed=$(date +%s.%N)
  kill -9 "$sc"
  check "$rt: every caller answered, then a later call" wait_for 40 grep -q '"after"' "$out"
  report=$(callers_report "$out" "$killed" 8)
  echo "# $rt: kill -9 of the sidecar during 8 callers: $report"
  check_match "$rt: 8 callers, each told outcome_unknown: the sidecar died, the call may or may not have run" \
    '^callers=8 bad=none ' "$report"
  wait=${report##*=}
  check "$rt: no caller waited 2 s or more after the kill (max ${wait} s)" \
    python3 -c "import sys; sys.exit(0 if 0 <= float('$wait') < 2.0 else 1)"
  check_match "$rt: later calls work after the restart (C and Python clients)" \
    '"c_rc": 0, "c_msg": "", "py_code": "ok"' "$(grep '"after"' "$out")"
  check "$rt: the running tools died with the sidecar" wait_for 5 tool_gone
  sc2=$(state_of "$id" tollgate.sidecar.pid)
  check_eq "$rt: state: sidecar running again, restarted once" "running 1" \
    "$(state_of "$id" tollgate.sidecar.status) $(state_of "$id" tollgate.sidecar.restarts)"
  check "$rt: ... by a new sidecar (pid $sc2)" test "$sc2" != "$sc" -a "$sc2" -gt 0
  check_match "$rt: state says how it died" 'killed by signal 9.*restarted' "$(state_of "$id" tollgate.sidecar.last_death)"
  check_eq "$rt: the log has one sidecar_died record (restart) and 8 unknown outcomes" "1 8 restart" \
    "$(events "$log" sidecar_died) $(events "$log" unknown) $(grep '"event":"sidecar_died"' "$log" | json_get outcome)"
  check "$rt: the log verifies across the restart (--open: still running)" tg audit verify --open "$log"
  touch "$TG_ROOT/$id/bridge/calls/go"
  check "$rt: the container ends by itself" wait_for 30 status_is "$id" stopped
  check "$rt: delete after a restart" tg delete --force "$id"
  check "$rt: the log is closed and verifies" tg audit verify "$log"
  check "$rt: no mount left after delete" no_mounts "$id"
  check "$rt: no state left after delete" test ! -e "$TG_ROOT/$id"
  check "$rt: no sidecar left" pid_gone "$sc2"

  # --- the same with sidecar_on_death "stop": the container is killed ---
  write_config 'sidecar_on_death="stop"'
  id=dstop-$rt
  log=$TG_ROOT/audit/$id.jsonl
  out=$TG_ROOT/$id.out
  py_bundle "$TG_ROOT/bundles/$id" python3 /t/dying.py 2
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >"$out" 2>&1
  on_exit "tg delete --force $id"
  sc=$(state_of "$id" tollgate.sidecar.pid)
  tg start "$id"
  check "$rt: stop: 2 tool calls in flight" wait_for 30 tools_running 2
  kill -9 "$sc"
  check "$rt: stop: the container is stopped" wait_for 10 status_is "$id" stopped
  check_eq "$rt: stop: state says the sidecar is dead" dead "$(state_of "$id" tollgate.sidecar.status)"
  check_match "$rt: stop: state says why" 'killed by signal 9.*sidecar_on_death is "stop".*container was killed' \
    "$(state_of "$id" tollgate.sidecar.last_death)"
  check_eq "$rt: stop: the log says why: sidecar_died (stop), 2 unknown outcomes, closed" "1 2 stop closed" \
    "$(events "$log" sidecar_died) $(events "$log" unknown) $(grep '"event":"sidecar_died"' "$log" | json_get outcome) $(tail -n1 "$log" | json_get event)"
  check "$rt: stop: the log verifies" tg audit verify "$log"
  check "$rt: stop: delete" tg delete --force "$id"
  check "$rt: stop: no mount left" no_mounts "$id"
  write_config

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

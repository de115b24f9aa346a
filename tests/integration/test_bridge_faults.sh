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
# The supervisor's death, the container's death mid-call and the sidecar's
# death at the container's exit are test_bridge_supervisor's: this script
# runs alone (run.sh) for the 2 s bound, and that one need not.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

bridge_fixtures
slow_tool_fixtures

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
done
check_eq "no tollgate containers left" "" "$(tg list -q 2>/dev/null)"

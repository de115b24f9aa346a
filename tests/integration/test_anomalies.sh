#!/usr/bin/env bash
# Anomaly limits (docs/policy.md, "Anomaly limits") with real programs in
# real containers, under runsc and runc:
#   - the issue's shape: an allowed call, three calls the policy denies
#     with varied arguments, then allowed calls: under
#     {"denials_in_a_row": 3, "action": "stop"} the later calls never run,
#     the container is stopped, the log has the anomaly record (audit show,
#     calls) and verifies; through `tollgate run` (in-process bridge) and
#     create/start (the sidecar);
#   - each limit with each action: log (all four limits in one run, the
#     program carries on; 8 callers at once are counted exactly), park
#     (all four, per-limit form: each time the next call waits until
#     `tollgate approve`), stop (failures_in_a_row,
#     result_bytes, whose crossing result is withheld, calls_per_second
#     from a burst of the C client);
#   - a sidecar killed mid-run: its successor carries on the count;
#   - a stop's grace (issue 38, item 9): a Python program writing to a
#     pipe prints, makes 3 denied calls, catches the anomaly error, prints
#     again and exits: all its output arrives, `tollgate run` exits 15 and
#     names the limit and the record on stderr;
#   - denials_in_window (item 10): the issue's probe loop, an allowed call
#     after every 4 denied ones, never makes denials_in_a_row: 5, and is
#     stopped by 10 denials among the last 20 calls.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

bridge_fixtures # the Python rootfs (and $POL, which is ours below too)

# Exec tools and the alert hook run as uid 65534: they must reach them.
chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL"
printf '#!/bin/sh\necho "it broke" >&2\nexit 1\n' > "$POL/fail.sh"
printf '#!/bin/sh\ncat >> %s/alerts.jsonl\necho >> %s/alerts.jsonl\n' "$POL" "$POL" > "$POL/alert.sh"
touch "$POL/alerts.jsonl"
chmod 755 "$POL/fail.sh" "$POL/alert.sh"
chmod 666 "$POL/alerts.jsonl"
chmod -R a+rX "$POL"

# policy NAME ANOMALIES-JSON: echo (denies x == "no"), a failing exec tool.
policy() {
  cat > "$POL/$1.json" <<P
{"version": 1,
 "tools": {
   "echo": {"backend": {"type": "builtin", "name": "echo"},
            "args": {"type": "object", "properties": {"x": {"type": "string"}, "i": {"type": "integer"},
                     "pad": {"type": "string"}}},
            "rules": [{"if": {"arg": "x", "op": "==", "value": "no"}, "effect": "deny", "reason": "no means no"},
                      {"effect": "allow"}]},
   "fail": {"backend": {"type": "exec", "argv": ["fail.sh"]}, "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 500},
 "approval": {"timeout": 60},
 "anomalies": $2}
P
}

policy denials '{"denials_in_a_row": 3, "action": "stop"}'
policy all_log "{\"denials_in_a_row\": 2, \"failures_in_a_row\": 2, \"result_bytes\": 2000,
                 \"calls_per_second\": 5, \"action\": \"log\", \"alert_hook\": \"$POL/alert.sh\"}"
policy all_park '{"denials_in_a_row": {"limit": 2, "action": "park"},
                  "failures_in_a_row": {"limit": 2, "action": "park"},
                  "result_bytes": {"limit": 2000, "action": "park"},
                  "calls_per_second": {"limit": 10, "action": "park"}}'
policy failures '{"failures_in_a_row": 2, "action": "stop"}'
policy bytes '{"result_bytes": 2000, "action": "stop"}'
policy rate '{"calls_per_second": 5, "action": "stop"}'
policy window '{"denials_in_a_row": 5, "denials_in_window": {"count": 10, "calls": 20}, "action": "stop",
                "stop_grace_ms": 5000}'

out=$(tg policy check "$POL/denials.json" "$POL/all_park.json" "$POL/window.json" 2>&1)
check_match "policy check accepts and describes the anomaly limits" \
  'denials.json: anomaly limits: denials_in_a_row 3 \(stop\); stop grace 2000 ms' "$out"
check_match "... the window and a grace of its own" \
  'window.json: anomaly limits: denials_in_a_row 5 \(stop\), denials_in_window 10 of 20 calls \(stop\); stop grace 5000 ms' "$out"
check_match "... the per-limit form too" \
  'all_park.json: anomaly limits: denials_in_a_row 2 \(park\), calls_per_second 10 \(park\), failures_in_a_row 2 \(park\), result_bytes 2000 \(park\)' "$out"
policy broken '{"denials_in_a_row": 0, "action": "halt"}'
out=$(tg policy check "$POL/broken.json" 2>&1); rc=$?
check_eq "policy check refuses a broken anomalies section" 1 "$rc"
check_match "... naming the field, its position and the fix" \
  'broken.json:[0-9]+:[0-9]+: anomalies.denials_in_a_row: must be a whole number, 1 or more' "$out"
check_match "... every problem" 'anomalies.action: must be "stop"' "$out"

# The program of the issue: one allowed call, three denied (varied
# arguments), then allowed calls that must not run.
MUST_SHOW='C=/run/tollgate/tollgate-call
r=$($C echo "{\"x\":\"yes\"}"); echo "first=$? $r"
for i in 1 2 3; do $C echo "{\"x\":\"no\",\"i\":$i}" 2>/dev/null; echo "denied$i=$?"; done
for i in 1 2 3; do $C echo "{\"x\":\"later\",\"i\":$i}" 2>&1; echo "later$i=$?"; done
sleep 5; echo survived'

# log_facts LOG: one line per anomaly record ("kind action observed limit"),
# then "allowed_after=N": calls that ran after the first stop record.
log_facts() {
  python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
stop = None
for r in recs:
    if r["event"] == "anomaly":
        print(r["kind"], r["action"], r["observed"], r["limit"])
        if r["action"] == "stop" and stop is None:
            stop = r["seq"]
after = [r for r in recs if stop is not None and r["seq"] > stop and r["event"] in ("call", "outcome")
         and r.get("decision") == "allow" and r.get("outcome") == "ok"]
print("allowed_after=%d" % len(after))
PY
}

# must_show RT ID OUT LOG: the checks of the issue's shape.
must_show() {
  local rt=$1 id=$2 out=$3 log=$4 how=$5
  check_match "$rt $how: the first call ran" 'first=0 \{"x": ?"yes"\}' "$out"
  check_match "$rt $how: the denied calls exit 3" 'denied1=3.*denied2=3' "$(echo $out)"
  check_fails "$rt $how: no later call ran" grep -qE 'later[0-9]=0' <<<"$out"
  check_fails "$rt $how: the program was stopped before its end" grep -q survived <<<"$out"
  # Within the stop's grace (2 s) the program makes every later call,
  # and each is refused at once as an anomaly.
  check_eq "$rt $how: every later call was refused at once as an anomaly (exit 15)" \
    "later1=15 later2=15 later3=15" "$(grep -oE 'later[0-9]=[0-9]+' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
  check_match "$rt $how: ... saying which limit stopped the run" \
    'an anomaly stopped the run: 3 calls refused in a row \(denials_in_a_row: 3, action stop\)' "$out"
  local facts
  facts=$(log_facts "$log")
  check_match "$rt $how: the log has the anomaly record (kind, figures, action)" \
    '^denials_in_a_row stop 3 3' "$facts"
  check_eq "$rt $how: one anomaly record" 1 "$(grep -c '"event":"anomaly"' "$log")"
  check_match "$rt $how: no allowed call ran after it" 'allowed_after=0' "$facts"
  check "$rt $how: the audit log verifies" tg audit verify "$log"
  check_match "$rt $how: audit show lists the anomaly" \
    'anomaly .* stop .*denials_in_a_row: 3 calls refused in a row \(denials_in_a_row: 3, action stop\)' \
    "$(tg audit show "$log")"
  local calls
  calls=$(tg calls "$id")
  check_match "$rt $how: calls lists the anomaly" 'anomalies:.*denials_in_a_row +3 \(limit 3\) +action stop' \
    "$(echo $calls)"
  check_match "$rt $how: it counts in the budget used" 'anomalies +1 used' "$calls"
}

for rt in $BACKENDS; do
  # --- the issue's shape through `tollgate run` (the bridge in process) ---
  id=anom-run-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c "$MUST_SHOW"
  out=$(tg --runtime "$rt" run --policy "$POL/denials.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1); rc=$?
  check_eq "$rt run: an anomaly stopped the run (exit 15)" 15 "$rc"
  check_match "$rt run: it says which limit and where the record is, after the grace killed the program" \
    "tollgate run: an anomaly limit stopped the run: 3 calls refused in a row \\(denials_in_a_row: 3, action stop\\); the container's own status was 137; its record: call [^ ]+ in $TG_ROOT/audit/$id.jsonl" "$out"
  must_show "$rt" "$id" "$out" "$TG_ROOT/audit/$id.jsonl" run

  # --- the same through create/start: the sidecar stops the container ---
  id=anom-side-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c "$MUST_SHOW"
  tg --runtime "$rt" create --policy "$POL/denials.json" -b "$TG_ROOT/bundles/$id" "$id" \
    >"$TG_ROOT/$id.out" 2>&1
  on_exit "tg delete --force $id"
  tg start "$id"
  check "$rt sidecar: the container is stopped" wait_for 30 status_is "$id" stopped
  check "$rt sidecar: delete" tg delete "$id"
  must_show "$rt" "$id" "$(cat "$TG_ROOT/$id.out")" "$TG_ROOT/audit/$id.jsonl" sidecar

  # --- log: all four limits in one run; the program carries on ---
  id=anom-log-$rt
  : > "$POL/alerts.jsonl"
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    $C echo "{\"x\":\"no\",\"i\":1}" 2>/dev/null; $C echo "{\"x\":\"no\",\"i\":2}" 2>/dev/null
    $C --repeat 24 --concurrency 8 echo "{\"x\":\"no\"}" >/dev/null 2>&1
    $C fail "{}" 2>/dev/null; $C fail "{}" 2>/dev/null
    pad=$(head -c 1500 /dev/zero | tr "\0" a)
    $C echo "{\"pad\":\"$pad\"}" >/dev/null; $C echo "{\"pad\":\"$pad\"}" >/dev/null
    $C --repeat 20 --concurrency 4 echo "{\"x\":\"burst\"}" >/dev/null
    r=$($C echo "{\"x\":\"end\"}"); echo "end=$? $r"'
  out=$(tg --runtime "$rt" run --policy "$POL/all_log.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1); rc=$?
  check_eq "$rt log: the program ran to its end" 0 "$rc"
  check_match "$rt log: calls still run after the anomalies" 'end=0 \{"x": ?"end"\}' "$out"
  log=$TG_ROOT/audit/$id.jsonl
  facts=$(log_facts "$log")
  for kind in denials_in_a_row failures_in_a_row result_bytes calls_per_second; do
    check "$rt log: $kind is flagged with action log" grep -q "^$kind log " <<<"$facts"
  done
  check_fails "$rt log: no other action" grep -qE ' (stop|park) ' <<<"$facts"
  check_eq "$rt log: 2 denials, then 24 from 8 callers at once: 13 anomalies, every second denial" 13 \
    "$(grep -c '^denials_in_a_row log 2 2' <<<"$facts")"
  check "$rt log: the audit log verifies" tg audit verify "$log"
  n=$(grep -c '"event":"anomaly"' "$log")
  check_match "$rt log: calls counts every anomaly in the budget used ($n)" "anomalies +$n used" "$(tg calls "$id")"
  # (hooks of concurrent calls append at once: an object is one write, its
  # newline another, so count the objects, not the lines)
  check_eq "$rt log: the alert hook was told of each one" "$n" "$(grep -o '"kind"' "$POL/alerts.jsonl" | wc -l)"
  check_match "$rt log: ... with the container, the call and the figures" \
    "\"container\": ?\"$id\".*\"call\"|\"call\".*\"container\": ?\"$id\"" "$(head -n1 "$POL/alerts.jsonl")"

  # --- park: each limit parks the next call until `tollgate approve` ---
  id=anom-park-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    $C echo "{\"x\":\"no\",\"i\":1}" 2>/dev/null; $C echo "{\"x\":\"no\",\"i\":2}" 2>/dev/null
    $C echo "{\"x\":\"a1\"}" >/dev/null; echo "a1=$?"
    $C fail "{}" 2>/dev/null; $C fail "{}" 2>/dev/null
    $C echo "{\"x\":\"a2\"}" >/dev/null; echo "a2=$?"
    pad=$(head -c 1500 /dev/zero | tr "\0" a)
    $C echo "{\"pad\":\"$pad\"}" >/dev/null; $C echo "{\"pad\":\"$pad\"}" >/dev/null
    $C echo "{\"x\":\"a3\"}" >/dev/null; echo "a3=$?"
    $C --repeat 30 --concurrency 1 echo "{\"x\":\"burst\"}" >/dev/null
    $C echo "{\"x\":\"a4\"}" >/dev/null; echo "a4=$?"
    echo end'
  tg --runtime "$rt" run --policy "$POL/all_park.json" -b "$TG_ROOT/bundles/$id" "$id" \
    >"$TG_ROOT/$id.out" 2>&1 &
  runpid=$!
  # a person approving whatever waits, until the program ends
  approved=0
  while kill -0 "$runpid" 2>/dev/null; do
    for call in $(tg pending "$id" --format json 2>/dev/null |
                  python3 -c 'import json,sys; [print(p["call"]) for p in json.load(sys.stdin)]' 2>/dev/null); do
      tg approve "$id" "$call" --reason "looked at it" >/dev/null 2>&1 && approved=$((approved + 1))
    done
    sleep 0.1
  done
  wait "$runpid"; rc=$?
  out=$(cat "$TG_ROOT/$id.out")
  check_eq "$rt park: the program ran to its end" "0 a1=0 a2=0 a3=0 a4=0 end" "$rc $(echo $out)"
  log=$TG_ROOT/audit/$id.jsonl
  facts=$(log_facts "$log")
  for kind in denials_in_a_row failures_in_a_row result_bytes calls_per_second; do
    check "$rt park: $kind is flagged with action park" grep -q "^$kind park " <<<"$facts"
    check_match "$rt park: a call parked for $kind waited and was approved by a person" \
      "\"decision\":\"allow\",\"reason\":\"anomaly: [^\"]*\\($kind: [0-9]+, action park\\)[^\"]*\",\"approver\":\"uid:0\"" \
      "$(cat "$log")"
  done
  echo "# $rt park: $approved approvals given"
  check "$rt park: the audit log verifies" tg audit verify "$log"

  # --- stop: failures_in_a_row ---
  id=anom-fail-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    $C echo "{\"x\":\"yes\"}" >/dev/null; echo "first=$?"
    $C fail "{}" 2>/dev/null; echo "fail1=$?"; $C fail "{}" 2>/dev/null; echo "fail2=$?"
    $C echo "{\"x\":\"later\"}"; echo "later=$?"
    sleep 5; echo survived'
  out=$(tg --runtime "$rt" run --policy "$POL/failures.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1); rc=$?
  log=$TG_ROOT/audit/$id.jsonl
  facts=$(log_facts "$log")
  check_eq "$rt stop failures: an anomaly stopped the run (15)" 15 "$rc"
  check_match "$rt stop failures: the first failure exits 7" 'first=0 fail1=7' "$(echo $out)"
  check_fails "$rt stop failures: the program was stopped" grep -q survived <<<"$out"
  check_match "$rt stop failures: the later call was refused at once (exit 15)" 'later=15' "$out"
  check_match "$rt stop failures: the anomaly record" '^failures_in_a_row stop 2 2' "$facts"
  check_match "$rt stop failures: no allowed call ran after it" 'allowed_after=0' "$facts"
  check "$rt stop failures: the audit log verifies" tg audit verify "$log"

  # --- stop: result_bytes; the result that crosses is withheld ---
  id=anom-bytes-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    pad=$(head -c 1500 /dev/zero | tr "\0" a)
    $C echo "{\"pad\":\"$pad\"}" >/dev/null; echo "big1=$?"
    $C echo "{\"pad\":\"$pad\"}" | head -c 100; echo "big2=$?"
    sleep 5; echo survived'
  out=$(tg --runtime "$rt" run --policy "$POL/bytes.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1); rc=$?
  log=$TG_ROOT/audit/$id.jsonl
  facts=$(log_facts "$log")
  check_eq "$rt stop result_bytes: an anomaly stopped the run (15)" 15 "$rc"
  check_match "$rt stop result_bytes: the first result was handed over" 'big1=0' "$out"
  check_fails "$rt stop result_bytes: the second never reached the program" grep -q aaaa <<<"$out"
  check_fails "$rt stop result_bytes: the program was stopped" grep -q survived <<<"$out"
  check_match "$rt stop result_bytes: the anomaly record" '^result_bytes stop [0-9]+ 2000' "$facts"
  check_match "$rt stop result_bytes: the crossing result is recorded as withheld" \
    '"outcome":"anomaly","message":"the result \([0-9]+ bytes\) is withheld' "$(cat "$log")"
  check "$rt stop result_bytes: the audit log verifies" tg audit verify "$log"

  # --- stop: calls_per_second, from a burst of the C client ---
  id=anom-rate-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    $C --repeat 200 --concurrency 4 echo "{\"x\":\"burst\"}"; echo "burst=$?"
    sleep 5; echo survived'
  out=$(tg --runtime "$rt" run --policy "$POL/rate.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1); rc=$?
  log=$TG_ROOT/audit/$id.jsonl
  facts=$(log_facts "$log")
  check_eq "$rt stop calls_per_second: an anomaly stopped the run (15)" 15 "$rc"
  check_fails "$rt stop calls_per_second: the program was stopped" grep -q survived <<<"$out"
  check_match "$rt stop calls_per_second: the anomaly record" '^calls_per_second stop 6 5' "$facts"
  check_eq "$rt stop calls_per_second: one anomaly record" 1 "$(grep -c '"event":"anomaly"' "$log")"
  # Four callers at once: up to three calls the gate admitted before the
  # anomaly may still end (and be recorded) after its record; none is
  # admitted after it (the 200-call burst stops far short, below).
  local_after=$(sed -n 's/^allowed_after=//p' <<<"$facts")
  check "$rt stop calls_per_second: no call admitted after it ran (${local_after:-?} in flight ended after the record, at most 3)" \
    test "${local_after:-99}" -le 3
  check "$rt stop calls_per_second: the audit log verifies" tg audit verify "$log"
  ok_calls=$(grep -c '"outcome":"ok"' "$log")
  check "$rt stop calls_per_second: far fewer than 200 calls ran ($ok_calls)" test "$ok_calls" -lt 100

  # --- a sidecar killed mid-run: its successor carries on the count ---
  id=anom-restart-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    $C echo "{\"x\":\"no\",\"i\":1}" 2>/dev/null; $C echo "{\"x\":\"no\",\"i\":2}" 2>/dev/null
    echo two-denied
    while [ ! -e /run/tollgate/calls/go ]; do sleep 0.05; done
    $C echo "{\"x\":\"no\",\"i\":3}" 2>/dev/null; echo "denied3=$?"
    $C echo "{\"x\":\"later\"}"; echo "later=$?"
    sleep 5; echo survived'
  log=$TG_ROOT/audit/$id.jsonl
  tg --runtime "$rt" create --policy "$POL/denials.json" -b "$TG_ROOT/bundles/$id" "$id" \
    >"$TG_ROOT/$id.out" 2>&1
  on_exit "tg delete --force $id"
  sc=$(state_of "$id" tollgate.sidecar.pid)
  tg start "$id"
  check "$rt restart: two denials" wait_for 30 grep -q two-denied "$TG_ROOT/$id.out"
  kill -9 "$sc"
  check "$rt restart: a new sidecar serves" wait_for 30 \
    eval '[ "$(state_of "$id" tollgate.sidecar.restarts)" = 1 ] && [ "$(state_of "$id" tollgate.sidecar.status)" = running ]'
  touch "$TG_ROOT/$id/bridge/calls/go"
  check "$rt restart: the third denial stops the container" wait_for 30 status_is "$id" stopped
  check "$rt restart: delete" tg delete "$id"
  out=$(cat "$TG_ROOT/$id.out")
  facts=$(log_facts "$log")
  check_fails "$rt restart: the program was stopped" grep -q survived <<<"$out"
  check_match "$rt restart: the later call was refused at once (exit 15)" 'later=15' "$out"
  check_match "$rt restart: the anomaly counted the denials of both sidecars" '^denials_in_a_row stop 3 3' "$facts"
  check_eq "$rt restart: after the sidecar's death" "sidecar_died anomaly" \
    "$(grep -oE '"event":"(sidecar_died|anomaly)"' "$log" | cut -d'"' -f4 | tr '\n' ' ' | sed 's/ $//')"
  check "$rt restart: the audit log verifies" tg audit verify "$log"

  # --- a stop's grace: the program's buffered output arrives ---
  id=anom-py-$rt
  py_bundle "$TG_ROOT/bundles/$id" python3 -c '
import tollgate
print("before", tollgate.call("echo", x="yes"))  # a pipe: block-buffered
for i in range(3):
    try:
        tollgate.call("echo", x="no", i=i)
    except tollgate.AnomalyDetected as e:
        print("early anomaly", i)
    except tollgate.ToolDenied:
        print("denied", i)
try:
    tollgate.call("echo", x="later")
    print("later ran")
except tollgate.AnomalyDetected as e:
    print("refused:", e.message)
print("after")'
  tg --runtime "$rt" run --policy "$POL/denials.json" -b "$TG_ROOT/bundles/$id" "$id" \
    >"$TG_ROOT/$id.out" 2>"$TG_ROOT/$id.err"; rc=$?
  out=$(cat "$TG_ROOT/$id.out"); err=$(cat "$TG_ROOT/$id.err")
  check_eq "$rt grace: an anomaly stopped the run (exit 15)" 15 "$rc"
  check_match "$rt grace: the program's output arrived, before and after the stop" \
    "^before \{'x': 'yes'\} denied 0 denied 1 denied 2 refused: an anomaly stopped the run: 3 calls refused in a row \(denials_in_a_row: 3, action stop\) after$" \
    "$(echo $out)"
  check_match "$rt grace: stderr names the limit, the program's own status and the record" \
    "tollgate run: an anomaly limit stopped the run: 3 calls refused in a row \(denials_in_a_row: 3, action stop\); the container's own status was 0; its record: call [^ ]+ in $TG_ROOT/audit/$id.jsonl" \
    "$err"
  log=$TG_ROOT/audit/$id.jsonl
  call=$(sed -n 's/.*its record: call \([^ ]*\) in .*/\1/p' <<<"$err")
  check_eq "$rt grace: that call's record is the anomaly's" "anomaly denials_in_a_row stop" \
    "$(grep "\"call\":\"$call\"" "$log" | grep '"event":"anomaly"' | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["event"], r["kind"], r["action"])')"
  check "$rt grace: the audit log verifies" tg audit verify "$log"

  # --- the same through the host SDK: Result and ProgramFailed say it ---
  out=$(TOLLGATE_ROOTFS=$PY_ROOTFS python3 - "$here/../../sdk" "$rt" "$TG_ROOT/sdk-audit" "$TG" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
from tollgate_sdk import ProgramFailed, Sandbox
rt, audit_dir, tg = sys.argv[2:5]
policy = {"version": 1,
          "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"},
                             "rules": [{"if": {"arg": "x", "op": "==", "value": "no"}, "effect": "deny"},
                                       {"effect": "allow"}]}},
          "anomalies": {"denials_in_a_row": 3, "action": "stop"}}
program = """
import tollgate
print("before")
for i in range(3):
    try:
        tollgate.call("echo", x="no", i=i)
    except tollgate.ToolDenied:
        pass
try:
    tollgate.call("echo", x="later")
except tollgate.AnomalyDetected as e:
    print("refused")
print("after")
"""
with Sandbox(policy=policy, runtime=rt, audit_dir=audit_dir, tollgate=tg) as sb:
    r = sb.run(program, check=False)
    print("status=%d stdout=%s" % (r.exit_status, r.stdout.split()))
    print("stopped_by=" + r.stopped_by)
    print("stderr_end=" + r.stderr.strip().splitlines()[-1])
    try:
        sb.run(program)
    except ProgramFailed as e:
        print("failed=" + str(e).splitlines()[0])
PY
)
  check_match "$rt sdk: the program's output, exit 15" "status=15 stdout=\['before', 'refused', 'after'\]" "$out"
  check_match "$rt sdk: Result.stopped_by names the limit and its record" \
    'stopped_by=denials_in_a_row: 3 calls refused in a row \(denials_in_a_row: 3, action stop\) \(its record: call [^ ]+ in [^ ]+\.jsonl\)' "$out"
  check_match "$rt sdk: stderr ends saying it (what tollgate mcp's result text shows)" \
    'stderr_end=tollgate run: an anomaly limit stopped the run: 3 calls refused in a row' "$out"
  check_match "$rt sdk: ProgramFailed leads with it" \
    'failed=an anomaly limit stopped the run: denials_in_a_row: 3 calls refused in a row' "$out"

  # --- denials_in_window: the probe loop of the issue ---
  id=anom-window-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    i=0
    while [ $i -lt 300 ]; do
      i=$((i + 1))
      if [ $((i % 5)) = 0 ]; then $C echo "{\"x\":\"fine\",\"i\":$i}" >/dev/null 2>&1
      else $C echo "{\"x\":\"no\",\"i\":$i}" >/dev/null 2>&1; fi
      rc=$?
      [ $rc = 15 ] && break
    done
    echo "probes=$i last=$rc"'
  out=$(tg --runtime "$rt" run --policy "$POL/window.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1); rc=$?
  log=$TG_ROOT/audit/$id.jsonl
  facts=$(log_facts "$log")
  check_eq "$rt window: an anomaly stopped the run (exit 15)" 15 "$rc"
  # denials 1-4, 6-9, 11-12: the 10th denial is call 12, so call 13 is refused
  check_match "$rt window: the probe loop was refused from its 13th call on" 'probes=13 last=15' "$out"
  check_match "$rt window: never 5 in a row: the window flagged it" '^denials_in_window stop 10 10' "$facts"
  check_eq "$rt window: one anomaly record" 1 "$(grep -c '"event":"anomaly"' "$log")"
  check_match "$rt window: stderr names the limit" \
    'an anomaly limit stopped the run: 10 calls refused among the last 20 \(denials_in_window: 10 of 20 calls, action stop\)' "$out"
  check_match "$rt window: audit show lists it" \
    'anomaly .* stop .*denials_in_window: 10 calls refused among the last 20 \(denials_in_window: 10 of 20 calls, action stop\)' \
    "$(tg audit show "$log")"
  check_match "$rt window: calls lists it with its window" \
    'anomalies:.*denials_in_window +10 \(limit 10 of 20 calls\) +action stop' "$(echo $(tg calls "$id"))"
  check "$rt window: the audit log verifies" tg audit verify "$log"
done

#!/usr/bin/env bash
# The call cap is exact across sidecar deaths (issue 38, item 3), under
# runsc and runc: 8 in-container callers, half of them calling an
# irreversible tool that runs until the sidecar is killed (so each kill
# finds 4 intents on record and in flight), half a builtin one; the
# sidecar is killed (-9) 5 times, then every caller calls the builtin tool
# until the cap (120) refuses it.  Every call the container made is
# counted once: the calls answered ok or outcome_unknown are exactly the
# cap, the log holds exactly that many distinct call ids before the
# refusals, and each caller's next call is refused with budget_exhausted.
# The program waits for the test's "go" (a file in the bridge area) before
# it may reach the cap, so the 5 kills come first however loaded the
# machine is.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

CAP=120
KILLS=5
bridge_fixtures
cp "$here/bridge/slow.py" "$POL/"
# slow's argument: a file made beside the container's "go" (where the
# tools' uid can see it).  A caller that
# looked for "go" just before the last kill's touch made it may still
# call slow, on the sidecar that nothing kills any more: that call then
# answers at once instead of after its 60 s.
for rt in $BACKENDS; do
cat > "$POL/cap-$rt.json" <<P
{"version": 1,
 "tools": {"slow": {"backend": {"type": "exec", "argv": ["slow.py", "$POL/go-$rt"]},
                    "irreversible": true,
                    "timeout": 90, "rules": [{"effect": "allow"}]},
           "echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": $CAP, "max_irreversible": 1000}}
P
done
chmod -R a+rX "$POL"
write_config 'sidecar_max_restarts=20'
# (tools_running N: lib.sh's, with slow_tool_fixtures' probes)

# Each caller prints "r CALLER I RC" per call, and stops at its first
# budget_exhausted (5); "done" when all have.  Before "go": the even
# callers call slow (it runs until its sidecar is killed), the odd ones
# make at most 8 builtin calls; after it, builtin calls until the cap.
PROGRAM='C=/run/tollgate/tollgate-call
go=/run/tollgate/calls/go
caller() {
  i=0
  while [ $i -lt 1000 ]; do
    i=$((i + 1))
    if [ -e $go ]; then $C echo "{\"c\":$1,\"i\":$i}" >/dev/null 2>&1; rc=$?
    elif [ $(($1 % 2)) = 0 ]; then $C slow "{\"s\":60,\"c\":$1,\"i\":$i}" >/dev/null 2>&1; rc=$?
    else
      [ $i -gt 8 ] && while [ ! -e $go ]; do sleep 0.1; done
      $C echo "{\"c\":$1,\"i\":$i}" >/dev/null 2>&1; rc=$?; sleep 0.3
    fi
    echo "r $1 $i $rc"
    [ $rc = 5 ] && return
  done
}
for c in 1 2 3 4 5 6 7 8; do caller $c & done
wait
echo done'

# log_ids LOG: distinct call ids the log counts as attempts within the
# cap (every call, intent and unknown record but the refusals of the cap),
# and the number of cap refusals on record.
log_ids() {
  python3 - "$1" <<'PY'
import json, sys
ids, over = set(), 0
for r in map(json.loads, open(sys.argv[1])):
    ev = r.get("event")
    if ev == "call" and r.get("outcome") == "budget_exhausted" and "max_tool_calls" in (r.get("reason") or ""):
        over += 1
    elif ev == "summary" and r.get("kind") == "over_cap":
        over += r.get("count", 0)
    elif ev in ("call", "intent", "unknown", "unanswerable", "withdrawn"):
        ids.add(r["call"])
print(len(ids), over)
PY
}

for rt in $BACKENDS; do
  id=cap-$rt
  log=$TG_ROOT/audit/$id.jsonl
  out=$TG_ROOT/$id.out
  make_bundle "$TG_ROOT/bundles/$id" sh -c "$PROGRAM"
  tg --runtime "$rt" create --policy "$POL/cap-$rt.json" -b "$TG_ROOT/bundles/$id" "$id" >"$out" 2>&1
  on_exit "tg delete --force $id"
  tg start "$id"
  killed=0
  for k in $(seq 1 $KILLS); do
    wait_for 60 tools_running 4 || break
    sc=$(state_of "$id" tollgate.sidecar.pid)
    kill -9 "$sc" || break
    # The go only now: given before the kill, a fast program could reach
    # the cap while the sidecar about to die still served it, and the
    # refusals it only counted (docs/audit.md, Summaries) die with it.
    [ "$k" = "$KILLS" ] && touch "$TG_ROOT/$id/bridge/calls/go" "$POL/go-$rt"
    # After the last kill the program has its "go" and may reach the cap
    # and end before the restarted sidecar is seen running: then the
    # restart count is what says it came back.
    wait_for 30 eval '[ "$(state_of "$id" tollgate.sidecar.restarts)" = '$k' ] &&
                      { [ '$k' = '$KILLS' ] || [ "$(state_of "$id" tollgate.sidecar.status)" = running ]; }' || break
    killed=$k
  done
  check_eq "$rt: the sidecar was killed $KILLS times, with calls in flight, and restarted each time" \
    "$KILLS" "$killed"
  check "$rt: every caller reached the cap" wait_for 120 grep -q '^done' "$out"
  check "$rt: the container ends" wait_for 30 status_is "$id" stopped
  tg delete "$id"
  counts=$(awk '$1 == "r" { n[$4]++ } END { for (c in n) if (c != 0 && c != 14 && c != 5) o += n[c];
                printf "ok=%d unknown=%d capped=%d other=%d", n[0], n[14], n[5], o }' "$out")
  echo "# $rt: answers the callers got: $counts"
  ok=$(sed 's/.*ok=\([0-9]*\).*/\1/' <<<"$counts"); unk=$(sed 's/.*unknown=\([0-9]*\).*/\1/' <<<"$counts")
  check "$rt: some calls were in flight at the kills (outcome_unknown: $unk)" test "$unk" -ge "$KILLS"
  check_eq "$rt: the calls answered ok or outcome_unknown are exactly the cap" "$CAP" "$((ok + unk))"
  check_match "$rt: each of the 8 callers was then refused by the cap, nothing else" 'capped=8 other=0$' "$counts"
  check_eq "$rt: the log counts $CAP distinct calls within the cap, then the 8 refusals" "$CAP 8" "$(log_ids "$log")"
  check_eq "$rt: the log has the $KILLS deaths" "$KILLS" "$(grep -c '"event":"sidecar_died"' "$log")"
  check "$rt: the log verifies" tg audit verify "$log"
done

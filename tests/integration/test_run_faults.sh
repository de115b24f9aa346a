#!/usr/bin/env bash
# `tollgate run` under concurrency and when it is killed, both backends.
#   - 30 concurrent `tollgate run` of one bundle, each with its own id:
#     every container's call lands in its own gate's audit log, once,
#     and in no other (issue 38: `runsc run` read the bundle's shared
#     config.json after another create had rewritten it, and sent its
#     calls to another container's gate).
#   - kill -9 of `tollgate run` (the governing process, which serves the
#     bridge in-process): the container does not run on ungoverned; a
#     caller waiting inside gets an answer within seconds, and `delete`
#     leaves nothing.
#   - a runsc state torn by a kill mid-write: delete --force still removes
#     the container, its runsc processes and runsc's files.
#   - a program's exit status under concurrent calls of its container: a
#     poller's `state` racing `run`'s exit, failing execs beside an exec;
#     the status stays the program's, and tollgate adds no error.
#   - the container's output in a file the caller redirected to (`run >
#     FILE 2>&1`, lines the shell wrote around it, 4 runs into one file,
#     exec, a detached run writing after it returned): every line kept, in
#     order.  runsc wrote such a file from offset 0 of its own, so stderr
#     overwrote stdout and the run overwrote what the shell had written.
#   - runs of one bundle beside four `list` loops: every run exits 0, no
#     state directory is left and the bundle keeps the user's config.  A
#     list's backend call made its log in a run's state directory while
#     the run's delete removed it ("rmdir: Directory not empty"): the run
#     failed, the id stayed taken, and the failed run put back a stale
#     config.json that every later run of the bundle took for the user's.
#   - tollgate started with stdin, stdout and stderr closed (`<&- >&-
#     2>&-`): the container's stdio is /dev/null, never a file of
#     tollgate's or the backend's (under runc its stdin was the backend's
#     log and its stderr a pipe of runc's).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

N=${RUN_RACE_N:-30}
chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL"
cat >"$POL/policy.json" <<'JSON'
{"version": 1,
 "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"},
                    "description": "Return the arguments unchanged.",
                    "args": {"type": "object"}, "timeout": 5,
                    "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100}}
JSON
chmod -R a+rX "$POL"

# Each container draws a token of its own (the bundle is shared, so the
# config cannot tell them apart), prints it and sends it through the gate.
race_cmd='t=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d " \n"); echo "token=$t"; /run/tollgate/tollgate-call --timeout 20 echo "{\"t\":\"$t\"}" >/dev/null; echo "rc=$?"'

for rt in $BACKENDS; do
  # --- N concurrent runs of one bundle ---------------------------------------
  B=$TG_ROOT/bundles/race-$rt
  make_bundle "$B" sh -c "$race_cmd"
  out=$TG_ROOT/out-$rt
  mkdir -p "$out"
  pids=()
  for i in $(seq 1 "$N"); do
    tg --runtime "$rt" run --policy "$POL/policy.json" --bundle "$B" "rf-$rt-$i" >"$out/$i" 2>"$out/$i.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  res=$(python3 - "$out" "$TG_ROOT/audit" "$rt" "$N" <<'PY'
import json, os, re, sys
out, audit, rt, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tokens, answered, own, foreign, missing = {}, 0, 0, 0, []
for i in range(1, n + 1):
    text = open(os.path.join(out, str(i))).read()
    m = re.search(r"token=(\S+)", text)
    if m:
        tokens[i] = m.group(1)
    if "rc=0" in text:
        answered += 1
where = {}
for i in range(1, n + 1):
    path = os.path.join(audit, "rf-%s-%d.jsonl" % (rt, i))
    if not os.path.exists(path):
        continue
    for line in open(path):
        r = json.loads(line)
        if r.get("event") == "call" and r.get("tool") == "echo":
            where.setdefault((r.get("args") or {}).get("t"), []).append(i)
for i, t in tokens.items():
    got = where.get(t, [])
    if got == [i]:
        own += 1
    elif got:
        foreign += 1
    else:
        missing.append(i)
print("tokens=%d answered=%d own=%d foreign=%d missing=%s" % (len(tokens), answered, own, foreign, missing[:5]))
sys.exit(0 if len(tokens) == n and answered == n and own == n else 1)
PY
)
  check "$rt: $N concurrent runs of one bundle: each call in its own gate's log, once ($res)" test $? -eq 0
  fails=$(cat "$out"/*.err | grep -v -e '^$' -e 'predates the fixes' | head -3)
  check_eq "$rt: $N concurrent runs: no errors" "" "$fails"
  for i in $(seq 1 "$N"); do
    check_fails_q=$(tg audit verify "$TG_ROOT/audit/rf-$rt-$i.jsonl" >/dev/null 2>&1 || echo "rf-$rt-$i")
    [ -z "$check_fails_q" ] || bad_logs="${bad_logs:-} $check_fails_q"
  done
  check_eq "$rt: every gate's audit log verifies" "" "${bad_logs:-}"
  check_eq "$rt: the user's bundle keeps the user's config as config.json.orig" "$N" \
    "$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(sys.argv[2] if c["process"]["args"][-1].startswith("t=") else "changed")' "$B/config.json.orig" "$N" 2>&1)"
  check_eq "$rt: no container left" "" "$(tg list -q 2>/dev/null)"
done

# --- a program's exit status while others call the backend ------------------
# Every backend call of a container logs to its backend.log.  A poller's
# `tollgate state` racing the container's exit, or an exec of a missing
# binary beside another exec, logs an error there of its own; it must not
# become the run's or the other exec's error: a program's exit status 3
# stays 3, and tollgate adds no error (it did: "runsc run: container ...
# does not exist", exit 1, the MCP server's failing program in CI).
for rt in $BACKENDS; do
  X=$TG_ROOT/bundles/exit3-$rt
  make_bundle "$X" sh -c 'echo oops >&2; exit 3'
  statuses="" errs=""
  for i in 1 2 3 4 5 6 7 8; do
    ( while :; do "$TG" --root "$TG_ROOT" state "ex-$rt-$i" >/dev/null 2>&1; done ) &
    poller=$!
    tg --runtime "$rt" run --policy "$POL/policy.json" --bundle "$X" "ex-$rt-$i" \
      >/dev/null 2>"$TG_ROOT/ex-$rt-$i.err"
    statuses="$statuses $?"
    kill "$poller"; wait "$poller" 2>/dev/null
    errs="$errs$(grep -v '^oops$' "$TG_ROOT/ex-$rt-$i.err" | sed 's/$/; /')"
  done
  check_eq "$rt: 8 runs exiting 3 while state polls them: each exits 3" " 3 3 3 3 3 3 3 3" "$statuses"
  check_eq "$rt: ... and tollgate says nothing of its own" "" "$errs"

  L=$TG_ROOT/bundles/long-$rt
  make_bundle "$L" sleep 100
  check "$rt: a container to exec in" tg --runtime "$rt" run -d --policy "$POL/policy.json" --bundle "$L" "ey-$rt"
  statuses="" errs=""
  for i in 1 2 3 4 5 6; do
    ( for j in 1 2 3 4 5 6 7 8; do tg exec "ey-$rt" /no-such-binary >/dev/null 2>&1; done ) &
    spoiler=$!
    tg exec "ey-$rt" sh -c 'sleep 0.3; echo oops >&2; exit 3' >/dev/null 2>"$TG_ROOT/ey-$rt-$i.err"
    statuses="$statuses $?"
    wait "$spoiler"
    errs="$errs$(grep -v '^oops$' "$TG_ROOT/ey-$rt-$i.err" | sed 's/$/; /')"
  done
  check_eq "$rt: 6 execs exiting 3 beside failing execs: each exits 3" " 3 3 3 3 3 3" "$statuses"
  check_eq "$rt: ... and tollgate says nothing of its own" "" "$errs"
  check_match "$rt: a failing exec still names its own error" "no-such-binary|not found|no such file" \
    "$(tg exec "ey-$rt" /no-such-binary 2>&1 >/dev/null)"
  check "$rt: ... the container's backend.log keeps every call's lines" \
    grep -q "no-such-binary" "$TG_ROOT/ey-$rt/backend.log"
  check_eq "$rt: ... and no call's own log is left beside it" "" \
    "$(ls "$TG_ROOT/ey-$rt" | grep '^backend-' || true)"
  check "$rt: delete --force of the exec container" tg delete --force "ey-$rt"
  check_eq "$rt: no container left" "" "$(tg list -q 2>/dev/null)"
done

# --- kill -9 of `tollgate run` while a call waits ---------------------------
cat >"$POL/hold.json" <<'JSON'
{"version": 1,
 "tools": {"hold": {"backend": {"type": "builtin", "name": "echo"},
                    "description": "Waits for a person's approval.",
                    "args": {"type": "object"}, "timeout": 5,
                    "rules": [{"effect": "approve", "reason": "held for the test"}]}},
 "approval": {"timeout": 120}}
JSON
chmod a+r "$POL/hold.json"
# caller_pids: host pids of the held caller (runc: the container's
# processes are host processes).
caller_pids() { grep -l 'hold-marker' /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3; }
for rt in $BACKENDS; do
  K=$TG_ROOT/bundles/kill-$rt
  make_bundle "$K" sh -c 'echo calling; /run/tollgate/tollgate-call --timeout 100 hold "{\"m\":\"hold-marker\"}"; echo "answered rc=$?"; sleep 100'
  # tollgate itself, not a subshell running tg: its pid is the one killed.
  "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$rt" run --policy "$POL/hold.json" \
    --bundle "$K" "rk-$rt" >"$TG_ROOT/rk-$rt.out" 2>&1 &
  runpid=$!
  on_exit "kill -9 $runpid"
  call=$(wait_pending "rk-$rt")
  check "$rt: kill -9: the call waits for approval" test -n "$call"
  init=$(state_of "rk-$rt" pid)
  callers=$(caller_pids)
  [ "$rt" = runc ] && check "$rt: kill -9: the waiting caller is a host process" test -n "$callers"
  kill -9 "$runpid"
  wait "$runpid" 2>/dev/null
  # Stopped: its init (runsc: the sandbox) gone, and the backend says so.
  check "$rt: kill -9 of tollgate run: the container's init $init is gone" wait_for 20 pid_gone "$init"
  all_gone() { local p; for p in $callers; do pid_gone "$p" || return 1; done; }
  check "$rt: kill -9 of tollgate run: the waiting caller is not left waiting" wait_for 20 all_gone
  check_eq "$rt: kill -9: the caller never ran on to an answer from nowhere" "" \
    "$(grep -o 'answered rc=0' "$TG_ROOT/rk-$rt.out")"
  st=$(state_of "rk-$rt" status)
  check_match "$rt: kill -9: the container is stopped or gone (status: $st)" '^(stopped|)$' "$st"
  check "$rt: kill -9: delete removes what is left" tg delete --force "rk-$rt"
  check_eq "$rt: kill -9: nothing left after delete" "" "$(tg list -q 2>/dev/null)"
  check_eq "$rt: kill -9: no mount left under the root" "" "$(grep " $TG_ROOT/rk-" /proc/self/mounts)"
done

# --- the container's output in a file the caller redirected to -------------
# gVisor imports a regular file it is handed as a file of its own, written
# with pwrite from offset 0: under runsc `> log 2>&1` lost stdout under
# stderr and a run overwrote what the shell had written before it
# (shim/lifecycle/runsc_stdio.h).  The file must read as it does under runc.
# Lines tollgate itself may add (runc's version warning) are not the
# container's and are left out.
own_lines() { grep -v '^tollgate: warning:' "$1"; }
for rt in $BACKENDS; do
  O=$TG_ROOT/bundles/out-$rt
  make_bundle "$O" sh -c 'echo out1; echo err1 >&2; echo out2; echo err2 >&2'
  f=$TG_ROOT/out-$rt.log
  tg --runtime "$rt" run --policy "$POL/policy.json" --bundle "$O" "ro-$rt-1" >"$f" 2>&1
  check_eq "$rt: run > FILE 2>&1: stdout and stderr both kept, in order" \
    "$(printf 'out1\nerr1\nout2\nerr2')" "$(own_lines "$f")"
  { echo before; tg --runtime "$rt" run --policy "$POL/policy.json" --bundle "$O" "ro-$rt-2"; echo after; } >"$f" 2>&1
  check_eq "$rt: what the shell wrote before and after a run is kept" \
    "$(printf 'before\nout1\nerr1\nout2\nerr2\nafter')" "$(own_lines "$f")"
  { for i in 1 2 3 4; do tg --runtime "$rt" run --policy "$POL/policy.json" --bundle "$O" "ro-$rt-p$i" & done; wait; } >"$f" 2>&1
  check_eq "$rt: 4 runs at once into one file: all 16 lines kept" \
    "4 err1,4 err2,4 out1,4 out2," "$(own_lines "$f" | sort | uniq -c | awk '{printf "%s %s,", $1, $2}')"
  X=$TG_ROOT/bundles/outx-$rt
  make_bundle "$X" sleep 100
  tg --runtime "$rt" run -d --policy "$POL/policy.json" --bundle "$X" "ro-$rt-x" >/dev/null 2>&1
  { echo before; tg exec "ro-$rt-x" sh -c 'echo out1; echo err1 >&2'; echo after; } >"$f" 2>&1
  # A foreground `runc exec` copies stdout and stderr through pipes of its
  # own, so their order between each other is runc's; none may be lost.
  check_eq "$rt: exec > FILE 2>&1 between shell lines: every line kept" \
    "before,err1,out1,after," "$(own_lines "$f" | sed -n '1p;$p' | head -1 | tr '\n' ,)$(own_lines "$f" | sed '1d;$d' | sort | tr '\n' ,)$(own_lines "$f" | tail -1),"
  tg delete --force "ro-$rt-x" >/dev/null 2>&1
  # Detached: the container writes after `run -d` returned, beside the shell.
  D=$TG_ROOT/bundles/outd-$rt
  make_bundle "$D" sh -c 'echo early; sleep 1; echo late; echo late-err >&2'
  { echo before; tg --runtime "$rt" run -d --policy "$POL/policy.json" --bundle "$D" "ro-$rt-d"; echo after; } >"$f" 2>&1
  wait_for 20 status_is "ro-$rt-d" stopped
  check_eq "$rt: run -d > FILE 2>&1: the shell's lines and the container's later ones all kept" \
    "after,before,early,late,late-err," "$(own_lines "$f" | sort | tr '\n' ,)"
  check_eq "$rt: ... and the shell's first line is still first" before "$(own_lines "$f" | head -1)"
  tg delete --force "ro-$rt-d" >/dev/null 2>&1
done

# --- runs beside `list` loops -------------------------------------------------
for rt in $BACKENDS; do
  L=$TG_ROOT/bundles/listed-$rt
  make_bundle "$L" true
  cp "$L/config.json" "$TG_ROOT/listed-$rt.user.json"
  touch "$TG_ROOT/listing-$rt"
  for p in 1 2 3 4; do
    ( while [ -e "$TG_ROOT/listing-$rt" ]; do tg list >/dev/null 2>&1; done ) &
  done
  pids=()
  for w in 1 2 3 4; do
    ( for i in $(seq 10); do
        tg --runtime "$rt" run --bundle "$L" "rl-$rt-$w-$i" >"$TG_ROOT/rl-$rt-$w-$i.out" 2>&1 ||
          echo "rl-$rt-$w-$i: $(grep -v '^tollgate: warning' "$TG_ROOT/rl-$rt-$w-$i.out" | head -2 | tr '\n' ' ')"
      done ) >"$TG_ROOT/rl-$rt-$w.failed" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  rm -f "$TG_ROOT/listing-$rt"
  wait
  check_eq "$rt: 40 runs of one bundle beside 4 list loops: each exits 0" "" \
    "$(cat "$TG_ROOT"/rl-$rt-?.failed | head -3)"
  check_eq "$rt: ... no state directory of them left" "" "$(ls "$TG_ROOT" | grep "^rl-$rt-" | grep -v '\.')"
  check "$rt: ... the bundle's config.json.orig is still the user's" \
    cmp -s "$TG_ROOT/listed-$rt.user.json" "$L/config.json.orig"
  check "$rt: ... and a run of it still works" tg --runtime "$rt" run --bundle "$L" "rl-$rt-after"
done

# --- started with stdio closed --------------------------------------------------
# The container checks that each of its stdio is a character device (the
# host's /dev/null; gVisor shows it as one too) and that its stdin reads
# empty; it writes a marker that must land in none of tollgate's files.
for rt in $BACKENDS; do
  C=$TG_ROOT/bundles/closed-$rt
  make_bundle "$C" sh -c 'for f in 0 1 2; do [ -c /proc/self/fd/$f ] || exit $((10+f)); done; [ "$(cat | wc -c)" = 0 ] || exit 20; echo closed-marker-out; echo closed-marker-err >&2'
  tg --runtime "$rt" run --policy "$POL/policy.json" --bundle "$C" "rc-$rt" <&- >&- 2>&-
  check_eq "$rt: run with stdio closed: the container's stdio is /dev/null (exit 10+fd when not)" 0 "$?"
  X=$TG_ROOT/bundles/closedx-$rt
  make_bundle "$X" sleep 100
  tg --runtime "$rt" run -d --policy "$POL/policy.json" --bundle "$X" "rcx-$rt" <&- >&- 2>&-
  check_eq "$rt: run -d with stdio closed" running "$(state_of "rcx-$rt" status)"
  # A foreground `runc exec` hands its process pipes it copies its own
  # stdio through: a pipe there is runc's, fed from /dev/null.
  tg exec "rcx-$rt" sh -c 'for f in 0 1 2; do [ -c /proc/self/fd/$f ] || [ -p /proc/self/fd/$f ] || exit $((10+f)); done; [ "$(cat | wc -c)" = 0 ] || exit 20; echo closed-marker-out' <&- >&- 2>&-
  check_eq "$rt: exec with stdio closed: its stdio is /dev/null (or runc's pipes from it)" 0 "$?"
  tg delete --force "rcx-$rt" >/dev/null 2>&1
  check_eq "$rt: ... no file of tollgate's got the container's output" "" \
    "$(grep -rl closed-marker- "$TG_ROOT" --exclude=config.json --exclude=config.json.orig 2>/dev/null)"
done

# --- a torn runsc state ----------------------------------------------------------
# `runsc run` killed while it wrote its state (seen under load: kill -9 of
# tollgate run at one moment of its start-up) leaves a state file that is
# not JSON; every later runsc verb fails on it ("unexpected end of JSON
# input") and its sandbox may still run.  delete --force must still leave
# nothing: no container, no runsc process, none of runsc's files.
if [[ " $BACKENDS " == *" runsc "* ]]; then
  T=$TG_ROOT/bundles/torn
  make_bundle "$T" sleep 100
  check "runsc: a container to tear" tg --runtime runsc run -d --policy "$POL/policy.json" --bundle "$T" rt-torn
  bid=$(json_get backend_id <"$TG_ROOT/rt-torn/state.json")
  statef="$TG_ROOT/backend/runsc/${bid}_sandbox:${bid}.state"
  check "runsc: its runsc state file is there" test -s "$statef"
  head -c 7 "$statef" >"$statef.cut" && mv "$statef.cut" "$statef"
  check_fails "runsc: runsc itself cannot read the torn state" runsc --root "$TG_ROOT/backend/runsc" state "$bid"
  check "runsc: delete --force of a container with a torn runsc state succeeds" tg delete --force rt-torn
  check_eq "runsc: ... nothing left in the list" "" "$(tg list -q 2>/dev/null)"
  check_eq "runsc: ... no runsc process of it left" "" \
    "$(pgrep -f -- "--log=$TG_ROOT/rt-torn/backend.log" || true)"
  check_eq "runsc: ... none of runsc's files for it left" "" "$(ls "$TG_ROOT/backend/runsc" | grep -F "$bid" || true)"
  check_eq "runsc: ... no mount left" "" "$(grep " $TG_ROOT/rt-torn" /proc/self/mounts)"
fi

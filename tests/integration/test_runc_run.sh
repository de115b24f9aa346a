#!/usr/bin/env bash
# `tollgate run` under runc as one `runc run` (issue 41): when the
# effective config has no hook, a fresh network namespace, no terminal,
# no pid file and no pod, run skips runc's create/start split: a governed
# container is `runc run --detach` (create and start in one Go process)
# and the delete, an ungoverned one (passthrough, no policy) one
# foreground `runc run`.  What must hold either way:
#   - the container's output and exit status (0, 7, a signal's 128+n);
#   - a signal sent to tollgate reaches the container's init;
#   - the container holds lo alone, and a hook that adds an interface
#     between create and start still meets the split path's strip;
#   - which path ran (the backend's verbs, logged by a wrapper runtime);
#   - the run guard of a governed one-call run (shim/lifecycle/run_guard.h):
#     kill -9 of tollgate before `runc run` lets the program start, and
#     once it runs, leaves nothing of the container running;
#   - nothing is left: no runc state, no tollgate state, no mount.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

RUNC=$(command -v runc)
WRAP=$TG_ROOT/wrap
mkdir -p "$WRAP"
# A runtime named runc (tollgate picks the backend by its name) that logs
# the verb of each call this script's tollgate makes and runs the real runc.
# Not another script's: a `list --all-roots` (test_reaper) asks every
# registered root's containers their state through the backend each
# recorded, this wrapper, and a run's trace read "create state start
# delete" in CI.
cat >"$WRAP/runc" <<SH
#!/bin/sh
case "\$(tr '\\0' ' ' </proc/\$PPID/cmdline 2>/dev/null)" in
*" --root $TG_ROOT "*)
  for a in "\$@"; do case \$a in -*) ;; *) echo "\$a" >>"$WRAP/verbs"; break ;; esac; done ;;
esac
exec "$RUNC" "\$@"
SH
chmod 755 "$WRAP/runc"
verbs() { tr '\n' ' ' <"$WRAP/verbs" 2>/dev/null | sed 's/ $//'; }
B=$TG_ROOT/bundles/rr
write_config runtime='"runc"'
runc_root=$TG_ROOT/backend/runc

# --- plain: one runc run ---------------------------------------------------
make_bundle "$B" sh -c 'echo hello; exit 7'
: >"$WRAP/verbs"
out=$(tg --runtime "$WRAP/runc" run -b "$B" rr-plain 2>/dev/null); rc=$?
check_eq "plain: the output" hello "$out"
check_eq "plain: the exit status" 7 "$rc"
# A governed (hardened, bridged) container is one `runc run --detach`
# (create and start in one) and the delete: its run guard holds runc run
# and then the init it follows (shim/lifecycle/run_follow.h).
check_eq "plain: a governed container is runc run, then delete" "run delete" "$(verbs | sed 's/^--version //')"
check_fails "plain: runc keeps nothing" test -e "$runc_root/rr-plain"
check_fails "plain: tollgate keeps nothing" test -e "$TG_ROOT/rr-plain"

# pid 1 ignores a signal it has no handler for, but not SIGKILL from
# outside its namespace.
make_bundle "$B" sh -c 'echo up; while :; do sleep 0.1; done'
( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc run -b "$B" rr-kill >"$TG_ROOT/kill.out" 2>&1 ) &
tpid=$!
on_exit "kill -9 $tpid; tg delete --force rr-kill"
wait_for 10 grep -q up "$TG_ROOT/kill.out"
tg kill rr-kill KILL >/dev/null 2>&1
wait "$tpid"; rc=$?
check_eq "plain: killed by SIGKILL is 128+9" $((128 + 9)) "$rc"

# --- kill -9 of a governed one-call run: its guard stops the container ---
# marker_pids M: host pids whose command line holds M (runc: the
# container's processes are host processes).
# The pattern is bracketed so that grep's own command line never matches.
marker_pids() { grep -l -- "[${1:0:1}]${1:1}" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3; }
pids_gone() { local p; for p in $1; do pid_gone "$p" || return 1; done; }
# After start: the program runs (a marker in its command line), then
# tollgate dies.
make_bundle "$B" sh -c 'echo up; while :; do sleep 0.1; done; echo rr-k9a-marker'
: >"$WRAP/verbs"
( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$WRAP/runc" run -b "$B" rr-k9a \
    >"$TG_ROOT/k9a.out" 2>&1 ) &
tpid=$!
on_exit "kill -9 $tpid; tg delete --force rr-k9a"
wait_for 10 grep -q up "$TG_ROOT/k9a.out"
check_eq "kill -9 after start: a governed run starts with one runc run" run "$(verbs | sed 's/^--version //')"
inside=$(marker_pids rr-k9a-marker)
check "kill -9 after start: the program runs" test -n "$inside"
# The guard (a child of tollgate) holds a pidfd of the init it followed
# through runc's pid file (fdinfo names the pid a pidfd refers to).
guard_holds() {
  local c f
  for c in $(cat /proc/"$tpid"/task/*/children 2>/dev/null); do
    for f in /proc/"$c"/fdinfo/*; do grep -qx "Pid:[[:space:]]*$1" "$f" 2>/dev/null && return 0; done
  done
  return 1
}
check "kill -9 after start: the guard holds the init's pidfd" wait_for 5 guard_holds "$inside"
kill -9 "$tpid"; wait "$tpid" 2>/dev/null
check "kill -9 after start: every process of the container is gone" wait_for 20 pids_gone "$inside"
check "kill -9 after start: delete --force removes what is left" tg delete --force rr-k9a
check_fails "kill -9 after start: runc keeps nothing" test -e "$runc_root/rr-k9a"

# Before start: a runtime whose `run` waits 2 s before it becomes runc;
# tollgate dies meanwhile.  The guard holds runc run's pidfd from its
# spawn: the program must never run.
mkdir -p "$WRAP/slow"
cat >"$WRAP/slow/runc" <<SH
#!/bin/sh
for a in "\$@"; do case \$a in -*) ;; *) v=\$a; break ;; esac; done
if [ "\$v" = run ]; then : >"$WRAP/slow/begun"; sleep 2; fi
exec "$RUNC" "\$@"
SH
chmod 755 "$WRAP/slow/runc"
make_bundle "$B" sh -c 'echo ran; while :; do sleep 0.1; done; echo rr-k9b-marker'
( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$WRAP/slow/runc" run -b "$B" rr-k9b \
    >"$TG_ROOT/k9b.out" 2>&1 ) &
tpid=$!
on_exit "kill -9 $tpid; tg delete --force rr-k9b"
check "kill -9 before start: runc run was spawned" wait_for 10 test -e "$WRAP/slow/begun"
kill -9 "$tpid"; wait "$tpid" 2>/dev/null
sleep 3 # past the wrapper's wait: a runc run left alive would have started it by now
check_eq "kill -9 before start: the program never ran" "" "$(grep ran "$TG_ROOT/k9b.out")"
check_eq "kill -9 before start: no process of it" "" "$(marker_pids rr-k9b-marker)"
check "kill -9 before start: delete --force removes what is left" tg delete --force rr-k9b
check_fails "kill -9 before start: runc keeps nothing" test -e "$runc_root/rr-k9b"

# Mid-start: tollgate dies the moment runc's state for the container
# appears (runc run is making it); whatever the program got to, nothing
# of it runs on.
make_bundle "$B" sh -c 'while :; do sleep 0.1; done; echo rr-k9m-marker'
( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc run -b "$B" rr-k9m \
    >"$TG_ROOT/k9m.out" 2>&1 ) &
tpid=$!
on_exit "kill -9 $tpid; tg delete --force rr-k9m"
check "kill -9 mid-start: runc began the container" wait_for -i 0.002 10 test -e "$runc_root/rr-k9m"
kill -9 "$tpid"; wait "$tpid" 2>/dev/null
sleep 1
check "kill -9 mid-start: no process of it runs on" wait_for 20 eval '[ -z "$(marker_pids rr-k9m-marker)" ]'
check "kill -9 mid-start: delete --force removes what is left" tg delete --force rr-k9m
check_fails "kill -9 mid-start: runc keeps nothing" test -e "$runc_root/rr-k9m"
check_eq "kill -9: nothing left in tollgate's list" "" "$(tg list -q 2>/dev/null)"

# --- network: lo alone -----------------------------------------------------
make_bundle "$B" sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " "'
out=$(tg --runtime runc run -b "$B" rr-net 2>/dev/null)
check_eq "plain: the container's network is lo alone" "lo " "$out"

# --- a signal to tollgate reaches the init -----------------------------------
make_bundle "$B" sh -c 'trap "echo got-term; exit 42" TERM; echo up; while :; do sleep 0.1; done'
( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc run -b "$B" rr-term >"$TG_ROOT/term.out" 2>&1 ) &
tpid=$!
on_exit "kill -9 $tpid; tg delete --force rr-term"
wait_for 10 grep -q up "$TG_ROOT/term.out"
kill -TERM "$tpid"
wait "$tpid"; rc=$?
check_eq "signal: TERM to tollgate reaches the init's trap" 42 "$rc"
check_match "signal: the trap ran" got-term "$(cat "$TG_ROOT/term.out")"

# --- a hook keeps the split path, and its interface is stripped --------------
# The prestart hook adds a veth in the container's network
# namespace (as Docker's adds a veth): run must not take the one-call path,
# and the container must see lo alone.
cat >"$TG_ROOT/hook.sh" <<'SH'
#!/bin/sh
pid=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
ip link add tgrr0 type veth peer name tgrr1 netns "$pid"
SH
chmod 755 "$TG_ROOT/hook.sh"
make_bundle "$B" sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " "'
edit_json "$B/config.json" 'c["hooks"] = {"prestart": [{"path": args[0]}]}' "$TG_ROOT/hook.sh"
: >"$WRAP/verbs"
on_exit "ip link del tgrr0"
out=$(tg --runtime "$WRAP/runc" run -b "$B" rr-hook 2>/dev/null); rc=$?
check_eq "hook: the run succeeds" 0 "$rc"
check_eq "hook: create, start, delete" "create start delete" "$(verbs | sed 's/^--version //')"
check_eq "hook: the hook's interface was stripped, lo alone" "lo " "$out"
check_fails "hook: the host end went with it" ip link show tgrr0

# --- a caller's pid file keeps the split path (the init's pid, written
# before it starts) ------------------------------------------------------------
make_bundle "$B" true
: >"$WRAP/verbs"
tg --runtime "$WRAP/runc" run --pid-file "$TG_ROOT/rr.pid" -b "$B" rr-pid >/dev/null 2>&1; rc=$?
check_eq "pid file: the run succeeds" 0 "$rc"
check_eq "pid file: create, start, delete" "create start delete" "$(verbs | sed 's/^--version //')"
check_match "pid file: written" '^[0-9]+$' "$(cat "$TG_ROOT/rr.pid" 2>/dev/null)"

# --- --keep keeps the split path (runc's record of the stopped container) ----
make_bundle "$B" true
: >"$WRAP/verbs"
tg --runtime "$WRAP/runc" run --keep -b "$B" rr-keep >/dev/null 2>&1; rc=$?
check_eq "keep: the run succeeds" 0 "$rc"
check_eq "keep: create, start" "create start" "$(verbs | sed 's/^--version //')"
check_eq "keep: stopped" stopped "$(state_of rr-keep status)"
tg delete rr-keep >/dev/null 2>&1
check_fails "keep: deleted" test -e "$TG_ROOT/rr-keep"

# --- passthrough with no policy: nothing to govern, one runc run ------------
write_config runtime='"runc"' allow_passthrough=true 'profile="passthrough"'
make_bundle "$B" sh -c 'echo bare; exit 3'
: >"$WRAP/verbs"
out=$(tg --runtime "$WRAP/runc" run -b "$B" rr-pass 2>/dev/null); rc=$?
check_eq "passthrough: the output" bare "$out"
check_eq "passthrough: the exit status" 3 "$rc"
check_eq "passthrough: one runc run" run "$(verbs | sed 's/^--version //')"
check_fails "passthrough: tollgate keeps nothing" test -e "$TG_ROOT/rr-pass"
write_config runtime='"runc"'

check_eq "nothing left in runc's root" "" "$(ls "$runc_root" 2>/dev/null)"

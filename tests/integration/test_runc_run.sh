#!/usr/bin/env bash
# `tollgate run` under runc as one `runc run` (issue 41): when the
# container is ungoverned (passthrough, no policy: a governed one keeps
# the split for its run guard) and the effective config has no hook, a
# fresh network namespace, no terminal,
# no pid file and no pod, run skips runc's create/start/delete split (two
# Go process starts).  What must hold either way:
#   - the container's output and exit status (0, 7, a signal's 128+n);
#   - a signal sent to tollgate reaches the container's init;
#   - the container holds lo alone, and a hook that adds an interface
#     between create and start still meets the split path's strip;
#   - which path ran (the backend's verbs, logged by a wrapper runtime);
#   - nothing is left: no runc state, no tollgate state, no mount.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

RUNC=$(command -v runc)
WRAP=$TG_ROOT/wrap
mkdir -p "$WRAP"
# A runtime named runc (tollgate picks the backend by its name) that logs
# each call's verb and runs the real runc.
cat >"$WRAP/runc" <<SH
#!/bin/sh
for a in "\$@"; do case \$a in -*) ;; *) echo "\$a" >>"$WRAP/verbs"; break ;; esac; done
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
# A governed (hardened, bridged) container keeps the split: its run guard
# holds the init's pidfd before the user's process runs, so that kill -9
# of tollgate run stops it (issue 38; shim/lifecycle/run_guard.h).
check_eq "plain: a governed container keeps create, start, delete (its guard)" "create start delete" \
  "$(verbs | sed 's/^--version //')"
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

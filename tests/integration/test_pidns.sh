#!/usr/bin/env bash
# A container is acted on only from the pid namespace it was created in
# (docs/reliability.md "Pid namespaces"), under both backends, on real
# containers:
#  - the attack: from a new pid namespace that still sees the host's /proc
#    (unshare --pid --fork, no --mount-proc), a process is started at the
#    number the container's init has on the host (ns_last_pid), and
#    `tollgate kill ID KILL` is run there.  runc checked the recorded init
#    against the host's /proc, found it alive, and signalled that number in
#    the new namespace: the decoy died and the container ran on.  Now the
#    kill is refused, naming the namespaces; the decoy and the container
#    live, and the host's kill stops the container.
#  - start, exec, state, pause, resume, ps, update and checkpoint from
#    another pid namespace are refused the same way and change nothing;
#    list there shows the container as "unknown", with the reason.
# (delete and gc from another namespace: test_reaper.sh.)
. "$(dirname "$0")/lib.sh"

# in_ns [--mount-proc] ARGS...: tollgate ARGS from a new pid namespace.
in_ns() {
  local proc=""
  [ "$1" = --mount-proc ] && { proc=--mount-proc; shift; }
  unshare --pid --fork $proc "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" "$@"
}
# decoy_kill INIT ID: from a new pid namespace seeing the host's /proc,
# start a decoy numbered INIT there and run `tollgate kill ID KILL`.
# Prints "<decoy's number> <kill's exit> <decoy alive|dead>" and the
# kill's stderr after a "|".
decoy_kill() {
  unshare --pid --fork env TG="$TG" TG_ROOT="$TG_ROOT" TG_CONFIG="$TG_CONFIG" INIT="$1" ID="$2" bash -c '
    echo $((INIT - 1)) >/proc/sys/kernel/ns_last_pid
    sleep 300 & decoy=$!
    err=$("$TG" --root "$TG_ROOT" --config "$TG_CONFIG" kill "$ID" KILL 2>&1); rc=$?
    sleep 0.3
    if kill -0 "$decoy" 2>/dev/null; then alive=alive; else alive=dead; fi
    kill -9 "$decoy" 2>/dev/null
    echo "$decoy $rc $alive|$err"'
}

for b in $BACKENDS; do
  make_bundle "$TG_ROOT/bundle-$b" sleep 300
  id=pn-$b
  if ! tg --runtime "$b" create --bundle "$TG_ROOT/bundle-$b" "$id"; then
    echo "FAIL - $b: create on the host"
    continue
  fi
  check_match "$b: state.json records the pid namespace" '^[1-9][0-9]*$' \
    "$(json_get pid_ns <"$TG_ROOT/$id/state.json" 2>&1)"

  # ---- start of a created container ----------------------------------------
  check_refused "$b: start from another pid namespace is refused, naming it" \
    "$id was created in another pid namespace .*run tollgate in that namespace" \
    in_ns --mount-proc start "$id"
  check_eq "$b: ... and it is still created" created "$(state_of "$id" status)"
  check "$b: start on the host" tg start "$id"
  wait_for 30 status_is "$id" running
  init=$(state_of "$id" pid)
  check_match "$b: its init has a pid on the host" '^[1-9][0-9]*$' "$init"

  # ---- the attack: a decoy at the init's number ------------------------------
  out=$(decoy_kill "$init" "$id")
  read -r decoy rc alive <<<"${out%%|*}"
  check_eq "$b: the decoy has the init's number in its namespace" "$init" "$decoy"
  check_eq "$b: kill from there is refused" 1 "$rc"
  check_match "$b: ... naming the pid namespace" "was created in another pid namespace" "${out#*|}"
  check_eq "$b: ... the decoy was not signalled" alive "$alive"
  check_eq "$b: ... and the container runs on" running "$(state_of "$id" status)"

  # ---- the other verbs --------------------------------------------------------
  for verb in "state $id" "exec $id true" "pause $id" "resume $id" "ps $id" \
              "update --pids-limit 50 $id" "checkpoint --image-path $TG_ROOT/img-$b $id"; do
    # shellcheck disable=SC2086 # the verb's words
    check_refused "$b: ${verb%% *} from another pid namespace is refused" \
      "was created in another pid namespace" in_ns --mount-proc $verb
  done
  check_eq "$b: ... the container still runs, unpaused" running "$(state_of "$id" status)"
  check "$b: ... no checkpoint image was written" test ! -e "$TG_ROOT/img-$b"
  listed=$(in_ns --mount-proc list --format json 2>/dev/null)
  check_eq "$b: list from there shows it as unknown" unknown \
    "$(json_get 0.status <<<"$listed" 2>&1)"
  check_match "$b: ... with the reason" "another pid namespace" \
    "$(json_get 0.tollgate.status_reason <<<"$listed" 2>&1)"

  # ---- the host's own verbs still work ----------------------------------------
  check "$b: exec on the host" tg exec "$id" true
  check "$b: kill on the host" tg kill "$id" KILL
  wait_for 30 status_is "$id" stopped
  check_eq "$b: ... the container stopped" stopped "$(state_of "$id" status)"
  check "$b: delete on the host" tg delete "$id"
done

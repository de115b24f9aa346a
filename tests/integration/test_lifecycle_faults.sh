#!/usr/bin/env bash
# The lifecycle under faults, under runsc and runc (issue 20):
#  - 20 containers whose ids are prefixes of each other (x-RT-1, x-RT-10,
#    ...; runsc looks ids up by prefix, so no backend id may be a prefix of
#    another, and an id with no such relative keeps its own) created, started, queried, killed
#    and deleted in parallel: every call succeeds, nothing is left, every
#    audit log is closed;
#  - kill -9 of `tollgate run` at moments spread over its start-up, as
#    soon as its cgroup appears, and once the container runs, then one
#    `delete --force`: exit 0 and nothing left (no state, backend file,
#    mount, process or cgroup), 18 times in a row;
#  - 5 concurrent kills and 5 concurrent deletes of one id, 20 rounds:
#    every message is success or "does not exist";
#  - `list` with the backend binary gone shows the container as unknown,
#    with the reason (table and JSON), and so does one whose state.json
#    cannot be read;
#  - a backend that fails without a word under `run` still gets
#    tollgate's one-line message, and a failed `run` (that stub, or a
#    program that is not there) leaves the bundle's config.json as it was;
#  - 20 concurrent kills of one running container, 3 rounds: each succeeds
#    or says "container not running" (runsc's "no such process" too).
# A missing backend is made the documented way: the container is created
# with --runtime PATH to a copy of the binary, and the copy is removed.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL" "$TG_ROOT/out" "$TG_ROOT/bin"
cat > "$POL/policy.json" <<'P'
{"version": 1,
 "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100}}
P
chmod -R a+rX "$POL"
out=$TG_ROOT/out

# What runsc calls the container (recorded at create).
backend_id() { json_get backend_id <"$TG_ROOT/$1/state.json" 2>/dev/null; }
# Processes of this script's backends: every runsc/runc process (sandbox,
# gofer, run, init's parent) carries --root=<TG_ROOT>/backend/RT.
backend_procs() { pgrep -f -- "--root=$TG_ROOT/backend/$1" || true; }
no_backend_procs() { [ -z "$(backend_procs "$1")" ]; }
# Cgroups named after any of the given names (runsc's default cgroup path
# is /<backend id>, runc's /<id>).
cgroups_named() {
  local n
  for n in "$@"; do find /sys/fs/cgroup -maxdepth 3 -type d -name "$n" 2>/dev/null; done
}
backend_root_entries() { ls -A "$TG_ROOT/backend/$1" 2>/dev/null; }
mounts_of() { grep " $TG_ROOT/$1" /proc/self/mounts || true; }
pids_alive() { local p; for p in "$@"; do [ "$p" -gt 0 ] 2>/dev/null && kill -0 "$p" 2>/dev/null && echo "$p"; done; }

# all_ok FILE-PREFIX IDS...: every <prefix>.<id>.rc holds 0; prints the
# first failure's message.
all_ok() {
  local pre=$1 id bad=""; shift
  for id in "$@"; do
    if [ "$(cat "$pre.$id.rc" 2>/dev/null)" != 0 ]; then
      bad="$id: $(cat "$pre.$id.err" 2>/dev/null)"; break
    fi
  done
  echo "$bad"
}

# parallel NAME ARG... -- IDS: run `tg ARG...` for every id at once, with
# the word ID in ARGs replaced by the id, into $out/NAME.<id>.{rc,err}.
parallel() {
  local name=$1; shift
  local args=() id
  while [ "$1" != -- ]; do args+=("$1"); shift; done; shift
  for id in "$@"; do
    ( tg "${args[@]/#ID/$id}" </dev/null >/dev/null 2>"$out/$name.$id.err"
      echo $? >"$out/$name.$id.rc" ) &
  done
  wait
}

for rt in $BACKENDS; do
  # --- 20 ids that are prefixes of each other, all in parallel ----------
  ids=()
  for i in $(seq 1 20); do
    id=x-$rt-$i
    ids+=("$id")
    make_bundle "$TG_ROOT/bundles/$id" sleep 600
  done
  for id in "${ids[@]}"; do
    ( tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" \
        </dev/null >/dev/null 2>"$out/create.$id.err"
      echo $? >"$out/create.$id.rc" ) &
  done
  wait
  check_eq "$rt: 20 parallel creates of prefix ids all succeed" "" "$(all_ok "$out/create" "${ids[@]}")"
  bids=() pids=() sidecars=()
  for id in "${ids[@]}"; do
    [ -f "$TG_ROOT/$id/state.json" ] || continue
    bids+=("$(backend_id "$id")")
    pids+=("$(json_get init_pid <"$TG_ROOT/$id/state.json")")
    sidecars+=("$(sidecar_of "$id")")
  done
  if [ "$rt" = runsc ]; then
    check_eq "$rt: no runsc id is a prefix of another" "" "$(python3 - "${bids[@]}" <<'PY'
import sys
ids = sys.argv[1:]
print(" ".join("%s<%s" % (a, b) for a in ids for b in ids if a != b and b.startswith(a)) if len(set(ids)) == 20 else "duplicates")
PY
)"
    check_eq "$rt: ... and one that is no other's prefix and has none keeps its own id (x-runsc-3)" \
      x-runsc-3 "${bids[2]}"
    check_match "$rt: ... while each of x-runsc-1 and x-runsc-10 has one of them hashed" \
      '^(tg-[0-9a-f]{32} x-runsc-10|x-runsc-1 tg-[0-9a-f]{32}|tg-[0-9a-f]{32} tg-[0-9a-f]{32})$' "${bids[0]} ${bids[9]}"
  else
    check_eq "$rt: runc keeps tollgate's id" "x-runc-1" "${bids[0]}"
  fi
  parallel start start ID -- "${ids[@]}"
  check_eq "$rt: start of every prefix id succeeds" "" "$(all_ok "$out/start" "${ids[@]}")"
  bad=""
  for id in "${ids[@]}"; do
    s=$(tg state "$id" 2>"$out/state.$id.err")
    if [ "$(json_get status <<<"$s" 2>/dev/null)" != running ] ||
       [ "$(json_get id <<<"$s" 2>/dev/null)" != "$id" ]; then
      bad="$id: $(json_get status <<<"$s" 2>/dev/null) $(cat "$out/state.$id.err")"; break
    fi
  done
  check_eq "$rt: state of every prefix id says running, under tollgate's id" "" "$bad"
  listed=$(tg list --format json | python3 -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin) if c["status"] == "running"))')
  check_eq "$rt: list shows all 20 running" 20 "$listed"
  parallel kill kill ID KILL -- "${ids[@]}"
  check_eq "$rt: kill of every prefix id succeeds" "" "$(all_ok "$out/kill" "${ids[@]}")"
  bad=""
  for id in "${ids[@]}"; do wait_for 60 status_is "$id" stopped || { bad=$id; break; }; done
  check_eq "$rt: every container stopped after its kill" "" "$bad"
  parallel delete delete ID -- "${ids[@]}"
  check_eq "$rt: parallel delete of every prefix id succeeds" "" "$(all_ok "$out/delete" "${ids[@]}")"
  left=""
  for id in "${ids[@]}"; do [ -e "$TG_ROOT/$id" ] && left="$left $id"; done
  check_eq "$rt: no state directory left" "" "$left"
  check_eq "$rt: the backend's root is empty" "" "$(backend_root_entries "$rt")"
  check_eq "$rt: no mount left" "" "$(for id in "${ids[@]}"; do mounts_of "$id/"; done)"
  wait_for 30 no_backend_procs "$rt"
  check_eq "$rt: no backend process left" "" "$(backend_procs "$rt")"
  wait_for 30 eval '[ -z "$(pids_alive "${pids[@]}" "${sidecars[@]}")" ]'
  check_eq "$rt: no init or sidecar left" "" "$(pids_alive "${pids[@]}" "${sidecars[@]}")"
  check_eq "$rt: no cgroup left" "" "$(cgroups_named "${ids[@]}" "${bids[@]}")"
  bad=""
  for id in "${ids[@]}"; do
    log=$TG_ROOT/audit/$id.jsonl
    if ! tg audit verify "$log" >/dev/null 2>&1 ||
       [ "$(tail -n1 "$log" | json_get event)" != closed ]; then
      bad=$id; break
    fi
  done
  check_eq "$rt: every audit log is closed and verifies" "" "$bad"

  # --- kill -9 of `tollgate run`, then one delete --force, 18 times ----
  # At moments spread over the start-up (the backend half-way through
  # making the sandbox: runsc then leaves a lock file or its socket that
  # its own delete does not remove), twice each, twice once the container
  # runs, and twice as soon as the container's cgroup appears: the run
  # guard then kills the backend between its cgroup and its state, and the
  # backend's delete says the container does not exist and leaves the
  # empty cgroups (runc, every time; the timed moments hit that window only
  # on some machines).
  fails=""
  for when in 0 0.02 0.05 0.1 0.2 0.3 0.5 cgroup running; do
   for rep in 1 2; do
    id=k9-$rt-${when/./}-$rep
    make_bundle "$TG_ROOT/bundles/$id" sleep 600
    ( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$rt" run \
        --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" \
        </dev/null >"$out/$id.run.out" 2>&1 ) &
    run_pid=$!
    if [ "$when" = cgroup ]; then
      # (the backend's default cgroup, /<id>: these ids are no other's
      # prefix, so runsc keeps them too)
      wait_for -i 0.005 60 test -d "/sys/fs/cgroup/pids/$id" ||
        { fails="$fails $id:no-cgroup"; kill -9 "$run_pid" 2>/dev/null; wait "$run_pid" 2>/dev/null
          tg delete --force "$id" >/dev/null 2>&1; continue; }
    elif [ "$when" != running ]; then
      sleep "$when"
    elif ! wait_for -i 0.01 60 status_is "$id" running; then
      fails="$fails $id:never-running"; kill -9 "$run_pid" 2>/dev/null; wait "$run_pid" 2>/dev/null
      tg delete --force "$id" >/dev/null 2>&1; continue
    fi
    kill -9 "$run_pid"
    wait "$run_pid" 2>/dev/null
    bid=$(backend_id "$id"); bid=${bid:-$id}
    msg=$(tg delete --force "$id" 2>&1); rc=$?
    [ "$rc" = 0 ] || fails="$fails $id:rc=$rc:$msg"
    [ -e "$TG_ROOT/$id" ] && fails="$fails $id:state-dir"
    [ -n "$(backend_root_entries "$rt")" ] && fails="$fails $id:backend-state:$(backend_root_entries "$rt" | tr "\n" " ")"
    [ -n "$(mounts_of "$id/")" ] && fails="$fails $id:mount"
    wait_for 30 no_backend_procs "$rt" || fails="$fails $id:processes"
    [ -n "$(cgroups_named "$id" "$bid")" ] && fails="$fails $id:cgroups"
    [ -n "$fails" ] && { fails="$fails (killed at $when)"; break 2; }
   done
  done
  check_eq "$rt: kill -9 of run at 18 moments, then one delete --force: exit 0, nothing left" "" "$fails"

  # --- 5 concurrent kills and 5 concurrent deletes of one id, 20 rounds -
  # The init ignores TERM (gVisor delivers it to a pid 1 without a
  # handler), so every kill that finds the container finds it running;
  # after a delete it does not exist.
  bad="" setup=""
  for round in $(seq 1 20); do
    id=race-$rt-$round
    make_bundle "$TG_ROOT/bundles/$id" sh -c 'trap "" TERM; exec sleep 600'
    if ! tg --runtime "$rt" create -b "$TG_ROOT/bundles/$id" "$id" </dev/null >/dev/null 2>"$out/$id.setup" ||
       ! tg start "$id" 2>>"$out/$id.setup"; then
      setup="$id: $(cat "$out/$id.setup")"; tg delete --force "$id" >/dev/null 2>&1; break
    fi
    for k in 1 2 3 4 5; do
      ( tg kill "$id" TERM >/dev/null 2>"$out/$id.kill$k"; echo $? >"$out/$id.kill$k.rc" ) &
      ( tg delete --force "$id" >/dev/null 2>"$out/$id.del$k"; echo $? >"$out/$id.del$k.rc" ) &
    done
    wait
    for f in "$out/$id".kill? "$out/$id".del?; do
      rc=$(cat "$f.rc"); msg=$(cat "$f")
      if [ "$rc" = 0 ] && [ -z "$msg" ]; then continue; fi
      if [ "$rc" != 0 ] && [[ "$msg" =~ ^tollgate:\ (.*:\ )?container\ $id\ does\ not\ exist$ ]]; then continue; fi
      # runsc only: a kill whose `runsc kill` found the sandbox's control
      # server refusing (seen once in 40 rounds, with another script
      # running beside this one), which tollgate reports as not running.
      if [ "$rt" = runsc ] && [ "$rc" != 0 ] && [[ "$f" == *.kill? ]] &&
         [[ "$msg" =~ ^tollgate:\ runsc\ kill:\ container\ not\ running: ]]; then continue; fi
      bad="$(basename "$f") rc=$rc: $msg"; break 2
    done
    [ -e "$TG_ROOT/$id" ] && { bad="$id: state directory left"; break; }
  done
  check_eq "$rt: the race's containers could be set up" "" "$setup"
  check_eq "$rt: 5 kills racing 5 deletes, 20 rounds: only success or does not exist (or, runsc kill, not running)" "" "$bad"
  check_eq "$rt: the race leaves no backend state" "" "$(backend_root_entries "$rt")"
  wait_for 30 no_backend_procs "$rt"
  check_eq "$rt: the race leaves no backend process" "" "$(backend_procs "$rt")"

  # --- list with the backend binary gone -----------------------------
  id=gone-$rt
  make_bundle "$TG_ROOT/bundles/$id" sleep 600
  cp "$(command -v "$rt")" "$TG_ROOT/bin/$rt-copy"
  tg --runtime "$TG_ROOT/bin/$rt-copy" create -b "$TG_ROOT/bundles/$id" "$id" </dev/null >/dev/null 2>&1
  tg start "$id"
  check_eq "$rt: the copy's container runs" running "$(tg state "$id" | json_get status)"
  mv "$TG_ROOT/bin/$rt-copy" "$TG_ROOT/bin/$rt-hidden"
  table=$(tg list 2>"$out/$id.list.err")
  check_match "$rt: list shows the container as unknown" "$id +[0-9]+ +unknown " "$table"
  check_match "$rt: list says why on stderr" "container $id: status unknown: .*$rt-copy" "$(cat "$out/$id.list.err")"
  js=$(tg list --format json 2>/dev/null)
  check_eq "$rt: list --format json shows it as unknown" unknown \
    "$(python3 -c 'import json,sys; print([c["status"] for c in json.load(sys.stdin) if c["id"] == sys.argv[1]][0])' "$id" <<<"$js")"
  check_match "$rt: ... with the reason" "$rt-copy" \
    "$(python3 -c 'import json,sys; print([c["tollgate"]["status_reason"] for c in json.load(sys.stdin) if c["id"] == sys.argv[1]][0])' "$id" <<<"$js")"
  check_eq "$rt: ... and what state.json recorded" "$TG_ROOT/bundles/$id" \
    "$(python3 -c 'import json,sys; print([c["bundle"] for c in json.load(sys.stdin) if c["id"] == sys.argv[1]][0])' "$id" <<<"$js")"
  mv "$TG_ROOT/bin/$rt-hidden" "$TG_ROOT/bin/$rt-copy"
  check "$rt: with the binary back, delete --force removes it" tg delete --force "$id"
  rm -f "$TG_ROOT/bin/$rt-copy"

  # --- a silent backend failure under run -----------------------------
  printf '#!/bin/sh\nexit 1\n' >"$TG_ROOT/bin/$rt-silent"
  chmod 755 "$TG_ROOT/bin/$rt-silent"
  id=silent-$rt
  make_bundle "$TG_ROOT/bundles/$id" true
  cp "$TG_ROOT/bundles/$id/config.json" "$out/$id.config.before"
  msg=$(tg --runtime "$TG_ROOT/bin/$rt-silent" run -b "$TG_ROOT/bundles/$id" "$id" </dev/null 2>&1); rc=$?
  # (runc: the stub cannot tell its version, so the version floor's one
  # warning line comes first; the error is the last line)
  check_match "$rt: a backend failing silently under run gets tollgate's message" \
    "^tollgate: $rt (create|run) $id failed with exit status 1$" "${msg##*$'\n'}"
  check_eq "$rt: ... exit 1" 1 "$rc"
  check_eq "$rt: ... and nothing left" "" "$(tg list -q)"
  check "$rt: ... and the bundle's config.json is the user's again, byte for byte" \
    cmp -s "$out/$id.config.before" "$TG_ROOT/bundles/$id/config.json"
  check_eq "$rt: ... with no original or mark beside it" "" \
    "$(ls "$TG_ROOT/bundles/$id" | grep -E '^config\.json\.(orig|tollgate)$')"

  # --- a run whose backend fails for real (its program is not there) ---
  # runsc: `runsc run` fails after tollgate prepared the bundle; the
  # prepare's undo was over by then, and the bundle stayed rewritten.
  id=nobin-$rt
  make_bundle "$TG_ROOT/bundles/$id" /no/such/program
  cp "$TG_ROOT/bundles/$id/config.json" "$out/$id.config.before"
  msg=$(tg --runtime "$rt" run -b "$TG_ROOT/bundles/$id" "$id" </dev/null 2>&1); rc=$?
  check_fails "$rt: a run of a program that is not there fails" test "$rc" = 0
  check_match "$rt: ... naming it" "/no/such/program" "$msg"
  check "$rt: ... and the bundle's config.json is the user's again, byte for byte" \
    cmp -s "$out/$id.config.before" "$TG_ROOT/bundles/$id/config.json"
  check_eq "$rt: ... with no original or mark beside it" "" \
    "$(ls "$TG_ROOT/bundles/$id" | grep -E '^config\.json\.(orig|tollgate)$')"
  check_eq "$rt: ... and nothing left" "" "$(tg list -q)"

  # --- concurrent kills of one running container (runsc's sentry says
  # "no such process" to the ones that lose the race) ---
  id=kills-$rt
  make_bundle "$TG_ROOT/bundles/$id" sleep 600
  if tg --runtime "$rt" create -b "$TG_ROOT/bundles/$id" "$id" </dev/null >/dev/null 2>"$out/$id.setup" &&
     tg start "$id" 2>>"$out/$id.setup"; then
    for round in 1 2 3; do
      for k in $(seq 1 20); do
        ( tg kill "$id" KILL >/dev/null 2>"$out/$id.k$round.$k"; echo $? >"$out/$id.k$round.$k.rc" ) &
      done
      wait
      [ $round -lt 3 ] && { wait_for 60 status_is "$id" stopped; tg delete "$id" >/dev/null 2>&1
        tg --runtime "$rt" create -b "$TG_ROOT/bundles/$id" "$id" </dev/null >/dev/null 2>&1; tg start "$id" 2>/dev/null; }
    done
    bad=""
    for f in "$out/$id".k?.*[0-9]; do
      rc=$(cat "$f.rc"); msg=$(cat "$f")
      if [ "$rc" = 0 ] && [ -z "$msg" ]; then continue; fi
      if [ "$rc" != 0 ] && [[ "$msg" =~ ^tollgate:\ $rt\ kill:\ container\ not\ running ]]; then continue; fi
      bad="$(basename "$f") rc=$rc: $msg"; break
    done
    check_eq "$rt: 60 concurrent kills: each succeeds or says container not running" "" "$bad"
    wait_for 60 status_is "$id" stopped
    tg delete --force "$id" >/dev/null 2>&1
  else
    check_eq "$rt: the kill race's container could be set up" "" "$(cat "$out/$id.setup")"
  fi
done

# A container whose state.json cannot be read is listed, not hidden.
mkdir -m 0700 "$TG_ROOT/half-made"
echo '{"id": "half-made", "status":' >"$TG_ROOT/half-made/state.json"
check_match "list shows a container with an unreadable state.json as unknown" "half-made +0 +unknown" "$(tg list 2>/dev/null)"
check "delete --force removes it" tg delete --force half-made
check_eq "nothing left at all" "" "$(tg list -q)"

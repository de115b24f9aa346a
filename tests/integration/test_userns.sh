#!/usr/bin/env bash
# One host identity per container (docs/hardening.md "Identities"), with
# real runc and runsc containers:
# - user namespace mappings that reach host 0, a host id below the pool or
#   another container's range are refused, naming the mapping; mappings
#   inside the pool run under the hardened profile (the probe agrees);
# - runc containers each get their own range: two hold 250 processes
#   each and a third still starts 250; host uids (/proc/<pid>/status)
#   come from distinct ranges;
# - a hostile host exec tool cannot kill, ptrace or read /proc environ of
#   another container's init nor of a runsc sandbox process;
# - 20 concurrent creates get 20 distinct ranges; kill -9 of create at
#   random points then delete --force leaks none (claims are counted).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

# The mapped ids are unprivileged host users: the bundles' rootfs must be
# reachable by them (docs/hardening.md, "What operators must know").
chmod 755 "$TG_ROOT"
IDS=$TG_ROOT/ids
# A pool of its own numbers, not the default 2^28: the other scripts (each
# with its own id_range_dir) hand out the default pool's ranges at the same
# time, and their processes would count as this script's containers'.
BASE=536870912
SIZE=65536
conf() { write_config id_range_dir="\"$IDS\"" id_range_base=$BASE "$@"; }
conf
EXPECT="python3 $here/probe_expect.py"

# set_maps CONFIG UIDMAP GIDMAP: add a user namespace with these mapping
# lists (JSON) to a bundle's config.json.
set_maps() {
  python3 - "$@" <<'PY'
import json, sys
path, um, gm = sys.argv[1:4]
c = json.load(open(path))
c["linux"]["namespaces"].append({"type": "user"})
c["linux"]["uidMappings"] = json.loads(um)
c["linux"]["gidMappings"] = json.loads(gm)
json.dump(c, open(path, "w"), indent=2)
PY
}

GOOD_HOST=$((BASE + 100 * SIZE))
for be in $BACKENDS; do
  # --- hostile mappings are refused, naming the mapping ------------------
  B=$TG_ROOT/bundles/map-$be
  make_bundle "$B"
  set_maps "$B/config.json" '[{"containerID":65534,"hostID":0,"size":1},{"containerID":0,"hostID":'$GOOD_HOST',"size":1}]' \
    '[{"containerID":0,"hostID":'$GOOD_HOST',"size":65536}]'
  out=$(tg --runtime "$be" run -b "$B" "m0-$be" 2>&1); rc=$?
  check_eq "$be: container 65534 -> host 0 is refused" 1 "$([ $rc -ne 0 ] && echo 1)"
  check_match "$be: ... naming the mapping" 'linux.uidMappings\[0\] maps container ids 65534-65534 to host ids 0-0.*host id 0 is host root' "$out"
  make_bundle "$B"
  set_maps "$B/config.json" '[{"containerID":0,"hostID":1000,"size":65536}]' '[{"containerID":0,"hostID":'$GOOD_HOST',"size":65536}]'
  out=$(tg --runtime "$be" run -b "$B" "userns-m1-$be" 2>&1); rc=$?
  check_eq "$be: a mapping to host ids below the pool is refused" 1 "$([ $rc -ne 0 ] && echo 1)"
  check_match "$be: ... naming it" 'linux.uidMappings\[0\] maps container ids 0-65535 to host ids 1000-66535, outside' "$out"
  make_bundle "$B"
  set_maps "$B/config.json" '[{"containerID":0,"hostID":'$GOOD_HOST',"size":65536}]' '[{"containerID":65534,"hostID":0,"size":1},{"containerID":0,"hostID":'$GOOD_HOST',"size":1}]'
  out=$(tg --runtime "$be" run -b "$B" "userns-m2-$be" 2>&1); rc=$?
  check_match "$be: a gid mapping to host 0 is refused too" 'linux.gidMappings\[0\] maps container ids 65534-65534 to host ids 0-0' "$out"
  check_eq "$be: no claim is left by refused creates" 0 "$(claims)"

  # --- a user namespace inside the pool runs hardened ---------------------
  P=$TG_ROOT/bundles/probe-$be
  probe_bundle "$P" /bin/tollgate-probe
  set_maps "$P/config.json" '[{"containerID":0,"hostID":'$GOOD_HOST',"size":65536}]' '[{"containerID":0,"hostID":'$GOOD_HOST',"size":65536}]'
  tg --runtime "$be" run -b "$P" "pv-$be" >"$TG_ROOT/probe-$be.json" 2>"$TG_ROOT/err"; rc=$?
  check_eq "$be: a config with mappings inside the pool runs hardened" 0 "$rc"
  [ "$rc" -eq 0 ] || sed 's/^/# /' "$TG_ROOT/err"
  # One difference: with a user namespace gVisor reports the read-only
  # root as EROFS, as Linux does (without one it checks permissions first).
  $EXPECT "$be" hardened "$TG_ROOT/probe-$be.json" "$be/hardened+userns" | grep -v "write_root"
  check_match "$be/hardened+userns: the root stays read-only" '"write_root": ?"(EROFS|EACCES)"' "$(tr -d '\n' < "$TG_ROOT/probe-$be.json")"
  check_eq "$be: its claim is freed after run" 0 "$(claims)"

  # another container's range is not available
  if tg --runtime "$be" create -b "$P" "hold-$be" >/dev/null 2>"$TG_ROOT/err"; then
    on_exit "tg delete --force hold-$be"
    check_match "$be: state shows the host id range" '"host_first": '$GOOD_HOST', *"size": 65536' "$(tg state "hold-$be" | tr -d '\n')"
    # The pinned rootfs is the mapped root's walk alone (issue 27 item 7).
    check_eq "$be: the state directory is root's, of the mapped root's group, 0710" "0 $GOOD_HOST 710" \
      "$(stat -c '%u %g %a' "$TG_ROOT/hold-$be")"
    check "$be: host root reads the pinned rootfs" test -r "$TG_ROOT/hold-$be/pins/rootfs/bin/busybox"
    check_fails "$be: nobody cannot walk to the pinned rootfs" \
      setpriv --reuid=65534 --regid=65534 --clear-groups ls "$TG_ROOT/hold-$be/pins/rootfs/bin/busybox"
    B2=$TG_ROOT/bundles/steal-$be
    make_bundle "$B2"
    set_maps "$B2/config.json" '[{"containerID":0,"hostID":'$((GOOD_HOST + 5))',"size":10}]' '[{"containerID":0,"hostID":'$GOOD_HOST',"size":1}]'
    out=$(tg --runtime "$be" run -b "$B2" "steal-$be" 2>&1)
    check_match "$be: mapping into another container's range is refused" "host ids $GOOD_HOST-$((GOOD_HOST + SIZE - 1)) belong to container state .*/hold-$be" "$out"
    tg delete --force "hold-$be"
  else
    echo "FAIL - $be: create hold-$be: $(cat "$TG_ROOT/err")"
  fi
  check_eq "$be: no claims left" 0 "$(claims)"
done

case " $BACKENDS " in *" runc "*)
  # --- three runc containers at 250 processes each ----------------------
  for n in 1 2; do
    make_bundle "$TG_ROOT/bundles/fork$n" sh -c 'for i in $(seq 1 250); do sleep 600 & done; echo started; wait'
    tg --runtime runc create -b "$TG_ROOT/bundles/fork$n" "fork$n" >/dev/null 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
    on_exit "tg delete --force fork$n"
    tg start "fork$n"
  done
  count_in() { # the number of processes whose host uid is in container $1's range
    local lo
    lo=$(tg state "$1" | json_get tollgate.id_range.ranges.0.host_first)
    # cat, not awk FILES: awk stops at a file whose process just exited
    cat /proc/[0-9]*/status 2>/dev/null | awk -v lo="$lo" -v hi=$((lo + SIZE)) '/^Uid:/ { if ($2 >= lo && $2 < hi) n++ } END { print n+0 }'
  }
  # exactly 251 once the loops are done (their short-lived helpers gone)
  for _ in $(seq 1 600); do [ "$(count_in fork1)" -eq 251 ] && [ "$(count_in fork2)" -eq 251 ] && break; sleep 0.2; done
  # What else holds an id of container 1's range, when its count is off
  # (CI saw 253 once): the names say whose.
  if [ "$(count_in fork1)" -ne 251 ]; then
    lo1=$(tg state fork1 | json_get tollgate.id_range.ranges.0.host_first)
    for st in /proc/[0-9]*/status; do
      awk -v lo="$lo1" -v hi=$((lo1 + SIZE)) '/^Name:/ {n = $2} /^State:/ {s = $2} /^PPid:/ {pp = $2}
        /^Uid:/ {if ($2 >= lo && $2 < hi && n != "sleep") print "# fork1 range: " FILENAME, n, s, "ppid " pp}' "$st" 2>/dev/null
    done
  fi
  check_eq "runc: container 1 holds 250 processes (+ its shell)" 251 "$(count_in fork1)"
  check_eq "runc: container 2 holds 250 processes (+ its shell)" 251 "$(count_in fork2)"
  make_bundle "$TG_ROOT/bundles/fork3" sh -c 'n=0; for i in $(seq 1 250); do sleep 600 & n=$((n+1)); done; echo forked=$n; kill $(jobs -p) 2>/dev/null; echo done'
  out=$(tg --runtime runc run -b "$TG_ROOT/bundles/fork3" fork3 2>&1)
  check_match "runc: a third container still starts 250" "forked=250" "$out"
  check_fails "runc: ... and never hits 'can't fork'" grep -q "can't fork" <<<"$out"
  u1=$(host_uid "$(state_of fork1 pid)"); u2=$(host_uid "$(state_of fork2 pid)")
  check_eq "runc: container 1's init is host uid base+k*65536+65534" 65534 $(( (u1 - BASE) % SIZE ))
  check_match "runc: containers 1 and 2 run as different host uids" "^[0-9]+ [0-9]+$" "$u1 $u2"
  check_eq "runc: ... from distinct ranges" 1 "$([ $(( (u1 - BASE) / SIZE )) -ne $(( (u2 - BASE) / SIZE )) ] && echo 1)"
  check_eq "runc: ... neither is 65534 nor 0" 1 "$([ "$u1" -gt $BASE ] && [ "$u2" -gt $BASE ] && echo 1)"

  # --- a hostile host tool against another container and a runsc sandbox -
  POL=$TG_ROOT/pol
  mkdir -p "$POL"
  cc -O1 -o "$POL/victim" "$here/userns/victim.c"
  chmod -R a+rX "$POL"
  targets=$(state_of fork1 pid)
  sandbox=
  case " $BACKENDS " in *" runsc "*)
    make_bundle "$TG_ROOT/bundles/gv" sleep 600
    if tg --runtime runsc create -b "$TG_ROOT/bundles/gv" gv >/dev/null 2>"$TG_ROOT/err"; then
      on_exit "tg delete --force gv"
      tg start gv
      sandbox=$(state_of gv pid)
      check_eq "runsc: gVisor's sandbox process runs as host uid 65534" 65534 "$(host_uid "$sandbox")"
      targets="$targets $sandbox"
      gofer=$(pgrep -f "runsc-gofer.*--root=$TG_ROOT/backend/runsc.*gv" | head -1)
      [ -n "$gofer" ] && targets="$targets $gofer"
    else
      echo "FAIL - runsc: create gv: $(cat "$TG_ROOT/err")"
    fi;;
  esac
  argv=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$POL/victim" $targets)
  cat > "$POL/p.json" <<P
{"version": 1, "tools": {"victim": {"backend": {"type": "exec", "argv": $argv}, "rules": [{"effect": "allow"}]}}}
P
  for rt in $BACKENDS; do
    make_bundle "$TG_ROOT/bundles/att-$rt" sh -c '/run/tollgate/tollgate-call victim "{}"'
    out=$(tg --runtime "$rt" run --policy "$POL/p.json" -b "$TG_ROOT/bundles/att-$rt" "att-$rt" 2>&1)
    for pid in $targets; do
      got=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r=r.get("result", r); t=r[sys.argv[2]]; print(t["kill"], t["ptrace"], t["environ"])' "$out" "$pid" 2>&1)
      [[ "$got" =~ Traceback ]] && echo "# $out"
      check_match "$rt caller: the tool cannot kill, ptrace or read environ of pid $pid" '^(EPERM|ESRCH) (EPERM|ESRCH) (EPERM|ESRCH|ENOENT|EACCES)$' "$got"
    done
    check_match "$rt caller: the tool runs as the tools' uid, as pid 1 of its own namespace" '"self_uid": ?65533, ?"self_pid": ?1[,}]' "$out"
  done
  check "runc: container 1 survived the tool" kill -0 "$(state_of fork1 pid)"
  [ -n "$sandbox" ] && check "runsc: the sandbox survived the tool" kill -0 "$sandbox"
  tg delete --force fork1; tg delete --force fork2; [ -n "$sandbox" ] && tg delete --force gv
  check_eq "runc: every claim is freed after delete" 0 "$(claims)"

  # --- 20 concurrent creates: 20 distinct ranges ------------------------
  make_bundle "$TG_ROOT/bundles/many" sleep 600
  pids=()
  for i in $(seq 1 20); do
    tg --runtime runc create -b "$TG_ROOT/bundles/many" "many$i" >/dev/null 2>"$TG_ROOT/err-many$i" &
    pids+=($!)
  done
  for i in $(seq 1 20); do on_exit "tg delete --force many$i"; done
  wait "${pids[@]}"
  ranges=$(for i in $(seq 1 20); do tg state "many$i" 2>/dev/null | json_get tollgate.id_range.ranges.0.host_first 2>/dev/null; done)
  check_eq "runc: 20 concurrent creates got 20 ranges" 20 "$(echo "$ranges" | grep -c .)"
  for i in $(seq 1 20); do [ -s "$TG_ROOT/err-many$i" ] && sed "s/^/# many$i: /" "$TG_ROOT/err-many$i"; done
  check_eq "runc: ... all distinct" 20 "$(echo "$ranges" | sort -u | grep -c .)"
  check_eq "runc: ... and 20 claims" 20 "$(claims)"
  for i in $(seq 1 20); do tg delete --force "many$i"; done
  check_eq "runc: after delete no claim is left" 0 "$(claims)"

  # --- kill -9 of create at random points, then delete --force ----------
  # (exec: $! is tollgate itself; `tg ... &` made a subshell of the
  # function, and the kill took that, leaving the create to go on beside
  # the delete: a container made after its delete, the claim it holds
  # left, as one fresh-clone run showed)
  for i in $(seq 1 12); do
    ( exec "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc create -b "$TG_ROOT/bundles/many" "k$i" \
        >/dev/null 2>&1 ) &
    p=$!
    sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    tg delete --force "k$i" >/dev/null 2>&1
  done
  check_eq "runc: kill -9 of create at random points + delete --force leaks no claim" 0 "$(claims)"
  # --- a container that joins another's namespaces shares its identity ---
  # A new user namespace could not administer the joined ipc/uts
  # namespaces: the joiner enters the owner's user namespace and range.
  # (ns_paths CONFIG PID TYPE...: join those namespaces of PID by path)
  ns_paths() {
    python3 - "$@" <<'PY'
import json, sys
path, pid, *types = sys.argv[1:]
c = json.load(open(path))
for n in c["linux"]["namespaces"]:
    if n["type"] in types:
        n["path"] = "/proc/%s/ns/%s" % (pid, n["type"])
json.dump(c, open(path, "w"), indent=2)
PY
  }
  make_bundle "$TG_ROOT/bundles/owner" sleep 600
  tg --runtime runc create -b "$TG_ROOT/bundles/owner" owner >/dev/null 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
  on_exit "tg delete --force owner"
  tg start owner
  opid=$(state_of owner pid)
  make_bundle "$TG_ROOT/bundles/joiner" sleep 600
  ns_paths "$TG_ROOT/bundles/joiner/config.json" "$opid" ipc uts
  out=$(tg --runtime runc create -b "$TG_ROOT/bundles/joiner" joiner 2>&1 </dev/null)
  check_match "runc: a join no proof ties to its owner is refused, naming the rule" \
    "asks to join owner's namespaces, and nothing proves they belong together: the join rule .*--join owner.*trusted_join_callers" "$out"
  check_fails "runc: ... and leaves no container" test -d "$TG_ROOT/joiner"
  # The caller vouches (docs/hardening.md "Joins", proof 2).
  tg --runtime runc create --join owner -b "$TG_ROOT/bundles/joiner" joiner >/dev/null 2>"$TG_ROOT/err"
  check_eq "runc: a container joining another's ipc/uts namespaces with --join is created" "" "$(cat "$TG_ROOT/err")"
  on_exit "tg delete --force joiner"
  tg start joiner
  jpid=$(state_of joiner pid)
  check_eq "runc: joiner: in the owner's user namespace" "$(readlink /proc/$opid/ns/user)" "$(readlink /proc/$jpid/ns/user 2>&1)"
  check_fails "runc: joiner: ... which is not the host's" test "$(readlink /proc/$jpid/ns/user)" = "$(readlink /proc/self/ns/user)"
  check_eq "runc: joiner: the owner's host uid" "$(host_uid $opid)" "$(host_uid $jpid)"
  check_eq "runc: joiner: ... a pool uid, not 65534" 1 "$([ "$(host_uid $jpid)" -gt $BASE ] && echo 1)"
  check_match "runc: joiner: state records whose range it shares" '"pod": "owner"' "$(tg state joiner | tr -d '\n')"
  check_match "runc: joiner: state records the join and its proof" '"join": \{ *"owner": "owner", *"proof": "--join"' "$(tg state joiner | tr -d '\n')"
  check_eq "runc: joiner and owner hold one claim" 1 "$(claims)"
  tg delete --force owner
  check_eq "runc: the owner's delete keeps the range while the joiner runs" 1 "$(claims)"
  tg delete --force joiner
  check_eq "runc: the last one's delete frees it" 0 "$(claims)"

  # A namespace no tollgate container owns is refused (the container would
  # run as host 65534 beside every other such container).
  unshare --ipc sleep 600 &
  fpid=$!
  on_exit "kill $fpid"
  sleep 0.2
  make_bundle "$TG_ROOT/bundles/foreign" sleep 600
  ns_paths "$TG_ROOT/bundles/foreign/config.json" "$fpid" ipc
  out=$(tg --runtime runc create -b "$TG_ROOT/bundles/foreign" foreign 2>&1 </dev/null); rc=$?
  check_eq "runc: joining a foreign ipc namespace is refused" 1 "$([ $rc -ne 0 ] && echo 1)"
  check_match "runc: ... naming the namespace and the fix" "linux.namespaces\[[0-9]+\]: the ipc namespace /proc/$fpid/ns/ipc belongs to no running container of this --root" "$out"
  kill "$fpid"; wait "$fpid" 2>/dev/null
  check_eq "runc: ... and leaves no claim" 0 "$(claims)"

  # --- one container cannot take the whole pool (issue 27) --------------
  # A pool of 4 ranges, and mappings that reach all 4 of them.
  conf id_range_count=4
  W=$TG_ROOT/bundles/whole-pool
  make_bundle "$W" sleep 600
  set_maps "$W/config.json" '[{"containerID":0,"hostID":'$BASE',"size":'$((4 * SIZE))'}]' \
    '[{"containerID":0,"hostID":'$BASE',"size":'$((4 * SIZE))'}]'
  out=$(tg --runtime runc create -b "$W" whole 2>&1 </dev/null); rc=$?
  check_eq "runc: mappings over the whole pool are refused" 1 "$([ $rc -ne 0 ] && echo 1)"
  check_match "runc: ... naming the limit and the host config key" 'reach host ids of 4 ranges of the pool; a container may hold 1 \(host config max_id_ranges_per_container\)' "$out"
  check_eq "runc: ... and claim nothing" 0 "$(claims)"
  # uid and gid mappings in two different ranges are two ranges too.
  make_bundle "$W" sleep 600
  set_maps "$W/config.json" '[{"containerID":0,"hostID":'$BASE',"size":'$SIZE'}]' \
    '[{"containerID":0,"hostID":'$((BASE + SIZE))',"size":'$SIZE'}]'
  check_match "runc: uid and gid mappings in two ranges are refused" 'of 2 ranges of the pool; a container may hold 1' \
    "$(tg --runtime runc create -b "$W" whole 2>&1 </dev/null)"
  # Three ordinary containers: the pool reports 1 of 4 free, and low.
  make_bundle "$TG_ROOT/bundles/small" sleep 600
  for n in 1 2 3; do
    tg --runtime runc create -b "$TG_ROOT/bundles/small" "small$n" >/dev/null 2>"$TG_ROOT/err" </dev/null || sed 's/^/# /' "$TG_ROOT/err"
    on_exit "tg delete --force small$n"
  done
  pool=$(tg state small1 | python3 -c 'import json,sys; p=json.load(sys.stdin)["tollgate"]["id_pool"]; print(p["free"], p["total"], p["low"])')
  check_eq "runc: state reports the pool: 1 of 4 ranges free, low" "1 4 True" "$pool"
  check_match "runc: list reports the pool running low" 'the host id pool .* is running low: 1 of 4 ranges free' "$(tg list 2>&1 >/dev/null)"
  check_eq "runc: list's JSON on stdout stays an array of containers" 3 \
    "$(tg list --format json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
  tg --runtime runc create -b "$TG_ROOT/bundles/small" small4 >/dev/null 2>&1 </dev/null
  on_exit "tg delete --force small4"
  out=$(tg --runtime runc create -b "$TG_ROOT/bundles/small" small5 2>&1 </dev/null)
  check_match "runc: a full pool's error names the containers that hold it" 'every one of the 4 host id ranges in .* is held by a container \(container small1 of root [^ ]+: 1, container small2 of root [^ ]+: 1, container small3 of root [^ ]+: 1, container small4 of root [^ ]+: 1\)' "$out"
  for n in 1 2 3 4; do tg delete --force "small$n"; done
  # The host config may allow more: then the whole-pool mapping holds 4.
  conf id_range_count=4 max_id_ranges_per_container=4
  make_bundle "$W" sleep 600
  set_maps "$W/config.json" '[{"containerID":0,"hostID":'$BASE',"size":'$((4 * SIZE))'}]' \
    '[{"containerID":0,"hostID":'$BASE',"size":'$((4 * SIZE))'}]'
  tg --runtime runc create -b "$W" whole >/dev/null 2>"$TG_ROOT/err" </dev/null; rc=$?
  on_exit "tg delete --force whole"
  check_eq "runc: max_id_ranges_per_container=4 admits the 4-range mapping" 0 "$rc"
  [ "$rc" -eq 0 ] || sed 's/^/# /' "$TG_ROOT/err"
  check_eq "runc: ... which holds 4 claims" 4 "$(claims)"
  check_match "runc: ... and the next create names it as the holder" 'held by a container \(container whole of root [^ ]+: 4\)' \
    "$(tg --runtime runc create -b "$TG_ROOT/bundles/small" small5 2>&1 </dev/null)"
  tg delete --force whole
  check_eq "runc: ... and frees them on delete" 0 "$(claims)"
  conf

  # --- the join rule against the real attack (issue 27.1) ----------------
  # A victim with a secret in /tmp and a bridge; an attacker created by
  # another process (not the victim's caller, no --join) whose pid/ipc/uts
  # paths are the victim's init's.  Refused at create: it never runs, so
  # it reads nothing and calls nothing through the victim's bridge.
  JP=$TG_ROOT/jpol
  mkdir -p "$JP"
  cat > "$JP/victim.json" <<'P'
{"version": 1, "tools": {"note": {"backend": {"type": "exec", "argv": ["/bin/echo", "{\"victim_tool\": \"ran\"}"]}, "rules": [{"effect": "allow"}]}}}
P
  chmod -R a+rX "$JP"
  make_bundle "$TG_ROOT/bundles/victim" sh -c 'echo TENANT-A-SECRET >/tmp/secret; exec sleep 600'
  tg --runtime runc run -d --policy "$JP/victim.json" -b "$TG_ROOT/bundles/victim" victim </dev/null >/dev/null 2>"$TG_ROOT/err" ||
    sed 's/^/# /' "$TG_ROOT/err"
  on_exit "tg delete --force victim"
  vpid=$(state_of victim pid)
  make_bundle "$TG_ROOT/bundles/attacker" sh -c 'cat /proc/1/root/tmp/secret; /proc/1/root/run/tollgate/tollgate-call note "{\"msg\": \"injected-by-attacker\"}"; echo attacker-ran'
  ns_paths "$TG_ROOT/bundles/attacker/config.json" "$vpid" pid ipc uts
  out=$(setsid "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc run -b "$TG_ROOT/bundles/attacker" attacker 2>&1 </dev/null)
  check_match "runc: attack: another caller's container joining the victim's pid/ipc/uts is refused, naming the rule" \
    "asks to join victim's namespaces, and nothing proves they belong together: the join rule \(docs/hardening.md \"Joins\"\)" "$out"
  check_fails "runc: attack: ... it read nothing and ran nothing" eval '[[ "$out" =~ TENANT-A-SECRET|attacker-ran|victim_tool ]]'
  check_eq "runc: attack: ... and no call reached the victim's bridge" 0 "$(cat "$TG_ROOT/audit/victim.jsonl" 2>/dev/null | grep -c injected-by-attacker)"
  check_fails "runc: attack: ... no container is left" test -d "$TG_ROOT/attacker"
  # The same from the victim's own caller (this shell) without --join:
  # a shell is no containerd shim, so nothing proves a pod either.
  out=$(tg --runtime runc run -b "$TG_ROOT/bundles/attacker" attacker 2>&1 </dev/null)
  check_match "runc: attack from the victim's own caller, no --join: refused too" "nothing proves they belong together" "$out"
  check_eq "runc: attack: the victim still runs" running \
    "$(tg state victim | json_get status)"
  # A kept network path (a profile with "network": "keep"): the victim's
  # network namespace is a join of the victim, refused unproven and
  # accepted with --join (then in the victim's user namespace and
  # network namespace); another kept path (a CNI namespace) is no join.
  D=$TG_ROOT/data
  mkdir -p "$D/profiles"
  cp "$here"/../../bundles/profiles/*.json "$D/profiles/"
  python3 - "$D/profiles/hardened.json" "$D/profiles/keepnet.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p.update(name="keepnet", network="keep", strictness=40)
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
  ln -s "$(cd "$here/../../bundles" && pwd)/seccomp" "$D/seccomp"
  ln -s "$(cd "$here/../../bundles" && pwd)/backend-floor.json" "$D/backend-floor.json"
  conf data_dir="\"$D\"" profile='"keepnet"'
  make_bundle "$TG_ROOT/bundles/netjoin" sh -c 'cat /proc/net/dev | cut -d: -f1 | tail -n +3 | tr -d " "; exec sleep 600'
  join_netns "$TG_ROOT/bundles/netjoin/config.json" "/proc/$vpid/ns/net"
  out=$(setsid "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc create -b "$TG_ROOT/bundles/netjoin" netjoin 2>&1 </dev/null)
  check_match "runc: keep profile: the victim's network namespace, unproven, is refused naming the rule" \
    "the network namespace /proc/$vpid/ns/net is container victim's, and nothing proves this container belongs with it: the join rule" "$out"
  check_fails "runc: ... no container left" test -d "$TG_ROOT/netjoin"
  tg --runtime runc create --join victim -b "$TG_ROOT/bundles/netjoin" netjoin </dev/null >/dev/null 2>"$TG_ROOT/err"
  check_eq "runc: keep profile: with --join victim it is created" "" "$(cat "$TG_ROOT/err")"
  on_exit "tg delete --force netjoin"
  tg start netjoin
  npid=$(state_of netjoin pid)
  check_eq "runc: ... in the victim's network namespace" "$(readlink /proc/$vpid/ns/net)" "$(readlink /proc/$npid/ns/net 2>&1)"
  check_eq "runc: ... and its user namespace" "$(readlink /proc/$vpid/ns/user)" "$(readlink /proc/$npid/ns/user 2>&1)"
  tg delete --force netjoin
  ip netns add "tgj$$" 2>/dev/null
  on_exit "ip netns del tgj$$"
  make_bundle "$TG_ROOT/bundles/netcni" sh -c 'cat /proc/net/dev | cut -d: -f1 | tail -n +3 | tr -d " "; cat /proc/self/uid_map'
  join_netns "$TG_ROOT/bundles/netcni/config.json" "/run/netns/tgj$$"
  out=$(setsid "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime runc run -b "$TG_ROOT/bundles/netcni" netcni 2>&1 </dev/null)
  # It is no join; but the kernel lets only the user namespace owning a
  # network namespace mount sysfs in it: refused before runc fails.
  check_match "runc: keep profile: a network namespace of no container (a CNI one) is no join, and runc's own user namespace could not mount /sys there: refused naming the fix" \
    "the profile keeps the network namespace /run/netns/tgj$$, which the container's own user namespace .* does not own.*use a profile with \"network\": \"none\"" "$out"
  check_fails "runc: ... no container left" test -d "$TG_ROOT/netcni"
  check_eq "runc: ... nor a claim (the victim's only)" 1 "$(claims)"
  ip netns del "tgj$$"
  conf
  tg delete --force victim
  check_eq "runc: attack: no claim is left" 0 "$(claims)"

  # --- mount points are made as host root, never through the image's links
  # A hostile rootfs whose /etc is a link to a host directory, and a bind
  # mount onto /etc/hosts: the mount point is resolved inside the rootfs.
  victim=$(mktemp -d /tmp/tg-victim.XXXXXX)
  hosts=$(mktemp -d /tmp/tg-hosts.XXXXXX)
  on_exit "rm -rf $victim $hosts"
  chmod 755 "$hosts"; echo "127.0.0.1 pinned" > "$hosts/hosts"; chmod 644 "$hosts/hosts"
  H=$TG_ROOT/bundles/hostile-etc
  make_bundle "$H" sh -c 'cat /etc/hosts'
  own_rootfs "$H"; chmod 755 "$H" "$H/rootfs"
  rm -rf "$H/rootfs/etc"; ln -s "$victim" "$H/rootfs/etc"
  add_ro_bind "$H/config.json" /etc/hosts "$hosts/hosts"
  tg --runtime runc run -b "$H" hostile-etc >/dev/null 2>&1 </dev/null
  check_eq "runc: /etc linked to a host directory: nothing is made in it" "" "$(ls -A "$victim")"
  tg delete --force hostile-etc >/dev/null 2>&1
  # A missing mount point in a root-owned rootfs directory is made for the
  # mapped root (runc could not: EACCES), and the mount works.
  M=$TG_ROOT/bundles/mountpoint
  make_bundle "$M" sh -c 'cat /etc/tg-pinned'
  own_rootfs "$M"; chmod 755 "$M" "$M/rootfs"; chmod 755 "$M/rootfs/etc"
  rm -f "$M/rootfs/etc/tg-pinned"
  add_ro_bind "$M/config.json" /etc/tg-pinned "$hosts/hosts"
  out=$(tg --runtime runc run -b "$M" mountpoint 2>&1 </dev/null)
  check_match "runc: a missing mount point in root's /etc is made, and the bind works" "127.0.0.1 pinned" "$out"
  check_eq "runc: ... as an empty file owned by host root" "0 0" "$(stat -c '%u %s' "$M/rootfs/etc/tg-pinned" 2>&1)"

  # --- a --root under a 0700 directory (Docker's exec root) -------------
  # The mapped root reaches its pins through /run/tollgate-reach.
  closed=$(mktemp -d /tmp/tg-closed.XXXXXX)
  on_exit "rm -rf $closed"
  chmod 700 "$closed"
  tgc() { "$TG" --root "$closed/state" --config "$TG_CONFIG" "$@"; }
  make_bundle "$TG_ROOT/bundles/closed" sh -c 'id -u'
  out=$(tgc --runtime runc run -b "$TG_ROOT/bundles/closed" closed 2>&1 </dev/null); rc=$?
  tgc delete --force closed >/dev/null 2>&1
  check_eq "runc: a container under a 0700 --root runs" 0 "$rc"
  check_match "runc: ... as the hardened user" "(^|"$'\n'")65534" "$out"
  [ "$rc" -eq 0 ] || echo "# $out"
  # Only this root's views: other scripts' containers (Docker's 0700 exec
  # root) have views of their own there meanwhile.  mountinfo's fourth
  # field is the bind's source within its filesystem.
  check_eq "runc: ... and leaves no view in /run/tollgate-reach" "" \
    "$(awk -v c="$closed/" 'index($4, c) == 1 && index($5, "/run/tollgate-reach/") == 1' /proc/self/mountinfo)"
  check_eq "runc: ... nor a claim" 0 "$(claims)"

  # --- another host user reads nothing through a view or a state dir ----
  # The attack of issue 27: a bind source in a private (0700) directory of
  # root's, pinned under the state directory; as nobody, through the view
  # (its old name was SHA-256 of the state directory's path) or the state
  # directory itself.
  priv=$(mktemp -d /tmp/tg-priv.XXXXXX)
  on_exit "rm -rf $priv"
  chmod 700 "$priv"; echo SECRET-IN-A-ROOT-ONLY-DIR > "$priv/secret"; chmod 644 "$priv/secret"
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  add_secret() { add_ro_bind "$1" /secret "$priv/secret"; }
  check_fails "runc: nobody cannot read the secret at its source" as_nobody cat "$priv/secret"
  make_bundle "$TG_ROOT/bundles/reach" sh -c 'cat /secret; sleep 600'
  add_secret "$TG_ROOT/bundles/reach/config.json"
  tgc --runtime runc create -b "$TG_ROOT/bundles/reach" reach >/dev/null 2>"$TG_ROOT/err" </dev/null || sed 's/^/# /' "$TG_ROOT/err"
  on_exit "tgc delete --force reach"
  name=$(cat "$closed/state/reach/reach-view" 2>/dev/null)
  check_match "runc: the view's name is random, recorded in the state directory" '^[0-9a-f]{32}$' "$name"
  legacy=$(printf '%s' "$(realpath "$closed/state/reach")" | sha256sum | cut -c1-32)
  check_fails "runc: ... not the guessable SHA-256 of the state directory's path" test -e "/run/tollgate-reach/$legacy"
  check_eq "runc: the view's directory is root's, of the mapped root's group, 0710" \
    "0 $(json_get linux.gidMappings.0.hostID <"$closed/state/reach/config.json") 710" \
    "$(stat -c '%u %g %a' "/run/tollgate-reach/$name")"
  pin=$(python3 -c 'import json,sys; print([m["source"] for m in json.load(open(sys.argv[1]))["mounts"] if m["destination"] == "/secret"][0])' "$closed/state/reach/config.json")
  check_match "runc: the config binds the secret through the view" "^/run/tollgate-reach/$name/state/pins/" "$pin"
  check_eq "runc: host root reads it through the view (the path is right)" SECRET-IN-A-ROOT-ONLY-DIR "$(cat "$pin" 2>&1)"
  out=$(as_nobody cat "$pin" 2>&1); rc=$?
  check_eq "runc: nobody cannot read the secret through the view" 1 "$([ $rc -ne 0 ] && echo 1)"
  check_match "runc: ... permission denied" 'Permission denied' "$out"
  check_fails "runc: nobody cannot even list the view directory" as_nobody ls "/run/tollgate-reach/$name/"
  tgc start reach; sleep 0.5
  check_match "runc: the container itself reads its bind mount" SECRET-IN-A-ROOT-ONLY-DIR "$(tgc exec reach cat /secret 2>&1)"
  tgc delete --force reach
  check_fails "runc: delete removes the view" test -e "/run/tollgate-reach/$name"
  # The same under a --root others can walk (no view): the state directory
  # and its pins pass only the mapped root's group.
  make_bundle "$TG_ROOT/bundles/reach2" sh -c 'cat /secret; sleep 600'
  add_secret "$TG_ROOT/bundles/reach2/config.json"
  tg --runtime runc create -b "$TG_ROOT/bundles/reach2" reach2 >/dev/null 2>"$TG_ROOT/err" </dev/null || sed 's/^/# /' "$TG_ROOT/err"
  on_exit "tg delete --force reach2"
  pin=$(python3 -c 'import json,sys; print([m["source"] for m in json.load(open(sys.argv[1]))["mounts"] if m["destination"] == "/secret"][0])' "$TG_ROOT/reach2/config.json")
  check_match "runc: without a view the config binds the pin in the state directory" "^$TG_ROOT/reach2/pins/" "$pin"
  check_eq "runc: the state directory is 0710" 710 "$(stat -c %a "$TG_ROOT/reach2")"
  check_fails "runc: nobody cannot read the secret through the state directory" as_nobody cat "$pin"
  tg start reach2; sleep 0.5
  check_match "runc: ... while the container reads it" SECRET-IN-A-ROOT-ONLY-DIR "$(tg exec reach2 cat /secret 2>&1)"
  tg delete --force reach2
  check_eq "runc: no claims left after the reach tests" 0 "$(claims)"
  ;;
esac

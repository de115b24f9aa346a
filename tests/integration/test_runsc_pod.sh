#!/usr/bin/env bash
# One gVisor sandbox per pod, by the CLI (docs/kubernetes.md, "Pods"): a
# pause container and app containers carrying the CRI annotations
# containerd's CRI plugin writes, started with `run -d` as a person or a
# shim would:
#   - the app containers run inside the pause container's sandbox: one
#     runsc sandbox, one loopback, and with equal pid namespace paths one
#     PID namespace; each has its own waiter, whose pid state reports;
#   - exec, kill and delete work; a killed waiter leaves nothing behind;
#   - a person's CLI is no containerd shim: each member is created with
#     --join pod1, the caller vouching (docs/hardening.md "Joins");
#   - a join into anything but a verified pause container of this root is
#     refused with a message naming the problem, leaving nothing behind:
#     a non-pause container, a dead pod, another root's pod, a forged
#     (runsc-side) or malformed sandbox id, another pod's sandbox;
#   - forged CRI annotations (container-type=container, sandbox-id=<the
#     victim's pause>, its pid namespace path) are refused under runsc and
#     runc: without --join by the join rule, with the pod's identity keys
#     left out or wrong even with --join; the victim's secret stays its own.
set -u
. "$(dirname "$0")/lib.sh"
chmod 755 "$TG_ROOT"
write_config 'runtime="runsc"' id_range_dir="\"$TG_ROOT/ids\""
RUNSC_ROOT=$TG_ROOT/backend/runsc
rs_list() { runsc --root "$RUNSC_ROOT" list --quiet 2>/dev/null | sort; }
# pod_bundle DIR TYPE SANDBOX NAMESPACE PIDPATH ARGS...: a bundle with the
# annotations containerd puts on a pod's container (PIDPATH "-" for none).
pod_bundle() {
  local dir=$1 type=$2 sandbox=$3 ns=$4 pidpath=$5; shift 5
  make_bundle "$dir" "$@"
  python3 - "$dir/config.json" "$type" "$sandbox" "$ns" "$pidpath" <<'PY'
import json, sys
path, typ, sandbox, ns, pidpath = sys.argv[1:]
c = json.load(open(path))
c.setdefault("annotations", {}).update({
    "io.kubernetes.cri.container-type": typ,
    "io.kubernetes.cri.sandbox-id": sandbox,
    "io.kubernetes.cri.sandbox-namespace": ns})
if pidpath != "-":
    for n in c["linux"]["namespaces"]:
        if n["type"] == "pid":
            n["path"] = pidpath
json.dump(c, open(path, "w"), indent=2)
PY
}
W=$TG_ROOT/b
out() { echo "$TG_ROOT/$1.out"; }

# The pod: its pause container serves "pong" on 127.0.0.1:8080 (the pause
# image does nothing; here it stands in for any container of the pod).
pod_bundle "$W/pause" sandbox pod1 ns1 - sh -c 'while true; do echo pong | nc -l -p 8080; done'
check "pause: run -d" tg run -d --bundle "$W/pause" pod1 </dev/null >"$(out pod1)" 2>&1
pause_pid=$(tg state pod1 | json_get pid)
check_match "pause: running with a pid" '^[1-9][0-9]*$' "$pause_pid"
pidns=/proc/$pause_pid/ns/pid

pod_bundle "$W/a1" container pod1 ns1 "$pidns" sh -c 'exec sleep 301'
check "app 1: run -d returns" timeout 60 "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" \
  run -d --join pod1 --bundle "$W/a1" a1 </dev/null >"$(out a1)" 2>&1
pod_bundle "$W/a2" container pod1 ns1 "$pidns" sh -c 'exec sleep 302'
check "app 2: run -d returns" timeout 60 "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" \
  run -d --join pod1 --bundle "$W/a2" a2 </dev/null >"$(out a2)" 2>&1
check_eq "one runsc sandbox: runsc knows three containers" 3 "$(rs_list | wc -l)"
check_eq "one runsc sandbox: a single sandbox process" 1 \
  "$(for id in $(rs_list); do runsc --root "$RUNSC_ROOT" state "$id" | json_get pid; done | sort -u | wc -l)"
a1_pid=$(tg state a1 | json_get pid)
check_eq "app 1: state says running" running "$(tg state a1 | json_get status)"
check_match "app 1: its pid is its own waiter's, not the sandbox's" '^[1-9][0-9]*$' "$a1_pid"
check_fails "app 1: ... which is not the pause container's" test "$a1_pid" = "$pause_pid"
check_eq "app 1: the waiter is recorded" true \
  "$(json_get waiter <"$TG_ROOT/a1/state.json" 2>&1)"
check_eq "app 1: the pod's loopback: the pause container answers on 127.0.0.1" pong \
  "$(tg exec a1 sh -c 'nc 127.0.0.1 8080 </dev/null' 2>&1)"
check_match "app 2: the pod's PID namespace: it sees app 1's process" '(^|'$'\n'')sleep 301' \
  "$(tg exec a2 ps -o args 2>&1)"
check_match "app 1: and app 2's" '(^|'$'\n'')sleep 302' "$(tg exec a1 ps -o args 2>&1)"
check_match "each app has its own bridge mount in its own spec" '"destination": "/run/tollgate"' \
  "$(grep -h '"destination": "/run/tollgate"' "$TG_ROOT/a1/config.json" 2>&1)"

# kill: the container ends, its waiter with it, with its status.
check "app 1: kill" tg kill a1 KILL
wait_for 10 pid_gone "$a1_pid"
check_fails "app 1: its waiter exited with it" sh -c "kill -0 $a1_pid 2>/dev/null"
check_eq "app 1: state says stopped" stopped "$(tg state a1 | json_get status)"
check "app 1: delete" tg delete a1
check_eq "app 1: gone from runsc" 2 "$(rs_list | wc -l)"
check_eq "pause: still running" running "$(tg state pod1 | json_get status)"

# A killed waiter: nobody can start or wait for that container any more;
# delete (without --force, as containerd's shim calls it) removes it.
pod_bundle "$W/a3" container pod1 ns1 - sh -c 'exec sleep 303'
check "app 3: create" tg create --join pod1 --bundle "$W/a3" a3 </dev/null >"$(out a3)" 2>&1
w3=$(tg state a3 | json_get pid)
check_match "app 3: created, its waiter's pid" '^[1-9][0-9]*$' "$w3"
kill -KILL "$w3" 2>/dev/null
sleep 0.3
msg=$(tg start a3 2>&1)
check_match "app 3: start without its waiter is refused, naming why" 'waiter .*is gone' "$msg"
check "app 3: delete after its waiter was killed" tg delete a3
check_eq "app 3: gone from runsc" 2 "$(rs_list | wc -l)"

# The hostile shapes: each refused by name, nothing created.
refused() { # NAME ID REGEX: create of bundle $W/$ID must fail with REGEX, leaving nothing
  local before after
  before=$(rs_list)
  check_refused "$1: refused" "$3" tg create --bundle "$W/$2" "$2"
  check_fails "$1: no tollgate container" test -d "$TG_ROOT/$2"
  after=$(rs_list)
  check_eq "$1: no runsc container" "$before" "$after"
}
pod_bundle "$W/h1" container a2 ns1 - sh -c 'sleep 1'
refused "join into a non-pause container" h1 'join a2, which is not a pod sandbox \(pause\) container'
pod_bundle "$W/pause2" sandbox pod2 ns1 - sh -c 'exec sleep 999'
tg run -d --bundle "$W/pause2" pod2 </dev/null >"$(out pod2)" 2>&1
tg kill pod2 KILL
wait_for 20 status_is pod2 stopped
pod_bundle "$W/h2" container pod2 ns1 - sh -c 'sleep 1'
refused "join into a dead pod" h2 'pod sandbox pod2 is not running'
tg delete --force pod2
OTHER=$(mktemp -d /tmp/tollgate-root.XXXXXX)
on_exit "rm -rf '$OTHER'"
pod_bundle "$W/h3" container pod1 ns1 - sh -c 'sleep 1'
msg=$("$TG" --root "$OTHER" --config "$TG_CONFIG" create --bundle "$W/h3" h3 </dev/null 2>&1)
check_match "join into another root's pod: refused" 'pod1, which is not a container of this tollgate root' "$msg"
check_eq "join into another root's pod: nothing in that root" "" \
  "$("$TG" --root "$OTHER" --config "$TG_CONFIG" list -q 2>&1)"
rm -rf "$OTHER"
pod1_bid=$(tg state pod1 | json_get tollgate backend_id)
# runsc knows the pause by its own id when no other id of the root is its
# prefix relative (docs/cli.md), as the bare backend would; a hashed
# backend id is still no tollgate id to join by.
check_eq "the pause's runsc id is its own" pod1 "$pod1_bid"
pod_bundle "$W/h4" container "tg-$(printf pod1 | sha256sum | cut -c1-32)" ns1 - sh -c 'sleep 1'
refused "join by a runsc-style id (forged)" h4 "join pod sandbox tg-[0-9a-f]{32}, which is not a container of this tollgate root"
pod_bundle "$W/h5" container '../pod1' ns1 - sh -c 'sleep 1'
refused "a malformed sandbox id" h5 'annotation io.kubernetes.cri.sandbox-id is not a valid sandbox id'
pod_bundle "$W/h6" container pod1 other-ns - sh -c 'sleep 1'
refused "join into another pod's sandbox" h6 'pod sandbox pod1 belongs to another pod: its io.kubernetes.cri.sandbox-namespace is "ns1"'

# Forged CRI annotations (issue 27.2), from the CLI: the joiner names the
# victim's pause and its pid namespace path; the pause recorded the pod's
# identity (sandbox-namespace ns1, sandbox-name, sandbox-uid).
# forged DIR SANDBOX PIDPATH KEYS: KEYS "none" (identity left out), "wrong"
# or "right" (the pause's own values).
forged() {
  local dir=$1 sandbox=$2 pidpath=$3 keys=$4
  make_bundle "$dir" sh -c 'cat /proc/1/environ 2>/dev/null | tr "\0" "\n" | grep TENANT_A; cat /dev/shm/secret /proc/8/root/dev/shm/secret 2>/dev/null; echo attacker-ran'
  python3 - "$dir/config.json" "$sandbox" "$pidpath" "$keys" <<'PY'
import json, sys
path, sandbox, pidpath, keys = sys.argv[1:]
c = json.load(open(path))
a = c.setdefault("annotations", {})
a.update({"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": sandbox})
if keys != "none":
    ns = "ns1" if keys == "right" else "other"
    a.update({"io.kubernetes.cri.sandbox-namespace": ns, "io.kubernetes.cri.sandbox-name": "victim",
              "io.kubernetes.cri.sandbox-uid": "uid-v"})
for n in c["linux"]["namespaces"]:
    if n["type"] in ("pid", "ipc", "uts"):
        n["path"] = pidpath.replace("/pid", "/" + n["type"])
json.dump(c, open(path, "w"), indent=2)
PY
}
for be in runsc runc; do
  # The victim pod: a pause that records its identity, and an app holding
  # the tenant's key in its environment and a secret in /dev/shm.
  make_bundle "$W/vp-$be" sh -c 'echo TENANT_A_API_KEY=k-123 >/dev/shm/secret; exec sleep 600'
  python3 - "$W/vp-$be/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["env"].append("TENANT_A_API_KEY=k-123")
c.setdefault("annotations", {}).update({"io.kubernetes.cri.container-type": "sandbox",
    "io.kubernetes.cri.sandbox-id": "vpod-x", "io.kubernetes.cri.sandbox-namespace": "ns1",
    "io.kubernetes.cri.sandbox-name": "victim", "io.kubernetes.cri.sandbox-uid": "uid-v"})
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
  check "$be: victim pod: run -d" tg --runtime "$be" run -d --bundle "$W/vp-$be" "vpod-$be" </dev/null >"$(out "vpod-$be")" 2>&1
  vpid=$(tg state "vpod-$be" | json_get pid)
  for keys in none wrong right; do
    forged "$W/f-$be-$keys" "vpod-$be" "/proc/$vpid/ns/pid" "$keys"
    msg=$(setsid "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$be" run --bundle "$W/f-$be-$keys" "f-$be-$keys" </dev/null 2>&1)
    case $keys in
      none) want='records io.kubernetes.cri.sandbox-namespace="ns1" and this container.s config does not say it';;
      wrong) want='belongs to another pod: its io.kubernetes.cri.sandbox-namespace is "ns1", this container.s "other"';;
      right) want='asks to join vpod-'$be'.s namespaces, and nothing proves they belong together: the join rule';;
    esac
    check_match "$be: forged annotations, identity $keys, no --join: refused by the rule" "$want" "$msg"
    check_fails "$be: ... the attacker never ran" eval '[[ "$msg" =~ attacker-ran|k-123 ]]'
    check_fails "$be: ... no container left" test -d "$TG_ROOT/f-$be-$keys"
  done
  for keys in none wrong; do
    msg=$(tg --runtime "$be" run --join "vpod-$be" --bundle "$W/f-$be-$keys" "f-$be-$keys" </dev/null 2>&1)
    check_match "$be: forged annotations, identity $keys, even with --join: refused" 'sandbox-namespace' "$msg"
    check_fails "$be: ... the attacker never ran" eval '[[ "$msg" =~ attacker-ran|k-123 ]]'
  done
  check_eq "$be: the victim pod still runs" running "$(tg state "vpod-$be" | json_get status)"
  tg delete --force "vpod-$be"
done

# The pod goes: apps first, as the kubelet does, then the pause.
check "app 2: delete --force" tg delete --force a2
check "pause: delete --force" tg delete --force pod1
check_eq "nothing left in tollgate" "" "$(tg list -q 2>&1)"
check_eq "nothing left in runsc" "" "$(rs_list)"
sleep 1.2
check_eq "no waiter left" "" "$(pgrep -f "$TG_ROOT" 2>/dev/null | grep -v "^$$\$" || true)"

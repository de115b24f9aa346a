#!/usr/bin/env bash
# tollgate as a Kubernetes runtime handler: a private containerd with its
# CRI plugin on and the shipped handler (bundles/containerd/tollgate.toml)
# appended to its config, driven through the CRI API the way the kubelet
# drives it (tests/integration/cri/cri.py).  A pod whose RuntimeClass
# handler is "tollgate" and whose annotation selects the policy:
#   - the pause container and the app containers all run under tollgate,
#     hardened; under runsc in one gVisor sandbox per pod, which the app
#     containers join (the CRI pod policy, oci/cri.c), each with its own
#     waiter, bridge and audit log;
#   - the pod's containers talk over 127.0.0.1, and a shareProcessNamespace
#     pod's containers see each other's processes, under both backends;
#   - under runc the pod is one user namespace and one host id range (the
#     pause's, shared by its app containers), freed with the pod;
#   - the pod annotation reaches the app container (pod_annotations), which
#     makes a governed call through the bridge; its audit log verifies;
#   - ExecSync works; stopping and removing the pod leaves nothing behind.
#   - a pod on a CNI bridge network (containerd gives the pause a network
#     namespace path) whose two app containers run the Debian image
#     mmdebstrap builds (build-images.sh debian, as test_images.sh: an
#     input tollgate did not make): they reach each other on 127.0.0.1 and
#     share a PID namespace, see lo only while the CNI namespace holds the
#     pod's address, python3 makes a governed call, ExecSync runs python3,
#     under both backends; under runc the pause keeps a user namespace and
#     range of its own (a network path is no join, issue 28.3), which its
#     members share; removing the pod leaves no netns, veth or lease;
#   - the same pod under the passthrough profile: under runc its container
#     is in the CNI namespace and sees eth0 with the pod's address, under
#     runsc lo only (--network=none always), and under runsc the member
#     still gets its waiter (its exit and output are its own);
#   - each member is accepted because the same containerd shim created its
#     pause (docs/hardening.md "Joins"), as its state records.
# The other pods use the node's network namespace: tollgate's hardening
# gives each container its own anyway.
set -u
. "$(dirname "$0")/lib.sh"
CTRD_CRI=1
. "$(dirname "$0")/containerd_lib.sh"

# The CNI bridge network, which containerd's CRI reads at start: a test
# range (198.18.0.0/24, RFC 2544), no gateway, no route, no masquerade, so
# nothing leaves the bridge (and tollgate's profiles give pods lo only).
CNI_BR=tgcri$$
CNI_BR=${CNI_BR:0:15}
mkdir -p "$CTRD_DIR/cni/bin" "$CTRD_DIR/cni/net.d" "$CTRD_DIR/ipam"
for plugin in bridge host-local loopback; do ln -sf "/usr/lib/cni/$plugin" "$CTRD_DIR/cni/bin/$plugin"; done
cat >"$CTRD_DIR/cni/net.d/10-tollgate-test.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "tollgate-test",
 "plugins": [{"type": "bridge", "bridge": "$CNI_BR", "isGateway": false, "ipMasq": false,
              "ipam": {"type": "host-local", "dataDir": "$CTRD_DIR/ipam",
                       "ranges": [[{"subnet": "198.18.0.0/24"}]]}}]}
CNI
on_exit "ip link del $CNI_BR"
# The pod network (issue 40.3): the host's side of the bridge has an
# address (connections from the host to a pod), and a test namespace on
# the bridge stands for everything outside the pod: it counts every TCP
# connection and UDP datagram (a DNS query) that reaches it.
OUT_NS=tgcrio$$
ip link add "$CNI_BR" type bridge && ip link set "$CNI_BR" up && ip addr add 198.18.0.251/24 dev "$CNI_BR"
ip netns add "$OUT_NS" && on_exit "ip netns del $OUT_NS"
ip link add "${OUT_NS}h" type veth peer name eth0 netns "$OUT_NS" &&
  ip link set "${OUT_NS}h" master "$CNI_BR" up &&
  ip -n "$OUT_NS" addr add 198.18.0.250/24 dev eth0 && ip -n "$OUT_NS" link set eth0 up && ip -n "$OUT_NS" link set lo up
ip netns exec "$OUT_NS" python3 -c 'import socket, threading, sys
log = open(sys.argv[1], "a", buffering=1)
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(("0.0.0.0", 9000)); t.listen(8)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 53))
def udp():
    while True:
        d, a = u.recvfrom(2048); log.write("udp from %s\n" % a[0]); u.sendto(d[:2] + b"\x81\x80" + d[4:], a)
threading.Thread(target=udp, daemon=True).start()
while True:
    c, a = t.accept(); log.write("tcp from %s\n" % a[0]); c.sendall(b"outside"); c.close()' "$CTRD_DIR/outside.log" &
OUT_PID=$!
on_exit "kill $OUT_PID"

ctrd_start || exit 1
ctrd_import pause
ctrd_import busybox
ctrd_import probe
ctrd_import debian
python3 - "$TOP/bundles/kubernetes/policies.yaml" "$TG_ROOT/policies" <<'PY'
import sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
for name, text in cm["data"].items():
    open(f"{sys.argv[2]}/{name}", "w").write(text)
PY
K8S_ROOT=$TG_CTR_ROOT/k8s.io
tgk() { "$TG" --root "$K8S_ROOT" --config "$TG_CONFIG" "$@"; }
ann() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["annotations"].get(sys.argv[2], "<none>"))' "$@" 2>&1; }
# What tollgate recorded about a container's place in its pod: state.json,
# never the config (whose annotations reach hooks).
cri_rec() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]+"/state.json")).get("cri") or {}; print(r.get(sys.argv[2]) or "<none>")' "$K8S_ROOT/$1" "$2" 2>&1; }
no_tg_ann() { python3 -c 'import json,sys; print(" ".join(k for k in json.load(open(sys.argv[1]))["annotations"] if k.startswith("dev.tollgate.") and k != "dev.tollgate.policy"))' "$1" 2>&1; }

# deb_ctr NAME PROGRAM [ARG...]: the CRI config of a container NAME of a CNI
# pod that runs `python3 -u -c PROGRAM ARG...` in the Debian image, logging
# to NAME.log.
deb_ctr() {
  python3 -c 'import json, sys
name, prog, *args = sys.argv[1:]
print(json.dumps({"metadata": {"name": name}, "image": {"image": "localhost/tollgate/debian:test"},
                  "command": ["python3", "-u", "-c", prog] + args, "log_path": name + ".log",
                  "linux": {"security_context": {"namespace_options": {"network": "POD", "pid": "POD", "ipc": "POD"}}}}))' "$@"
}

# host_connect ADDR PORT: what the host gets connecting to ADDR:PORT (the
# first line it is sent, or "refused": refused, unreachable or silent for 3 s).
host_connect() {
  python3 -c 'import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3) as c:
        print(c.recv(64).decode() or "refused")
except OSError:
    print("refused")' "$@"
}
# own_pid: a container config on stdin, with a PID namespace of its own
# (under runc a pod on the pod network cannot share the pod's).
own_pid() { python3 -c 'import json, sys
c = json.load(sys.stdin); c["linux"]["security_context"]["namespace_options"]["pid"] = "CONTAINER"; print(json.dumps(c))'; }
# cri_exited ID: ContainerStatus of container ID once it has exited
# (polled for 200 x 0.1 s: generous on a loaded machine, nothing timed);
# nothing when it has not.
cri_exited() {
  local st
  for _ in $(seq 200); do
    st=$(cri ContainerStatus '{"container_id": "'$1'"}' 2>/dev/null)
    if [ "$(json_get status state <<<"$st" 2>/dev/null)" = CONTAINER_EXITED ]; then
      echo "$st"
      return 0
    fi
    sleep 0.1
  done
  return 1
}
# cni_pod_start WHAT NAME POLICY [ANNOTATIONS]: a pod NAME on the CNI
# bridge network whose annotation selects POLICY (and the JSON members
# ANNOTATIONS adds); sets cpod (its id), cp_config (its
# config), cpod_ip (the address containerd reports), cnetns (the network
# namespace path containerd handed the pause) and cnetns_mnt (that path
# resolved: the nsfs mount).
cni_pod_start() {
  local what=$1 name=$2 out orig
  local cni_ns='"namespace_options": {"network": "POD", "pid": "POD", "ipc": "POD"}'
  mkdir -p "$CTRD_DIR/pods/$name"
  cp_config='{"metadata": {"name": "'$name'", "uid": "'$name'", "namespace": "default"},
    "log_directory": "'$CTRD_DIR'/pods/'$name'", "annotations": {"dev.tollgate.policy": "'$3'"'"${4:+, $4}"'},
    "linux": {"security_context": {'"$cni_ns"'}}}'
  out=$(cri RunPodSandbox '{"config": '"$cp_config"', "runtime_handler": "tollgate"}' 2>&1)
  cpod=$(json_get pod_sandbox_id <<<"$out")
  check_match "$what: the pod starts" '^[0-9a-f]{64}$' "$cpod"
  [ -n "$cpod" ] || echo "# $out"
  cpod_ip=$(cri PodSandboxStatus '{"pod_sandbox_id": "'$cpod'"}' 2>&1 | json_get status network ip 2>&1)
  check_match "$what: containerd gave it an address on the bridge network" '^198\.18\.0\.[0-9]+$' "$cpod_ip"
  # What containerd asked of tollgate: the pause's network namespace by
  # path (config.json.orig: what tollgate was given, when it changed it).
  orig=$CTRD_DIR/state/io.containerd.runtime.v2.task/k8s.io/$cpod/config.json
  [ -f "$orig.orig" ] && orig=$orig.orig
  cnetns=$(python3 -c 'import json,sys; print(" ".join(n.get("path","") for n in json.load(open(sys.argv[1]))["linux"]["namespaces"] if n["type"]=="network"))' \
       "$orig" 2>&1)
  check_match "$what: the pause was handed a network namespace path" '^/.*/netns/cni-[-0-9a-f]+$' "$cnetns"
  cnetns_mnt=$(realpath -e "$cnetns" 2>&1)
  # The CNI interface is in that namespace, with the pod's address.
  check_match "$what: the CNI namespace holds eth0 with the pod's address" "eth0 +inet $cpod_ip/24" \
    "$(nsenter --net="$cnetns" ip -o -4 addr show 2>&1)"
}
# cni_pod_gone WHAT: after the pod of cni_pod_start was removed, nothing of
# it is left: no tollgate container, mount, id range, veth, network
# namespace (file or mount) or IPAM lease.
cni_pod_gone() {
  local what=$1
  check_eq "$what: nothing left" "" "$(tgk list -q 2>&1)$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"
  check_eq "$what: no id range claim left" 0 "$(claims)"
  check_eq "$what: no veth left on the bridge" "" "$(ip -o link show master "$CNI_BR" 2>/dev/null | grep -v " ${OUT_NS}h@")"
  check_eq "$what: its network namespace is gone (file and mount)" "" \
    "$(ls -d "$cnetns" "$cnetns_mnt" 2>/dev/null)$(grep -F " $cnetns_mnt " /proc/self/mounts)"
  check_eq "$what: no IPAM lease left" "" "$(ls "$CTRD_DIR/ipam/tollgate-test" 2>/dev/null | grep '^198\.')"
}

check_match "CRI plugin answers" '"runtime_api_version": "v1"' "$(cri Version '{}' 2>&1)"

# The id pool's claims in this test's own directory, to count them.
IDS=$TG_ROOT/ids
for backend in runsc runc; do
  write_config "runtime=\"$backend\"" id_range_dir="\"$IDS\""
  b=$backend
  pod_config='{"metadata": {"name": "orders-agent-'$b'", "uid": "uid-'$b'", "namespace": "default"},
    "log_directory": "'$CTRD_DIR'/pods/'$b'",
    "annotations": {"dev.tollgate.policy": "orders", "unrelated.example/key": "x"},
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  mkdir -p "$CTRD_DIR/pods/$b"

  out=$(cri RunPodSandbox '{"config": '"$pod_config"', "runtime_handler": "tollgate"}' 2>&1)
  pod=$(json_get pod_sandbox_id <<<"$out"); [ -n "$pod" ] || echo "RunPodSandbox: $out"
  check_match "$b: RunPodSandbox with handler tollgate" '^[0-9a-f]{64}$' "$pod"
  check_eq "$b: the pause container runs under tollgate" "$pod" "$(tgk list -q 2>&1)"
  eff=$CTRD_DIR/state/io.containerd.runtime.v2.task/k8s.io/$pod/config.json
  check_eq "$b: pause: recorded as the pod's sandbox" sandbox "$(cri_rec "$pod" role)"
  check_eq "$b: pause: no tollgate annotation in its config" "" "$(no_tg_ann "$eff")"
  # runsc: the pause container is the root of the pod's sandbox; runc
  # gets no CRI annotation at all.
  want_type="<none>"; [ "$b" = runsc ] && want_type=sandbox
  check_eq "$b: pause: CRI container type for the backend" "$want_type" "$(ann "$eff" io.kubernetes.cri.container-type)"
  check_eq "$b: pause: hardened (uid 65534)" 65534 \
    "$(json_get process.user.uid <"$eff" 2>&1)"

  ctr_config='{"metadata": {"name": "agent"}, "image": {"image": "localhost/tollgate/busybox:test"},
    "command": ["sh", "-c", "/run/tollgate/tollgate-call lookup_order \"{\\\"order_id\\\": \\\"K-8\\\"}\"; echo status=$?; sleep 300"],
    "log_path": "agent.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$ctr_config"', "sandbox_config": '"$pod_config"'}' 2>&1)
  ctr_id=$(json_get container_id <<<"$out")
  check_match "$b: CreateContainer in the pod" '^[0-9a-f]{64}$' "$ctr_id"
  check "$b: StartContainer" cri StartContainer '{"container_id": "'$ctr_id'"}'
  eff=$CTRD_DIR/state/io.containerd.runtime.v2.task/k8s.io/$ctr_id/config.json
  check_eq "$b: app: the pod annotation reached the container" orders "$(ann "$eff" dev.tollgate.policy)"
  check_eq "$b: app: other pod annotations did not" "<none>" "$(ann "$eff" unrelated.example/key)"
  check_eq "$b: app: recorded as a container of the pod" "container/$pod" \
    "$(cri_rec "$ctr_id" role)/$(cri_rec "$ctr_id" sandbox)"
  check_eq "$b: app: no tollgate annotation in its config but the pod's policy" "" "$(no_tg_ann "$eff")"
  if [ "$b" = runsc ]; then
    # The app joins the pause container's sandbox by the id runsc knows it by.
    pause_bid=$(tgk state "$pod" | json_get tollgate.backend_id)
    check_eq "$b: app: joins the verified pause container's sandbox" "container/$pause_bid" \
      "$(ann "$eff" io.kubernetes.cri.container-type)/$(ann "$eff" io.kubernetes.cri.sandbox-id)"
    check_eq "$b: one runsc sandbox for the pod: runsc knows two containers" 2 \
      "$(runsc --root "$K8S_ROOT/backend/runsc" list --quiet 2>/dev/null | wc -l)"
    check_eq "$b: ... with one sandbox process" 1 \
      "$(for r in $(runsc --root "$K8S_ROOT/backend/runsc" list --quiet 2>/dev/null); do runsc --root "$K8S_ROOT/backend/runsc" state "$r" | json_get pid; done | sort -u | wc -l)"
  else
    check_eq "$b: app: nothing tells the backend to join the pause sandbox" "<none>/<none>" \
      "$(ann "$eff" io.kubernetes.cri.container-type)/$(ann "$eff" io.kubernetes.cri.sandbox-id)"
  fi
  # Two init processes as containerd sees them: under runsc the app's is
  # its waiter (shim/lifecycle/waiter.h), never the pod's sandbox process.
  pids=$(for id in "$pod" "$ctr_id"; do tgk state "$id" | json_get pid; done | sort -u | wc -l)
  check_eq "$b: pause and app have separate init processes" 2 "$pids"

  wait_for 30 grep -qs 'status=' "$CTRD_DIR/pods/$b/agent.log"
  log=$(cat "$CTRD_DIR/pods/$b/agent.log" 2>&1)
  check_match "$b: governed call from the pod returns the result" 'K-8' "$log"
  check_match "$b: governed call exits 0" 'status=0' "$log"
  out=$(cri ExecSync '{"container_id": "'$ctr_id'", "cmd": ["id", "-u"], "timeout": 30}' 2>&1)
  check_eq "$b: ExecSync runs as the hardened user" "NjU1MzQK" "$(json_get stdout <<<"$out")"  # base64 "65534\n"

  # A second app container: the hardening probe, with the capabilities
  # the CRI gives every container by default; tollgate must drop them.
  probe_config='{"metadata": {"name": "probe"}, "image": {"image": "localhost/tollgate/probe:test"},
    "command": ["/usr/bin/tollgate-probe"], "log_path": "probe.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$probe_config"', "sandbox_config": '"$pod_config"'}' 2>&1)
  probe_id=$(json_get container_id <<<"$out")
  check "$b: probe: second app container starts" cri StartContainer '{"container_id": "'$probe_id'"}'
  st=$(cri_exited "$probe_id")
  check_eq "$b: probe: exits 0" 0 "$(json_get status exit_code <<<"$st")"
  # CRI log lines are "<time> stdout F <text>": keep the text, parse the JSON.
  probe=$(sed -n 's/^[^ ]* std[a-z]* [FP] //p' "$CTRD_DIR/pods/$b/probe.log" 2>/dev/null)
  check_eq "$b: probe: CRI's default capabilities dropped (effective)" 0000000000000000 "$(json_get cap_eff <<<"$probe" 2>&1)"
  check_eq "$b: probe: CRI's default capabilities dropped (bounding)" 0000000000000000 "$(json_get cap_bnd <<<"$probe" 2>&1)"
  check_eq "$b: probe: uid 65534" 65534 "$(json_get uid <<<"$probe" 2>&1)"
  check_eq "$b: probe: seccomp filter on" 2 "$(json_get seccomp <<<"$probe" 2>&1)"
  check_eq "$b: probe: only loopback, though the pod asked for the node's network" '["lo"]' "$(json_get interfaces <<<"$probe" 2>&1)"
  check "$b: probe: RemoveContainer" cri RemoveContainer '{"container_id": "'$probe_id'"}'

  # --- the pod's loopback: a server and a client container of one pod ------
  # runc: every app container joins the pause container's (loopback-only)
  # network namespace, so 127.0.0.1 is the pod's.  runsc: every app
  # container runs in the pause container's sandbox (oci/cri.c,
  # docs/kubernetes.md "Pods"), whose netstack (lo only) is the pod's.
  srv_config='{"metadata": {"name": "srv"}, "image": {"image": "localhost/tollgate/busybox:test"},
    "command": ["sh", "-c", "while true; do echo pong-from-srv | nc -l -p 8080; done"], "log_path": "srv.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  cli_config='{"metadata": {"name": "cli"}, "image": {"image": "localhost/tollgate/busybox:test"},
    "command": ["sh", "-c", "r=; for i in $(seq 40); do r=$(nc 127.0.0.1 8080 </dev/null 2>/dev/null); [ -n \"$r\" ] && break; sleep 0.25; done; echo got=${r:-nothing}; sleep 300"],
    "log_path": "cli.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  srv_id=$(json_get container_id <<<"$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$srv_config"', "sandbox_config": '"$pod_config"'}' 2>&1)")
  check "$b: loopback: server container starts" cri StartContainer '{"container_id": "'$srv_id'"}'
  cli_id=$(json_get container_id <<<"$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$cli_config"', "sandbox_config": '"$pod_config"'}' 2>&1)")
  check "$b: loopback: client container starts" cri StartContainer '{"container_id": "'$cli_id'"}'
  wait_for 30 grep -qs 'got=' "$CTRD_DIR/pods/$b/cli.log"
  got=$(sed -n 's/^.*got=//p' "$CTRD_DIR/pods/$b/cli.log" 2>/dev/null)
  check_eq "$b: loopback: two containers of one pod talk over 127.0.0.1" pong-from-srv "$got"
  if [ "$b" = runc ]; then
    srv_pid=$(tgk state "$srv_id" | json_get pid)
    pause_pid=$(tgk state "$pod" | json_get pid)
    check_eq "$b: loopback: the server is in the pause container's network namespace" \
      "$(readlink /proc/$pause_pid/ns/net)" "$(readlink /proc/$srv_pid/ns/net)"
    check_fails "$b: loopback: ... which is not the host's" test "$(readlink /proc/$srv_pid/ns/net)" = "$(readlink /proc/self/ns/net)"
    # One user namespace and one host id range per pod: the members join
    # the pause container's (which owns the ipc/pid namespaces they join).
    check_eq "$b: ids: the server is in the pause container's user namespace" \
      "$(readlink /proc/$pause_pid/ns/user)" "$(readlink /proc/$srv_pid/ns/user)"
    check_fails "$b: ids: ... which is not the host's" test "$(readlink /proc/$srv_pid/ns/user)" = "$(readlink /proc/self/ns/user)"
    check_eq "$b: ids: pause and server run as the same host uid" "$(host_uid $pause_pid)" "$(host_uid $srv_pid)"
    check_eq "$b: ids: ... the pool's, not host 65534" yes \
      "$([ "$(host_uid $srv_pid)" -gt $((1 << 28)) ] 2>/dev/null && echo yes || echo "no: $(host_uid $srv_pid)")"
    check_eq "$b: ids: the pod holds one range" 1 "$(claims)"
  fi
  for id in "$srv_id" "$cli_id"; do
    cri StopContainer '{"container_id": "'$id'", "timeout": 1}' >/dev/null 2>&1
    cri RemoveContainer '{"container_id": "'$id'"}' >/dev/null 2>&1
  done

  check "$b: StopContainer" cri StopContainer '{"container_id": "'$ctr_id'", "timeout": 2}'
  check "$b: RemoveContainer" cri RemoveContainer '{"container_id": "'$ctr_id'"}'
  check "$b: StopPodSandbox" cri StopPodSandbox '{"pod_sandbox_id": "'$pod'"}'
  check "$b: RemovePodSandbox" cri RemovePodSandbox '{"pod_sandbox_id": "'$pod'"}'
  audit=$TG_ROOT/audit/$ctr_id.jsonl
  check_match "$b: the app container's audit log records the call" '"tool":"lookup_order"' "$(cat "$audit" 2>&1)"
  check "$b: the app container's audit log verifies" tg audit verify "$audit"
  check_eq "$b: tollgate list empty" "" "$(tgk list -q 2>&1)"
  check_eq "$b: no containerd task left" "" "$(command ctr --address "$CTRD_SOCK" -n k8s.io task ls -q 2>&1)"
  if [ -d "$K8S_ROOT/backend/$b" ]; then
    check_eq "$b: $b list empty" "" "$("$b" --root "$K8S_ROOT/backend/$b" list --quiet 2>&1)"
  fi
  check_eq "$b: no mounts left" "" "$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"
  check_eq "$b: no id range claim left" 0 "$(claims)"

  # --- shareProcessNamespace: the pod's PID namespace ----------------------
  # runc: both app containers join the pause container's PID namespace
  # (containerd's /proc/<pause>/ns/pid), so each sees the other's
  # processes.  runsc: both run in the pod's sandbox, and gVisor puts
  # containers whose pid namespace paths are equal into one PID namespace
  # of the sandbox's kernel; the pause container, the sandbox's root, has
  # a PID namespace of its own there (docs/kubernetes.md, "Pods").
  mkdir -p "$CTRD_DIR/pods/shared-$b"
  sp_config='{"metadata": {"name": "shared-'$b'", "uid": "shared-'$b'", "namespace": "default"},
    "log_directory": "'$CTRD_DIR'/pods/shared-'$b'",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "POD", "ipc": "POD"}}}}'
  spod=$(json_get pod_sandbox_id <<<"$(cri RunPodSandbox '{"config": '"$sp_config"', "runtime_handler": "tollgate"}' 2>&1)")
  check_match "$b: shared pid: the pod starts" '^[0-9a-f]{64}$' "$spod"
  one='{"metadata": {"name": "one"}, "image": {"image": "localhost/tollgate/busybox:test"},
    "command": ["sh", "-c", "exec sleep 301"], "log_path": "one.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "POD", "ipc": "POD"}}}}'
  two='{"metadata": {"name": "two"}, "image": {"image": "localhost/tollgate/busybox:test"},
    "command": ["sh", "-c", "for i in $(seq 40); do ps -o args | grep -q \"^sleep 301\" && break; sleep 0.25; done; ps -o args | sed \"s/^/ps: /\"; exec sleep 302"], "log_path": "two.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "POD", "ipc": "POD"}}}}'
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$spod'", "config": '"$one"', "sandbox_config": '"$sp_config"'}' 2>&1)
  one_id=$(json_get container_id <<<"$out")
  check_match "$b: shared pid: first container is created (not refused)" '^[0-9a-f]{64}$' "$one_id"
  [ -n "$one_id" ] || echo "# $out"
  check "$b: shared pid: first container starts" cri StartContainer '{"container_id": "'$one_id'"}'
  two_id=$(json_get container_id <<<"$(cri CreateContainer '{"pod_sandbox_id": "'$spod'", "config": '"$two"', "sandbox_config": '"$sp_config"'}' 2>&1)")
  check "$b: shared pid: second container starts" cri StartContainer '{"container_id": "'$two_id'"}'
  wait_for 30 grep -qs 'ps: .*sleep 302\|ps: ps -o' "$CTRD_DIR/pods/shared-$b/two.log"
  sleep 0.5
  seen=$(sed -n 's/^.* ps: //p' "$CTRD_DIR/pods/shared-$b/two.log" 2>/dev/null)
  check_match "$b: shared pid: the second container sees the first's process" '(^|'$'\n'')sleep 301' "$seen"
  if [ "$b" = runc ]; then
    check_match "$b: shared pid: ... and the pause container's (this test's pause image sleeps)" 'sleep 2147483647' "$seen"
  fi
  for id in "$one_id" "$two_id"; do
    cri StopContainer '{"container_id": "'$id'", "timeout": 1}' >/dev/null 2>&1
    cri RemoveContainer '{"container_id": "'$id'"}' >/dev/null 2>&1
  done
  cri StopPodSandbox '{"pod_sandbox_id": "'$spod'"}' >/dev/null 2>&1
  cri RemovePodSandbox '{"pod_sandbox_id": "'$spod'"}' >/dev/null 2>&1
  check_eq "$b: shared pid: nothing left" "" "$(tgk list -q 2>&1)$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"
  check_eq "$b: shared pid: no id range claim left" 0 "$(claims)"

  # --- a pod on the CNI bridge network, running the Debian image -----------
  # Both app containers run mmdebstrap's Debian 12 (build-images.sh debian,
  # an input tollgate did not make: no /run/tollgate, no mount point made
  # for it), python3 as the image has it.  The pod selects the orders
  # policy; the client makes a governed call through the bridge.
  # The CNI namespace holds eth0 with the pod's address (cni_pod_start);
  # the containers do not see it: tollgate's profile gives them lo only,
  # their way out is the bridge.
  cni_pod_start "$b: CNI pod" "cni-$b" orders
  csrv=$(deb_ctr srv 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080))
s.listen(8)
print("listening as", sys.argv[1])
while True:
    c, _ = s.accept()
    c.sendall(b"pong-from-debian")
    c.close()' debian-server)
  # The client: the server's answer over 127.0.0.1, its interfaces (from
  # /proc/net/dev: the profile's seccomp filter allows no netlink), the
  # server's process in the pod's PID namespace, a governed call; it then
  # stays up for ExecSync.
  ccli=$(deb_ctr cli 'import os, socket, time, tollgate
got = "nothing"
for i in range(40):
    try:
        with socket.create_connection(("127.0.0.1", 8080), timeout=2) as c:
            got = c.recv(64).decode()
        break
    except OSError:
        time.sleep(0.25)
print("got=" + got)
print("ifaces=" + ",".join(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])))
def cmdline(p):
    try:
        return open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
    except OSError:
        return []
print("server-seen=%s" % any(b"debian-" b"server" in cmdline(p) for p in os.listdir("/proc") if p.isdigit()))
print("call=%r" % tollgate.call("lookup_order", order_id="D-12"))
print("done")
time.sleep(300)')
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$cpod'", "config": '"$csrv"', "sandbox_config": '"$cp_config"'}' 2>&1)
  csrv_id=$(json_get container_id <<<"$out")
  check_match "$b: CNI pod: the Debian server container is created (its join proven)" '^[0-9a-f]{64}$' "$csrv_id"
  [ -n "$csrv_id" ] || echo "# $out"
  check "$b: CNI pod: server starts" cri StartContainer '{"container_id": "'$csrv_id'"}'
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$cpod'", "config": '"$ccli"', "sandbox_config": '"$cp_config"'}' 2>&1)
  ccli_id=$(json_get container_id <<<"$out")
  [ -n "$ccli_id" ] || echo "# $out"
  check "$b: CNI pod: Debian client starts" cri StartContainer '{"container_id": "'$ccli_id'"}'
  wait_for 60 grep -qsE ' (done|Traceback .*)$' "$CTRD_DIR/pods/cni-$b/cli.log"
  # CRI log lines are "<time> stdout F <text>": the client's KEY=VALUE lines.
  cli_said() { sed -n "s/^[^ ]* std[a-z]* [FP] $1=//p" "$CTRD_DIR/pods/cni-$b/cli.log" 2>/dev/null; }
  check_eq "$b: CNI pod: two Debian containers talk over 127.0.0.1" pong-from-debian "$(cli_said got)"
  check_eq "$b: CNI pod: without the pod network nothing reaches the server from the host" refused \
    "$(host_connect "$cpod_ip" 8080)"
  check_eq "$b: CNI pod: the containers see lo only, not the CNI interface" lo "$(cli_said ifaces)"
  check_eq "$b: CNI pod: one PID namespace: the client sees the server's python3" True "$(cli_said server-seen)"
  check_eq "$b: CNI pod: the governed call from python3 returns" "{'order_id': 'D-12'}" "$(cli_said call)"
  [ -n "$(cli_said call)" ] || sed 's/^/# /' "$CTRD_DIR/pods/cni-$b/cli.log"
  out=$(cri ExecSync '{"container_id": "'$ccli_id'", "cmd": ["python3", "-c", "import os; print(os.getuid(), open(\"/etc/debian_version\").read().split(\".\")[0])"], "timeout": 30}' 2>&1)
  check_eq "$b: CNI pod: ExecSync runs python3 in the Debian container, hardened" "65534 12" \
    "$(json_get stdout <<<"$out" | base64 -d 2>&1)"
  # crictl exec (ExecSync) hands tollgate the image's environment: the
  # exec'd python3 still finds the bridge client.
  out=$(cri ExecSync '{"container_id": "'$ccli_id'", "cmd": ["python3", "-c", "from tollgate import call; print(call(\"lookup_order\", order_id=\"X-5\"))"], "timeout": 30}' 2>&1)
  check_eq "$b: CNI pod: an exec'd python3 imports tollgate and makes a governed call" "{'order_id': 'X-5'}" \
    "$(json_get stdout <<<"$out" | base64 -d 2>&1)"
  check_eq "$b: CNI pod: the member's join is proven by the same containerd shim" "$cpod/the same containerd shim" \
    "$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1]+"/state.json")).get("join") or {}; print("%s/%s" % (j.get("owner"), j.get("proof")))' "$K8S_ROOT/$csrv_id" 2>&1)"
  if [ "$b" = runc ]; then
    cpause_pid=$(tgk state "$cpod" | json_get pid)
    csrv_pid=$(tgk state "$csrv_id" | json_get pid)
    check_fails "$b: CNI pod: the pause has a user namespace of its own, not the host's" \
      test "$(readlink /proc/$cpause_pid/ns/user)" = "$(readlink /proc/self/ns/user)"
    check_eq "$b: CNI pod: ... with host ids of the pool, not 65534" yes \
      "$([ "$(host_uid $cpause_pid)" -gt $((1 << 28)) ] 2>/dev/null && echo yes || echo "no: $(host_uid $cpause_pid)")"
    check_eq "$b: CNI pod: the server shares the pause's user namespace" "$(readlink /proc/$cpause_pid/ns/user)" "$(readlink /proc/$csrv_pid/ns/user)"
    check_eq "$b: CNI pod: ... and its (lo-only) network namespace" "$(readlink /proc/$cpause_pid/ns/net)" "$(readlink /proc/$csrv_pid/ns/net)"
    check_eq "$b: CNI pod: the pod holds one range" 1 "$(claims)"
  fi
  for id in "$csrv_id" "$ccli_id"; do
    cri StopContainer '{"container_id": "'$id'", "timeout": 1}' >/dev/null 2>&1
    cri RemoveContainer '{"container_id": "'$id'"}' >/dev/null 2>&1
  done
  check "$b: CNI pod: StopPodSandbox" cri StopPodSandbox '{"pod_sandbox_id": "'$cpod'"}'
  check "$b: CNI pod: RemovePodSandbox" cri RemovePodSandbox '{"pod_sandbox_id": "'$cpod'"}'
  audit=$TG_ROOT/audit/$ccli_id.jsonl
  check_match "$b: CNI pod: the client's audit log records the call" '"tool":"lookup_order"' "$(cat "$audit" 2>&1)"
  check "$b: CNI pod: ... and verifies" tg audit verify "$audit"
  cni_pod_gone "$b: CNI pod"

  # --- the pod network, opted in (issue 40.3) -----------------------------
  # This root is in the host config's pod_network_roots: the pod runs in
  # the CNI namespace, which tollgate made refuse egress (iptables, checked
  # before each start).  The host reaches the declared port; from inside,
  # a connection to the outside namespace and a DNS query reach nothing.
  write_config "runtime=\"$backend\"" id_range_dir="\"$IDS\"" "pod_network_roots=[\"$K8S_ROOT\"]"
  : >"$CTRD_DIR/outside.log"
  cni_pod_start "$b: pod network" "podnet-$b" orders '"dev.tollgate.ports": "8080"'
  pnsrv=$(deb_ctr srv 'import socket, threading, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080))
s.listen(8)
def serve():
    while True:
        c, _ = s.accept()
        c.sendall(b"pong-podnet")
        c.close()
threading.Thread(target=serve, daemon=True).start()
def tcp_out():
    try:
        with socket.create_connection(("198.18.0.250", 9000), timeout=3) as c:
            return "connected:" + c.recv(16).decode()
    except OSError as e:
        return "failed"
def dns_out():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    try:
        u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", ("198.18.0.250", 53))
        u.recvfrom(512)
        return "answered"
    except OSError:
        return "failed"
def resolve():
    try:
        socket.getaddrinfo("pypi.org", 443)
        return "resolved"
    except OSError:
        return "failed"
print("tcp-out=" + tcp_out())
print("dns-out=" + dns_out())
print("resolve=" + resolve())
print("done")
time.sleep(300)' | own_pid)
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$cpod'", "config": '"$pnsrv"', "sandbox_config": '"$cp_config"'}' 2>&1)
  pn_id=$(json_get container_id <<<"$out")
  [ -n "$pn_id" ] || echo "# $out"
  check "$b: pod network: the server starts in the pod's namespace" cri StartContainer '{"container_id": "'$pn_id'"}'
  wait_for 60 grep -qsE ' (done|Traceback .*)$' "$CTRD_DIR/pods/podnet-$b/srv.log"
  pn_said() { sed -n "s/^[^ ]* std[a-z]* [FP] $1=//p" "$CTRD_DIR/pods/podnet-$b/srv.log" 2>/dev/null; }
  check_eq "$b: pod network: the host reaches the declared port" pong-podnet "$(host_connect "$cpod_ip" 8080)"
  check_eq "$b: pod network: a connection from inside to the outside namespace fails" failed "$(pn_said tcp-out)"
  check_eq "$b: pod network: a DNS query from inside gets no answer" failed "$(pn_said dns-out)"
  check_eq "$b: pod network: a name lookup fails" failed "$(pn_said resolve)"
  check_eq "$b: pod network: ... and nothing reached the outside namespace" "" "$(cat "$CTRD_DIR/outside.log")"
  [ -n "$(pn_said tcp-out)" ] || sed 's/^/# /' "$CTRD_DIR/pods/podnet-$b/srv.log"
  check_eq "$b: pod network: the egress refusal is recorded for the pause" yes \
    "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]+"/state.json")).get("pod_network") or {}; print("yes" if "-P OUTPUT DROP" in r.get("refusal","") else "no")' "$K8S_ROOT/$cpod" 2>&1)"
  if [ "$b" = runc ]; then
    pn_pid=$(tgk state "$pn_id" | json_get pid)
    check_eq "$b: pod network: the server is in the CNI namespace" "$(readlink "$cnetns_mnt" 2>/dev/null || stat -L -c 'net:[%i]' "$cnetns")" \
      "$(readlink /proc/$pn_pid/ns/net)"
    check_eq "$b: pod network: ... and, under runc, in the host's user namespace (docs/kubernetes.md)" \
      "$(readlink /proc/self/ns/user)" "$(readlink /proc/$pn_pid/ns/user)"
  fi
  check_match "$b: pod network: the pod's namespace drops every packet out but replies from 8080" \
    '-P OUTPUT DROP.*-A OUTPUT -p tcp -m conntrack --ctstate ESTABLISHED -m multiport --sports 8080 -j ACCEPT' \
    "$(nsenter --net="$cnetns" iptables -S 2>&1 | tr '\n' ' ')"
  # The refusal is checked before every create (which containerd runs at
  # StartContainer) and start: once it was loosened (here by the host,
  # standing in for anything), a new member does not run.
  nsenter --net="$cnetns" iptables -P OUTPUT ACCEPT
  : >"$CTRD_DIR/outside.log"
  # The control: with the table loosened, the same connection from inside
  # gets through (so the refusal above was the table's doing).
  out=$(cri ExecSync '{"container_id": "'$pn_id'", "cmd": ["python3", "-c", "import socket; c = socket.create_connection((\"198.18.0.250\", 9000), timeout=3); print(c.recv(16).decode())"], "timeout": 30}' 2>&1)
  check_eq "$b: pod network: control: with OUTPUT accepted, the outside namespace answers" outside \
    "$(json_get stdout <<<"$out" | base64 -d 2>&1)"
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$cpod'", "config": '"$(deb_ctr late 'print(1)' | own_pid)"', "sandbox_config": '"$cp_config"'}' 2>&1)
  late_id=$(json_get container_id <<<"$out")
  [ -n "$late_id" ] && out=$(cri StartContainer '{"container_id": "'$late_id'"}' 2>&1)
  check_match "$b: pod network: a member is refused once the namespace no longer refuses egress" \
    'does not refuse egress as tollgate set it' "$out"
  [ -n "$late_id" ] && cri RemoveContainer '{"container_id": "'$late_id'"}' >/dev/null 2>&1
  cri StopContainer '{"container_id": "'$pn_id'", "timeout": 1}' >/dev/null 2>&1
  cri RemoveContainer '{"container_id": "'$pn_id'"}' >/dev/null 2>&1
  check "$b: pod network: StopPodSandbox" cri StopPodSandbox '{"pod_sandbox_id": "'$cpod'"}'
  check "$b: pod network: RemovePodSandbox" cri RemovePodSandbox '{"pod_sandbox_id": "'$cpod'"}'
  cni_pod_gone "$b: pod network"

  # --- the same under passthrough: the CNI interface inside ---------------
  # A host config that chooses passthrough hands on the config as
  # containerd wrote it: under runc the pod's container is in the CNI
  # namespace and sees eth0 with the pod's address; runsc gets
  # --network=none whatever the profile (docs/hardening.md), so lo only.
  # The bridge is there either way.
  write_config "runtime=\"$backend\"" id_range_dir="\"$IDS\"" allow_passthrough=true 'profile="passthrough"'
  cni_pod_start "$b: passthrough CNI pod" "cnip-$b" orders
  cnet=$(deb_ctr net 'import fcntl, socket, struct, tollgate
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def addr(name):
    try:  # SIOCGIFADDR
        return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()))[20:24])
    except OSError as e:
        return e.strerror
names = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])
print("net=" + " ".join(n + "/" + addr(n) for n in names))
print("call=%r" % tollgate.call("lookup_order", order_id="P-28"))')
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$cpod'", "config": '"$cnet"', "sandbox_config": '"$cp_config"'}' 2>&1)
  cnet_id=$(json_get container_id <<<"$out")
  [ -n "$cnet_id" ] || echo "# $out"
  check "$b: passthrough CNI pod: the Debian container starts" cri StartContainer '{"container_id": "'$cnet_id'"}'
  check_eq "$b: passthrough CNI pod: it exits 0" 0 "$(cri_exited "$cnet_id" | json_get status exit_code)"
  log=$(sed -n 's/^[^ ]* std[a-z]* [FP] //p' "$CTRD_DIR/pods/cnip-$b/net.log" 2>&1)
  [ "$b" = runc ] && want="eth0/$cpod_ip lo/127.0.0.1" || want="lo/127.0.0.1"
  check_eq "$b: passthrough CNI pod: the interfaces the container sees" "$want" "$(sed -n 's/^net=//p' <<<"$log")"
  check_eq "$b: passthrough CNI pod: the governed call returns" "{'order_id': 'P-28'}" "$(sed -n 's/^call=//p' <<<"$log")"
  [ -n "$(sed -n 's/^call=//p' <<<"$log")" ] || sed 's/^/# /' <<<"$log"
  cri RemoveContainer '{"container_id": "'$cnet_id'"}' >/dev/null 2>&1
  check "$b: passthrough CNI pod: StopPodSandbox" cri StopPodSandbox '{"pod_sandbox_id": "'$cpod'"}'
  check "$b: passthrough CNI pod: RemovePodSandbox" cri RemovePodSandbox '{"pod_sandbox_id": "'$cpod'"}'
  check_match "$b: passthrough CNI pod: the call is audited" '"tool":"lookup_order"' "$(cat "$TG_ROOT/audit/$cnet_id.jsonl" 2>&1)"
  cni_pod_gone "$b: passthrough CNI pod"
done

# The shipped example pod (bundles/kubernetes/pod-example.yaml), turned into
# the CRI requests a kubelet would send, with the Python image built here in
# place of the registry's: it must run and print the tool's answer.
write_config 'runtime="runsc"'
ctrd_import python
read -r ex_pod ex_ctr < <(python3 - "$TOP/bundles/kubernetes/pod-example.yaml" "$CTRD_DIR/pods/example" <<'PY'
import json, sys, yaml
pod = yaml.safe_load(open(sys.argv[1]))
c = pod["spec"]["containers"][0]
sc = c.get("securityContext", {})
ns = {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}
sandbox = {"metadata": {"name": pod["metadata"]["name"], "uid": "example-uid",
                        "namespace": pod["metadata"]["namespace"]},
           "log_directory": sys.argv[2], "annotations": pod["metadata"]["annotations"],
           "linux": {"security_context": {"namespace_options": ns}}}
container = {"metadata": {"name": c["name"]},
             "image": {"image": "localhost/tollgate/python:test"},
             "command": c["command"], "log_path": "agent.log",
             "linux": {"security_context": {
                 "namespace_options": ns,
                 "run_as_user": {"value": sc["runAsUser"]},
                 "readonly_rootfs": sc["readOnlyRootFilesystem"],
                 "no_new_privs": not sc["allowPrivilegeEscalation"]}}}
print(json.dumps(sandbox, separators=(",", ":")), json.dumps(container, separators=(",", ":")))
PY
)
check_eq "example pod selects the tollgate RuntimeClass" tollgate \
  "$(python3 -c 'import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))["spec"]["runtimeClassName"])' "$TOP/bundles/kubernetes/pod-example.yaml")"
mkdir -p "$CTRD_DIR/pods/example"
out=$(cri RunPodSandbox '{"config": '"$ex_pod"', "runtime_handler": "tollgate"}' 2>&1)
pod=$(json_get pod_sandbox_id <<<"$out")
out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$ex_ctr"', "sandbox_config": '"$ex_pod"'}' 2>&1)
ctr_id=$(json_get container_id <<<"$out")
check "example pod: starts" cri StartContainer '{"container_id": "'$ctr_id'"}'
# Bounded waits only (no timing is asserted): generous for a loaded machine.
for _ in $(seq 200); do
  st=$(cri ContainerStatus '{"container_id": "'$ctr_id'"}' 2>/dev/null)
  [ "$(json_get status state <<<"$st" 2>/dev/null)" = CONTAINER_EXITED ] && break
  sleep 0.1
done
check_eq "example pod: the agent exits 0" 0 "$(json_get status exit_code <<<"$st")"
check_match "example pod: the tool's answer is in the pod log" 'A-1001' "$(cat "$CTRD_DIR/pods/example/agent.log" 2>&1)"
cri RemoveContainer '{"container_id": "'$ctr_id'"}' >/dev/null
cri StopPodSandbox '{"pod_sandbox_id": "'$pod'"}' >/dev/null
cri RemovePodSandbox '{"pod_sandbox_id": "'$pod'"}' >/dev/null
check "example pod: audit log verifies" tg audit verify "$TG_ROOT/audit/$ctr_id.jsonl"
check_eq "example pod: nothing left" "" "$(tgk list -q 2>&1)$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"

# A pod whose policy is not on the node: the kubelet gets tollgate's own
# message inside containerd's (what `kubectl describe pod` shows), and
# nothing is left behind.
out=$(cri RunPodSandbox '{"config": {"metadata": {"name": "nopolicy", "uid": "nopolicy", "namespace": "default"},
  "annotations": {"dev.tollgate.policy": "nosuch"},
  "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}},
  "runtime_handler": "tollgate"}' 2>&1)
check_match "missing policy: the pod fails with tollgate's message" \
  'OCI runtime create failed: annotation dev\.tollgate\.policy=nosuch names policy .*install that policy or remove the annotation' "$out"
check_eq "missing policy: nothing left" "" "$(tgk list -q 2>&1)$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"

# Which workload may use which policy (issue 16): with "orders" bound to
# namespace b, a pod in namespace a that selects it is refused with a
# message naming what namespace a may use; a pod in b runs its sandbox.
write_config 'runtime="runsc"' 'policy_bindings={"orders": {"namespaces": ["b"]}, "echo": {"namespaces": ["a"]}}' \
  'namespace_policies={"a": "echo"}'
out=$(cri RunPodSandbox '{"config": {"metadata": {"name": "wrongns", "uid": "wrongns", "namespace": "a"},
  "annotations": {"dev.tollgate.policy": "orders"},
  "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}},
  "runtime_handler": "tollgate"}' 2>&1)
check_match "binding: a pod in namespace a selecting a policy bound to b is refused, saying what a may use" \
  'OCI runtime create failed: policy "orders" may not be used by namespace "a" .*this workload may use: echo \(the namespace.s default is "echo"\)' "$out"
check_eq "binding: nothing left" "" "$(tgk list -q 2>&1)$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"
out=$(cri RunPodSandbox '{"config": {"metadata": {"name": "rightns", "uid": "rightns", "namespace": "b"},
  "annotations": {"dev.tollgate.policy": "orders"},
  "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}},
  "runtime_handler": "tollgate"}' 2>&1)
pod=$(json_get pod_sandbox_id <<<"$out")
check_match "binding: a pod in namespace b may select it" '^[0-9a-f]{64}$' "$pod"
if [ -n "$pod" ]; then
  cri StopPodSandbox '{"pod_sandbox_id": "'$pod'"}' >/dev/null
  cri RemovePodSandbox '{"pod_sandbox_id": "'$pod'"}' >/dev/null
else
  echo "RunPodSandbox in b: $out"
fi
write_config 'runtime="runsc"'

# A handler the node does not have: the kubelet's error, not a silent runc.
out=$(cri RunPodSandbox '{"config": {"metadata": {"name": "x", "uid": "x", "namespace": "default"}}, "runtime_handler": "tollgate-nope"}' 2>&1)
check_match "unknown handler is refused" 'no runtime for "tollgate-nope"' "$out"

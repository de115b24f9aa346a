#!/usr/bin/env bash
# tollgate as a Kubernetes runtime handler: a private containerd with its
# CRI plugin on and the shipped handler (bundles/containerd/tollgate.toml)
# appended to its config, driven through the CRI API the way the kubelet
# drives it (tests/integration/cri/cri.py).  A pod whose RuntimeClass
# handler is "tollgate" and whose annotation selects the policy:
#   - the pause container and the app container both run under tollgate,
#     each in its own runsc sandbox (the CRI pod policy, oci/cri.c), both
#     hardened;
#   - the pod annotation reaches the app container (pod_annotations), which
#     makes a governed call through the bridge; its audit log verifies;
#   - ExecSync works; stopping and removing the pod leaves nothing behind.
# Pods use the node's network namespace: no CNI is needed, and tollgate's
# hardening gives each container its own anyway.
set -u
. "$(dirname "$0")/lib.sh"
CTRD_CRI=1
. "$(dirname "$0")/containerd_lib.sh"

ctrd_start || exit 1
ctrd_import pause
ctrd_import busybox
ctrd_import probe
python3 - "$TOP/bundles/kubernetes/policies.yaml" "$TG_ROOT/policies" <<'PY'
import sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
for name, text in cm["data"].items():
    open(f"{sys.argv[2]}/{name}", "w").write(text)
PY
K8S_ROOT=$TG_CTR_ROOT/k8s.io
tgk() { "$TG" --root "$K8S_ROOT" --config "$TG_CONFIG" "$@"; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.argv[1])
for k in sys.argv[2:]: d=d[k]
print(d)' "$@" 2>/dev/null; }
ann() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["annotations"].get(sys.argv[2], "<none>"))' "$@" 2>&1; }

check_match "CRI plugin answers" '"runtime_api_version": "v1"' "$(cri Version '{}' 2>&1)"

for backend in runsc runc; do
  write_config "runtime=\"$backend\""
  b=$backend
  pod_config='{"metadata": {"name": "orders-agent-'$b'", "uid": "uid-'$b'", "namespace": "default"},
    "log_directory": "'$CTRD_DIR'/pods/'$b'",
    "annotations": {"dev.tollgate.policy": "orders", "unrelated.example/key": "x"},
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  mkdir -p "$CTRD_DIR/pods/$b"

  out=$(cri RunPodSandbox '{"config": '"$pod_config"', "runtime_handler": "tollgate"}' 2>&1)
  pod=$(jget "$out" pod_sandbox_id); [ -n "$pod" ] || echo "RunPodSandbox: $out"
  check_match "$b: RunPodSandbox with handler tollgate" '^[0-9a-f]{64}$' "$pod"
  check_eq "$b: the pause container runs under tollgate" "$pod" "$(tgk list -q 2>&1)"
  eff=$CTRD_DIR/state/io.containerd.runtime.v2.task/k8s.io/$pod/config.json
  check_eq "$b: pause: recorded as the pod's sandbox" sandbox "$(ann "$eff" dev.tollgate.cri.role)"
  check_eq "$b: pause: no CRI container type left for runsc" "<none>" "$(ann "$eff" io.kubernetes.cri.container-type)"
  check_eq "$b: pause: hardened (uid 65534)" 65534 \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["user"]["uid"])' "$eff" 2>&1)"

  ctr_config='{"metadata": {"name": "agent"}, "image": {"image": "localhost/tollgate/busybox:test"},
    "command": ["sh", "-c", "/run/tollgate/tollgate-call lookup_order \"{\\\"order_id\\\": \\\"K-8\\\"}\"; echo status=$?; sleep 300"],
    "log_path": "agent.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$ctr_config"', "sandbox_config": '"$pod_config"'}' 2>&1)
  ctr_id=$(jget "$out" container_id)
  check_match "$b: CreateContainer in the pod" '^[0-9a-f]{64}$' "$ctr_id"
  check "$b: StartContainer" cri StartContainer '{"container_id": "'$ctr_id'"}'
  eff=$CTRD_DIR/state/io.containerd.runtime.v2.task/k8s.io/$ctr_id/config.json
  check_eq "$b: app: the pod annotation reached the container" orders "$(ann "$eff" dev.tollgate.policy)"
  check_eq "$b: app: other pod annotations did not" "<none>" "$(ann "$eff" unrelated.example/key)"
  check_eq "$b: app: recorded as a container of the pod" "container/$pod" \
    "$(ann "$eff" dev.tollgate.cri.role)/$(ann "$eff" dev.tollgate.cri.pod)"
  check_eq "$b: app: nothing tells the backend to join the pause sandbox" "<none>/<none>" \
    "$(ann "$eff" io.kubernetes.cri.container-type)/$(ann "$eff" io.kubernetes.cri.sandbox-id)"
  # Each container its own sandbox: two containers, two init processes.
  pids=$(for id in "$pod" "$ctr_id"; do tgk state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; done | sort -u | wc -l)
  check_eq "$b: pause and app have separate init processes" 2 "$pids"
  if [ "$b" = runsc ]; then
    check_eq "$b: two runsc sandboxes" 2 "$(runsc --root "$K8S_ROOT/backend/runsc" list --quiet 2>/dev/null | wc -l)"
  fi

  for _ in $(seq 300); do grep -q 'status=' "$CTRD_DIR/pods/$b/agent.log" 2>/dev/null && break; sleep 0.1; done
  log=$(cat "$CTRD_DIR/pods/$b/agent.log" 2>&1)
  check_match "$b: governed call from the pod returns the result" 'K-8' "$log"
  check_match "$b: governed call exits 0" 'status=0' "$log"
  out=$(cri ExecSync '{"container_id": "'$ctr_id'", "cmd": ["id", "-u"], "timeout": 30}' 2>&1)
  check_eq "$b: ExecSync runs as the hardened user" "NjU1MzQK" "$(jget "$out" stdout)"  # base64 "65534\n"

  # A second app container: the hardening probe, with the capabilities
  # the CRI gives every container by default; tollgate must drop them.
  probe_config='{"metadata": {"name": "probe"}, "image": {"image": "localhost/tollgate/probe:test"},
    "command": ["/usr/bin/tollgate-probe"], "log_path": "probe.log",
    "linux": {"security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$probe_config"', "sandbox_config": '"$pod_config"'}' 2>&1)
  probe_id=$(jget "$out" container_id)
  check "$b: probe: second app container starts" cri StartContainer '{"container_id": "'$probe_id'"}'
  for _ in $(seq 200); do
    st=$(cri ContainerStatus '{"container_id": "'$probe_id'"}' 2>/dev/null)
    [ "$(jget "$st" status state)" = CONTAINER_EXITED ] && break
    sleep 0.1
  done
  check_eq "$b: probe: exits 0" 0 "$(jget "$st" status exit_code)"
  # CRI log lines are "<time> stdout F <text>": keep the text, parse the JSON.
  probe=$(sed -n 's/^[^ ]* std[a-z]* [FP] //p' "$CTRD_DIR/pods/$b/probe.log" 2>/dev/null)
  pfield() { python3 -c 'import json,sys; v=json.loads(sys.argv[1])[sys.argv[2]]; print(json.dumps(v) if not isinstance(v,str) else v)' "$probe" "$1" 2>&1; }
  check_eq "$b: probe: CRI's default capabilities dropped (effective)" 0000000000000000 "$(pfield cap_eff)"
  check_eq "$b: probe: CRI's default capabilities dropped (bounding)" 0000000000000000 "$(pfield cap_bnd)"
  check_eq "$b: probe: uid 65534" 65534 "$(pfield uid)"
  check_eq "$b: probe: seccomp filter on" 2 "$(pfield seccomp)"
  check_eq "$b: probe: only loopback, though the pod asked for the node's network" '["lo"]' "$(pfield interfaces)"
  check "$b: probe: RemoveContainer" cri RemoveContainer '{"container_id": "'$probe_id'"}'

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
pod=$(jget "$out" pod_sandbox_id)
out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$ex_ctr"', "sandbox_config": '"$ex_pod"'}' 2>&1)
ctr_id=$(jget "$out" container_id)
check "example pod: starts" cri StartContainer '{"container_id": "'$ctr_id'"}'
# Bounded waits only (no timing is asserted): generous for a loaded machine.
for _ in $(seq 200); do
  st=$(cri ContainerStatus '{"container_id": "'$ctr_id'"}' 2>/dev/null)
  [ "$(jget "$st" status state)" = CONTAINER_EXITED ] && break
  sleep 0.1
done
check_eq "example pod: the agent exits 0" 0 "$(jget "$st" status exit_code)"
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
pod=$(jget "$out" pod_sandbox_id)
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

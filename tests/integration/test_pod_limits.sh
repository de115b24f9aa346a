#!/usr/bin/env bash
# Per-container memory limits and stats of a Kubernetes pod (issue 40;
# docs/kubernetes.md "Limits and stats"), through a private containerd's
# CRI plugin with the shipped handler, under runsc and runc.  The pod gets
# a pod cgroup as the kubelet makes it (cgroup_parent, its memory limit
# the sum of its containers' plus overhead), and two containers with
# limits of 128 MiB ("hog", which allocates 8 MiB at a time past it) and
# 256 MiB ("steady", which holds 64 MiB):
#   - the pod's sandbox (runsc: the gVisor sandbox; runc: the pause) is in
#     the pod cgroup, bounded by what the kubelet sized, not by the
#     profile's 512 MiB (and the limits asked for are the limits given);
#   - the hog ends with 137 (runc: OOMKilled, the kernel's OOM killer in
#     its own cgroup; runsc: its waiter kills it at its limit, gVisor
#     20240729 has no per-container limit, and says so on its stderr),
#     while the steady container keeps running;
#   - the steady container's stats (CRI ContainerStats, what kubectl top
#     and eviction read) are within 2x of the memory it says it holds
#     (runsc: its waiter is in the sandbox's cgroup, not containerd's).
set -u
. "$(dirname "$0")/lib.sh"
CTRD_CRI=1
. "$(dirname "$0")/containerd_lib.sh"
ctrd_start || exit 1
ctrd_import pause
ctrd_import python
K8S_ROOT=$TG_CTR_ROOT/k8s.io
tgk() { "$TG" --root "$K8S_ROOT" --config "$TG_CONFIG" "$@"; }
MIB=1048576
memcg() { awk -F: '$2 == "memory" {print $3}' "/proc/$1/cgroup" 2>/dev/null; }
cri_exited() {
  local st
  for _ in $(seq 300); do
    st=$(cri ContainerStatus '{"container_id": "'$1'"}' 2>/dev/null)
    [ "$(json_get status state <<<"$st" 2>/dev/null)" = CONTAINER_EXITED ] && { echo "$st"; return 0; }
    sleep 0.1
  done
  return 1
}
# py_ctr NAME LIMIT_MIB PROGRAM: a container of the pod running python3.
py_ctr() {
  python3 -c 'import json, sys
name, mib, prog = sys.argv[1:]
print(json.dumps({"metadata": {"name": name}, "image": {"image": "localhost/tollgate/python:test"},
  "command": ["python3", "-u", "-c", prog], "log_path": name + ".log",
  "linux": {"resources": {"memory_limit_in_bytes": int(mib) << 20},
            "security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}))' "$@"
}
HOG='import time
b = []
for i in range(60):
    b.append(bytearray(8 << 20))
    print("hog holds", (i + 1) * 8, "MiB", flush=True)
    time.sleep(0.1)
print("hog was not stopped")'
STEADY='import time
b = bytearray(64 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
rss = [l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]
print("rss_kib=" + rss, flush=True)
time.sleep(300)'

for b in runsc runc; do
  write_config "runtime=\"$b\""
  # The pod cgroup, as the kubelet sizes it: 128 + 256 MiB + 64 MiB overhead.
  PODCG=/tgpl$$$b
  mkdir -p "/sys/fs/cgroup/memory$PODCG"
  echo $((448 * MIB)) >"/sys/fs/cgroup/memory$PODCG/memory.limit_in_bytes"
  on_exit "for c in /sys/fs/cgroup/*$PODCG; do find \$c -depth -type d -exec rmdir {} +; done"
  mkdir -p "$CTRD_DIR/pods/$b"
  pod_config='{"metadata": {"name": "limits-'$b'", "uid": "limits-'$b'", "namespace": "default"},
    "log_directory": "'$CTRD_DIR'/pods/'$b'",
    "linux": {"cgroup_parent": "'$PODCG'", "security_context": {"namespace_options": {"network": "NODE", "pid": "CONTAINER", "ipc": "POD"}}}}'
  out=$(cri RunPodSandbox '{"config": '"$pod_config"', "runtime_handler": "tollgate"}' 2>&1)
  pod=$(json_get pod_sandbox_id <<<"$out")
  check_match "$b: the pod starts" '^[0-9a-f]{64}$' "$pod"
  [ -n "$pod" ] || echo "# $out"
  spid=$(tgk state "$pod" | json_get pid)
  if [ "$b" = runsc ]; then
    check_eq "$b: the gVisor sandbox is in the pod cgroup itself" "$PODCG" "$(memcg "$spid")"
  else
    check_eq "$b: the pause is in its cgroup under the pod cgroup" "$PODCG/$pod" "$(memcg "$spid")"
  fi
  check_eq "$b: ... whose limit is the kubelet's, not the profile's" $((448 * MIB)) \
    "$(cat "/sys/fs/cgroup/memory$PODCG/memory.limit_in_bytes")"

  ids=()
  for c in "hog 128 HOG" "steady 256 STEADY"; do
    set -- $c
    cfg=$(py_ctr "$1" "$2" "${!3}")
    out=$(cri CreateContainer '{"pod_sandbox_id": "'$pod'", "config": '"$cfg"', "sandbox_config": '"$pod_config"'}' 2>&1)
    id=$(json_get container_id <<<"$out")
    [ -n "$id" ] || echo "# $out"
    eff=$CTRD_DIR/state/io.containerd.runtime.v2.task/k8s.io/$id/config.json
    check "$b: $1: starts" cri StartContainer '{"container_id": "'$id'"}'
    check_eq "$b: $1: its limit is the $2 MiB asked for" $(($2 * MIB)) "$(json_get linux.resources.memory.limit <"$eff" 2>&1)"
    ids+=("$id")
  done
  hog=${ids[0]} steady=${ids[1]}
  st=$(cri_exited "$hog")
  check_eq "$b: hog: exits 137" 137 "$(json_get status exit_code <<<"$st" 2>&1)"
  log=$(cat "$CTRD_DIR/pods/$b/hog.log" 2>&1)
  check_fails "$b: hog: never got far past its limit" grep -q 'hog was not stopped\|holds 4[0-9][0-9] MiB' <<<"$log"
  if [ "$b" = runc ]; then
    check_eq "$b: hog: reported OOMKilled" OOMKilled "$(json_get status reason <<<"$st" 2>&1)"
  else
    # containerd's OOMKilled comes only from an OOM event in the cgroup it
    # watches (the sandbox's, shared by the pod): none for one member.
    echo "# $b: hog: reason \"$(json_get status reason <<<"$st" 2>&1)\" (no per-container OOM event under runsc)"
    check_match "$b: hog: its waiter says why on its stderr" 'tollgate: the container used [0-9]+ MiB, above its memory limit of 128 MiB' "$log"
  fi
  wait_for 60 grep -qs 'rss_kib=' "$CTRD_DIR/pods/$b/steady.log"
  check_eq "$b: steady: still running after the hog" CONTAINER_RUNNING \
    "$(cri ContainerStatus '{"container_id": "'$steady'"}' 2>&1 | json_get status state 2>&1)"
  rss=$(( $(sed -n 's/.*rss_kib=//p' "$CTRD_DIR/pods/$b/steady.log") * 1024 ))
  ws=$(cri ContainerStats '{"container_id": "'$steady'"}' 2>&1 | json_get stats memory working_set_bytes value 2>&1)
  echo "# $b: steady holds $((rss / MIB)) MiB by its own count; CRI working set $(( ${ws:-0} / MIB )) MiB"
  check_eq "$b: steady: CRI stats within 2x of what it holds" yes \
    "$([ "${ws:-0}" -ge $((rss / 2)) ] 2>/dev/null && [ "${ws:-0}" -le $((rss * 2)) ] && echo yes || echo "no: $ws vs $rss")"
  if [ "$b" = runsc ]; then
    check_eq "$b: steady: its waiter is in the sandbox's cgroup" "$PODCG" "$(memcg "$(tgk state "$steady" | json_get pid)")"
  fi
  for id in "$hog" "$steady"; do
    cri StopContainer '{"container_id": "'$id'", "timeout": 1}' >/dev/null 2>&1
    cri RemoveContainer '{"container_id": "'$id'"}' >/dev/null 2>&1
  done
  check "$b: StopPodSandbox" cri StopPodSandbox '{"pod_sandbox_id": "'$pod'"}'
  check "$b: RemovePodSandbox" cri RemovePodSandbox '{"pod_sandbox_id": "'$pod'"}'
  check_eq "$b: nothing left" "" "$(tgk list -q 2>&1)$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"
done

#!/usr/bin/env bash
# tollgate as Podman's OCI runtime (issue 17): Debian's podman with a
# private storage root, run root, tmp dir and containers.conf, its
# default network a CNI bridge of this test's own (no masquerade, no
# firewall plugin: no host iptables rule), removed at the end.  Per
# backend: podman run, run -d + exec + stop, the default network (lo only
# inside), and a tollgate error that podman must not misread as "command
# not found" (it matches "No such file or directory" in a runtime's error).
# Joins (docs/hardening.md "Joins"), per backend: with conmon named in the
# host config's trusted_join_callers, a pod (an infra container and two
# members that share its loopback and PID namespace) and `--pid=container:`
# work; without it, both are refused naming the rule.  The network is a
# test range (198.19.x.0/24, RFC 2544) and no traffic leaves the bridge.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
PODMAN=/usr/bin/podman
if [ ! -x "$PODMAN" ]; then
  echo "FAIL - podman is not installed: run make deps"
  exit 0
fi
P=$(mktemp -d /tmp/tgp.XXXXXX)
NET=tgp$$
NET=${NET:0:15}
mkdir -p "$P/net" "$P/tmp" "$P/ipam"
cat >"$P/tollgate-runtime" <<EOF
#!/bin/sh
exec $TG --config $TG_CONFIG "\$@"
EOF
chmod 0755 "$P/tollgate-runtime"
sub=198.19.$(( $$ % 200 + 10 ))
cat >"$P/net/$NET.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "$NET",
 "plugins": [{"type": "bridge", "bridge": "$NET", "isGateway": true, "ipMasq": false,
              "ipam": {"type": "host-local", "dataDir": "$P/ipam", "routes": [{"dst": "0.0.0.0/0"}],
                       "ranges": [[{"subnet": "$sub.0/24", "gateway": "$sub.1"}]]}}]}
EOF
# tollgate is Podman's runtime as docs/containerd.md ("Podman") registers
# it: containers.conf names it, through a wrapper that execs tollgate with
# this test's host config.
cat >"$P/containers.conf" <<EOF
[engine]
runtime = "tollgate"
events_logger = "file"
events_logfile_path = "$P/events.log"
cgroup_manager = "cgroupfs"
tmp_dir = "$P/tmp"
[network]
network_backend = "cni"
network_config_dir = "$P/net"
default_network = "$NET"
cni_plugin_dirs = ["/usr/lib/cni"]
[engine.runtimes]
tollgate = ["$P/tollgate-runtime"]
EOF
export CONTAINERS_CONF=$P/containers.conf
pm() { "$PODMAN" --root "$P/storage" --runroot "$P/run" \
  --storage-driver vfs --cgroup-manager cgroupfs --tmpdir "$P/tmp" "$@"; }
pmo() { pm "$@" 2>"$P/client.err"; }
on_exit "rm -rf $P"
on_exit "ip link del $NET"
on_exit 'grep " '$P'/" /proc/self/mounts | cut -d" " -f2 | sort -r | xargs -r -n1 umount -l'
on_exit "pm rm -af -t 1"

tar -C "$BUSYBOX_ROOTFS" -c . | pm import - localhost/tollgate/busybox:test >/dev/null 2>"$P/client.err"
check "busybox image imported" eval "pm image exists localhost/tollgate/busybox:test"
check_eq "podman's runtime is tollgate, from containers.conf" "tollgate $P/tollgate-runtime" \
  "$(pm info --format '{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Path}}' 2>&1)"
# The pods' infra image: busybox that sleeps (podman's own pause image
# would be pulled from a registry).
tar -C "$BUSYBOX_ROOTFS" -c . | pm import --change 'ENTRYPOINT ["/bin/sleep", "2147483647"]' - \
  localhost/tollgate/infra:test >/dev/null 2>"$P/client.err"
CONMON=$(readlink -f /usr/bin/conmon)

for be in $BACKENDS; do
  write_config "runtime=\"$be\""
  check_eq "$be: podman run prints the output" hello-from-podman \
    "$(pmo run --rm localhost/tollgate/busybox:test echo hello-from-podman)"
  [ -s "$P/client.err" ] && sed 's/^/# /' "$P/client.err" | tail -5
  pmo run --rm localhost/tollgate/busybox:test sh -c 'exit 3' >/dev/null
  check_eq "$be: podman run returns the exit status" 3 "$?"
  cid=$(pmo run -d --name "p-$be" localhost/tollgate/busybox:test sleep 300)
  check_match "$be: podman run -d" '^[0-9a-f]{64}$' "$cid"
  check_eq "$be: podman exec runs as the hardened user" 65534 "$(pmo exec "p-$be" id -u)"
  check "$be: podman stop" eval "pmo stop -t 2 p-$be >/dev/null"
  check_eq "$be: stopped" exited "$(pmo inspect -f '{{.State.Status}}' "p-$be")"
  check "$be: podman rm" eval "pmo rm p-$be >/dev/null"
  # The default network: podman's CNI bridge; inside, lo only (read from
  # /proc/net/dev: runsc 20240729 has no /sys/class/net).
  check_eq "$be: default network: the container runs with lo only" lo \
    "$(echo $(pmo run --rm localhost/tollgate/busybox:test sh -c 'cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d " "'))"
  check_eq "$be: default network: no veth left on the bridge" "" "$(ip -o link show master "$NET" 2>/dev/null)"

  # A tollgate error whose cause is ENOENT (a policy file that is not
  # there): podman reports tollgate's message, not "command not found".
  out=$(pm run --rm --annotation dev.tollgate.policy=nosuch localhost/tollgate/busybox:test true 2>&1)
  rc=$?
  check_match "$be: a tollgate error reaches podman in tollgate's words" 'names policy .*nosuch.*install that policy' "$out"
  check_fails "$be: ... not misread as command not found (exit 127)" test "$rc" -eq 127
  check_fails "$be: ... nor worded so podman could" eval '[[ "$out" =~ [Nn]o\ such\ file\ or\ directory ]]'
  check_eq "$be: nothing left in podman" "" "$(pm ps -aq 2>&1)"

  # --- joins: proven by an operator-trusted caller (conmon) ---------------
  write_config "runtime=\"$be\"" "trusted_join_callers=[\"$CONMON\"]"
  pod="pod-$be"
  pmo pod create --name "$pod" --share ipc,net,uts,pid --infra-image localhost/tollgate/infra:test >/dev/null
  check_eq "$be: pod: created" 0 "$?"
  [ -s "$P/client.err" ] && sed 's/^/# /' "$P/client.err" | tail -5
  pmo run -d --pod "$pod" --name "srv-$be" localhost/tollgate/busybox:test \
    sh -c 'while true; do echo pong-in-pod | nc -l -p 8080; done' >/dev/null
  check_eq "$be: pod: a member starts in the pod" running "$(pmo inspect -f '{{.State.Status}}' "srv-$be")"
  [ -s "$P/client.err" ] && sed 's/^/# /' "$P/client.err" | tail -5
  got=$(pmo run --rm --pod "$pod" localhost/tollgate/busybox:test \
    sh -c 'r=; for i in $(seq 40); do r=$(nc 127.0.0.1 8080 </dev/null 2>/dev/null); [ -n "$r" ] && break; sleep 0.25; done; echo "${r:-nothing}"; ps -o args')
  check_match "$be: pod: a second member reaches the first on 127.0.0.1" '^pong-in-pod' "$got"
  check_match "$be: pod: ... and sees its processes (the pod's PID namespace)" 'nc -l -p 8080|while true' "$got"
  [ -s "$P/client.err" ] && sed 's/^/# /' "$P/client.err" | tail -5
  pmo run -d --name "own-$be" localhost/tollgate/busybox:test sleep 303 >/dev/null
  got=$(pmo run --rm --pid "container:own-$be" localhost/tollgate/busybox:test ps -o args)
  check_match "$be: --pid=container: shares the owner's PID namespace" '(^|'$'\n'')sleep 303' "$got"
  [ -s "$P/client.err" ] && sed 's/^/# /' "$P/client.err" | tail -5

  # --- the same joins without the operator's word: refused ----------------
  write_config "runtime=\"$be\""
  out=$(pm run --rm --pid "container:own-$be" localhost/tollgate/busybox:test ps -o args 2>&1)
  check_match "$be: --pid=container: without trusted_join_callers is refused, naming the rule" \
    "nothing proves they belong together: the join rule .*trusted_join_callers names both callers \(this one's is $CONMON" "$out"
  check_fails "$be: ... and never ran" eval '[[ "$out" =~ sleep\ 303 ]]'
  out=$(pm run --rm --pod "$pod" localhost/tollgate/busybox:test echo member-ran 2>&1)
  check_match "$be: a pod member without trusted_join_callers is refused, naming the rule" \
    "nothing proves they belong together: the join rule" "$out"
  check_fails "$be: ... and never ran" eval '[[ "$out" =~ member-ran ]]'
  pm rm -f -t 1 "own-$be" >/dev/null 2>&1
  pm pod rm -f -t 1 "$pod" >/dev/null 2>&1
  check_eq "$be: joins: nothing left in podman" "" "$(pm ps -aq 2>&1)"
done
write_config

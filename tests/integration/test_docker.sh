#!/usr/bin/env bash
# tollgate as a Docker runtime (issue 17): a private dockerd (Debian's
# docker.io) started here with its own data root, exec root, socket and
# pid file, tollgate registered as the runtime "tollgate", stopped by pid.
# It touches no host iptables (--iptables=false, --ip-masq=false,
# --ip-forward=false) and uses a bridge made here (198.19.x.1/24) and removed at
# the end, so Docker's default network really is set up.  Per backend:
#   - docker run prints the container's output and exits 0;
#   - docker run -d, docker exec (as the hardened user), docker stop;
#   - the default network: the container runs with lo only (runc: the
#     veth Docker moved in is removed, with one warning line in the runtime
#     log; runsc: --network=none), and the host keeps no veth behind;
#   - --pid=container: and --ipc=container: joins on the default network.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
DOCKERD=/usr/sbin/dockerd
DOCKER=/usr/bin/docker # not whatever docker CLI the PATH holds first
if [ ! -x "$DOCKERD" ] || [ ! -x "$DOCKER" ]; then
  echo "FAIL - docker.io is not installed: run make deps"
  exit 0
fi

D=$(mktemp -d /tmp/tgd.XXXXXX)
BR=tgd$$
BR=${BR:0:15}
# The registration docs/containerd.md ("Docker") gives for a host config
# elsewhere than /etc/tollgate/config.json: a wrapper that `exec`s
# tollgate, so that the join rule sees the containerd shim as tollgate's
# caller (Docker's own runtimeArgs wrapper runs it as a child of sh).
cat >"$D/tollgate-runtime" <<EOF
#!/bin/sh
exec $TG --config $TG_CONFIG "\$@"
EOF
chmod 0755 "$D/tollgate-runtime"
cat >"$D/daemon.json" <<EOF
{"runtimes": {"tollgate": {"path": "$D/tollgate-runtime"}}}
EOF
# A test range (198.18.0.0/15, RFC 2544): never a private one.
ip link add "$BR" type bridge && ip addr add 198.19.$(( $$ % 200 + 20 )).1/24 dev "$BR" && ip link set "$BR" up
on_exit "ip link del $BR"
on_exit "rm -rf $D"
on_exit 'grep " '$D'/" /proc/self/mounts | cut -d" " -f2 | sort -r | xargs -r -n1 umount -l'
"$DOCKERD" --config-file "$D/daemon.json" --data-root "$D/data" --exec-root "$D/exec" \
  -H "unix://$D/d.sock" --pidfile "$D/d.pid" --bridge "$BR" --iptables=false --ip6tables=false \
  --ip-masq=false --ip-forward=false --userland-proxy=false --storage-driver vfs \
  --log-level warn >"$D/dockerd.log" 2>&1 &
DPID=$!
# Stopped by pid (never by name); dockerd stops the containerd it started.
stop_dockerd() {
  local n
  kill "$DPID"
  for n in $(seq 150); do kill -0 "$DPID" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$DPID"
}
on_exit stop_dockerd
dk() { "$DOCKER" -H "unix://$D/d.sock" "$@"; }
# The client's own warnings (this dockerd forwards no IPv4) go to stderr:
# only the container's output is compared.
dko() { dk "$@" 2>"$D/client.err"; }
# runtime_log CID: the --log file Docker's containerd gives the runtime.
runtime_log() { find "$D/exec" -path "*$1*" -name log.json -exec cat {} + 2>/dev/null; }
for _ in $(seq 300); do dk version >/dev/null 2>&1 && break; sleep 0.1; done
if ! dk version >/dev/null 2>&1; then
  echo "FAIL - dockerd did not start"
  sed 's/^/# /' "$D/dockerd.log" | tail -20
  exit 0
fi
check_match "dockerd knows the tollgate runtime" 'tollgate' "$(dk info --format '{{json .Runtimes}}' 2>&1)"
tar -C "$BUSYBOX_ROOTFS" -c . | dk import - tollgate/busybox:test >/dev/null
check "busybox image imported" eval "dko image inspect tollgate/busybox:test >/dev/null"

# The id pool's claims in this test's own directory, to count them.
IDS=$TG_ROOT/ids
for be in $BACKENDS; do
  write_config "runtime=\"$be\"" id_range_dir="\"$IDS\""
  out=$(dko run --rm --runtime tollgate tollgate/busybox:test echo hello-from-docker)
  check_eq "$be: docker run prints the output" hello-from-docker "$out"
  dk run --rm --runtime tollgate tollgate/busybox:test sh -c 'exit 3' >/dev/null 2>&1
  check_eq "$be: docker run returns the exit status" 3 "$?"

  cid=$(dko run -d --runtime tollgate --name "d-$be" tollgate/busybox:test sleep 300)
  check_match "$be: docker run -d" '^[0-9a-f]{64}$' "$cid"
  check_eq "$be: docker exec runs as the hardened user" 65534 "$(dk exec "d-$be" id -u 2>&1)"
  check_eq "$be: docker exec returns the exit status" 4 "$(dk exec "d-$be" sh -c 'exit 4' >/dev/null 2>&1; echo $?)"
  if [ "$be" = runc ]; then
    # Its own user namespace and host id range (issue 14), though Docker's
    # exec root, above the state directory, is 0700 (shim/lifecycle/mount_reach.h).
    dpid=$(dk inspect -f '{{.State.Pid}}' "d-$be" 2>&1)
    huid=$(awk '/^Uid:/ {print $2}' "/proc/$dpid/status" 2>/dev/null)
    check_eq "$be: the container runs as a host uid of the pool (not 65534)" yes \
      "$([ "${huid:-0}" -gt $((1 << 28)) ] && echo yes || echo "no: ${huid:-none}")"
    check_fails "$be: ... in a user namespace that is not the host's" test \
      "$(readlink /proc/$dpid/ns/user)" = "$(readlink /proc/self/ns/user)"
    check_match "$be: ... reached through /run/tollgate-reach" "/run/tollgate-reach/[0-9a-f]{32}" \
      "$(grep -o ' /run/tollgate-reach/[0-9a-f]*' /proc/self/mounts | head -1)"
  fi
  check "$be: docker stop" eval "dko stop -t 2 d-$be >/dev/null"
  check_eq "$be: stopped" exited "$(dk inspect -f '{{.State.Status}}' "d-$be" 2>&1)"
  check "$be: docker rm" eval "dko rm d-$be >/dev/null"

  # The interfaces the container sees, from /proc/net/dev: gVisor
  # 20240729 has no /sys/class/net (20221219 and runc do).
  NETDEVS='cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d " "'
  # The default network: Docker sets up eth0 on the private bridge.  The
  # runtime log lives in the task's bundle: read it while the task runs.
  cid=$(dko run -d --runtime tollgate tollgate/busybox:test sh -c "$NETDEVS; exec sleep 300")
  for _ in $(seq 50); do [ -n "$(dk logs "$cid" 2>/dev/null)" ] && break; sleep 0.1; done
  check_eq "$be: default network: the container runs with lo only" lo "$(echo $(dk logs "$cid" 2>&1))"
  if [ "$be" = runc ]; then
    check_match "$be: default network: one warning in the runtime log names what was removed" \
      '"level":"warning","msg":"container [0-9a-f]+: the hardened profile gives no network: removed eth0 .*--network none' "$(runtime_log "$cid")"
  fi
  if [ "$be" = runc ]; then
    # docs/containerd.md ("Docker"): dockerd drops the whole stats sample
    # when the interface it moved in is gone; with --network none the
    # container's memory is there.
    check_eq "$be: default network: docker stats shows 0B" "0B / 0B" \
      "$(dk stats --no-stream --format '{{.MemUsage}}' "$cid" 2>&1)"
    nid=$(dko run -d --runtime tollgate --network none tollgate/busybox:test sleep 300)
    check_match "$be: --network none: docker stats shows the container's memory" '^[1-9][0-9.]*[KM]iB / ' \
      "$(dk stats --no-stream --format '{{.MemUsage}}' "$nid" 2>&1)"
    dko rm -f "$nid" >/dev/null
  fi
  dko rm -f "$cid" >/dev/null
  check_eq "$be: default network: no veth left on the bridge" "" "$(ip -o link show master "$BR" 2>&1)"
  out=$(dko run --rm --runtime tollgate --network none tollgate/busybox:test sh -c "$NETDEVS")
  check_eq "$be: --network none: lo only" lo "$(echo $out)"
  # --user 0 and --cap-add are changed by the profile, and said so.
  cid=$(dko run -d --runtime tollgate --user 0 --cap-add SYS_ADMIN tollgate/busybox:test sh -c 'id -u; exec sleep 300')
  for _ in $(seq 50); do [ -n "$(dk logs "$cid" 2>/dev/null)" ] && break; sleep 0.1; done
  check_eq "$be: --user 0 runs as the hardened user" 65534 "$(dk logs "$cid" 2>&1)"
  check_match "$be: the runtime log warns about --user 0 and --cap-add" \
    'changed what the client asked for: user 0 runs as 65534; capabilities dropped: CAP_SYS_ADMIN' \
    "$(runtime_log "$cid")"
  dko rm -f "$cid" >/dev/null
  # --network host and --pid host: a new namespace each, said so.
  cid=$(dko run -d --runtime tollgate --network host --pid host tollgate/busybox:test sh -c "$NETDEVS; exec sleep 300")
  [ -n "$cid" ] || sed 's/^/# /' "$D/client.err"
  for _ in $(seq 50); do [ -n "$(dk logs "$cid" 2>/dev/null)" ] && break; sleep 0.1; done
  got=$(echo $(dk logs "$cid" 2>&1))
  check_eq "$be: --network host: lo only" lo "$got"
  [ "$got" = lo ] || { dk inspect -f '# {{.State.Status}} {{.State.Error}}' "$cid"; sed 's/^/# /' "$D/client.err"; runtime_log "$cid" | sed 's/^/# /'; }
  check_match "$be: the runtime log warns about --pid host and --network host" \
    "--pid host.*--network host" "$(runtime_log "$cid")"
  dko rm -f "$cid" >/dev/null
  # --pid=container: and --ipc=container: on the default network (issue
  # 40.4): Docker's containers each have a shim of their own, so the join
  # is proven by trusted_join_callers naming it (docs/hardening.md
  # "Joins"); under runsc the joiner starts in its owner's sandbox, where
  # Docker's network hook must not run.
  write_config "runtime=\"$be\"" id_range_dir="\"$IDS\"" \
    'trusted_join_callers=["/usr/bin/containerd-shim-runc-v2"]'
  cid=$(dko run -d --runtime tollgate --ipc shareable --name "own-$be" tollgate/busybox:test sleep 303)
  check_match "$be: join owner runs on the default network" '^[0-9a-f]{64}$' "$cid"
  out=$(dko run --rm --runtime tollgate --pid "container:own-$be" tollgate/busybox:test ps -o args)
  [ -n "$out" ] || { sed 's/^/# /' "$D/client.err"; }
  check_match "$be: --pid=container: on the default network sees the owner's process" 'sleep 303' "$out"
  out=$(dko run --rm --runtime tollgate --ipc "container:own-$be" tollgate/busybox:test sh -c "$NETDEVS; echo ipc-ok")
  [ -n "$out" ] || { sed 's/^/# /' "$D/client.err"; }
  check_eq "$be: --ipc=container: on the default network runs, lo only" "lo ipc-ok" "$(echo $out)"
  if [ "$be" = runsc ]; then
    check_eq "$be: ... the owner's sandbox still serves it" "" "$(dk exec "own-$be" true 2>&1)"
  fi
  dko rm -f "own-$be" >/dev/null
  write_config "runtime=\"$be\"" id_range_dir="\"$IDS\""
  check_eq "$be: joins: no veth left on the bridge" "" "$(ip -o link show master "$BR" 2>&1)"
  check_eq "$be: nothing left in docker" "" "$(dk ps -aq 2>&1)"
  # This dockerd's views only (mountinfo's fourth field is the bind's
  # source): other scripts' containers have their own there meanwhile.
  check_eq "$be: no reach view left" "" \
    "$(awk -v d="$D/" 'index($4, d) == 1 && index($5, "/run/tollgate-reach/") == 1' /proc/self/mountinfo)"
  check_eq "$be: no id range claim left" 0 "$(ls "$IDS" 2>/dev/null | grep -cE '^[0-9]+$')"
done
write_config

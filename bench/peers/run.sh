#!/usr/bin/env bash
# bench/peers/run.sh: tollgate beside the code executors an agent could use
# instead, on one task (bench/peers/peers.py: the orders program at 40
# orders, three refunds, one over the limit and denied on approval; a cap
# probe of 100 calls).  `make bench` runs it (bench/run.sh, part "peers");
# alone: `sudo bash bench/peers/run.sh` after `make`.
#
#   tollgate runsc, runc          Sandbox.run, a fresh container per run
#   tollgate via smolagents       tollgate_sdk.integrations.smolagents, when
#                                 this checkout has it (else: skipped, why)
#   tollgate via Promptise        tollgate_sdk.integrations.promptise
#   smolagents local executor     in process, no isolation
#   Promptise code-action         its own Docker sandbox and file bridge
#   llm-sandbox                   its Docker backend
#
# The peers' packages are in the bench's own venv (bench/peers/venv.sh,
# from bench/peers/requirements.lock: made once here, never by a test).
# Docker is a private dockerd started here with its own data root, socket
# and pid file, no iptables and no bridge, stopped by its pid; its one
# image is made from build/rootfs/python with `docker import` (nothing is
# pulled).  Writes bench/peers/results.json and prints the table
# (bench/peers/table.py), which docs/comparison.md carries.  PEERS=...
# runs some of them; PEERS_SDK=DIR imports tollgate_sdk from DIR instead of
# sdk/ (to measure an integration from another branch).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD=$(cd "${BUILD:-$repo/build}" 2>/dev/null && pwd) || { echo "peers: build/ is missing; run make" >&2; exit 1; }
TG=$BUILD/tollgate
OUT=${PEERS_OUT:-$here/results.json}
PEERS=${PEERS:-"tollgate-runsc tollgate-runc smolagents-tollgate-runsc smolagents-tollgate-runc promptise-tollgate-runsc promptise-tollgate-runc smolagents-local promptise-docker llm-sandbox-docker"}
say() { echo "peers: $*" >&2; }

sh "$here/venv.sh" || { say "the peers' venv could not be made"; exit 1; }
PY=$here/.venv/bin/python
bash "$repo/bundles/rootfs/python.sh" "$BUILD/rootfs/python" >/dev/null

D=$(mktemp -d /tmp/tgpeers.XXXXXX)
DPID=
cleanup() {
  local n
  if [ -n "$DPID" ]; then
    kill "$DPID" 2>/dev/null
    for n in $(seq 150); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$DPID" 2>/dev/null
  fi
  grep " $D/" /proc/self/mounts | cut -d" " -f2 | sort -r | xargs -r -n1 umount -l
  rm -rf "$D"
}
trap cleanup EXIT

# ---- the image: the project's Python rootfs, plus what Promptise's backend
# execs (bash -c, ls, cat, base64, mkdir, mv, rm) and llm-sandbox's `python`.
img=$D/img
cp -a "$BUILD/rootfs/python" "$img"
cp /bin/busybox "$img/usr/bin/busybox"
for a in sh ls cat base64 mkdir mv rm tr grep sleep kill env id; do ln -sf busybox "$img/usr/bin/$a"; done
cp /bin/bash "$img/usr/bin/bash"
for lib in $(ldd /bin/bash | awk '/=> \//{print $3}'); do
  # The rootfs may have it already, as a link that names a host path:
  # never write through it.
  [ -e "$img$lib" ] || [ -L "$img$lib" ] || { mkdir -p "$img$(dirname "$lib")"; cp -L "$lib" "$img$lib"; }
done
ln -sf python3 "$img/usr/bin/python"
# llm-sandbox's workdir (skip_environment_setup: it makes none itself).
mkdir -p "$img/sandbox"
IMAGE=tollgate-bench/python:peers

DOCKER_OK=
DOCKER_VERSION=
why_docker=
if [ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ]; then
  echo '{}' > "$D/daemon.json"
  /usr/sbin/dockerd --config-file "$D/daemon.json" --data-root "$D/data" --exec-root "$D/exec" \
    -H "unix://$D/d.sock" --pidfile "$D/d.pid" --bridge none --iptables=false --ip6tables=false \
    --ip-masq=false --ip-forward=false --userland-proxy=false --storage-driver overlay2 \
    --log-level warn >"$D/dockerd.log" 2>&1 &
  DPID=$!
  for _ in $(seq 300); do /usr/bin/docker -H "unix://$D/d.sock" version >/dev/null 2>&1 && break; sleep 0.1; done
  if ! /usr/bin/docker -H "unix://$D/d.sock" version >/dev/null 2>&1; then
    why_docker="the private dockerd did not start: $(tail -2 "$D/dockerd.log" | tr '\n' ' ')"
  elif ! tar -C "$img" -c . | /usr/bin/docker -H "unix://$D/d.sock" import --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null; then
    why_docker="docker import of build/rootfs/python failed"
  else
    DOCKER_OK=1
    DOCKER_VERSION=$(/usr/bin/docker -H "unix://$D/d.sock" version --format '{{.Server.Version}}' 2>/dev/null)
  fi
else
  why_docker="docker.io is not installed (make deps)"
fi

mkdir -p "$D/audit"
: > "$D/rows.jsonl"
for peer in $PEERS; do
  if [[ $peer == *docker* ]] && [ -z "$DOCKER_OK" ]; then
    printf '{"peer": "%s", "skipped": "%s"}\n' "$peer" "$why_docker" >> "$D/rows.jsonl"
    continue
  fi
  say "$peer"
  PYTHONPATH=${PEERS_SDK:-$repo/sdk} TG=$TG TOLLGATE=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python AUDIT_DIR=$D/audit \
    DOCKER_HOST=unix://$D/d.sock PEERS_IMAGE=$IMAGE PEERS_ROWS=$D/rows.jsonl \
    PEERS_DOCKER_VERSION=$DOCKER_VERSION \
    timeout 600 "$PY" -W ignore "$here/peers.py" "$peer" >"$D/$peer.out" 2>"$D/$peer.err" \
    || printf '{"peer": "%s", "failed": "exit %s: %s"}\n' "$peer" "$?" \
         "$(tail -2 "$D/$peer.err" | tr '\n"\\' '   ')" >> "$D/rows.jsonl"
done
PEERS_DOCKER_VERSION=$DOCKER_VERSION "$PY" "$here/table.py" "$D/rows.jsonl" "$OUT"

#!/usr/bin/env bash
# Inputs tollgate did not make (issue 28): a Debian 12 rootfs built by
# mmdebstrap (bundles/rootfs/debian.sh, cached under $BUILD/rootfs/debian),
# with no /run/tollgate and a config straight from `runc spec`.  Each run
# gets its own overlay over the cached tree (as containerd's snapshotter
# gives a container), so every run takes the real path, and the overlay's
# upper layer shows exactly what the run added to the image.  Per backend:
#   - hardened and passthrough, with and without --policy (a governed call
#     from python3 inside, with the in-container Python client), with a
#     process.cwd the image lacks;
#   - what tollgate leaves in the rootfs under runc (the mount points and
#     the cwd, nothing else), and that delete leaves it so;
#   - runtime-tools shapes: each rootfsPropagation with the bridge,
#     a namespace path of the wrong kind, RLIMIT_AS at 2 GiB;
#   - the same rootfs as a Docker image (docker import, a private dockerd)
#     and as a containerd image (an OCI archive, ctr image import), run
#     with tollgate as the runtime (test_containerd_cri.sh runs that image
#     in a CRI pod on a CNI network).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
bridge_fixtures

DEB=$BUILD/rootfs/debian
if ! bash "$here/../../bundles/rootfs/debian.sh" "$DEB"; then
  echo "FAIL - mmdebstrap could not build the Debian rootfs (make deps installs mmdebstrap; it needs Debian's archive)"
  exit 0
fi
check "the Debian rootfs has no /run/tollgate" test ! -e "$DEB/run/tollgate"

# A policy with one builtin tool, for the annotation-selected runs.
cat > "$TG_ROOT/policies/images.json" <<'EOF2'
{"version": 1, "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"},
  "description": "Return the arguments unchanged.", "args": {"type": "object"},
  "timeout": 5, "rules": [{"effect": "allow"}]}}}
EOF2
cp "$TG_ROOT/policies/images.json" "$TG_ROOT/images-policy.json"

# overlay NAME: a fresh overlay over the Debian tree at $OV/m (OV is
# $TG_ROOT/ov/NAME; upper: $OV/u), unmounted at exit.  Not in a $(...):
# the cleanup must be registered in this shell.
overlay() {
  OV=$TG_ROOT/ov/$1
  mkdir -p "$OV/u" "$OV/w" "$OV/m"
  mount -t overlay overlay -o "lowerdir=$DEB,upperdir=$OV/u,workdir=$OV/w" "$OV/m"
  on_exit "umount -l $OV/m"
}
# upper NAME: what the run added to the image, one path a line.
upper() { (cd "$TG_ROOT/ov/$1/u" && find . -mindepth 1 | sed 's#^\./##' | LC_ALL=C sort | tr '\n' ' '); }

# deb_bundle NAME PY-EDIT ARGS...: a `runc spec` bundle on a fresh overlay.
deb_bundle() {
  local n=$1 edit=$2; shift 2
  local b=$TG_ROOT/bundles/$n
  overlay "$n"
  mkdir -p "$b"; chmod 755 "$TG_ROOT/bundles" "$b"
  (cd "$b" && runc spec)
  python3 - "$b/config.json" "$OV/m" "$edit" "$@" <<'PY'
import json, sys
path, rootfs, edit, *args = sys.argv[1:]
c = json.load(open(path))
c["root"]["path"] = rootfs
c["process"]["terminal"] = False
c["process"]["args"] = args
exec(edit)
json.dump(c, open(path, "w"), indent=2)
PY
}

CALL='import tollgate, os; print("call", tollgate.call("echo", n=28)); print("cwd", os.getcwd())'
PLAIN='import os, sys; print("py", sys.version_info[:2], "uid", os.getuid(), "cwd", os.getcwd())'
MISSING='c["process"]["cwd"] = "/srv/work/missing"'

for be in $BACKENDS; do
  for prof in hardened passthrough; do
    if [ "$prof" = passthrough ]; then
      write_config allow_passthrough=true 'profile="passthrough"'
    else
      write_config
    fi
    t=$be-$prof
    # --- no policy: the plain runc spec config, a cwd the image lacks ----
    deb_bundle "$t" "$MISSING" python3 -c "$PLAIN"
    out=$(tg --runtime "$be" run --bundle "$TG_ROOT/bundles/$t" "$t" 2>"$TG_ROOT/err")
    check_eq "$t: runc spec + mmdebstrap rootfs + missing cwd runs" 0 "$?"
    [ -n "$out" ] || sed 's/^/# /' "$TG_ROOT/err"
    [ "$prof" = passthrough ] && uid=0 || uid=65534
    check_match "$t: python3 runs in the missing cwd" "^py \(3, 11\) uid $uid cwd /srv/work/missing$" "$out"
    tg delete --force "$t" >/dev/null 2>&1
    # --- --policy: a governed call from python3 inside -----------------
    deb_bundle "$t-pol" "$MISSING" python3 -c "$CALL"
    out=$(tg --runtime "$be" run --policy "$TG_ROOT/images-policy.json" --bundle "$TG_ROOT/bundles/$t-pol" "$t-pol" 2>&1)
    check_eq "$t: with --policy it runs" 0 "$?"
    check_match "$t: the governed call from python3 returns" "call \{'n': 28\}" "$out"
    check_match "$t: ... in the missing cwd" "cwd /srv/work/missing" "$out"
    check_match "$t: the call is audited" '"tool":"echo"' "$(cat "$TG_ROOT/audit/$t-pol.jsonl" 2>&1)"
    tg delete --force "$t-pol" >/dev/null 2>&1
    if [ "$be" = runc ]; then
      # What the run left in the image: the mount points runc and tollgate
      # made and the cwd, all as host root, and nothing else.
      # (passthrough without a policy has no bridge: only runc's own cwd)
      [ "$prof" = passthrough ] && want="srv srv/work srv/work/missing " ||
        want="run run/tollgate srv srv/work srv/work/missing "
      check_eq "$t: what the run left in the rootfs (no policy)" "$want" "$(upper "$t")"
      [ "$prof" = hardened ] &&
        check_eq "$t: made as host root, 0755" "0:0 755" "$(stat -c '%u:%g %a' "$TG_ROOT/ov/$t/u/run/tollgate")"
      check_eq "$t: what the run left in the rootfs (--policy)" \
        "run run/tollgate srv srv/work srv/work/missing " "$(upper "$t-pol")"
    fi
  done
  write_config
  # --- runtime-tools shapes ----------------------------------------------
  # Every rootfsPropagation runsc takes (it refuses shared and unbindable
  # itself, bare or not), all four under runc, each with the bridge.
  [ "$be" = runc ] && modes="shared slave private unbindable" || modes="slave private"
  for mode in $modes; do
    deb_bundle "$be-$mode" 'c["linux"]["rootfsPropagation"] = "'$mode'"' python3 -c "$CALL"
    out=$(tg --runtime "$be" run --policy "$TG_ROOT/images-policy.json" --bundle "$TG_ROOT/bundles/$be-$mode" "$be-$mode" 2>&1)
    check_eq "$be: rootfsPropagation $mode with the bridge runs" 0 "$?"
    check_match "$be: ... and the client's call returns" "call \{'n': 28\}" "$out"
    tg delete --force "$be-$mode" >/dev/null 2>&1
  done
  deb_bundle "$be-nskind" 'c["linux"]["namespaces"] = [n if n["type"] != "pid" else {"type": "pid", "path": "/proc/self/ns/user"} for n in c["linux"]["namespaces"]]' true
  out=$(tg --runtime "$be" run --bundle "$TG_ROOT/bundles/$be-nskind" "$be-nskind" 2>&1)
  check_match "$be: a user namespace given as pid is refused as such" \
    '/proc/self/ns/user is a user namespace, given as "type": "pid"' "$out"
  tg delete --force "$be-nskind" >/dev/null 2>&1
  deb_bundle "$be-as" 'c["process"]["rlimits"] = [{"type": "RLIMIT_AS", "hard": 2 << 30, "soft": 2 << 30}]' \
    python3 -c 'import resource; print("as", resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)'
  ok=0
  for i in 1 2 3 4 5; do
    cp "$TG_ROOT/bundles/$be-as/config.json.orig" "$TG_ROOT/bundles/$be-as/config.json" 2>/dev/null
    out=$(tg --runtime "$be" run --bundle "$TG_ROOT/bundles/$be-as" "$be-as-$i" 2>&1)
    [ "$out" = "as 2048" ] && ok=$((ok + 1)) || echo "# $out"
    tg delete --force "$be-as-$i" >/dev/null 2>&1
  done
  check_eq "$be: RLIMIT_AS 2 GiB: 5 of 5 runs start and see it" 5 "$ok"
done
check_eq "the cached Debian tree is untouched" "" "$(ls -d "$DEB/run/tollgate" "$DEB/srv/work" 2>/dev/null)"

# --- Docker: the same rootfs, docker import, a private dockerd -------------
DOCKERD=/usr/sbin/dockerd
DOCKER=/usr/bin/docker
D=$(mktemp -d /tmp/tgi.XXXXXX)
on_exit "rm -rf $D"
cat >"$D/tollgate-runtime" <<EOF
#!/bin/sh
exec $TG --config $TG_CONFIG "\$@"
EOF
chmod 0755 "$D/tollgate-runtime"
echo "{\"runtimes\": {\"tollgate\": {\"path\": \"$D/tollgate-runtime\"}}}" >"$D/daemon.json"
on_exit 'grep " '$D'/" /proc/self/mounts | cut -d" " -f2 | sort -r | xargs -r -n1 umount -l'
# No bridge network of Docker's own: --bridge none (under tollgate the
# containers run with lo only; test_docker.sh covers Docker's default one).
"$DOCKERD" --config-file "$D/daemon.json" --data-root "$D/data" --exec-root "$D/exec" \
  -H "unix://$D/d.sock" --pidfile "$D/d.pid" --bridge none --iptables=false --ip6tables=false \
  --ip-masq=false --ip-forward=false --userland-proxy=false --storage-driver vfs \
  --log-level warn >"$D/dockerd.log" 2>&1 &
DPID=$!
# Stopped by pid (never by name); dockerd stops the containerd it started.
stop_dockerd() {
  local n
  kill "$DPID" 2>/dev/null || return 0
  for n in $(seq 150); do kill -0 "$DPID" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$DPID"
}
on_exit stop_dockerd
dk() { "$DOCKER" -H "unix://$D/d.sock" "$@"; }
for _ in $(seq 300); do dk version >/dev/null 2>&1 && break; sleep 0.1; done
if dk version >/dev/null 2>&1; then
  tar -C "$DEB" -c . | dk import - tollgate/debian:test >/dev/null
  check "docker: the Debian rootfs imported" eval "dk image inspect tollgate/debian:test >/dev/null 2>&1"
  for be in $BACKENDS; do
    write_config "runtime=\"$be\""
    out=$(dk run --rm --runtime tollgate --network none tollgate/debian:test python3 -c "$PLAIN" 2>"$D/err")
    check_match "docker $be: the imported Debian image runs python3" '^py \(3, 11\) uid 65534 cwd /$' "$out"
    [ -n "$out" ] || sed 's/^/# /' "$D/err"
    out=$(dk run --rm --runtime tollgate --network none -w /srv/nowhere tollgate/debian:test python3 -c "$PLAIN" 2>"$D/err")
    check_match "docker $be: ... with a workdir the image lacks" 'cwd /srv/nowhere$' "$out"
    [ -n "$out" ] || sed 's/^/# /' "$D/err"
  done
else
  echo "FAIL - dockerd did not start"
  sed 's/^/# /' "$D/dockerd.log" | tail -20
fi
stop_dockerd

# --- containerd: the same rootfs as an OCI archive, ctr image import ------
write_config
source "$here/containerd_lib.sh"
# The archive (bundles/containerd/build-images.sh debian, shared with
# test_containerd_cri.sh's CNI pod) holds the tree as an image layer does:
# without the device nodes mmdebstrap made in /dev (image layers carry
# none; the runtime makes /dev).
if ctrd_start; then
  ctrd_import debian
  check "containerd: the Debian image imported" eval "ctr image ls -q | grep -qx localhost/tollgate/debian:test"
  for be in $BACKENDS; do
    write_config "runtime=\"$be\""
    out=$(ctr_tg --rm localhost/tollgate/debian:test "ci-$be" python3 -c "$PLAIN" 2>&1)
    check_match "containerd $be: the Debian image runs python3" '^py \(3, 11\) uid 65534 cwd /$' "$out"
    out=$(ctr_tg --rm --cwd /srv/nowhere localhost/tollgate/debian:test "ci-$be-cwd" python3 -c "$PLAIN" 2>&1)
    check_match "containerd $be: ... with a cwd the image lacks" 'cwd /srv/nowhere$' "$out"
    out=$(ctr_tg --rm --annotation dev.tollgate.policy=images localhost/tollgate/debian:test "ci-$be-gov" \
      python3 -c "$CALL" 2>&1)
    check_match "containerd $be: a governed call from python3 (policy by annotation)" "call \{'n': 28\}" "$out"
    ctrd_check_clean "containerd $be" "$be"
  done
fi

# A private containerd for tollgate's containerd tests.  Source after lib.sh.
#
# Everything lives in one temporary directory: containerd's root, state,
# socket and config, so a system containerd (if any) is never touched.
# ctrd_start starts it; the cleanup registered with on_exit deletes every
# task and container it knows, stops it, ends any shim it started (found by
# pid through its -address argument, never by name), unmounts whatever is
# left under its directory and removes it.
#
#   CTRD_DIR          the private directory
#   ctr ARGS...       ctr against the private socket, namespace tollgate-test
#   TG_RUNTIME        wrapper that runs `tollgate --config $TG_CONFIG "$@"`:
#                     runc.v2 cannot pass --config, so this stands in for
#                     the installed binary (BinaryName)
#   TG_CTR_ROOT       the Root given to runc.v2 for tollgate; the shim
#                     appends the namespace, so tollgate's --root is
#                     $TG_CTR_ROOT/tollgate-test
#   ctr_tg ARGS...    `ctr run` through runc.v2 with BinaryName/Root =
#                     the values the `tollgate` runtime handler registers
#   ctrd_import NAME  import build/images/NAME.tar (built on demand by
#                     bundles/containerd/build-images.sh) into tollgate-test,
#                     or with CTRD_CRI=1 into the CRI plugin's k8s.io

# Debian's python3 first: its python3-yaml and python3-grpcio come from
# `make deps`, whatever other python3 the PATH holds.
PATH=/usr/bin:$PATH
CTRD_NS=tollgate-test
# Short: the socket path must fit in sun_path (108 bytes).
CTRD_DIR=$(mktemp -d /tmp/tgc.XXXXXX)
CTRD_SOCK=$CTRD_DIR/c.sock
CTRD_PID=
# Short as well: tollgate's control socket is <root>/<ns>/<id>/control.sock,
# and CRI ids are 64 characters.
TG_CTR_ROOT=$(mktemp -d /tmp/tgr.XXXXXX)
TG_NS_ROOT=$TG_CTR_ROOT/$CTRD_NS
# runc containers run as host ids of their own range (docs/hardening.md
# "Identities"): containerd's bundles and rootfs mounts below these must be
# reachable by them, as under /run/containerd.  Search only, no listing.
chmod 711 "$CTRD_DIR" "$TG_CTR_ROOT"
TG_RUNTIME=$CTRD_DIR/tollgate-runtime
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

ctr() { command ctr --address "$CTRD_SOCK" --namespace "$CTRD_NS" "$@"; }

# write_runtime_wrapper [TOLLGATE_BINARY]: the BinaryName that containerd
# runs.  A test that wants a broken host config rewrites $TG_CONFIG, not this.
write_runtime_wrapper() {
  cat > "$TG_RUNTIME" <<EOF
#!/bin/sh
exec ${1:-$TG} --config $TG_CONFIG "\$@"
EOF
  chmod 0755 "$TG_RUNTIME"
}

# The daemon's config: only what the tests need.  The /opt installer and
# the snapshotters this machine lacks are off; overlayfs (the default)
# serves images.  CRI is off unless CTRD_CRI=1: then it runs with no TCP
# service, a loopback streaming server on a free port, no CNI (pods use
# the node's network namespace), the pause image built here, and the
# shipped runtime handler bundles/containerd/tollgate.toml appended with
# BinaryName and Root pointed at this test's wrapper and root.
CTRD_CRI=${CTRD_CRI:-0}
_ctrd_config() {
  local cri_off='"io.containerd.grpc.v1.cri", '
  if [ "$CTRD_CRI" = 1 ]; then
    cri_off=''
    mkdir -p "$CTRD_DIR/cni/bin" "$CTRD_DIR/cni/net.d" "$CTRD_DIR/pods"
  fi
  cat > "$CTRD_DIR/config.toml" <<EOF
version = 2
root = "$CTRD_DIR/root"
state = "$CTRD_DIR/state"
disabled_plugins = [${cri_off}"io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[debug]
  address = ""
  level = "info"
[metrics]
  address = ""
EOF
  [ "$CTRD_CRI" = 1 ] && cat >> "$CTRD_DIR/config.toml" <<EOF
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/tollgate/pause:test"
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # This machine may not lower oom_score_adj (the pause container asks for
  # -998): keep it no lower than the daemon's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CTRD_DIR/cni/bin"
    conf_dir = "$CTRD_DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
EOF
  # The shipped handler, appended as the installer appends it (imports
  # would replace the whole CRI section), pointed at this test's wrapper.
  [ "$CTRD_CRI" = 1 ] && sed -e '/^version *=/d' \
      -e "s#^\( *BinaryName = \).*#\1\"$TG_RUNTIME\"#" \
      -e "s#^\( *Root = \).*#\1\"$TG_CTR_ROOT\"#" \
      "$TOP/bundles/containerd/tollgate.toml" >> "$CTRD_DIR/config.toml"
  return 0
}

# containerd 1.6's shims always put their sockets in /run/containerd/s
# (named by a hash of our socket, namespace and id, so they never collide
# with a system containerd's).  When this test is the one that creates
# that directory, the cleanup removes it again (rmdir: only if empty).
CTRD_MADE_RUN=false
ctrd_start() {
  [ -d /run/containerd ] || CTRD_MADE_RUN=true
  write_runtime_wrapper
  _ctrd_config
  containerd --config "$CTRD_DIR/config.toml" >"$CTRD_DIR/containerd.log" 2>&1 &
  CTRD_PID=$!
  local i
  for ((i = 0; i < 600; i++)); do
    if [ -S "$CTRD_SOCK" ] && ctr version >/dev/null 2>&1; then return 0; fi
    kill -0 "$CTRD_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "FAIL - private containerd did not start; its log:"
  tail -n 20 "$CTRD_DIR/containerd.log"
  return 1
}

# Pids of shims started by our daemon: their command line names our socket.
_ctrd_shim_pids() {
  local p
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q -- "-address $CTRD_SOCK "; then
      echo "${p#/proc/}"
    fi
  done
}

_ctrd_cleanup() {
  local id pid
  if [ -n "$CTRD_PID" ] && kill -0 "$CTRD_PID" 2>/dev/null; then
    local ns
    for ns in $CTRD_NS k8s.io; do
      for id in $(command ctr --address "$CTRD_SOCK" -n "$ns" task ls -q 2>/dev/null); do
        command ctr --address "$CTRD_SOCK" -n "$ns" task kill -s KILL "$id" >/dev/null 2>&1
        command ctr --address "$CTRD_SOCK" -n "$ns" task delete --force "$id" >/dev/null 2>&1
      done
      for id in $(command ctr --address "$CTRD_SOCK" -n "$ns" container ls -q 2>/dev/null); do
        command ctr --address "$CTRD_SOCK" -n "$ns" container delete "$id" >/dev/null 2>&1
      done
    done
    kill -TERM "$CTRD_PID" 2>/dev/null
    wait "$CTRD_PID" 2>/dev/null
  fi
  for pid in $(_ctrd_shim_pids); do kill -KILL "$pid" 2>/dev/null; done
  # Anything tollgate still holds under its containerd root is a leak.
  local r
  for r in "$TG_NS_ROOT" "$TG_CTR_ROOT/k8s.io"; do
    [ -d "$r" ] && [ -x "$TG" ] || continue
    for id in $("$TG" --root "$r" --config "$TG_CONFIG" list -q 2>/dev/null); do
      echo "FAIL - leaked tollgate container $id (containerd)"
      "$TG" --root "$r" --config "$TG_CONFIG" delete --force "$id" >/dev/null 2>&1
    done
  done
  grep -E " ($CTRD_DIR|$TG_CTR_ROOT)/" /proc/self/mounts | awk '{print $2}' | sort -r |
    xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$CTRD_DIR" "$TG_CTR_ROOT"
  if $CTRD_MADE_RUN; then rmdir /run/containerd/s /run/containerd/fifo /run/containerd 2>/dev/null; fi
}

# cri METHOD REQUEST_JSON: one CRI call against the private daemon (CTRD_CRI=1).
export CRI_STUBS=$BUILD/cri-stubs
cri() { /usr/bin/python3 "$TOP/tests/integration/cri/cri.py" "$CTRD_SOCK" "$@"; }

# Registered when this file is sourced: the directories above exist from
# now on, whether or not the daemon ever starts.
on_exit _ctrd_cleanup

ctrd_import() {
  local name=$1
  bash "$TOP/bundles/containerd/build-images.sh" "$BUILD" "$name" >/dev/null 2>&1 ||
    bash "$TOP/bundles/containerd/build-images.sh" "$BUILD" "$name"
  # With the CRI plugin on, into its namespace only: unpacking an image
  # into a namespace nothing runs it from costs seconds (the Debian one).
  if [ "$CTRD_CRI" = 1 ]; then
    command ctr --address "$CTRD_SOCK" --namespace k8s.io image import "$BUILD/images/$name.tar" >/dev/null
  else
    ctr image import "$BUILD/images/$name.tar" >/dev/null
  fi
}

# ctr_tg [ctr run flags...] IMAGE ID [ARGS...]: run through tollgate the way
# the `tollgate` runtime handler does (runc.v2, BinaryName, Root).
ctr_tg() {
  ctr run --fifo-dir "$CTRD_DIR/fifo" --runtime io.containerd.runc.v2 \
    --runc-binary "$TG_RUNTIME" --runc-root "$TG_CTR_ROOT" "$@"
}
# ctr_exec ID EXEC_ID ARGS...: `ctr task exec` with our FIFO directory.
ctr_exec() { local id=$1 eid=$2; shift 2; ctr task exec --fifo-dir "$CTRD_DIR/fifo" --exec-id "$eid" "$id" "$@"; }

# tg_ns ARGS...: tollgate on the root containerd made it use.
tg_ns() { "$TG" --root "$TG_NS_ROOT" --config "$TG_CONFIG" "$@"; }

# Nothing left: no task or container in containerd, no tollgate container,
# no backend container, no mount under the private directories.
ctrd_check_clean() {
  local what=$1
  check_eq "$what: no containerd task" "" "$(ctr task ls -q 2>&1)"
  check_eq "$what: no containerd container" "" "$(ctr container ls -q 2>&1)"
  check_eq "$what: tollgate list empty" "" "$(tg_ns list -q 2>&1)"
  local backend_root=$TG_NS_ROOT/backend/$2
  if [ -d "$backend_root" ]; then
    check_eq "$what: $2 list empty" "" "$("$2" --root "$backend_root" list --quiet 2>&1)"
  else
    echo "ok - $what: $2 root $backend_root holds nothing"
  fi
  check_eq "$what: no mounts left" "" "$(grep -E " ($TG_CTR_ROOT|$CTRD_DIR/state)/" /proc/self/mounts)"
}

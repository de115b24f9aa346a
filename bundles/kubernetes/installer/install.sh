#!/bin/sh
# tollgate node installer: the init container of the installer DaemonSet.
# Runs privileged with the node's / mounted at $HOST, the way gVisor's and
# Kata's installers do, and
#   1. copies /opt/tollgate (tollgate, runsc, shared libraries, data files)
#      from this image to the node, replacing the old tree in one rename;
#   2. writes the node's host config /etc/tollgate/config.json and creates
#      the policy and audit directories;
#   3. installs the containerd runtime handler as
#      /etc/containerd/conf.d/tollgate.toml, makes config.toml import it,
#      and restarts containerd when either changed (running containers
#      keep running: their shims do not depend on the daemon).
# Every step is idempotent: a restarted pod changes nothing that is current.
set -eu
HOST=${HOST:-/host}
CONFIG=${CONFIG:-/config}
RESTART_CONTAINERD=${RESTART_CONTAINERD:-true}
PREFIX=/opt/tollgate
SRC=${SRC:-$PREFIX}   # the tree in this image (tests point it elsewhere)
say() { echo "tollgate-installer: $*"; }
die() { echo "tollgate-installer: $*" >&2; exit 1; }

[ -d "$HOST/etc" ] || die "the node's root is not mounted at $HOST; check the DaemonSet's hostPath volume"
[ -x "$SRC/bin/tollgate" ] || die "$SRC/bin/tollgate is missing from the installer image; rebuild it with bundles/kubernetes/build-installer-image.sh"

# 1. The binaries: copy beside, then swap, so a node never sees half a tree.
#    Running sidecars keep the old files open; new containers get the new ones.
mkdir -p "$HOST/opt"
rm -rf "$HOST$PREFIX.new" "$HOST$PREFIX.old"
cp -a "$SRC" "$HOST$PREFIX.new"
[ -d "$HOST$PREFIX" ] && mv "$HOST$PREFIX" "$HOST$PREFIX.old"
mv "$HOST$PREFIX.new" "$HOST$PREFIX"
rm -rf "$HOST$PREFIX.old"
say "installed $PREFIX ($("$SRC/bin/tollgate" --version 2>/dev/null | head -n1 || echo unknown version))"

# put SRC DEST MODE: replace DEST atomically when its content differs;
# exit status 0 when it changed.
put() {
  if [ -f "$2" ] && cmp -s "$1" "$2"; then return 1; fi
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2.tmp.$$" && chmod "$3" "$2.tmp.$$" && mv "$2.tmp.$$" "$2"
}

# 2. Host config and the directories it names.
[ -f "$CONFIG/config.json" ] || die "$CONFIG/config.json is missing; check the tollgate-node ConfigMap"
put "$CONFIG/config.json" "$HOST/etc/tollgate/config.json" 0644 && say "wrote /etc/tollgate/config.json" || true
mkdir -p "$HOST/etc/tollgate/policies" "$HOST/var/log/tollgate/audit"
chmod 0755 "$HOST/etc/tollgate/policies"
chmod 0700 "$HOST/var/log/tollgate/audit"

# 3. containerd: the runtime handler as a drop-in, imported by config.toml.
changed=false
put "$CONFIG/tollgate.toml" "$HOST/etc/containerd/conf.d/tollgate.toml" 0644 && changed=true
main="$HOST/etc/containerd/config.toml"
import='imports = ["/etc/containerd/conf.d/*.toml"]'
if [ ! -f "$main" ]; then
  # No config.toml means containerd's defaults: keep them, add the import.
  printf 'version = 2\n%s\n' "$import" > "$main"
  changed=true
elif ! grep -q '/etc/containerd/conf.d/\*\.toml' "$main"; then
  if grep -q '^[[:space:]]*imports[[:space:]]*=' "$main"; then
    die "$main has its own 'imports' line; add \"/etc/containerd/conf.d/*.toml\" to it and restart this pod"
  fi
  grep -q '^[[:space:]]*version[[:space:]]*=[[:space:]]*2' "$main" ||
    die "$main is not a version 2 config; migrate it ('containerd config migrate') and restart this pod"
  cp "$main" "$main.tollgate-backup"
  # imports is a top-level key: it must come before the first [table].
  awk -v line="$import" '!done && /^[[:space:]]*\[/ { print line; done=1 } { print } END { if (!done) print line }' \
    "$main" > "$main.tmp.$$" && mv "$main.tmp.$$" "$main"
  changed=true
fi
if $changed && [ "$RESTART_CONTAINERD" = true ]; then
  say "restarting containerd to load the tollgate runtime handler"
  nsenter -t 1 -m -u -i -n -p -- systemctl restart containerd ||
    die "could not restart containerd (systemctl restart containerd on the node); restart it by hand"
fi
say "done: runtime handler 'tollgate' -> $PREFIX/bin/tollgate"

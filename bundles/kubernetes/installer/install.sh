#!/bin/sh
# tollgate node installer: the init container of the installer DaemonSet.
# Runs privileged with the node's / mounted at $HOST, the way gVisor's and
# Kata's installers do, and
#   1. copies /opt/tollgate (tollgate, runsc, shared libraries, data files)
#      from this image to the node, replacing the old tree in one rename;
#   2. writes the node's host config /etc/tollgate/config.json and creates
#      the policy and audit directories;
#   3. adds the containerd runtime handler to /etc/containerd/config.toml,
#      between marker lines, and restarts containerd when that changed
#      (running containers keep running: their shims outlive the daemon),
#      with the node's runc SystemdCgroup setting (the kubelet's cgroup
#      driver) in place of the block's.
#      Not a drop-in under `imports`: containerd 1.x replaces a whole plugin
#      section with the imported one, which would wipe the node's own CRI
#      settings.  A runtimes table in config.toml replaces containerd's
#      built-in runtimes map, so when the node relies on the built-in "runc"
#      runtime, the block restates it.
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
# The per-node audit key the host config names: an unkeyed chain proves
# only that nothing was damaged by accident (docs/audit.md).  Created once,
# never replaced, so earlier logs still verify.
if [ ! -s "$HOST/etc/tollgate/audit.key" ]; then
  (umask 077; head -c 32 /dev/urandom > "$HOST/etc/tollgate/audit.key.tmp.$$") &&
    mv "$HOST/etc/tollgate/audit.key.tmp.$$" "$HOST/etc/tollgate/audit.key" &&
    say "created the audit key /etc/tollgate/audit.key (0600)" ||
    die "could not create /etc/tollgate/audit.key"
fi
chmod 0600 "$HOST/etc/tollgate/audit.key"

# 3. containerd: the runtime handler, appended to config.toml between markers.
begin_mark='# BEGIN tollgate runtime handler (written by the tollgate installer; edits here are replaced)'
end_mark='# END tollgate runtime handler'
main="$HOST/etc/containerd/config.toml"
[ -f "$CONFIG/tollgate.toml" ] || die "$CONFIG/tollgate.toml is missing; check the tollgate-node ConfigMap"
if [ ! -f "$main" ]; then
  # Without a config.toml containerd runs on built-in defaults; start from
  # them so appending a section never drops one of them.
  mkdir -p "$(dirname "$main")"
  ${CONTAINERD_CONFIG_DEFAULT:-nsenter -t 1 -m -- containerd config default} > "$main.tmp.$$" ||
    die "could not run 'containerd config default' on the node to create $main"
  mv "$main.tmp.$$" "$main"
fi
grep -q '^[[:space:]]*version[[:space:]]*=[[:space:]]*2' "$main" ||
  die "$main is not a version 2 config; migrate it ('containerd config migrate') and restart this pod"
# The node's config without our block: the rest must not define the handler.
awk -v b="$begin_mark" -v e="$end_mark" '$0 == b {skip=1} !skip {print} $0 == e {skip=0}' "$main" > "$main.rest.$$"
if grep -q 'containerd\.runtimes\.tollgate\]' "$main.rest.$$"; then
  rm -f "$main.rest.$$"
  die "$main already defines runtimes.tollgate outside the installer's block; remove that section and restart this pod"
fi
# The node's cgroup driver, as its runc runtime says it (kubeadm nodes:
# systemd): the handler must use the same one as the kubelet, or pods fail
# to start.  The block's own value is containerd's default (false) for a
# node that says nothing.
runc_systemd=$(awk '
  /^[[:space:]]*\[/ { inrunc = ($0 ~ /containerd\.runtimes\.runc\.options\][[:space:]]*$/) }
  inrunc && /^[[:space:]]*SystemdCgroup[[:space:]]*=/ { sub(/^[^=]*=[[:space:]]*/, ""); sub(/[[:space:]#].*$/, ""); print; exit }
' "$main.rest.$$")
case ${runc_systemd:-} in
  true|false|'') ;;
  *) rm -f "$main.rest.$$"; die "$main: the runc runtime's SystemdCgroup is '$runc_systemd', not true or false; fix it and restart this pod" ;;
esac
default_runtime=$(sed -n 's/^[[:space:]]*default_runtime_name[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' "$main.rest.$$" | head -n1)
{
  cat "$main.rest.$$"
  echo "$begin_mark"
  if [ "${default_runtime:-runc}" = runc ] && ! grep -q 'containerd\.runtimes\.runc\]' "$main.rest.$$"; then
    echo '# containerd'"'"'s built-in default runtime, restated: any runtimes table replaces the built-in map.'
    echo '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]'
    echo '  runtime_type = "io.containerd.runc.v2"'
  fi
  if [ -n "$runc_systemd" ]; then
    grep -v '^[[:space:]]*version[[:space:]]*=' "$CONFIG/tollgate.toml" |
      sed "s/^\([[:space:]]*SystemdCgroup[[:space:]]*=\).*/\1 $runc_systemd/"
  else
    grep -v '^[[:space:]]*version[[:space:]]*=' "$CONFIG/tollgate.toml"
  fi
  echo "$end_mark"
} > "$main.new.$$"
rm -f "$main.rest.$$"
changed=false
if cmp -s "$main.new.$$" "$main"; then
  rm -f "$main.new.$$"
else
  cp "$main" "$main.tollgate-backup"
  mv "$main.new.$$" "$main"
  changed=true
  say "added the runtime handler 'tollgate' to /etc/containerd/config.toml (backup: config.toml.tollgate-backup)"
fi
if $changed && [ "$RESTART_CONTAINERD" = true ]; then
  say "restarting containerd to load the tollgate runtime handler"
  nsenter -t 1 -m -u -i -n -p -- systemctl restart containerd ||
    die "could not restart containerd (systemctl restart containerd on the node); restart it by hand"
fi
say "done: runtime handler 'tollgate' -> $PREFIX/bin/tollgate"

#!/bin/sh
# tollgate policy sync: the long-running container of the installer
# DaemonSet.  Mirrors the tollgate-policies ConfigMap (mounted at
# $POLICIES) into the node's policy directory, and the node config into
# /etc/tollgate/config.json, every $INTERVAL seconds.  Each file is
# replaced with one rename, so tollgate never reads half a policy; a policy
# removed from the ConfigMap is removed from the node, so new containers
# asking for it fail with tollgate's "no such policy" error instead of
# running under a stale one.  Containers already running keep the policy
# they were created with.
set -eu
HOST=${HOST:-/host}
POLICIES=${POLICIES:-/policies}
CONFIG=${CONFIG:-/config}
INTERVAL=${INTERVAL:-10}
ONCE=${ONCE:-false}   # one pass and exit (tests)
dest="$HOST/etc/tollgate/policies"

sync_once() {
  mkdir -p "$dest"
  for f in "$POLICIES"/*.json; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    if ! cmp -s "$f" "$dest/$name"; then
      cp "$f" "$dest/.$name.tmp" && chmod 0644 "$dest/.$name.tmp" && mv "$dest/.$name.tmp" "$dest/$name"
      echo "tollgate-sync: policy $name updated"
    fi
  done
  for f in "$dest"/*.json; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    if [ ! -f "$POLICIES/$name" ]; then
      rm -f "$f"; echo "tollgate-sync: policy $name removed"
    fi
  done
  if ! cmp -s "$CONFIG/config.json" "$HOST/etc/tollgate/config.json"; then
    cp "$CONFIG/config.json" "$HOST/etc/tollgate/.config.json.tmp" &&
      mv "$HOST/etc/tollgate/.config.json.tmp" "$HOST/etc/tollgate/config.json"
    echo "tollgate-sync: host config updated"
  fi
}

while :; do
  sync_once
  $ONCE && exit 0
  touch /tmp/synced
  sleep "$INTERVAL"
done

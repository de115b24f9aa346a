#!/usr/bin/env bash
# The Kubernetes manifests and the containerd snippet parse and agree with
# each other (tests/test_manifests.py), and the installer scripts are valid
# shell.  No cluster needed; runs in make integration.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$here/tests/test_manifests.py" "$here"
for s in "$here"/bundles/kubernetes/installer/*.sh "$here"/bundles/kubernetes/*.sh "$here"/bundles/containerd/*.sh; do
  [ -f "$s" ] || continue
  if sh -n "$s" 2>/dev/null || bash -n "$s"; then echo "ok - $(basename "$s") is valid shell"; else echo "FAIL - $(basename "$s") has a syntax error"; fi
done

# The installer and the policy sync, run for real against a fake node root
# (HOST) with the ConfigMaps' contents as they would be mounted.  containerd
# is not restarted (RESTART_CONTAINERD=false): the containerd tests cover the
# runtime itself.
work=$(mktemp -d /tmp/tg-k8s.XXXXXX)
trap 'rm -rf "$work"' EXIT
host=$work/node cfg=$work/config pol=$work/policies src=$work/image-tree
mkdir -p "$host/etc/containerd" "$host/opt" "$cfg" "$pol" "$src/bin"
python3 - "$here/bundles/kubernetes" "$cfg" "$pol" <<'PY'
import sys, yaml, glob, os
k8s, cfg, pol = sys.argv[1:]
for path in glob.glob(k8s + "/*.yaml"):
    for d in yaml.safe_load_all(open(path)):
        if d and d.get("kind") == "ConfigMap":
            out = {"tollgate-node": cfg, "tollgate-policies": pol}[d["metadata"]["name"]]
            for k, v in d["data"].items():
                open(os.path.join(out, k), "w").write(v)
PY
printf '#!/bin/sh\necho "tollgate test"\n' > "$src/bin/tollgate"; chmod 0755 "$src/bin/tollgate"
# A node config.toml as distributions ship it: version 2, tables, no imports.
cat > "$host/etc/containerd/config.toml" <<'TOML'
version = 2
root = "/var/lib/containerd"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.6"
TOML
out=$(HOST=$host CONFIG=$cfg SRC=$src RESTART_CONTAINERD=false sh "$here/bundles/kubernetes/installer/install.sh" 2>&1)
rc=$?
check_eq() { if [ "$2" == "$3" ]; then echo "ok - $1"; else echo "FAIL - $1: want [$2] got [$3]"; fi; }
check_eq "installer exits 0" 0 "$rc"
check_eq "installer copied the tree" "tollgate test" "$("$host/opt/tollgate/bin/tollgate")"
check_eq "installer wrote the host config" "$(cat "$cfg/config.json")" "$(cat "$host/etc/tollgate/config.json" 2>&1)"
check_eq "installer wrote the runtime handler" "$(cat "$cfg/tollgate.toml")" "$(cat "$host/etc/containerd/conf.d/tollgate.toml" 2>&1)"
check_eq "audit directory is private" 700 "$(stat -c %a "$host/var/log/tollgate/audit" 2>&1)"
check_eq "import added before the first table" 'imports = ["/etc/containerd/conf.d/*.toml"]' \
  "$(sed -n 3p "$host/etc/containerd/config.toml")"
# containerd itself must read the result: point the import at the fake
# node and let `containerd config dump` resolve it.
sed "s#/etc/containerd/conf.d#$host/etc/containerd/conf.d#; s#/var/lib/containerd#$work/ctrd-root#" \
  "$host/etc/containerd/config.toml" > "$work/dump.toml"
dump=$(containerd --config "$work/dump.toml" config dump 2>&1)
check_match() { if [[ "$3" =~ $2 ]]; then echo "ok - $1"; else echo "FAIL - $1: output does not match /$2/"; fi; }
check_match "containerd loads the handler with BinaryName" 'BinaryName = "/opt/tollgate/bin/tollgate"' "$dump"
check_match "containerd keeps the node's own settings" 'sandbox_image = "registry.k8s.io/pause:3.6"' "$dump"
before=$(cat "$host/etc/containerd/config.toml")
out=$(HOST=$host CONFIG=$cfg SRC=$src RESTART_CONTAINERD=false sh "$here/bundles/kubernetes/installer/install.sh" 2>&1)
check_eq "a second install changes nothing" "$before" "$(cat "$host/etc/containerd/config.toml")"
echo 'imports = ["/etc/other.toml"]' > "$host/etc/containerd/config.toml"
out=$(HOST=$host CONFIG=$cfg SRC=$src RESTART_CONTAINERD=false sh "$here/bundles/kubernetes/installer/install.sh" 2>&1)
check_match "an imports line of the node's own is left to the operator" "add \"/etc/containerd/conf.d/\*.toml\" to it" "$out"

# Policy sync: mirrors the ConfigMap, removes what left it.
echo '{}' > "$host/etc/tollgate/policies/stale.json"
HOST=$host POLICIES=$pol CONFIG=$cfg ONCE=true sh "$here/bundles/kubernetes/installer/sync.sh" >/dev/null
check_eq "sync copied the orders policy" "$(cat "$pol/orders.json")" "$(cat "$host/etc/tollgate/policies/orders.json" 2>&1)"
check_eq "sync removed a policy no longer in the ConfigMap" no "$([ -e "$host/etc/tollgate/policies/stale.json" ] && echo yes || echo no)"

#!/usr/bin/env bash
# The Kubernetes side without a cluster: the manifests and the containerd
# snippet parse and agree with each other (tests/test_manifests.py), the
# installer scripts are valid shell, and the installer image's tree, the
# installer and the policy sync work for real against a fake node root.
set -u
PATH=/usr/bin:$PATH   # Debian's python3, with python3-yaml from `make deps`
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$here/tests/test_manifests.py" "$here"
for s in "$here"/bundles/kubernetes/installer/*.sh "$here"/bundles/kubernetes/*.sh "$here"/bundles/containerd/*.sh; do
  [ -f "$s" ] || continue
  if sh -n "$s" 2>/dev/null || bash -n "$s"; then echo "ok - $(basename "$s") is valid shell"; else echo "FAIL - $(basename "$s") has a syntax error"; fi
done

# The installer image (the tree the DaemonSet copies to each node).
if bash "$here/bundles/kubernetes/build-installer-image.sh" "$BUILD" >"$TG_ROOT/image.log" 2>&1; then
  echo "ok - installer image builds"
else
  echo "FAIL - installer image builds: $(tail -n 5 "$TG_ROOT/image.log")"
fi
check "installer image is an OCI archive" tar -tf "$BUILD/images/installer.tar" index.json

# The installer and the policy sync, run for real against a fake node root
# (HOST) with the ConfigMaps' contents as they would be mounted, and with
# busybox's sh, awk, sed, grep and cmp as in the installer image.  containerd
# is not restarted (RESTART_CONTAINERD=false): the containerd tests cover the
# runtime itself.
work=$TG_ROOT/k8s
host=$work/node cfg=$work/config pol=$work/policies src=$BUILD/installer-rootfs/opt/tollgate
mkdir -p "$host/etc/containerd" "$host/opt" "$cfg" "$pol"
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
# A node config.toml with settings of its own, runc among them: the
# installer must keep every one of them.
cat > "$host/etc/containerd/config.toml" <<'TOML'
version = 2
root = "/var/lib/containerd"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example.com/pause:9"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
TOML
install() {
  HOST=$host CONFIG=$cfg SRC=$src RESTART_CONTAINERD=false CONTAINERD_CONFIG_DEFAULT="containerd config default" \
    PATH="$BUSYBOX_ROOTFS/bin:$PATH" busybox sh "$here/bundles/kubernetes/installer/install.sh" 2>&1
}
# dump: what containerd makes of the node's config.toml (`config dump`
# only reads it; it starts nothing and creates no directory).
dump() { containerd --config "$host/etc/containerd/config.toml" config dump 2>&1; }
# rt NAME [options] FIELD: a field of runtime NAME in a `config dump`.
rt() {
  python3 -c 'import sys, tomllib
c = tomllib.loads(sys.stdin.read())["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
v = c.get(sys.argv[1], {})
for k in sys.argv[2:]: v = v.get(k, {}) if isinstance(v, dict) else {}
print(v)' "$@"
}
out=$(install); rc=$?
check_eq "installer exits 0" 0 "$rc"
check_match "installed tollgate runs" 'tollgate' "$("$host/opt/tollgate/bin/tollgate" --version 2>&1)"
check_match "installed tollgate uses the libraries it brought" "libyajl.so.2 => $host/opt/tollgate/bin/../lib/libyajl" \
  "$(ldd "$host/opt/tollgate/bin/tollgate")"
# A container through the installed copy: its profiles, seccomp lists and
# clients are found in the tree (no data_dir), runsc is the one it brought.
python3 - "$cfg/config.json" "$work/node-config.json" "$host" "$TG_ROOT" <<'PY'
import json, sys
src, dst, host, root = sys.argv[1:]
c = json.load(open(src))
c["runtime_path"] = host + c["runtime_path"]
c["policy_dir"], c["audit_dir"] = root + "/policies", root + "/audit"
c["audit_key"] = host + c["audit_key"]  # the key the installer created on the node
json.dump(c, open(dst, "w"))
PY
check_eq "installer created the node's audit key, 32 bytes, 0600" "32 600" \
  "$(stat -c '%s %a' "$host/etc/tollgate/audit.key" 2>&1)"
key_before=$(sha256sum < "$host/etc/tollgate/audit.key")
make_bundle "$work/bundle" sh -c 'echo installed ok; id -u; test -x /run/tollgate/tollgate-call && echo client ok'
out=$("$host/opt/tollgate/bin/tollgate" --root "$TG_ROOT" --config "$work/node-config.json" \
  run --bundle "$work/bundle" k8s-installed 2>&1)
check_eq "a container runs through the installed tree under its runsc" "installed ok
65534
client ok" "$out"
check_eq "installer wrote the host config" "$(cat "$cfg/config.json")" "$(cat "$host/etc/tollgate/config.json" 2>&1)"
check_match "the container's audit chain is HMAC-keyed by default" '"alg":"hmac-sha256"' \
  "$(head -1 "$TG_ROOT/audit/k8s-installed.jsonl" 2>&1)"
check_eq "audit directory is private" 700 "$(stat -c %a "$host/var/log/tollgate/audit" 2>&1)"
check_eq "one handler block in config.toml" 1 "$(grep -c '^# BEGIN tollgate runtime handler' "$host/etc/containerd/config.toml")"
d=$(dump)
check_eq "containerd loads the handler with BinaryName" /opt/tollgate/bin/tollgate "$(echo "$d" | rt tollgate options BinaryName)"
check_eq "containerd loads the handler's own Root" /run/tollgate/cri "$(echo "$d" | rt tollgate options Root)"
check_eq "containerd passes dev.tollgate.* pod annotations" "['dev.tollgate.*']" "$(echo "$d" | rt tollgate pod_annotations)"
check_match "containerd keeps the node's sandbox image" 'sandbox_image = "registry.example.com/pause:9"' "$d"
check_eq "containerd keeps the node's runc settings" True "$(echo "$d" | rt runc options SystemdCgroup)"
check_eq "the handler follows the node's runc cgroup driver (systemd)" True "$(echo "$d" | rt tollgate options SystemdCgroup)"
check "the image brings tollgate-http where tollgate looks for it" test -x "$host/opt/tollgate/lib/tollgate/tollgate-http"
check_match "... with its libraries from the tree" "libcurl.so.4 => $host/opt/tollgate/lib/tollgate/../libcurl" \
  "$(ldd "$host/opt/tollgate/lib/tollgate/tollgate-http" 2>&1)"
check_eq "... none missing" "" "$(ldd "$host/opt/tollgate/lib/tollgate/tollgate-http" 2>&1 | grep 'not found')"
check_match "... and it runs (a malformed request is its own error)" 'tollgate-http: the request on stdin is not JSON' \
  "$(echo nonsense | "$host/opt/tollgate/lib/tollgate/tollgate-http" 2>&1)"
before=$(cat "$host/etc/containerd/config.toml")
out=$(install)
check_eq "a second install changes nothing" "$before" "$(cat "$host/etc/containerd/config.toml")"
check_eq "a second install reports no change" "" "$(echo "$out" | grep 'added the runtime handler')"
check_eq "a second install keeps the audit key (old logs still verify)" "$key_before" "$(sha256sum < "$host/etc/tollgate/audit.key")"

# A node without config.toml: containerd's defaults, plus the handler.
rm -f "$host/etc/containerd/config.toml"
out=$(install)
d=$(dump)
check_eq "from defaults: the handler" /opt/tollgate/bin/tollgate "$(echo "$d" | rt tollgate options BinaryName)"
check_eq "from defaults: runc still there" io.containerd.runc.v2 "$(echo "$d" | rt runc runtime_type)"
check_eq "from defaults: the handler's cgroup driver is runc's (cgroupfs)" False "$(echo "$d" | rt tollgate options SystemdCgroup)"
# A config.toml that relies on the built-in runtimes: runc is restated.
printf 'version = 2\nroot = "/var/lib/containerd"\n' > "$host/etc/containerd/config.toml"
out=$(install)
d=$(dump)
check_eq "built-in runc restated next to the handler" io.containerd.runc.v2 "$(echo "$d" | rt runc runtime_type)"
check_eq "and the handler loads" /opt/tollgate/bin/tollgate "$(echo "$d" | rt tollgate options BinaryName)"
check_eq "and its cgroup driver is containerd's default (cgroupfs)" False "$(echo "$d" | rt tollgate options SystemdCgroup)"
# A handler defined by hand outside the block is left to the operator.
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.tollgate]\n' > "$host/etc/containerd/config.toml"
out=$(install)
check_match "a hand-made tollgate section is reported, not duplicated" "outside the installer's block; remove that section" "$out"

# Policy sync: mirrors the ConfigMap, removes what left it.
echo '{}' > "$host/etc/tollgate/policies/stale.json"
HOST=$host POLICIES=$pol CONFIG=$cfg ONCE=true PATH="$BUSYBOX_ROOTFS/bin:$PATH" \
  busybox sh "$here/bundles/kubernetes/installer/sync.sh" >/dev/null
check_eq "sync copied the orders policy" "$(cat "$pol/orders.json")" "$(cat "$host/etc/tollgate/policies/orders.json" 2>&1)"
check_eq "sync removed a policy no longer in the ConfigMap" no "$([ -e "$host/etc/tollgate/policies/stale.json" ] && echo yes || echo no)"

#!/usr/bin/env bash
# make demo (for now): build a busybox bundle, run it under gVisor through
# `tollgate run`, and show what ran and how it was confined.
# Environment: BUILD (the build directory), RUNTIME (runsc by default).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$top/build}
RUNTIME=${RUNTIME:-runsc}
TG=$BUILD/tollgate

work=$(mktemp -d /tmp/tollgate-demo.XXXXXX)
root=$work/root
cleanup() {
  "$TG" --root "$root" --config "$work/config.json" delete --force demo >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The demo's own host config: everything stays inside $work.
cat >"$work/config.json" <<JSON
{"runtime": "$RUNTIME", "audit_dir": "$work/audit", "policy_dir": "$work/policies"}
JSON
mkdir -p "$work/audit" "$work/policies"

echo "== building the busybox rootfs"
bash "$top/bundles/rootfs/busybox.sh" "$BUILD/rootfs/busybox"

echo "== writing a bundle the way people start: 'runc spec' (root, default caps)"
bundle=$work/bundle
mkdir -p "$bundle"
(cd "$bundle" && runc spec)
python3 - "$bundle/config.json" "$BUILD/rootfs/busybox" <<'PY'
import json, sys
path, rootfs = sys.argv[1:]
c = json.load(open(path))
c["root"] = {"path": rootfs, "readonly": False}
c["process"]["terminal"] = False
c["process"]["args"] = ["sh", "-c", """
echo "hello from inside the box"
echo "kernel seen inside: $(uname -r)  (gVisor's, not the host's)"
echo "user:               $(id)"
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | sed 's/^/status:             /'
echo "network interfaces: $(ls /sys/class/net 2>/dev/null | tr '\\n' ' ')"
if touch /written-to-root 2>/dev/null; then echo "root filesystem:    WRITABLE"; else echo "root filesystem:    read-only"; fi
if echo scratch >/tmp/scratch 2>/dev/null; then echo "/tmp:               writable scratch (tmpfs)"; fi
exit 3
"""]
json.dump(c, open(path, "w"), indent=2)
PY

echo "== tollgate --runtime $RUNTIME run --bundle $bundle demo"
set +e
"$TG" --root "$root" --config "$work/config.json" run --keep --bundle "$bundle" demo
status=$?
set -e
echo "== the container exited with status $status (tollgate run passes it on)"

echo "== how it was confined (the effective config tollgate wrote into the bundle;"
echo "   the user's original is kept as config.json.orig):"
python3 - "$bundle/config.json" "$bundle/config.json.orig" <<'PY'
import json, sys
eff = json.load(open(sys.argv[1])); orig = json.load(open(sys.argv[2]))
def caps(c): return len(c.get("process", {}).get("capabilities", {}).get("bounding", []))
p = eff["process"]
print(f"  capabilities (bounding): {caps(orig)} in the original -> {caps(eff)}")
print(f"  user:                    uid {orig['process']['user']['uid']} -> uid {p['user']['uid']}")
print(f"  noNewPrivileges:         {orig['process'].get('noNewPrivileges', False)} -> {p.get('noNewPrivileges', False)}")
print(f"  root read-only:          {orig['root'].get('readonly', False)} -> {eff['root'].get('readonly', False)}")
sc = eff.get("linux", {}).get("seccomp")
if sc:
    allowed = sum(len(s.get("names", [])) for s in sc.get("syscalls", []) if s.get("action") == "SCMP_ACT_ALLOW")
    print(f"  seccomp:                 default {sc.get('defaultAction')}, {allowed} syscalls allowed")
res = eff.get("linux", {}).get("resources", {})
if res:
    print(f"  limits:                  memory {res.get('memory', {}).get('limit')}, pids {res.get('pids', {}).get('limit')}")
mounts = [m["destination"] for m in eff.get("mounts", []) if m["destination"].startswith("/run/tollgate")]
print(f"  tool bridge mounts:      {', '.join(mounts) or 'none'}")
PY
echo "== tollgate state demo (the backend and profile it recorded):"
"$TG" --root "$root" --config "$work/config.json" state demo |
  python3 -c '
import json, sys
s = json.load(sys.stdin); t = s.get("tollgate", {})
print("  status %s, backend %s (root %s), profile %s" % (s["status"], t.get("backend"), t.get("backend_root"), t.get("profile")))'
if [ "$RUNTIME" = runsc ]; then
  echo "  runsc was called with --network=none --oci-seccomp --platform=ptrace"
fi
"$TG" --root "$root" --config "$work/config.json" delete demo
echo "== deleted; nothing is left behind"
[ "$status" -eq 3 ]

# Sourced by every integration test script.  Provides:
#   TG            the tollgate binary under test
#   TG_ROOT       a private --root for this script (removed at exit)
#   tg ARGS...    tollgate with --root "$TG_ROOT"
#   check NAME CMD...          ok when CMD exits 0
#   check_eq NAME WANT GOT     ok when the strings are equal
#   check_match NAME REGEX GOT ok when GOT matches the extended regex
#   check_fails NAME CMD...    ok when CMD exits non-zero
#   on_exit CMD                run CMD at exit (cleanups run last-in first-out)
#   BACKENDS      "runsc runc" unless overridden
#   runsc_platform             the --platform runsc gets (systrap|ptrace)
#   TG_RUNSC      (from run.sh --runsc PATH) the runsc binary host configs name
set -u
TG=${TG:-$BUILD/tollgate}
TG_ROOT=$(mktemp -d /tmp/tollgate-root.XXXXXX)
# runc containers run as unprivileged host ids of their own range
# (docs/hardening.md "Identities"): bundles under the root must be
# reachable by them.  Search only, no listing.
chmod 711 "$TG_ROOT"
BACKENDS=${BACKENDS:-"runsc runc"}
_cleanups=()
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
  local i
  for ((i=${#_cleanups[@]}-1; i>=0; i--)); do eval "${_cleanups[$i]}" >/dev/null 2>&1 || true; done
  # Anything the script left in its root is a leak: force-delete it so the
  # machine stays clean, and report it as a failure.
  if [ -x "$TG" ]; then
    for id in $("$TG" --root "$TG_ROOT" list -q 2>/dev/null); do
      echo "FAIL - leaked container $id"
      "$TG" --root "$TG_ROOT" delete --force "$id" >/dev/null 2>&1 || true
    done
  fi
  if grep -q " $TG_ROOT" /proc/self/mounts; then
    echo "FAIL - leaked mounts under $TG_ROOT"
    grep " $TG_ROOT" /proc/self/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l
  fi
  rm -rf "$TG_ROOT"
}
trap _run_cleanups EXIT

check() { local n=$1; shift; if "$@"; then echo "ok - $n"; else echo "FAIL - $n (command: $*)"; fi; }
check_fails() { local n=$1; shift; if "$@"; then echo "FAIL - $n (expected failure: $*)"; else echo "ok - $n"; fi; }
check_eq() { if [ "$2" == "$3" ]; then echo "ok - $1"; else echo "FAIL - $1: want [$2] got [$3]"; fi; }
check_match() { if [[ "$3" =~ $2 ]]; then echo "ok - $1"; else echo "FAIL - $1: [$3] does not match /$2/"; fi; }

# A host config of the script's own, so no test touches /etc/tollgate or
# /var/log/tollgate.  Scripts may rewrite it (write_config KEY=JSON...).
TG_CONFIG=$TG_ROOT/config.json
mkdir -p "$TG_ROOT/audit" "$TG_ROOT/policies"
write_config() {
  python3 - "$TG_CONFIG" "$TG_ROOT" "$@" <<'PY'
import json, os, sys
path, root, *pairs = sys.argv[1:]
# The checkpoint seal's key stays in the script's root, never the host's.
cfg = {"audit_dir": root + "/audit", "policy_dir": root + "/policies",
       "checkpoint_key": root + "/checkpoint.key"}
for p in pairs:
    k, v = p.split("=", 1)
    cfg[k] = json.loads(v)
# run.sh --runsc PATH: every runsc container uses that binary, unless the
# script names a runtime_path of its own (the missing-runsc tests do).
alt = os.environ.get("TG_RUNSC")
if alt and cfg.get("runtime", "runsc") == "runsc" and "runtime_path" not in cfg:
    cfg["runtime_path"] = alt
json.dump(cfg, open(path, "w"), indent=2)
PY
}
write_config
tg() { "$TG" --root "$TG_ROOT" --config "$TG_CONFIG" "$@"; }
# The --platform tollgate gives runsc under the current host config
# (systrap or ptrace: it depends on the runsc release), for the few
# expectations where gVisor's platforms differ.
runsc_platform() { tg --runtime runsc version | sed -n 's/^backend flags:.*--platform=\([a-z]*\).*/\1/p'; }

# The busybox rootfs, built once per build directory and shared read-only.
BUSYBOX_ROOTFS=$BUILD/rootfs/busybox
bash "$(dirname "${BASH_SOURCE[0]}")/../../bundles/rootfs/busybox.sh" "$BUSYBOX_ROOTFS" 2>/dev/null

# bridge_fixtures: what the bridge scripts share: the policy directory
# $POL (the bridge policy and its exec tool; the tool runs under its own
# uid, so the test root and $POL must be reachable by others) and the
# Python rootfs $PY_ROOTFS, built once per build directory.
bridge_fixtures() {
  local dir
  dir=$(dirname "${BASH_SOURCE[0]}")
  chmod 755 "$TG_ROOT"
  POL=$TG_ROOT/pol
  mkdir -p "$POL"
  cp "$dir/bridge/policy.json" "$dir/bridge/upper.py" "$POL/"
  chmod -R a+rX "$POL"
  PY_ROOTFS=$BUILD/rootfs/python
  bash "$dir/../../bundles/rootfs/python.sh" "$PY_ROOTFS" 2>/dev/null || echo "FAIL - python rootfs build"
}

# make_bundle DIR [ARG...]: a bundle whose rootfs is the shared busybox
# tree and whose process runs ARGs (default: sh -c 'echo hello').  Starts
# from `runc spec` (the same shape containerd and people start from), not
# from tollgate's own hardened spec, so hardening is always exercised.
make_bundle() {
  local dir=$1; shift
  mkdir -p "$dir"
  rm -f "$dir/config.json" "$dir"/config.json.*
  (cd "$dir" && runc spec)
  python3 - "$dir/config.json" "$BUSYBOX_ROOTFS" "$@" <<'PY'
import json, sys
path, rootfs, *args = sys.argv[1:]
c = json.load(open(path))
c["root"] = {"path": rootfs, "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = args or ["sh", "-c", "echo hello"]
json.dump(c, open(path, "w"), indent=2)
PY
}

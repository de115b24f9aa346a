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
# and the helpers below (each documented where it is defined):
#   waiting       wait_for, pid_gone
#   JSON          json_get, edit_json, state_of, status_is, sidecar_of,
#                 wait_pending
#   host ids      host_uid, claims
#   bundles       make_bundle, probe_bundle, own_rootfs, py_bundle, fresh,
#                 add_ro_bind, join_netns
#   bridge        bridge_fixtures, slow_tool_fixtures (and its probes)
#   refusals      check_refused
#   python        project_python, doc_block
set -u
_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TG=${TG:-$BUILD/tollgate}
TG_ROOT=$(mktemp -d /tmp/tollgate-root.XXXXXX)
# runc containers run as unprivileged host ids of their own range
# (docs/hardening.md "Identities"): bundles under the root must be
# reachable by them.  Search only, no listing.
chmod 711 "$TG_ROOT"
BACKENDS=${BACKENDS:-"runsc runc"}
# python3, resolved once per script.  The scripts run it thousands of
# times (json_get in every status poll, edit_json, the checks' own
# parsing); through a version manager's shim, which the polyglot
# machine's PATH puts first (pyenv: its bash scripts, readlinks and
# subshells before the interpreter), one `json.load` of stdin took 243 ms
# of CPU against 82 ms for the interpreter it picks, and those calls were
# about a third of a whole `make check`'s CPU (process accounting,
# dump-acct).  A directory first in PATH holds a python3 that execs
# sys.executable, the interpreter the shim would run (a venv's own python
# inside a venv), so nothing but the shim's cost changes, for the script
# and whatever it starts.  A script, not a function: `python3 ... &`
# must leave the interpreter's own pid in $! for the scripts that kill it
# (and not a symbolic link: a venv's python is found by its path).  The
# helpers below use only the standard library and also skip site (-I -S):
# the machine's site-packages has a .pth that imports certifi at every
# start (48 ms a call then, 229 ms through the shim).
_tg_python3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
_tg_pybin=""
case $_tg_python3 in
  /*\'*|"") ;;
  /*) if [ -x "$_tg_python3" ] && _tg_pybin=$(mktemp -d /tmp/tollgate-py.XXXXXX); then
        printf '#!/bin/sh\nexec '"'%s'"' "$@"\n' "$_tg_python3" >"$_tg_pybin/python3"
        chmod 755 "$_tg_pybin" "$_tg_pybin/python3"
        PATH=$_tg_pybin:$PATH
      fi ;;
esac
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
  if grep -q " $TG_ROOT/" /proc/self/mounts; then
    echo "FAIL - leaked mounts under $TG_ROOT"
  fi
  remove_tree "$TG_ROOT"
  if [ -n "$_tg_pybin" ]; then rm -rf "$_tg_pybin"; fi
}
# remove_tree DIR: rm -rf that never deletes through a mount.  A container's
# state directory holds bind mounts of host trees (pins/rootfs is the image
# itself): rm -rf of it while they stand deletes the image's files.  Every
# mount under DIR is detached first, deepest first; a mount that will not
# go leaves DIR in place (and says so) rather than risk its source.
remove_tree() {
  local dir=$1 m
  [ -e "$dir" ] || return 0
  dir=$(realpath -s "$dir")
  for m in $(awk -v d="$dir/" 'index($2, d) == 1 || $2 == substr(d, 1, length(d) - 1) {print $2}' /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null
  done
  if awk -v d="$dir/" 'index($2, d) == 1 {found = 1} END {exit !found}' /proc/self/mounts; then
    echo "remove_tree: $dir still has mounts; left in place" >&2
    return 1
  fi
  rm -rf --one-file-system "$dir"
}
trap _run_cleanups EXIT
# The runner's timeout sends TERM (then KILL 10 s later) to the script's
# process group: exit on it so that the cleanups run.  Without this bash
# died at once and left every container the script had made, with its
# sidecar, under a root nobody would delete.
trap 'exit 143' TERM INT

check() { local n=$1; shift; if "$@"; then echo "ok - $n"; else echo "FAIL - $n (command: $*)"; fi; }
check_fails() { local n=$1; shift; if "$@"; then echo "FAIL - $n (expected failure: $*)"; else echo "ok - $n"; fi; }
check_eq() { if [ "$2" == "$3" ]; then echo "ok - $1"; else echo "FAIL - $1: want [$2] got [$3]"; fi; }
check_match() { if [[ "$3" =~ $2 ]]; then echo "ok - $1"; else echo "FAIL - $1: [$3] does not match /$2/"; fi; }

# check_refused NAME REGEX CMD...: CMD (stdin /dev/null, stdout to
# $TG_ROOT/refused.out for the caller to look at) must fail, with a
# message on stderr matching REGEX.  Two checks: "NAME (exit status)" and
# "NAME (message)".
check_refused() {
  local name=$1 want=$2 msg rc; shift 2
  msg=$("$@" 2>&1 >"$TG_ROOT/refused.out" </dev/null)
  rc=$?
  check "$name (exit status)" test "$rc" -ne 0
  check_match "$name (message)" "$want" "$msg"
}

# wait_for [-i INTERVAL] SECONDS CMD...: run CMD every INTERVAL seconds
# (default 0.1) until it succeeds; fails when SECONDS (whole seconds, on
# the microsecond clock: never less) have passed first.  A wait that runs
# out says so on stderr (into the script's log): a check that expects it
# to is fine, and any other is time the suite spends for nothing.
wait_for() {
  local interval=0.1 end secs
  if [ "$1" = -i ]; then interval=$2; shift 2; fi
  secs=$1; end=$(( ${EPOCHREALTIME/[.,]/} + secs * 1000000 )); shift
  until "$@"; do
    if [ "${EPOCHREALTIME/[.,]/}" -ge "$end" ]; then
      echo "wait_for: ran out after ${secs} s: $*" | cut -c1-300 >&2
      return 1
    fi
    sleep "$interval"
  done
}
# pid_gone PID: no process PID is there to signal.
pid_gone() { ! kill -0 "$1" 2>/dev/null; }
# host_uid PID: the real host uid process PID runs as (nothing if it is gone).
host_uid() { awk '/^Uid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# claims [DIR]: how many id ranges the id pool directory DIR (default
# $IDS, the script's own id_range_dir) holds claimed.
claims() { ls "${1:-$IDS}" 2>/dev/null | grep -cE '^[0-9]+$'; }

# json_get PATH...: the value at PATH in the JSON document on stdin; PATH
# is keys and list indexes joined by dots ("tollgate.sidecar.pid",
# "ranges.0.host_first"), several PATHs are walked one after the other.
# A string prints as it is, anything else as JSON.  When the document or
# the path is not there: nothing on stdout, the reason on stderr, status 1.
json_get() {
  python3 -I -S -c '
import json, sys
try:
    v = json.load(sys.stdin)
    for k in ".".join(sys.argv[1:]).split("."):
        v = v[k] if isinstance(v, dict) else v[int(k)]
except (ValueError, LookupError, TypeError) as e:
    sys.exit("json_get %s: %s: %s" % (" ".join(sys.argv[1:]), type(e).__name__, e))
print(v if isinstance(v, str) else json.dumps(v))' "$@"
}
# edit_json FILE PYTHON [ARG...]: run the Python statements PYTHON on the
# JSON document of FILE, bound to c (json and sys imported, the ARGs in
# args), and write c back to FILE.
edit_json() {
  python3 -I -S - "$@" <<'PY'
import json, sys
path, code, *args = sys.argv[1:]
c = json.load(open(path))
exec(code)
json.dump(c, open(path, "w"), indent=2)
PY
}

# A host config of the script's own, so no test touches /etc/tollgate or
# /var/log/tollgate.  Scripts may rewrite it (write_config KEY=JSON...).
TG_CONFIG=$TG_ROOT/config.json
mkdir -p "$TG_ROOT/audit" "$TG_ROOT/policies"
write_config() {
  python3 -I -S - "$TG_CONFIG" "$TG_ROOT" "$@" <<'PY'
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
# state_of ID PATH...: json_get PATH of `tollgate state ID` (nothing when
# either fails).
state_of() { local id=$1; shift; tg state "$id" 2>/dev/null | json_get "$@" 2>/dev/null; }
# status_is ID STATUS: `tollgate state ID` says STATUS.
status_is() { [ "$(state_of "$1" status)" = "$2" ]; }
# wait_pending ID: the first pending call id of container ID, once it has
# one (polls `tollgate pending` for 600 x 0.05 s; nothing if none came).
wait_pending() {
  local id=$1 call=""
  for _ in $(seq 1 600); do
    call=$(tg pending "$id" --format json 2>/dev/null |
           python3 -I -S -c 'import json,sys; p=json.load(sys.stdin); print(p[0]["call"] if p else "")' 2>/dev/null)
    [ -n "$call" ] && break
    sleep 0.05
  done
  echo "$call"
}
# sidecar_of ID [ROOT]: the sidecar pid state.json of container ID under
# ROOT (default $TG_ROOT) records.
sidecar_of() { json_get sidecar_pid <"${2:-$TG_ROOT}/$1/state.json"; }
# The --platform tollgate gives runsc under the current host config
# (systrap or ptrace: it depends on the runsc release), for the few
# expectations where gVisor's platforms differ.
runsc_platform() { tg --runtime runsc version | sed -n 's/^backend flags:.*--platform=\([a-z]*\).*/\1/p'; }

# The busybox rootfs, built once per build directory and shared read-only.
BUSYBOX_ROOTFS=$BUILD/rootfs/busybox
bash "$(dirname "${BASH_SOURCE[0]}")/../../bundles/rootfs/busybox.sh" "$BUSYBOX_ROOTFS" 2>/dev/null

# policy_dir FILE...: $POL, the policy directory, holding bridge/FILEs.
# Exec tools run under their own uid, so the test root and $POL must be
# reachable by others.
policy_dir() {
  local dir f
  dir=$(dirname "${BASH_SOURCE[0]}")
  chmod 755 "$TG_ROOT"
  POL=$TG_ROOT/pol
  mkdir -p "$POL"
  for f in "$@"; do cp "$dir/bridge/$f" "$POL/"; done
  chmod -R a+rX "$POL"
}

# bridge_fixtures: what the bridge scripts share: $POL with the bridge
# policy and its exec tool, and the Python rootfs $PY_ROOTFS, built once
# per build directory.
bridge_fixtures() {
  local dir
  dir=$(dirname "${BASH_SOURCE[0]}")
  policy_dir policy.json upper.py
  PY_ROOTFS=$BUILD/rootfs/python
  bash "$dir/../../bundles/rootfs/python.sh" "$PY_ROOTFS" 2>/dev/null || echo "FAIL - python rootfs build"
}

# slow_tool_fixtures: the sidecar fault scripts' policy in $POL/policy.json
# (made if need be; after bridge_fixtures it replaces the bridge policy):
# one exec tool, slow (bridge/slow.py: answers after {"s": N} seconds),
# 40 s timeout, 100 calls.  Their probes of it come with it:
#   tools_running N   at least N slow tools run on the host
#   tool_running, tool_gone
#   events LOG EVENT  how many records of EVENT the audit log LOG holds
#   no_mounts ID      nothing of container ID is mounted
slow_tool_fixtures() {
  policy_dir slow.py
  cat > "$POL/policy.json" <<'P'
{"version": 1,
 "tools": {"slow": {"backend": {"type": "exec", "argv": ["slow.py"]}, "timeout": 40,
                    "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100}}
P
  chmod -R a+rX "$POL"
}
tools_running() { [ "$(pgrep -fc "$POL/slow.py")" -ge "$1" ]; }
tool_running() { pgrep -f "$POL/slow.py" >/dev/null; }
tool_gone() { ! tool_running; }
events() { python3 -I -S - "$1" "$2" <<'PY'
import json, sys
print(sum(1 for r in map(json.loads, open(sys.argv[1])) if r.get("event") == sys.argv[2]))
PY
}
no_mounts() { ! grep -q " $TG_ROOT/$1" /proc/self/mounts; }

# make_bundle DIR [ARG...]: a bundle whose rootfs is the shared busybox
# tree and whose process runs ARGs (default: sh -c 'echo hello').  Starts
# from `runc spec` (the same shape containerd and people start from), not
# from tollgate's own hardened spec, so hardening is always exercised.
make_bundle() {
  local dir=$1; shift
  mkdir -p "$dir"
  rm -f "$dir/config.json" "$dir"/config.json.*
  (cd "$dir" && runc spec)
  python3 -I -S - "$dir/config.json" "$BUSYBOX_ROOTFS" "$@" <<'PY'
import json, sys
path, rootfs, *args = sys.argv[1:]
c = json.load(open(path))
c["root"] = {"path": rootfs, "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = args or ["sh", "-c", "echo hello"]
json.dump(c, open(path, "w"), indent=2)
PY
}

# add_ro_bind CONFIG DEST SOURCE: a read-only bind mount of host SOURCE
# (absolute) at DEST in the bundle config CONFIG.
add_ro_bind() {
  edit_json "$1" 'c["mounts"].append({"destination": args[0], "type": "bind", "source": args[1], "options": ["rbind", "ro"]})' "$2" "$3"
}
# join_netns CONFIG PATH: the bundle config CONFIG's network namespace is
# the one at PATH (a join by path), in place of a new one.
join_netns() {
  edit_json "$1" 'c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"] + [{"type": "network", "path": args[0]}]' "$2"
}
# own_rootfs DIR: the bundle DIR gets a copy of the busybox tree of its own
# at DIR/rootfs, named by root.path "rootfs" (relative, as people write it).
own_rootfs() {
  rm -rf "$1/rootfs"
  cp -a "$BUSYBOX_ROOTFS" "$1/rootfs"
  edit_json "$1/config.json" 'c["root"]["path"] = "rootfs"'
}
# probe_bundle DIR [ARG...]: a bundle with a rootfs of its own holding the
# hardening probe at /bin/tollgate-probe (ARGs as make_bundle's).
probe_bundle() {
  local dir=$1; shift
  make_bundle "$dir" "$@"
  own_rootfs "$dir"
  cp "$BUILD/tollgate-probe" "$dir/rootfs/bin/tollgate-probe"
}
# py_bundle DIR ARGS...: a bundle on the Python rootfs (bridge_fixtures
# first) with the test programs of tests/integration/bridge at /t.
py_bundle() {
  local dir=$1; shift
  make_bundle "$dir" "$@"
  edit_json "$dir/config.json" 'c["root"]["path"] = args[0]' "$PY_ROOTFS"
  add_ro_bind "$dir/config.json" /t "$_lib_dir/bridge"
}
# fresh TEMPLATE BUNDLE: BUNDLE's config.json is TEMPLATE again, with what
# tollgate kept beside it (config.json.orig, the mark) removed.
fresh() { cp "$1" "$2/config.json"; rm -f "$2"/config.json.*; }

# project_python: PY, the project's virtual environment's python ($VENV,
# else .venv at the top: make deps, sdk/venv.sh), and venv; when it is
# missing, a FAIL line and the script ends.
project_python() {
  venv=${VENV:-$(cd "$_lib_dir/../.." && pwd)/.venv}
  PY=$venv/bin/python
  if [ ! -x "$PY" ]; then
    echo "FAIL - $PY is missing: run 'make deps' (sdk/venv.sh makes $venv)"
    exit 1
  fi
}
# doc_block MARKDOWN NAME: the python block that follows MARKDOWN's
# `<!-- NAME` marker (a docs example as written), on stdout.
doc_block() {
  awk -v name="$2" '$0 ~ "<!-- " name {m = 1; next} m && /^```python/ {p = 1; next} p && /^```/ {exit} p {print}' "$1"
}

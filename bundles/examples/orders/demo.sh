#!/usr/bin/env bash
# The orders-reconciliation demo: a "model-written" Python program runs in a
# hardened gVisor container with no network and reaches the host only
# through governed tools.  It sums the EU orders, makes a small refund the
# policy allows, and asks for a large one that needs a person's approval.
#
# Usage: demo.sh [--interactive]
#   (default)      an approval hook denies the large refund; the run is
#                  unattended and exits 0 only if everything happened as
#                  promised (see report.py).
#   --interactive  no hook: the large refund waits (up to 5 minutes) for
#                  you to run the printed `tollgate approve` command from
#                  another terminal.
# Environment: BUILD (default ./build), RUNTIME (runsc, the default, or
# runc), DEMO_ROOT (tollgate --root; default a fresh directory), DEMO_KEEP
# (a directory to copy the run's files into, for tests and the curious).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$repo/build}
RUNTIME=${RUNTIME:-runsc}
TG=${TG:-$BUILD/tollgate}
id=orders-demo
interactive=false
case "${1:-}" in
  --interactive) interactive=true ;;
  "") ;;
  *) echo "usage: demo.sh [--interactive]" >&2; exit 2 ;;
esac
die() { echo "demo: $*" >&2; exit 1; }

[ -x "$TG" ] || die "$TG is missing: run 'make' first (or 'make demo', which builds it)"
case "$RUNTIME" in runsc|runc) ;; *) die "RUNTIME must be runsc or runc, not '$RUNTIME'" ;; esac
command -v "$RUNTIME" >/dev/null || die "$RUNTIME is not installed: run 'make deps'"
[ "$(id -u)" = 0 ] || die "the demo starts containers and mounts the bridge tmpfs: run it as root"

# The Python rootfs is cached under the build directory and rebuilt only
# when its inputs change.
rootfs=$BUILD/rootfs/python
bash "$repo/bundles/rootfs/python.sh" "$rootfs"

# A work directory the tools' user (tool_uid, 65533) can reach: /tmp, not the
# checkout, which may sit under a private home.
work=$(mktemp -d /tmp/tollgate-demo.XXXXXX)
chmod 755 "$work"
root=${DEMO_ROOT:-$work/root}
config=$work/config.json
tg() { "$TG" --root "$root" --config "$config" "$@"; }
# The audit log and a copy of the refund ledger outlive the run, under the
# build directory, for anyone who wants to look (or tamper, and verify).
keep=$BUILD/demo
audit_dir=$keep/audit
run_pid=""
cleanup() {
  local status=$?
  if [ -n "$run_pid" ]; then
    kill -TERM "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
  tg delete --force "$id" >/dev/null 2>&1 || true
  if [ -n "${DEMO_KEEP:-}" ]; then
    mkdir -p "$DEMO_KEEP/audit"
    cp "$audit_dir/$id.jsonl" "$DEMO_KEEP/audit/" 2>/dev/null || true
    cp -r "$work/ledger" "$work/stdout" "$work/stderr" "$work/policy.json" \
      "$work/report" "$DEMO_KEEP/" 2>/dev/null || true
  fi
  # Only our own files: the root (when ours) is empty once the container
  # is deleted, and nothing under it is still mounted.
  if ! grep -q " $work/" /proc/self/mounts; then rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$audit_dir" "$work/policies"
rm -f "$audit_dir/$id.jsonl" "$keep/refunds.jsonl"
python3 - "$config" "$RUNTIME" "$audit_dir" "$work" <<'PY'
import json, sys
path, runtime, audit_dir, work = sys.argv[1:]
json.dump({"runtime": runtime, "audit_dir": audit_dir,
           "policy_dir": work + "/policies"}, open(path, "w"), indent=2)
PY

if $interactive; then
  python3 "$here/stage.py" "$work" --approval-timeout 300 >/dev/null
else
  python3 "$here/stage.py" "$work" --hook "$here/hooks/deny.py" >/dev/null
fi
tg policy check "$work/policy.json" >/dev/null || die "policy.json does not pass 'tollgate policy check'"

# The bundle starts from `tollgate spec` (the hardened profile's config.json,
# on the Python rootfs); we add the client's import path and mount the
# program read-only at /app.
mkdir -p "$work/bundle" "$work/program"
chmod 755 "$work/bundle" "$work/program"
install -m 0644 "$here/program.py" "$work/program/program.py"
tg spec --bundle "$work/bundle" --rootfs "$rootfs" --args "python3 /app/program.py" >/dev/null
python3 - "$work/bundle/config.json" "$work/program" <<'PY'
import json, sys
path, program = sys.argv[1:]
c = json.load(open(path))
p = c.setdefault("process", {})
p["terminal"] = False
p["cwd"] = "/"
p["env"] = [e for e in p.get("env", []) if not e.startswith("PYTHONPATH=")] + \
           ["PYTHONPATH=/run/tollgate", "PYTHONDONTWRITEBYTECODE=1"]
c.setdefault("mounts", []).append({"destination": "/app", "type": "bind", "source": program,
                                   "options": ["rbind", "ro", "nosuid", "nodev"]})
json.dump(c, open(path, "w"), indent=2)
PY

echo "tollgate demo: orders reconciliation under $RUNTIME"
echo
start=$(date +%s)
status=0
if $interactive; then
  # Not through tg(): $! must be tollgate itself, so that stopping the demo
  # stops tollgate run, which tears its container down.
  "$TG" --root "$root" --config "$config" run --bundle "$work/bundle" \
    --policy "$work/policy.json" "$id" >"$work/stdout" 2>"$work/stderr" &
  run_pid=$!
  # Wait for the large refund to be parked, then tell the user exactly
  # what to type.
  call=""
  while kill -0 "$run_pid" 2>/dev/null; do
    call=$(tg pending "$id" 2>/dev/null | grep -oE '[0-9a-f]{32}' | head -n1 || true)
    [ -n "$call" ] && break
    sleep 0.5
  done
  if [ -n "$call" ]; then
    echo "The large refund (A-1004, 640.0) is waiting for a person. From another terminal, run"
    echo
    echo "    $TG --root $root approve $id $call"
    echo
    echo "or, to refuse it,"
    echo
    echo "    $TG --root $root deny $id $call --reason 'not without a ticket'"
    echo
    echo "See what is waiting with: $TG --root $root pending $id"
    echo "Nobody answering within 5 minutes denies it."
    echo
  fi
  wait "$run_pid" || status=$?
  run_pid=""
else
  tg run --bundle "$work/bundle" --policy "$work/policy.json" "$id" \
    >"$work/stdout" 2>"$work/stderr" || status=$?
fi

cp "$work/ledger/refunds.jsonl" "$keep/refunds.jsonl" 2>/dev/null || true
report_args=(--work "$work" --audit-dir "$audit_dir" --id "$id" --runtime "$RUNTIME" --root "$root" --config "$config" --status "$status")
$interactive && report_args+=(--interactive)
set +e
python3 "$here/report.py" "${report_args[@]}" --tollgate "$TG" --root "$root" | tee "$work/report"
verdict=${PIPESTATUS[0]}
set -e
echo "(the run took $(( $(date +%s) - start ))s; the audit log and refund ledger stay in $keep)"
exit "$verdict"

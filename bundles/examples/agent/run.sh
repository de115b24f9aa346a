#!/usr/bin/env bash
# make demo-agent: the reference agent harness on the orders task.  The
# scripted model's first program crashes after its first refund; the harness
# feeds the stderr tail back, the second program succeeds, and the refund
# made by the failed attempt is not made again.
#
# Environment: BUILD (default ./build), RUNTIME (runsc or runc),
# AGENT_ROOT (tollgate --root; default a fresh directory), AGENT_KEEP (a
# directory to copy the run's files into, for the tests).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$repo/build}
RUNTIME=${RUNTIME:-runsc}
TG=${TG:-$BUILD/tollgate}
die() { echo "demo-agent: $*" >&2; exit 1; }
[ -x "$TG" ] || die "$TG is missing: run 'make' first"
[ "$(id -u)" = 0 ] || die "run it as root (it starts containers)"

rootfs=$BUILD/rootfs/python
bash "$repo/bundles/rootfs/python.sh" "$rootfs"

work=$(mktemp -d /tmp/tollgate-agent.XXXXXX)
chmod 755 "$work"
root=${AGENT_ROOT:-$work/root}
# The audit logs outlive the run, under the build directory.
audit_dir=$BUILD/demo-agent/audit
prefix=agent-$$
cleanup() {
  local status=$?
  # Only this run's containers (a timed-out attempt's, say): the root may
  # be shared.
  for id in $("$TG" --root "$root" list -q 2>/dev/null); do
    case $id in "$prefix"-*) "$TG" --root "$root" delete --force "$id" >/dev/null 2>&1 || true ;; esac
  done
  if [ -n "${AGENT_KEEP:-}" ]; then
    mkdir -p "$AGENT_KEEP"
    cp -r "$audit_dir" "$work/ledger" "$work/result.json" "$AGENT_KEEP/" 2>/dev/null || true
  fi
  if ! grep -q " $work/" /proc/self/mounts; then rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$audit_dir"
mkdir -p "$audit_dir" "$work/policies"
printf '{"runtime": "%s", "audit_dir": "%s", "policy_dir": "%s/policies"}\n' \
  "$RUNTIME" "$audit_dir" "$work" >"$work/config.json"
# The same tools, ledger and policy as the orders demo, with its deny hook
# for the large refund.
python3 "$repo/bundles/examples/orders/stage.py" "$work" \
  --hook "$repo/bundles/examples/orders/hooks/deny.py" >/dev/null

echo "tollgate agent harness: orders task under $RUNTIME, 1 retry allowed"
status=0
python3 "$here/harness.py" --tollgate "$TG" --root "$root" --config "$work/config.json" \
  --rootfs "$rootfs" --policy "$work/policy.json" --workdir "$work/bundles" \
  --id-prefix "$prefix" --result "$work/result.json" "$@" || status=$?
echo
echo "refund ledger (what really went out):"
sed 's/^/  /' "$work/ledger/refunds.jsonl" 2>/dev/null || echo "  (none)"
for log in "$audit_dir"/*.jsonl; do
  printf 'tollgate audit verify %s: ' "$log"
  if out=$("$TG" audit verify "$log" 2>&1); then echo "${out#"$log: "}" | tr '\n' ' '; else
    echo "${out#"$log: "}" | tr '\n' ' '; status=1; fi
  echo
done
exit "$status"

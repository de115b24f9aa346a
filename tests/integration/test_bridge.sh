#!/usr/bin/env bash
# The governed tool bridge end to end, under runsc and runc: the C client
# (busybox rootfs) and tollgate.py (the minimal Python rootfs) call a
# builtin and an exec tool through `tollgate run --policy`; unicode and
# 60 KiB payloads round-trip; 8 concurrent callers each get their own
# answer exactly once; denied, unknown, failed and bad calls get their own
# errors; the cap counts denials; every call is in a verifiable audit log.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

bridge_fixtures

# audit_check FILE MIN_CALLS: the log verifies and holds at least that many
# call records, and each record's tool/decision agrees with what was asked.
audit_check() {
  local file=$1 min=$2
  check "$rt: audit log verifies" tg audit verify "$file"
  local out
  out=$(python3 - "$file" "$min" <<'PY'
import json, sys
path, want = sys.argv[1], int(sys.argv[2])
calls = [r for r in map(json.loads, open(path)) if r.get("event") == "call"]
bad = []
for r in calls:
    t, d = r.get("tool"), r.get("decision")
    if t in ("echo", "upper") and d not in ("allow", "deny") : bad.append(r)
    if t == "echo" and r.get("outcome") == "ok" and not isinstance(r.get("args"), dict): bad.append(r)
    if t == "refund" and d != "deny": bad.append(r)
    if not r.get("call"): bad.append(r)
ids = [r["call"] for r in calls]
dups = len(ids) - len(set(ids))
print("calls=%d bad=%d dups=%d" % (len(calls), len(bad), dups))
sys.exit(0 if len(calls) >= want and not bad and not dups else 1)
PY
)
  check "$rt: audit has one matching record per call ($out)" test $? -eq 0
}

for rt in $BACKENDS; do
  # --- the C client on busybox ---
  make_bundle "$TG_ROOT/bundles/c-$rt" sh /t/client.sh
  add_ro_bind "$TG_ROOT/bundles/c-$rt/config.json" /t "$here/bridge"
  out=$(tg --runtime "$rt" run --policy "$POL/policy.json" -b "$TG_ROOT/bundles/c-$rt" "bc-$rt" 2>&1)
  echo "$out" | sed "s/^ok - /ok - $rt: /; s/^FAIL - /FAIL - $rt: /" | grep -E '^(ok|FAIL) - '
  check_match "$rt: C client finished" "c client done" "$out"
  counts=$(echo "$out" | grep -c '^count [1-8] 25$')
  check_eq "$rt: 8 concurrent C callers x 25 calls all answered with their own result" 8 "$counts"
  audit_check "$TG_ROOT/audit/bc-$rt.jsonl" 206

  # --- tollgate.py on the minimal Python rootfs ---
  py_bundle "$TG_ROOT/bundles/p-$rt" python3 /t/client.py
  out=$(tg --runtime "$rt" run --policy "$POL/policy.json" -b "$TG_ROOT/bundles/p-$rt" "bp-$rt" 2>&1)
  echo "$out" | sed "s/^ok - /ok - $rt: /; s/^FAIL - /FAIL - $rt: /" | grep -E '^(ok|FAIL) - '
  check_match "$rt: Python client finished" "client done" "$out"
  audit_check "$TG_ROOT/audit/bp-$rt.jsonl" 1608

  # --- the cap counts every attempt, denials included ---
  python3 - "$POL/policy.json" "$POL/cap.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["budgets"] = {"max_tool_calls": 3}
json.dump(p, open(sys.argv[2], "w"))
PY
  make_bundle "$TG_ROOT/bundles/cap-$rt" sh -c '
    C=/run/tollgate/tollgate-call
    $C refund "{}" >/dev/null 2>&1; echo "r1=$?"
    $C echo "{}" >/dev/null 2>&1; echo "r2=$?"
    $C echo "{}" >/dev/null 2>&1; echo "r3=$?"
    $C echo "{}" >/dev/null 2>&1; echo "r4=$?"'
  out=$(tg --runtime "$rt" run --policy "$POL/cap.json" -b "$TG_ROOT/bundles/cap-$rt" "cap-$rt" 2>&1)
  check_eq "$rt: cap of 3 counts the denial; the 4th call is budget_exhausted" \
    "r1=3 r2=0 r3=0 r4=5" "$(echo $(echo "$out" | grep '^r[0-9]='))"

  # --- no policy at all: the bridge is there and denies ---
  make_bundle "$TG_ROOT/bundles/none-$rt" sh -c '/run/tollgate/tollgate-call echo "{}"; echo "rc=$?"'
  out=$(tg --runtime "$rt" run -b "$TG_ROOT/bundles/none-$rt" "none-$rt" 2>&1)
  check_match "$rt: no policy: denied, no policy" "denied: no policy.*rc=3" "$(echo $out)"
done

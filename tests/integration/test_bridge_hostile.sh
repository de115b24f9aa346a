#!/usr/bin/env bash
# The container is hostile: a Python program inside a real container
# (runsc and runc) attacks /run/tollgate/calls with symlinks, FIFOs,
# directories, oversize, malformed and deeply nested requests, invalid and
# path-traversal ids, half-written and replayed requests, 10,000 junk files
# and a full tmpfs (bridge/hostile.py).  The host must follow no link, never
# block or crash, leave the linked host file unread and unchanged, and keep
# answering legitimate calls.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

bridge_fixtures

SECRET=$TG_ROOT/secret
for rt in $BACKENDS; do
  echo "host secret $rt" > "$SECRET"
  chmod 644 "$SECRET"
  touch -a -d @0 "$SECRET"; touch -m -d @1000 "$SECRET"
  before=$(stat -c '%X %Y %s' "$SECRET")
  b=$TG_ROOT/bundles/hostile-$rt
  py_bundle "$b" python3 /t/hostile.py "$SECRET"
  out=$(tg --runtime "$rt" run --policy "$POL/policy.json" -b "$b" "hostile-$rt" 2>&1)
  rc=$?
  echo "$out" | sed "s/^ok - /ok - $rt: /; s/^FAIL - /FAIL - $rt: /" | grep -E '^(ok|FAIL) - '
  check_match "$rt: hostile program ran to the end" "hostile done" "$out"
  check_eq "$rt: the run exited 0 (the host survived)" 0 "$rc"
  check_eq "$rt: the linked host file was neither read nor changed" "$before" "$(stat -c '%X %Y %s' "$SECRET")"
  check_eq "$rt: its content is intact" "host secret $rt" "$(cat "$SECRET")"
  check "$rt: audit log verifies" tg audit verify "$TG_ROOT/audit/hostile-$rt.jsonl"
done

#!/usr/bin/env bash
# The same container id under two --roots at once, on one audit directory
# (issue 13), under runsc and runc: each run has a log of its own (the
# second is <id>@<hash>.jsonl), records never interleave, both verify and
# `tollgate calls` of each root finds its own.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

chmod 755 "$TG_ROOT"
ROOT2=$(mktemp -d /tmp/tollgate-root2.XXXXXX)
chmod 755 "$ROOT2"
on_exit "rm -rf $ROOT2"
tg2() { "$TG" --root "$ROOT2" --config "$TG_CONFIG" "$@"; }
POL=$TG_ROOT/pol
mkdir -p "$POL"
cat > "$POL/policy.json" <<'P'
{"version": 1,
 "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]}}}
P
chmod -R a+rX "$POL"

for rt in $BACKENDS; do
  id=same-$rt
  # both containers call, then wait to be killed, so both gates are live at once
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    'for i in 1 2 3 4 5; do /run/tollgate/tollgate-call echo "{\"i\":$i}" >/dev/null; done; echo calls-done; sleep 300'
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >"$TG_ROOT/$id.1" 2>&1
  on_exit "tg delete --force $id"
  tg2 --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >"$TG_ROOT/$id.2" 2>&1
  if grep -q "control server socket.*address already in use" "$TG_ROOT/$id.2"; then
    # runsc names its sandbox's control socket by the id alone, so it
    # cannot run one id under two roots at once (see the report of issue
    # 20, fixed-form backend ids); the gate's side is the same code as runc's
    echo "# $rt: skipped: runsc refuses the same id under a second root ($(grep -o 'address already in use' "$TG_ROOT/$id.2" | head -1))"
    tg delete --force "$id" >/dev/null 2>&1
    continue
  fi
  on_exit "tg2 delete --force $id"
  check "$rt: the same id is live under two roots" test -n "$(tg list -q)" -a -n "$(tg2 list -q)"
  tg start "$id"
  tg2 start "$id"
  for k in 1 2; do
    wait_for -i 0.2 20 grep -q calls-done "$TG_ROOT/$id.$k"
  done
  check "$rt: both containers made their calls" grep -q calls-done "$TG_ROOT/$id.1" "$TG_ROOT/$id.2"
  logs=$(ls "$TG_ROOT/audit" | grep -c "^$id[.@].*jsonl$")
  check_eq "$rt: two logs, one per root" 2 "$logs"
  c1=$(tg calls "$id" | grep -c ' ok ')
  c2=$(tg2 calls "$id" | grep -c ' ok ')
  check_eq "$rt: calls under the first root lists its 5 calls" 5 "$c1"
  check_eq "$rt: calls under the second root lists its 5 calls" 5 "$c2"
  tg kill "$id" KILL; tg2 kill "$id" KILL
  sleep 1
  tg delete --force "$id" >/dev/null 2>&1
  tg2 delete --force "$id" >/dev/null 2>&1
  for f in "$TG_ROOT/audit/$id".jsonl "$TG_ROOT/audit/$id"@*.jsonl; do
    check "$rt: $(basename "$f") verifies (closed)" tg audit verify "$f"
    check_eq "$rt: $(basename "$f") holds one run's 5 calls" 5 "$(grep -c '"event":"call"' "$f")"
  done
  tg2 calls "$id" >/dev/null 2>&1
  check_eq "$rt: after delete, calls under the second root reads its own log" 5 "$(tg2 calls "$id" | grep -c ' ok ')"
done
check_eq "no containers left under the second root" "" "$(tg2 list -q 2>/dev/null)"

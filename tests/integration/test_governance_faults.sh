#!/usr/bin/env bash
# Governance under faults, with real containers under runsc and runc:
# - the sidecar is killed with SIGKILL right after an irreversible call's
#   intent record reached the disk: the log shows the intent without an
#   outcome, then the supervisor's sidecar_died record and an unknown
#   record for that call, and verifies; the caller is told outcome_unknown;
#   the tool's process dies with the sidecar;
# - the audit directory is a tiny tmpfs that fills up: calls fail closed
#   with audit_unavailable (exit 10) and nothing runs unaudited.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL"
cp "$here/governance/refund.py" "$here/governance/who.sh" "$POL/"
mkdir -p "$TG_ROOT/out" && chmod 1777 "$TG_ROOT/out"
chmod -R a+rX "$POL"
cat > "$POL/p.json" <<P
{"version": 1,
 "tools": {
   "who": {"backend": {"type": "exec", "argv": ["who.sh", "$TG_ROOT/out/who"]}, "rules": [{"effect": "allow"}]},
   "echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]},
   "refund": {"backend": {"type": "exec", "argv": ["refund.py"]}, "irreversible": true,
              "timeout": 120, "rules": [{"effect": "allow", "reason": "test refunds"}]}},
 "budgets": {"max_tool_calls": 200}}
P

for rt in $BACKENDS; do
  # --- kill -9 of the sidecar right after the intent record ---
  id=kill-$rt
  log=$TG_ROOT/audit/$id.jsonl
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    '/run/tollgate/tollgate-call who "{}"; /run/tollgate/tollgate-call --timeout 300 refund "{\"amount\":5,\"order\":\"K-1\",\"sleep\":300}"; echo rc=$?'
  out=$TG_ROOT/$id.out
  if tg --runtime "$rt" create --policy "$POL/p.json" -b "$TG_ROOT/bundles/$id" "$id" >"$out" 2>&1; then
    on_exit "tg delete --force $id"
    tg start "$id"
    wait_for -i 0.05 30 grep -qs '"event":"intent"' "$log"
    sidecar=$(sidecar_of "$id")
    check "$rt: the intent record is on disk before the tool finishes" grep -q '"event":"intent"' "$log"
    who=$(cat "$TG_ROOT/out/who" 2>/dev/null)
    check_match "$rt: sidecar exec tools run as the tools' uid/gid 65533 without groups" "uid=65533 gid=65533 groups=65533" "$who"
    check_match "$rt: ... with no capabilities" "CapPrm: 0000000000000000.*CapEff: 0000000000000000.*CapAmb: 0000000000000000" "$(echo $who)"
    check_match "$rt: ... with no_new_privs" "NoNewPrivs: 1" "$who"
    check_match "$rt: ... and a scrubbed environment" "env=HOME=/ LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin PWD=/ TOLLGATE_CALL_ID=[0-9a-f]+ TOLLGATE_TOOL=who $" "$who"
    rm -f "$TG_ROOT/out/who"
    check "$rt: kill -9 the sidecar" kill -9 "$sidecar"
    wait_for -i 0.05 10 pid_gone "$sidecar"
    # grep -o: under runsc the container's stdout and stderr, one file here,
    # may interleave within a line
    wait_for -i 0.05 10 grep -q 'rc=[0-9]' "$out"
    check_eq "$rt: the caller was told outcome_unknown (14), not a result" "rc=14" "$(grep -o 'rc=[0-9]*' "$out")"
    check_eq "$rt: the log has the intent and no outcome" "1 0" \
      "$(grep -c '"event":"intent"' "$log") $(grep -c '"event":"outcome"' "$log")"
    # The supervisor's new sidecar continued the log: a synced sidecar_died
    # record, then an unknown record naming the irreversible call.
    check_eq "$rt: the unknown record names the intent's call" \
      "$(grep '"event":"intent"' "$log" | json_get call)" \
      "$(grep '"event":"unknown"' "$log" | json_get call 2>/dev/null)"
    check_eq "$rt: one sidecar_died record" 1 "$(grep -c '"event":"sidecar_died"' "$log")"
    check "$rt: the log verifies across the crash (--open)" tg audit verify --open "$log"
    for _ in $(seq 1 200); do tail -n1 "$log" | grep -q '"event":"closed"' && break; sleep 0.05; done
    check "$rt: once the container ended, the log is closed and verifies" tg audit verify "$log"
    for _ in $(seq 1 100); do pgrep -f "$POL/refund.py" >/dev/null || break; sleep 0.05; done
    check_fails "$rt: the tool's process died with the sidecar" pgrep -f "$POL/refund.py"
    check "$rt: delete after the sidecar died" tg delete --force "$id"
  else
    echo "FAIL - $rt: create $id"
  fi

  # --- a crash nobody records: supervisor and sidecar both killed ---
  # The supervisor answers a dead sidecar's calls and continues the log;
  # with it killed first, nothing writes sidecar_died or closed.  The same
  # id then runs again on the same log, and verify must still name the
  # cut-short segment (issue 27 item 9).
  id=crash-$rt
  log=$TG_ROOT/audit/$id.jsonl
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    '/run/tollgate/tollgate-call who "{}"; /run/tollgate/tollgate-call --timeout 300 refund "{\"amount\":5,\"order\":\"C-1\",\"sleep\":300}"; echo rc=$?'
  if tg --runtime "$rt" create --policy "$POL/p.json" -b "$TG_ROOT/bundles/$id" "$id" >"$TG_ROOT/$id.out" 2>&1; then
    on_exit "tg delete --force $id"
    tg start "$id"
    wait_for -i 0.05 30 grep -qs '"event":"intent"' "$log"
    sup=$(tg state "$id" | json_get tollgate.sidecar.supervisor_pid)
    worker=$(sidecar_of "$id")
    check "$rt: kill -9 the supervisor, then the sidecar" bash -c "kill -9 $sup && sleep 0.2 && kill -9 $worker"
    wait_for -i 0.05 10 pid_gone "$worker"
    tg delete --force "$id" >/dev/null 2>&1
    check_eq "$rt: nothing recorded the crash (no sidecar_died, no closed)" "0 0" \
      "$(grep -c '"event":"sidecar_died"' "$log") $(grep -c '"event":"closed"' "$log")"
    make_bundle "$TG_ROOT/bundles/$id" sh -c '/run/tollgate/tollgate-call echo "{\"again\":1}"'
    tg --runtime "$rt" run --policy "$POL/p.json" -b "$TG_ROOT/bundles/$id" "$id" >/dev/null 2>&1
    check_eq "$rt: the second run of the id appended a closed segment" 1 "$(grep -c '"event":"closed"' "$log")"
    v=$(tg audit verify "$log" 2>&1); rc=$?
    check_eq "$rt: verify fails on the earlier cut-short segment" 1 "$rc"
    check_match "$rt: ... naming it and its intent without an outcome" "segment 1 .*1 intent" "$v"
    check "$rt: --allow-crashed accepts it" tg audit verify --allow-crashed "$log"
  else
    echo "FAIL - $rt: create $id: $(cat "$TG_ROOT/$id.out")"
  fi

  # --- a full audit disk fails closed ---
  tiny=$TG_ROOT/tiny-$rt
  mkdir -p "$tiny"
  mount -t tmpfs -o size=64k,mode=0700 tmpfs "$tiny"
  on_exit "umount -l $tiny"
  write_config "audit_dir=\"$tiny\""
  # Leave exactly one free page, which the log's first records take.
  dd if=/dev/zero of="$tiny/slack" bs=4096 count=1 status=none
  dd if=/dev/zero of="$tiny/filler" bs=4096 status=none 2>/dev/null || true
  rm -f "$tiny/slack"
  make_bundle "$TG_ROOT/bundles/full-$rt" sh -c '
    C=/run/tollgate/tollgate-call
    for i in $(seq 1 40); do $C echo "{\"i\":$i}" >/dev/null 2>&1; printf "%s " $?; done; echo
    $C refund "{\"amount\":1}" >/dev/null 2>&1; echo "refund=$?"'
  out=$(tg --runtime "$rt" run --policy "$POL/p.json" -b "$TG_ROOT/bundles/full-$rt" "full-$rt" 2>&1)
  seq=$(echo "$out" | head -1)
  check_match "$rt: calls succeed while the log has room" "^0 " "$seq"
  check_match "$rt: then fail closed with audit_unavailable (exit 10)" "0 10 " "$seq"
  check_fails "$rt: no call succeeds after the first refusal" bash -c "echo '$seq' | grep -q ' 10 .* 0 '"
  check_match "$rt: the irreversible tool is refused, not run" "refund=10" "$out"
  check "$rt: what reached the full disk still verifies" tg audit verify --open "$tiny/full-$rt.jsonl"
  write_config
  umount -l "$tiny"
done

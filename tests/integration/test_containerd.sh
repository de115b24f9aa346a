#!/usr/bin/env bash
# tollgate under a real, private containerd (1.6), through ctr and the runc
# v2 shim with BinaryName/Root set the way the `tollgate` runtime handler
# sets them (bundles/containerd/tollgate.toml): exit status, the hardening
# probe, exec, kill/delete with nothing left behind, a governed tool call
# selected by annotation whose audit log verifies, and tollgate's own error
# messages surfacing through containerd.  Once under runsc (the default)
# and once with the backend set to runc in tollgate's host config.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/containerd_lib.sh"

# The image builder is deterministic: the same tree gives the same archive.
# A private copy of the tree: the shared one is rebuilt by another lane's
# script when a runtime made a mount point in it (bundles/rootfs/busybox.sh),
# which changed it between the two builds once (three lanes at a time).
cp -a "$BUSYBOX_ROOTFS" "$TG_ROOT/img-tree"
for n in 1 2; do
  python3 "$TOP/bundles/containerd/oci-image.py" --rootfs "$TG_ROOT/img-tree" \
    --name localhost/tollgate/busybox:test --cmd sh --out "$TG_ROOT/img$n.tar" 2>/dev/null
done
check_eq "image builder: same tree, same archive" "$(sha256sum < "$TG_ROOT/img1.tar")" "$(sha256sum < "$TG_ROOT/img2.tar")"
check_match "image builder: refuses a missing rootfs with the fix" 'build it first' \
  "$(python3 "$TOP/bundles/containerd/oci-image.py" --rootfs "$TG_ROOT/nope" --name x:y --out "$TG_ROOT/x.tar" 2>&1)"
rm -f "$TG_ROOT"/img?.tar

ctrd_start || exit 1
ctrd_import busybox
ctrd_import probe
ctrd_import python
BB=localhost/tollgate/busybox:test

# The shipped example policy (bundles/kubernetes/policies.yaml), as the
# installer would place it in the node's policy directory.
python3 - "$TOP/bundles/kubernetes/policies.yaml" "$TG_ROOT/policies" <<'PY'
import sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
for name, text in cm["data"].items():
    open(f"{sys.argv[2]}/{name}", "w").write(text)
PY

# The id pool's claims live in this test's own directory, so they can be
# counted (test_userns.sh does the same).
IDS=$TG_ROOT/ids
task_pid() { ctr task ls | awk -v id="$1" '$1 == id {print $2}'; }
POOL_FIRST=$((1 << 28))
POOL_END=$((POOL_FIRST + 65536 * 4096))

for backend in runsc runc; do
  # Approvals time out quickly here: nobody approves in a test.
  write_config "runtime=\"$backend\"" approval_timeout_ms=1000 id_range_dir="\"$IDS\""
  b=$backend

  # 1. Output and exit status reach ctr.
  out=$(ctr_tg --rm "$BB" "$b-exit" sh -c 'echo hello from tollgate; exit 3' 2>&1)
  rc=$?
  check_eq "$b: ctr sees the container's exit status 3" 3 "$rc"
  check_eq "$b: ctr sees the container's output" "hello from tollgate" "$out"

  # 2. The hardening probe: confined as the hardening work documents.
  probe=$(ctr_tg --rm localhost/tollgate/probe:test "$b-probe" 2>&1)
  check_eq "$b: probe: no effective capabilities" 0000000000000000 "$(json_get cap_eff <<<"$probe" 2>&1)"
  check_eq "$b: probe: no permitted capabilities" 0000000000000000 "$(json_get cap_prm <<<"$probe" 2>&1)"
  check_eq "$b: probe: empty bounding set" 0000000000000000 "$(json_get cap_bnd <<<"$probe" 2>&1)"
  check_eq "$b: probe: uid 65534" 65534 "$(json_get uid <<<"$probe" 2>&1)"
  check_eq "$b: probe: gid 65534" 65534 "$(json_get gid <<<"$probe" 2>&1)"
  check_eq "$b: probe: seccomp filter on" 2 "$(json_get seccomp <<<"$probe" 2>&1)"
  # gVisor's /proc/self/status has no NoNewPrivs line; runc's kernel does.
  if [ "$b" = runc ]; then
    check_eq "$b: probe: NoNewPrivs" 1 "$(json_get no_new_privs <<<"$probe" 2>&1)"
  fi
  check_match "$b: probe: root filesystem not writable" '^(EROFS|EACCES)$' "$(json_get write_root <<<"$probe" 2>&1)"
  check_eq "$b: probe: only loopback" '["lo"]' "$(json_get interfaces <<<"$probe" 2>&1)"
  check_eq "$b: probe: mount refused" EPERM "$(json_get mount <<<"$probe" 2>&1)"

  # 3. exec into a running container; then kill, delete, container delete.
  # A pid 1 without a handler ignores SIGTERM (runc): trap it, so the test
  # shows the signal reaching the process.
  ctr_tg -d "$BB" "$b-long" sh -c 'trap "exit 0" TERM; sleep 300 & wait' >/dev/null 2>&1
  check_eq "$b: detached task is running" RUNNING "$(ctr task ls | awk -v id="$b-long" '$1 == id {print $3}')"
  # runc: containerd's containers get a user namespace and a host id
  # range of their own like any other (docs/hardening.md "Identities"):
  # the container's 65534 is an unprivileged pool id on the host, and a
  # second container's is a different one.
  if [ "$b" = runc ]; then
    ctr_tg -d "$BB" "$b-long2" sh -c 'trap "exit 0" TERM; sleep 300 & wait' >/dev/null 2>&1
    u1=$(host_uid "$(task_pid "$b-long")")
    u2=$(host_uid "$(task_pid "$b-long2")")
    check "$b: ctr's container runs as a host uid of the id pool ($u1)" \
      test "${u1:-0}" -ge "$POOL_FIRST" -a "${u1:-0}" -lt "$POOL_END"
    check "$b: a second ctr container runs as a host uid of the pool ($u2)" \
      test "${u2:-0}" -ge "$POOL_FIRST" -a "${u2:-0}" -lt "$POOL_END"
    check "$b: the two containers' host uids differ ($u1, $u2)" test "${u1:-0}" != "${u2:-0}"
    check_eq "$b: two running containers hold two id range claims" 2 "$(claims)"
    ctr task kill -s KILL "$b-long2" >/dev/null 2>&1
    for _ in $(seq 300); do [ "$(ctr task ls | awk -v id="$b-long2" '$1 == id {print $3}')" = STOPPED ] && break; sleep 0.1; done
    ctr task delete "$b-long2" >/dev/null 2>&1
    ctr container delete "$b-long2" >/dev/null 2>&1
    check_eq "$b: the deleted container's claim is freed" 1 "$(claims)"
  fi
  out=$(ctr_exec "$b-long" e1 sh -c 'echo exec says hi; id -u' 2>&1)
  check_eq "$b: ctr task exec runs in the container" "exec says hi
65534" "$out"
  out=$(ctr_exec "$b-long" e2 sh -c 'exit 7' 2>&1)
  check_eq "$b: ctr task exec returns the process's status" 7 "$?"
  check_eq "$b: tollgate lists the container" "$b-long" "$(tg_ns list -q)"
  status() { ctr task ls | awk -v id="$1" '$1 == id {print $3}'; }
  check "$b: ctr task pause" ctr task pause "$b-long"
  check_eq "$b: paused" PAUSED "$(status "$b-long")"
  check "$b: ctr task resume" ctr task resume "$b-long"
  check_eq "$b: running again" RUNNING "$(status "$b-long")"
  check_match "$b: ctr task ps lists the container's processes" '^PID +INFO' "$(ctr task ps "$b-long" 2>&1)"
  check "$b: ctr task kill" ctr task kill "$b-long"
  for _ in $(seq 300); do
    [ "$(ctr task ls | awk -v id="$b-long" '$1 == id {print $3}')" = STOPPED ] && break
    sleep 0.1
  done
  check_eq "$b: task stopped after kill" STOPPED "$(ctr task ls | awk -v id="$b-long" '$1 == id {print $3}')"
  check "$b: ctr task delete" ctr task delete "$b-long"
  check "$b: ctr container delete" ctr container delete "$b-long"
  ctrd_check_clean "$b: after kill/delete" "$b"
  check_eq "$b: no id range claim is left after delete" 0 "$(claims)"

  # 4. A governed tool call: the annotation selects the policy, the
  #    container gets the bridge, the call is allowed and audited.
  out=$(ctr_tg --rm --annotation dev.tollgate.policy=orders "$BB" "$b-gov" \
    /run/tollgate/tollgate-call lookup_order '{"order_id": "A-1001"}' 2>&1)
  rc=$?
  check_eq "$b: governed call succeeds" 0 "$rc"
  check_match "$b: governed call returns the tool's result" 'A-1001' "$out"
  out=$(ctr_tg --rm --annotation dev.tollgate.policy=orders "$BB" "$b-gov2" \
    /run/tollgate/tollgate-call no_such_tool '{}' 2>&1)
  check_eq "$b: a tool outside the policy is refused (unknown_tool)" 6 "$?"
  log=$TG_ROOT/audit/$b-gov.jsonl
  check "$b: audit log on the host" test -s "$log"
  check_eq "$b: audit log is private" 600 "$(stat -c %a "$log" 2>&1)"
  check_match "$b: audit log records the call" '"tool":"lookup_order"' "$(cat "$log" 2>&1)"
  check "$b: audit log verifies" tg audit verify "$log"

  # The Python client from the Python image: an allowed call returns its
  # result, a refund over 50 waits for an approval nobody gives.
  out=$(ctr_tg --rm --annotation dev.tollgate.policy=orders localhost/tollgate/python:test "$b-py" \
    python3 -c '
import tollgate
print("result:", tollgate.call("lookup_order", order_id="A-7"))
try:
    tollgate.call("issue_refund", order_id="A-7", amount=500)
    print("refund: paid")
except tollgate.TollgateError as e:
    print("refund:", type(e).__name__)
' 2>&1)
  check_match "$b: python client: allowed call returns the result" "result: .*A-7" "$out"
  check_match "$b: python client: unapproved refund times out, not paid" "refund: ApprovalTimeout" "$out"
  log=$TG_ROOT/audit/$b-py.jsonl
  check_match "$b: python client: audit records the refund's approval timeout" \
    '"tool":"issue_refund".*"approver":"timeout"' "$(grep issue_refund "$log" 2>&1 | tr -d '\n')"
  check "$b: python client: audit log verifies" tg audit verify "$log"

  # 5. tollgate's errors reach the user through containerd's.
  out=$(ctr_tg --rm --annotation dev.tollgate.policy=../../etc/passwd "$BB" "$b-badpol" true 2>&1)
  check_match "$b: bad policy annotation: containerd reports OCI runtime create failed" \
    'OCI runtime create failed' "$out"
  check_match "$b: bad policy annotation: tollgate's message names the annotation" \
    'annotation dev\.tollgate\.policy' "$out"
  out=$(ctr_tg --rm --annotation dev.tollgate.policy=nosuch "$BB" "$b-nopol" true 2>&1)
  check_match "$b: missing policy: tollgate's message names the fix" \
    'OCI runtime create failed: .*nosuch.*(install that policy|remove the annotation)' "$out"
  ctrd_check_clean "$b: after the error cases" "$b"
  check_eq "$b: no id range claim is left by the --rm runs and refused creates" 0 "$(claims)"
done

# A missing runsc: no quiet fallback to runc, and the fix in the message.
write_config 'runtime="runsc"' 'runtime_path="/nonexistent/runsc"'
out=$(ctr_tg --rm "$BB" missing-runsc true 2>&1)
check_match "missing runsc: containerd reports OCI runtime create failed" 'OCI runtime create failed' "$out"
check_match "missing runsc: tollgate's message names the fix" 'runsc.*(install|make deps)' "$out"
ctrd_check_clean "missing runsc" runsc
check_eq "missing runsc: nothing ran under runc either" "" "$(runc --root "$TG_NS_ROOT/backend/runc" list -q 2>/dev/null)"

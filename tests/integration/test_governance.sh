#!/usr/bin/env bash
# Governance end to end with real containers, under runsc and runc:
# approval by `tollgate approve` from another process while the code waits,
# hook approve and deny, an approval timeout that denies, a budget exhausted
# mid-program, tools imported from an MCP stdio server, the socket backend,
# `calls` and `pending`, a broken policy stopping create and run, and the audit log
# verifying (and failing after a one-byte edit).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

# Exec tools, hooks and MCP servers run as uid 65534: they must reach them.
chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL"
cp "$here/governance/refund.py" "$here/governance/hook.py" \
   "$here/../fixtures/mcp_server.py" "$here/../fixtures/socket_tool_server.py" "$POL/"
chmod -R a+rX "$POL"

# policy NAME APPROVAL-JSON BUDGETS-JSON: the refund policy of the docs.
policy() {
  cat > "$POL/$1.json" <<P
{"version": 1,
 "tools": {
   "echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]},
   "refund": {"backend": {"type": "exec", "argv": ["refund.py"]},
              "description": "Refund an order.", "irreversible": true, "cost": 4, "timeout": 60,
              "args": {"type": "object", "properties": {"amount": {"type": "number", "minimum": 0},
                       "order": {"type": "string"}, "sleep": {"type": "number"}}, "required": ["amount"]},
              "rules": [{"if": {"arg": "amount", "op": "<=", "value": 50}, "effect": "allow", "reason": "small refund"},
                        {"effect": "approve", "reason": "refunds over 50 need a human"}]}},
 "approval": $2,
 "budgets": $3}
P
}

# run_box RT ID POLICY SCRIPT: tollgate run of a busybox box running SCRIPT.
run_box() {
  local rt=$1 id=$2 pol=$3 script=$4
  make_bundle "$TG_ROOT/bundles/$id" sh -c "C=/run/tollgate/tollgate-call; $script"
  tg --runtime "$rt" run --policy "$POL/$pol.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1
}

policy person '{"timeout": 120}' '{"max_tool_calls": 20}'
policy hook "{\"hook\": \"$POL/hook.py\", \"timeout\": 30}" '{"max_tool_calls": 20}'
policy short '{"timeout": 1}' '{"max_tool_calls": 20}'
policy budget '{"timeout": 5}' '{"max_tool_calls": 20, "max_cost": 10}'

for rt in $BACKENDS; do
  # --- a person approves with `tollgate approve` while the code waits ---
  id=appr-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    r=$($C refund "{\"amount\":80,\"order\":\"A-1\"}"); echo "rc1=$? $r"
    r=$($C refund "{\"amount\":90,\"order\":\"A-2\"}" 2>&1); echo "rc2=$? $r"'
  tg --runtime "$rt" run --policy "$POL/person.json" -b "$TG_ROOT/bundles/$id" "$id" > "$TG_ROOT/$id.out" 2>&1 &
  runpid=$!
  call=$(wait_pending "$id")
  check "$rt: the refund over 50 is parked and listed by pending" test -n "$call"
  check_match "$rt: pending without an id lists every container's parked calls" "$id +$call +refund" "$(tg pending)"
  calls=$(tg calls "$id" --format json)
  check_match "$rt: calls shows the parked call as pending" '"status": "pending"' "$calls"
  check_fails "$rt: approve of an unknown call fails" tg approve "$id" no-such-call
  check "$rt: tollgate approve from another process" tg approve "$id" "$call" --reason "checked the order"
  call2=$(wait_pending "$id")
  check "$rt: tollgate deny from another process" tg deny "$id" "$call2" --reason "duplicate"
  wait $runpid
  out=$(cat "$TG_ROOT/$id.out")
  check_match "$rt: approved refund ran once and returned its result" 'rc1=0 \{"refunded": ?80, ?"order": ?"A-1"\}' "$out"
  check_match "$rt: denied refund exits 3 with the reason" 'rc2=3 .*duplicate' "$out"
  log=$TG_ROOT/audit/$id.jsonl
  check "$rt: audit log verifies" tg audit verify "$log"
  check_match "$rt: the approver is recorded" '"approver":"uid:0"' "$(cat "$log")"
  check_eq "$rt: one intent and one outcome for the approved refund" "1 1" \
    "$(grep -c '"event":"intent"' "$log") $(grep -c '"event":"outcome"' "$log")"
  calls=$(tg calls "$id")
  check_match "$rt: calls after exit reads the audit log" "refund +allow +ok" "$calls"
  cp "$log" "$TG_ROOT/edited.jsonl"
  python3 - "$TG_ROOT/edited.jsonl" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read())
i = b.index(b'"amount":80') + 10; b[i] = ord("1")   # 80 -> 10: one byte
open(p, "wb").write(b)
PY
  out=$(tg audit verify "$TG_ROOT/edited.jsonl" 2>&1); rc=$?
  check_eq "$rt: one edited byte makes verify fail" 1 "$rc"
  check_match "$rt: verify says where" "line [0-9]+: seq [0-9]+: the hash does not match" "$out"

  # --- the hook approves one refund and denies another ---
  out=$(run_box "$rt" "hook-$rt" hook '
    r=$($C refund "{\"amount\":70}"); echo "rc1=$? $r"
    r=$($C refund "{\"amount\":700}" 2>&1); echo "rc2=$? $r"')
  check_match "$rt: hook approves 70" 'rc1=0 \{"refunded": ?70' "$out"
  check_match "$rt: hook denies 700 with its reason" "rc2=3 .*too much for the hook" "$out"
  check_match "$rt: the hook is recorded as approver" '"approver":"hook:hook.py"' \
    "$(cat "$TG_ROOT/audit/hook-$rt.jsonl")"

  # --- nobody answers: the timeout denies ---
  out=$(run_box "$rt" "late-$rt" short '
    r=$($C refund "{\"amount\":60}" 2>&1); echo "rc=$? $r"; $C echo "{\"after\":1}"')
  check_match "$rt: approval timeout exits 4" "rc=4 .*approval timed out" "$out"
  check_match "$rt: the code goes on after the timeout" '\{"after": ?1\}' "$out"
  check_match "$rt: the timeout is recorded as approver" '"approver":"timeout"' \
    "$(cat "$TG_ROOT/audit/late-$rt.jsonl")"

  # --- a cost budget runs out in the middle of the program ---
  out=$(run_box "$rt" "cost-$rt" budget '
    for a in 10 20 30; do r=$($C refund "{\"amount\":$a}" 2>&1); echo "rc=$? $r"; done
    $C echo "{\"still\":\"works\"}"')
  check_eq "$rt: refunds 1 and 2 run (cost 8 of 10), refund 3 is budget_exhausted" "0 0 5" \
    "$(echo $(echo "$out" | sed -n 's/^rc=\([0-9]*\).*/\1/p'))"
  check_match "$rt: budget message names max_cost" "max_cost reached" "$out"
  check_match "$rt: free tools still run" '"still": ?"works"' "$out"
  check_eq "$rt: the refund over budget never ran (2 outcomes)" 2 \
    "$(grep -c '"event":"outcome"' "$TG_ROOT/audit/cost-$rt.jsonl")"

  # --- an HMAC-keyed chain: verify needs the key ---
  head -c 32 /dev/urandom > "$TG_ROOT/audit.key"
  head -c 32 /dev/urandom > "$TG_ROOT/other.key"
  write_config "audit_key=\"$TG_ROOT/audit.key\""
  out=$(run_box "$rt" "hmac-$rt" person '$C refund "{\"amount\":1}"')
  log=$TG_ROOT/audit/hmac-$rt.jsonl
  check_match "$rt: keyed log says hmac-sha256" '"alg":"hmac-sha256"' "$(head -1 "$log")"
  check "$rt: keyed log verifies with the host config's key" tg audit verify "$log"
  check_fails "$rt: keyed log fails with another key" tg audit verify --key "$TG_ROOT/other.key" "$log"
  write_config
  check_fails "$rt: keyed log cannot be verified without the key" tg audit verify "$log"
done

# --- MCP stdio server: tools imported into tools.json and governed ---
cat > "$POL/mcp.json" <<P
{"version": 1,
 "mcp_servers": {"shop": {"argv": ["/usr/bin/python3", "$POL/mcp_server.py"]}},
 "tools": {
   "lookup_order": {"backend": {"type": "mcp", "server": "shop"}, "rules": [{"effect": "allow"}]},
   "add": {"backend": {"type": "mcp", "server": "shop"},
           "rules": [{"if": {"arg": "a", "op": ">", "value": 100}, "effect": "deny", "reason": "too big"},
                     {"effect": "allow"}]},
   "fail_always": {"backend": {"type": "mcp", "server": "shop"}, "rules": [{"effect": "allow"}]}}}
P
# --- socket backend: an agent's own tool server on a host socket ---
python3 "$POL/socket_tool_server.py" "$TG_ROOT/agent.sock" > "$TG_ROOT/sock.out" 2>&1 &
sockpid=$!
on_exit "kill $sockpid"
wait_for -i 0.05 5 grep -qs ready "$TG_ROOT/sock.out"
cat > "$POL/sock.json" <<P
{"version": 1, "tools": {
   "greet": {"backend": {"type": "socket", "path": "$TG_ROOT/agent.sock"}, "rules": [{"effect": "allow"}]},
   "boom": {"backend": {"type": "socket", "path": "$TG_ROOT/agent.sock"}, "rules": [{"effect": "allow"}]}}}
P
for rt in $BACKENDS; do
  out=$(run_box "$rt" "mcp-$rt" mcp '
    grep -o "\"name\": \"[a-z_]*\"" /run/tollgate/tools.json | tr "\n" " "; echo
    grep -c "Look up an order by its id" /run/tollgate/tools.json
    r=$($C lookup_order "{\"order_id\":\"A-7\"}"); echo "rc1=$? $r"
    r=$($C lookup_order "{\"order_id\":\"../x\"}" 2>&1); echo "rc2=$?"
    r=$($C add "{\"a\":2,\"b\":3}"); echo "rc3=$? $r"
    r=$($C add "{\"a\":200,\"b\":3}" 2>&1); echo "rc4=$? $r"
    r=$($C fail_always "{}" 2>&1); echo "rc5=$? $r"')
  check_match "$rt: MCP tools listed in tools.json" '"name": "lookup_order" "name": "add" "name": "fail_always"' "$out"
  check_match "$rt: MCP descriptions imported" $'\n1\n' "$out"
  check_match "$rt: MCP call returns structured content" 'rc1=0 \{"order_id": ?"A-7", ?"status": ?"shipped"' "$out"
  check_match "$rt: imported schema rejects bad args (bad_request)" "rc2=2" "$out"
  check_match "$rt: MCP text result" 'rc3=0 "5"' "$out"
  check_match "$rt: rules govern MCP tools" "rc4=3 .*too big" "$out"
  check_match "$rt: MCP isError is tool_failed" "rc5=7 .*warehouse is on fire" "$out"

  out=$(run_box "$rt" "sock-$rt" sock '
    r=$($C greet "{\"name\":\"ada\"}"); echo "rc1=$? $r"
    r=$($C boom "{}" 2>&1); echo "rc2=$? $r"')
  check_match "$rt: socket backend answers" 'rc1=0 \{"greeting": ?"hello ada", ?"call": ?"[0-9a-f]+"\}' "$out"
  check_match "$rt: socket backend error is tool_failed" "rc2=7 .*boom" "$out"
done

# --- policy check and a broken policy stopping create ---
out=$(tg policy check "$here/../fixtures/policies/bad/13-bad-effect.json" 2>&1); rc=$?
check_eq "policy check exits 1 on a bad policy" 1 "$rc"
check_match "policy check names line, column and field" "13-bad-effect.json:3:38: tools.echo.rules\[0\].effect" "$out"
check "policy check accepts the docs' refund policy" tg policy check "$POL/person.json"
make_bundle "$TG_ROOT/bundles/broken"
out=$(tg create --policy "$here/../fixtures/policies/bad/30-typo-in-tool.json" -b "$TG_ROOT/bundles/broken" broken 2>&1); rc=$?
check_fails "create with a broken policy fails" test "$rc" -eq 0
check_match "create reports the policy's positioned errors" "30-typo-in-tool.json:2:68: tools.echo.rule: unknown key" "$out"
tg delete --force broken >/dev/null 2>&1 || true
# run opens its gate on a thread while it hardens the bundle: a broken
# policy must still stop it before the backend runs the container.
for rt in $BACKENDS; do
  make_bundle "$TG_ROOT/bundles/broken-run-$rt" sh -c 'echo the container ran'
  cp "$TG_ROOT/bundles/broken-run-$rt/config.json" "$TG_ROOT/broken-run-$rt.orig"
  out=$(tg --runtime "$rt" run --policy "$here/../fixtures/policies/bad/30-typo-in-tool.json" \
        -b "$TG_ROOT/bundles/broken-run-$rt" "broken-run-$rt" 2>&1 </dev/null); rc=$?
  check_fails "$rt: run with a broken policy fails" test "$rc" -eq 0
  check_match "$rt: run reports the policy's positioned errors" "30-typo-in-tool.json:2:68: tools.echo.rule: unknown key" "$out"
  check_fails "$rt: the container never ran" grep -q "the container ran" <<<"$out"
  check_eq "$rt: run with a broken policy leaves no container" "" "$(tg list -q)"
  check_fails "$rt: nor its state directory" test -e "$TG_ROOT/broken-run-$rt"
  check "$rt: the bundle's config.json is the user's again" \
    cmp -s "$TG_ROOT/bundles/broken-run-$rt/config.json" "$TG_ROOT/broken-run-$rt.orig"
done

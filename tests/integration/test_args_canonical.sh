#!/usr/bin/env bash
# Issue 16 end to end, under runsc and runc: from inside a real container,
# through the real bridge, each attack shape reaches an exec tool that
# records the exact bytes it received.  The call is refused (bad_request,
# budget_exhausted, denied), or the rule and the tool saw the same value;
# the audit log is strict JSON and UTF-8, its args are what the tool got,
# and it verifies.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

chmod 755 "$TG_ROOT" # exec tools run as uid 65534
POL=$TG_ROOT/pol
mkdir -p "$POL/rx"
chmod 755 "$POL"
chmod 777 "$POL/rx"
cat > "$POL/rec.sh" <<S
#!/bin/sh
# One line per call: exactly the argument bytes tollgate handed over.
cat >> $POL/rx/received
echo >> $POL/rx/received
echo '{}'
S
chmod 755 "$POL/rec.sh"
cat > "$POL/args.json" <<'P'
{"version": 1,
 "tools": {
   "acct": {"backend": {"type": "exec", "argv": ["rec.sh"]}, "timeout": 60,
            "rules": [{"if": {"arg": "account.id", "op": "==", "value": "ACC-1"}, "effect": "allow"}]},
   "byid": {"backend": {"type": "exec", "argv": ["rec.sh"]}, "timeout": 60,
            "rules": [{"if": {"arg": "id", "op": "in", "value": [1234567890123456789]}, "effect": "allow"}]},
   "text": {"backend": {"type": "exec", "argv": ["rec.sh"]}, "timeout": 60,
            "rules": [{"effect": "allow"}]},
   "pay": {"backend": {"type": "exec", "argv": ["rec.sh"]}, "timeout": 60,
           "rules": [{"if": {"arg": "amount", "op": ">", "value": 50}, "effect": "deny", "reason": "too much"},
                     {"effect": "allow"}]},
   "once": {"backend": {"type": "exec", "argv": ["rec.sh"]}, "timeout": 60, "rules": [{"effect": "allow"}]}},
 "budgets": {"repeat_limit": 1, "max_tool_calls": 100}}
P

for rt in $BACKENDS; do
  id=args-$rt
  : > "$POL/rx/received"; chmod 666 "$POL/rx/received"
  make_bundle "$TG_ROOT/bundles/$id" sh -c '
    C=/run/tollgate/tollgate-call
    r=$($C acct "{\"account.id\":\"ACC-1\",\"account\":{\"id\":\"ACC-666\"}}" 2>&1); echo "dot=$? $r"
    r=$($C acct "{\"account\":{\"id\":\"ACC-1\"}}" 2>&1); echo "dotok=$? $r"
    r=$($C byid "{\"id\":1234567890123456790}" 2>&1); echo "big=$? $r"
    r=$($C byid "{\"id\":1.234567890123456789e18}" 2>&1); echo "bigok=$? $r"
    r=$(printf "{\"p\":\"..\300\257etc\"}" | $C text - 2>&1); echo "overlong=$? $r"
    r=$($C text "{\"p\":\"x\\udc00y\"}" 2>&1); echo "surrogate=$? $r"
    r=$($C text "{\"p\":\"caf\\u00e9\"}" 2>&1); echo "utf8ok=$? $r"
    for n in 640 640.0 6.4e2 6400e-1; do r=$($C once "{\"amount\":$n}" 2>&1); echo "rep=$? $r"; done
    r=$($C pay "{\"amount\":\"640\"}" 2>&1); echo "str=$? $r"
    r=$($C pay "{\"amount\":640}" 2>&1); echo "num=$? $r"
    r=$($C pay "{\"amount\":2e1}" 2>&1); echo "small=$? $r"'
  out=$(tg --runtime "$rt" run --policy "$POL/args.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1)
  check_match "$rt: a literal key next to its dotted path is bad_request" 'dot=2 .*could mean either' "$out"
  check_match "$rt: the unambiguous dotted path is allowed" 'dotok=0' "$out"
  check_match "$rt: 1234567890123456790 is not in [1234567890123456789]" 'big=3 ' "$out"
  check_match "$rt: 1.234567890123456789e18 is" 'bigok=0' "$out"
  check_match "$rt: an overlong sequence is bad_request" 'overlong=2 .*not valid UTF-8' "$out"
  check_match "$rt: a lone surrogate is bad_request" 'surrogate=2 .*not valid UTF-8' "$out"
  check_match "$rt: valid UTF-8 passes" 'utf8ok=0' "$out"
  check_eq "$rt: repeat_limit sees 640, 640.0, 6.4e2 and 6400e-1 as one call" "0 5 5 5" \
    "$(echo $(echo "$out" | sed -n 's/^rep=\([0-9]*\).*/\1/p'))"
  check_match "$rt: a string against a number rule is bad_request" 'str=2 .*rule 0 compares it' "$out"
  check_match "$rt: the number is denied" 'num=3 .*too much' "$out"
  check_match "$rt: a small amount runs" 'small=0' "$out"
  check_eq "$rt: the tool received exactly the canonical arguments" \
    "$(printf '%s\n' '{"account":{"id":"ACC-1"}}' '{"id":1234567890123456789}' '{"p":"café"}' \
       '{"amount":640}' '{"amount":20}')" \
    "$(cat "$POL/rx/received")"
  log=$TG_ROOT/audit/$id.jsonl
  check "$rt: audit log verifies" tg audit verify "$log"
  check "$rt: the audit log is strict JSON, valid UTF-8, and its args are what the tool got" \
    python3 - "$log" "$POL/rx/received" <<'PY'
import json, sys
# strict: bytes must decode as UTF-8, and no lone surrogate escapes
lines = open(sys.argv[1], encoding="utf-8", errors="strict").read().splitlines()
def strict(s):
    v = json.loads(s, parse_float=str, parse_int=str)
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in json.dumps(v, ensure_ascii=False)):
        raise SystemExit("a surrogate in the audit log")
    return v
recs = [strict(l) for l in lines]
got = [json.loads(l, parse_float=str, parse_int=str) for l in
       open(sys.argv[2], encoding="utf-8", errors="strict").read().splitlines()]
ran = [r["args"] for r in recs if r.get("event") == "call" and r.get("outcome") == "ok"]
if ran != got:
    raise SystemExit("audit %r != tool %r" % (ran, got))
PY
done

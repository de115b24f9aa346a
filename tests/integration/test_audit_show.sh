#!/usr/bin/env bash
# `tollgate audit show` and `tollgate calls` print what a hostile container
# wrote (tool names, argument keys and values with newlines, escape
# sequences, C1 controls: tests/integration/audit/forge.sh, run inside real
# runsc and runc containers) as one line per record and no raw control
# bytes, so no row can be forged and the terminal obeys nothing; and
# Unicode format characters (U+202E and the rest of category Cf, which make
# a terminal reorder or hide text) as escapes in `audit show`, `calls` and
# `pending`, tables and JSON, so the person deciding a parked call reads
# the arguments it holds.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL"
cp "$here/audit/forge.sh" "$POL/"
cat > "$POL/policy.json" <<'P'
{"version": 1,
 "tools": {"echo": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]},
           "strict": {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}],
                      "args": {"type": "object", "properties": {"n": {"type": "integer"}},
                               "additionalProperties": false}},
           "pay": {"backend": {"type": "builtin", "name": "echo"},
                   "rules": [{"effect": "approve", "reason": "a person checks every payment"}]}},
 "approval": {"timeout": 120}}
P
# A payment whose arguments hold U+202E (RIGHT-TO-LEFT OVERRIDE), written
# into a JSON argument as raw UTF-8: a bidi terminal would show the memo
# and the amount reordered to the person approving it.
printf '%s\n' '#!/bin/sh' \
  "/run/tollgate/tollgate-call pay '{\"to\":\"shop\",\"memo\":\"refund $(printf '\342\200\256')00005 EUR\"}'" \
  'echo "pay rc=$?"' > "$POL/bidi.sh"
chmod -R a+rX "$POL"

# raw control bytes (other than the line ends), C1 controls and format
# characters (category Cf: bidi, zero-width, tags; Zl, Zp) in a file
controls() {
  python3 - "$1" <<'PY'
import sys, unicodedata
data = open(sys.argv[1], "rb").read()
bad = [b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f]
text = data.decode("utf-8", "replace")
bad += [c for c in text if 0x80 <= ord(c) <= 0x9f or unicodedata.category(c) in ("Cf", "Zl", "Zp")]
print(len(bad))
PY
}
records() { wc -l < "$1" | tr -d ' '; }

for rt in $BACKENDS; do
  id=forge-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh /t/forge.sh
  add_ro_bind "$TG_ROOT/bundles/$id/config.json" /t "$POL"
  out=$(tg --runtime "$rt" run --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1)
  check_match "$rt: the forging requests were answered" "answered f1.*answered f2.*answered f3.*answered f4.*answered f5" "$(echo $out)"
  log=$TG_ROOT/audit/$id.jsonl
  check "$rt: the log verifies" tg audit verify "$log"
  check "$rt: the log holds the container's newlines and escapes (as JSON escapes)" \
    grep -qi 'u001b\[31m' "$log"
  tg audit show "$log" > "$TG_ROOT/$id.show" 2>&1
  check_eq "$rt: audit show prints one line per record (and a header)" \
    "$(( $(records "$log") + 1 ))" "$(records "$TG_ROOT/$id.show")"
  check_eq "$rt: audit show prints no raw control byte" 0 "$(controls "$TG_ROOT/$id.show")"
  check "$rt: ... and shows the C1 control escaped" grep -qF 'u009b2J' "$TG_ROOT/$id.show"
  check "$rt: ... and the bidi override, isolate, zero-width space and tag escaped (arguments)" \
    grep -qF '"n\u202e\u2066\u200b\udb40\udc41":1' "$TG_ROOT/$id.show"
  check "$rt: ... and in the schema's error message that quotes the key" \
    grep -qF 'n\u202e\u2066\u200b\U000e0041' "$TG_ROOT/$id.show"
  tg audit show "$log" --format json > "$TG_ROOT/$id.showjson" 2>&1
  check_eq "$rt: audit show --format json prints no raw format character" 0 "$(controls "$TG_ROOT/$id.showjson")"
  check "$rt: ... and is the log's records, value for value" python3 - "$log" "$TG_ROOT/$id.showjson" <<'PY'
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if json.load(open(sys.argv[2])) == log else 1)
PY
  check_fails "$rt: ... so no forged row appears" grep -qE '^(99|3     2026-01-01|4     2026-01-01)' "$TG_ROOT/$id.show"
  tg calls "$id" > "$TG_ROOT/$id.calls" 2>&1
  check_match "$rt: calls lists the run from its log" "budget \(from the audit log\)" "$(cat "$TG_ROOT/$id.calls")"
  check_eq "$rt: calls prints no raw control byte" 0 "$(controls "$TG_ROOT/$id.calls")"
  # header, 5 calls, 4 budget lines and the one tool that ran (echo's
  # count, as the live gate shows it)
  check_eq "$rt: calls prints one row per call (header, 5 calls, 5 budget lines)" 11 "$(records "$TG_ROOT/$id.calls")"
  check_match "$rt: ... its budget is the gate's, per tool too" "echo +[0-9]+ used \\(no limit\\)" "$(cat "$TG_ROOT/$id.calls")"

  # --- a parked call whose arguments hold U+202E, shown to its approver ---
  id=bidi-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh /t/bidi.sh
  add_ro_bind "$TG_ROOT/bundles/$id/config.json" /t "$POL"
  tg --runtime "$rt" run --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" > "$TG_ROOT/$id.out" 2>&1 &
  runpid=$!
  call=$(wait_pending "$id")
  check "$rt: the payment is parked" test -n "$call"
  tg pending "$id" > "$TG_ROOT/$id.pending" 2>&1
  tg pending > "$TG_ROOT/$id.pending-all" 2>&1
  tg pending "$id" --format json > "$TG_ROOT/$id.pending-json" 2>&1
  check "$rt: pending shows the override escaped" grep -qF 'refund \u202e00005 EUR' "$TG_ROOT/$id.pending"
  check_eq "$rt: pending prints no raw format character" 0 "$(controls "$TG_ROOT/$id.pending")"
  check_eq "$rt: pending of every container prints none either" 0 "$(controls "$TG_ROOT/$id.pending-all")"
  check_eq "$rt: pending --format json prints none" 0 "$(controls "$TG_ROOT/$id.pending-json")"
  check_eq "$rt: ... and its JSON still decodes to the arguments the call holds" "refund $(printf '\342\200\256')00005 EUR" \
    "$(json_get 0.args.memo <"$TG_ROOT/$id.pending-json")"
  tg calls "$id" --format json > "$TG_ROOT/$id.calls-json" 2>&1
  check_eq "$rt: calls --format json prints no raw format character" 0 "$(controls "$TG_ROOT/$id.calls-json")"
  check "$rt: the person denies it" tg deny "$id" "$call" --reason "the memo hides an override"
  wait $runpid
  check_match "$rt: the denied payment exits 3" "pay rc=3" "$(cat "$TG_ROOT/$id.out")"
  log=$TG_ROOT/audit/$id.jsonl
  check "$rt: the log holds the override as the call did (raw UTF-8)" grep -qF "$(printf '\342\200\256')00005" "$log"
  tg audit show "$log" > "$TG_ROOT/$id.show" 2>&1
  check "$rt: audit show prints it escaped" grep -qF 'refund \u202e00005 EUR' "$TG_ROOT/$id.show"
  check_eq "$rt: audit show prints no raw format character" 0 "$(controls "$TG_ROOT/$id.show")"
done

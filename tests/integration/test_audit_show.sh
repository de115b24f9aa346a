#!/usr/bin/env bash
# `tollgate audit show` and `tollgate calls` print what a hostile container
# wrote (tool names, argument keys and values with newlines, escape
# sequences, C1 controls: tests/integration/audit/forge.sh, run inside real
# runsc and runc containers) as one line per record and no raw control
# bytes, so no row can be forged and the terminal obeys nothing.
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
                               "additionalProperties": false}}}}
P
chmod -R a+rX "$POL"

# raw control bytes (other than the line ends) and C1 controls in a file
controls() {
  python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
bad = [b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f]
text = data.decode("utf-8", "replace")
bad += [c for c in text if 0x80 <= ord(c) <= 0x9f]
print(len(bad))
PY
}
records() { wc -l < "$1" | tr -d ' '; }

for rt in $BACKENDS; do
  id=forge-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh /t/forge.sh
  python3 - "$TG_ROOT/bundles/$id/config.json" "$POL" <<'PY'
import json, sys
path, src = sys.argv[1:]
c = json.load(open(path))
c["mounts"].append({"destination": "/t", "type": "bind", "source": src, "options": ["rbind", "ro"]})
json.dump(c, open(path, "w"), indent=2)
PY
  out=$(tg --runtime "$rt" run --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" 2>&1)
  check_match "$rt: the forging requests were answered" "answered f1.*answered f2.*answered f3.*answered f4" "$(echo $out)"
  log=$TG_ROOT/audit/$id.jsonl
  check "$rt: the log verifies" tg audit verify "$log"
  check "$rt: the log holds the container's newlines and escapes (as JSON escapes)" \
    grep -qi 'u001b\[31m' "$log"
  tg audit show "$log" > "$TG_ROOT/$id.show" 2>&1
  check_eq "$rt: audit show prints one line per record (and a header)" \
    "$(( $(records "$log") + 1 ))" "$(records "$TG_ROOT/$id.show")"
  check_eq "$rt: audit show prints no raw control byte" 0 "$(controls "$TG_ROOT/$id.show")"
  check "$rt: ... and shows the C1 control escaped" grep -qF 'u009b2J' "$TG_ROOT/$id.show"
  check_fails "$rt: ... so no forged row appears" grep -qE '^(99|3     2026-01-01|4     2026-01-01)' "$TG_ROOT/$id.show"
  tg calls "$id" > "$TG_ROOT/$id.calls" 2>&1
  check_match "$rt: calls lists the run from its log" "budget \(from the audit log\)" "$(cat "$TG_ROOT/$id.calls")"
  check_eq "$rt: calls prints no raw control byte" 0 "$(controls "$TG_ROOT/$id.calls")"
  check_eq "$rt: calls prints one row per call (header, 4 calls, 4 budget lines)" 9 "$(records "$TG_ROOT/$id.calls")"
done

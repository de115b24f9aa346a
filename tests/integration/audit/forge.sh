#!/bin/sh
# Run inside a container by test_audit_show.sh: requests whose tool names,
# argument keys and values hold newlines, terminal escape sequences (ESC,
# OSC, BEL) and C1 controls, written straight into the bridge's directory
# as a hostile program would.  Each tries to forge a row of `tollgate
# audit show` or `tollgate calls`, to drive the operator's terminal, or to
# make it show reordered or hidden text (bidi overrides, zero-width).
req=/run/tollgate/calls/req
resp=/run/tollgate/calls/resp
put() { printf '%s' "$2" > "$req/$1.json" && : > "$req/$1.done"; }
put f1 '{"v":1,"tool":"echo","args":{"k\n99    2026-01-01T00:00:00Z  call  forged  echo  allow\u001b[31m":"v\n\u001b]0;pwned\u0007\u009b2J"}}'
put f2 '{"v":1,"tool":"echo","args":{"ev\ril\u001b[2J":"\r\n3     2026-01-01T00:00:00 call f9 echo allow"}}'
put f3 '{"v":1,"tool":"echo","args":{"\u0001\u007f del":"\u0085 next line \u009d osc"}}'
# a key the schema refuses: its error message quotes the key
put f4 '{"v":1,"tool":"strict","args":{"x\n4     2026-01-01T00:00:00 call f9 strict allow\u001b[8m":1}}'
# bidi overrides and isolates, zero-width characters, a tag character:
# each would make the operator's terminal show other text than the record
# holds (the schema's error message quotes the key, too)
put f5 '{"v":1,"tool":"strict","args":{"n\u202e\u2066\u200b\udb40\udc41":1}}'
for id in f1 f2 f3 f4 f5; do
  n=0
  while [ ! -e "$resp/$id.done" ] && [ $n -lt 100 ]; do sleep 0.1 2>/dev/null || sleep 1; n=$((n+1)); done
  [ -e "$resp/$id.done" ] && echo "answered $id"
done

# pieces.py TOKEN PROGRAM_OUTPUT AUDIT_LOG CALLS: exits 1 when any of the
# files holds an 8-byte piece of TOKEN (a secret cut short is still a
# leak), or when the leak sweep of prog.py did not run as planned: 54
# cases with the credential starting 50 bytes before to 3 after where the
# message's cut falls in the text as the server sent it (where cutting
# before scrubbing split it), some of them cut (ending in "...") and some
# with the credential scrubbed whole.
import json
import sys

token, out, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
pieces = {token[i:i + 8] for i in range(len(token) - 7)}
bad = 0
for path in [out] + rest:
    text = open(path, errors="replace").read()
    for p in pieces:
        if p in text:
            print("%s holds %r, a piece of the token" % (path, p))
            bad = 1
cases = cut = whole = 0
first = probe = None
for line in open(out):
    try:
        rec = json.loads(line)
    except ValueError:
        continue
    if rec.get("case") == "leak_probe":
        probe = rec.get("result")
    if not str(rec.get("case", "")).startswith("leak_") or rec["case"] == "leak_probe":
        continue
    msg = rec.get("message", "")
    first = first or msg
    cases += 1
    cut += msg.endswith("...")
    whole += "[redacted]" in msg
if cases < 50 or cut < 1 or whole < 1:
    print("the sweep did not cover the cut: %d cases, %d messages cut, %d with the token scrubbed"
          " (probe: %r; first message: %r)" % (cases, cut, whole, probe, first))
    bad = 1
sys.exit(bad)

#!/usr/bin/env bash
# The last step of `make check`: nothing the tests started may outlive them
# (no container, sandbox, mount, process or test root), then the run's one
# closing line "check: N passed, N failed" adds up every step's counts.
set -u
pass=0 fail=0
leak() { echo "FAIL - leak: $*"; fail=$((fail + 1)); }
ok() { pass=$((pass + 1)); }

# Test roots are /tmp/tollgate-root.* (lib.sh) and the runners' own temp dirs.
m=$(grep -E ' /tmp/(tollgate-|tg-)' /proc/self/mounts | awk '{print $2}')
[ -z "$m" ] && ok || leak "mounts left under test roots: $m"
m=$(grep -E ' /run/tollgate' /proc/self/mounts | awk '{print $2}')
[ -z "$m" ] && ok || leak "mounts left under /run/tollgate: $m"
for rt in runsc runc; do
  ids=$("$rt" list 2>/dev/null | awk 'NR > 1 {print $1}')
  [ -z "$ids" ] && ok || leak "$rt list (default root) shows: $ids"
done
p=$(pgrep -af 'runsc-(sandbox|gofer)|tollgate' | grep -E '/tmp/(tollgate-|tg-)' | grep -v pgrep)
[ -z "$p" ] && ok || leak "processes left from test roots: $p"
# A test's own helpers (clients, floods, fake servers run from this
# checkout's tests/): a helper started in the background through a shell
# function and "killed" by the subshell's pid outlived its script.  They
# are reported, then ended.
top=$(cd "$(dirname "$0")/.." && pwd)
p=$(pgrep -af "$top/tests/" | grep -v -e pgrep -e leaks.sh)
if [ -z "$p" ]; then ok; else
  leak "test helpers left running: $p"
  echo "$p" | awk '{print $1}' | xargs -r kill 2>/dev/null
fi
d=$(ls -d /tmp/tollgate-root.* 2>/dev/null)
[ -z "$d" ] && ok || leak "test roots left: $d"
# Temporary directories of the SDK's outside its state directory (a tool
# server's socket made on its own, the bench's audit directory) made since
# the check started (CHECK_STARTED, a file the Makefile touches first;
# else any).  Not the state directories themselves: a program killed -9
# (an MCP client kills its server 2 s after closing stdin) leaves its own
# for the next Sandbox's sweep (sdk/tollgate_sdk/_reap.py), by design.
newer=()
[ -n "${CHECK_STARTED:-}" ] && [ -e "$CHECK_STARTED" ] && newer=(-newer "$CHECK_STARTED")
d=$(find /tmp -maxdepth 1 \( -name 'tollgate-sdk-sock.*' -o -name 'tollgate-sdkbench.*' \) "${newer[@]}" 2>/dev/null)
[ -z "$d" ] && ok || leak "SDK temporary directories left: $d"
echo "leaks: $pass passed, $fail failed"

if [ -n "${COUNTS_FILE:-}" ] && [ -f "$COUNTS_FILE" ]; then
  read -r tp tf < <(awk -v p="$pass" -v f="$fail" '{p += $2; f += $3} END {print p, f}' "$COUNTS_FILE")
  echo "check: $tp passed, $tf failed"
fi
[ "$fail" -eq 0 ]

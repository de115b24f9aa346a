#!/usr/bin/env bash
# The host Python SDK (sdk/, docs/sdk.md) with real containers (its unit
# tests are sdk/tests, pytest, make sdk-unit): the README's quick start
# from `pip install ./sdk` in a fresh venv; the MCP server's unit tests
# (tests/sdk/test_mcp_*.py); then, under each backend, the orders example
# on the SDK, sessions (open without `with`, cells, files, caps), an async
# tool, approval callbacks, ProgramFailed, PolicyError, the self-repair
# helper, pause and resume (with a pause_dir, across Sandboxes and
# processes), and SandboxUnavailable with nothing run on the host.
. "$(dirname "$0")/lib.sh"
sdk_tests=$(cd "$(dirname "$0")/../sdk" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
# The project's virtual environment (make deps: sdk/venv.sh), with the SDK
# installed editable and the build backend's wheel in wheels/.
venv=${VENV:-$repo/.venv}
PY=$venv/bin/python
if [ ! -x "$PY" ]; then
  echo "FAIL - $PY is missing: run 'make deps' (sdk/venv.sh makes $venv)"
  exit 1
fi

# ---- the README's quick start, on what `make` built, from a fresh venv ----
# As the README says: `make` (done: the runner builds nothing), then
# `pip install ./sdk` into a new venv, offline here (--no-index: the
# build backend comes from the wheel make deps keeps in .venv/wheels),
# then the README's quickstart.py block as written, from another
# directory, with TOLLGATE naming the binary and nothing else.
qs=$(mktemp -d /tmp/tg-sdk-qs.XXXXXX)
on_exit "rm -rf '$qs'"
check "make built the Python rootfs beside build/tollgate" test -x "$BUILD/rootfs/python/usr/bin/python3"
check "make deps kept the build backend's wheel in $venv/wheels" \
  sh -c 'ls "$1"/setuptools-*.whl >/dev/null 2>&1' sh "$venv/wheels"
python3 -m venv "$qs/venv"
check "pip install ./sdk in a fresh venv (offline)" "$qs/venv/bin/pip" install -q --disable-pip-version-check \
  --no-index --find-links "$venv/wheels" "$repo/sdk"
check_match "the fresh venv imports the installed package, not the checkout" "^$qs/venv/" \
  "$(cd "$qs" && "$qs/venv/bin/python" -c 'import tollgate_sdk; print(tollgate_sdk.__file__)' 2>&1)"
awk '/<!-- quickstart.py/ {m = 1; next} m && /^```python/ {p = 1; next} p && /^```/ {exit} p {print}' \
  "$repo/README.md" > "$qs/quickstart.py"
check "the README has a quickstart.py block" grep -q "from tollgate_sdk import Sandbox, tool" "$qs/quickstart.py"
out=$(cd "$qs" && env -u TOLLGATE_ROOTFS TOLLGATE="$TG" timeout 300 "$qs/venv/bin/python" quickstart.py 2>&1)
check_match "README quick start: prints the denied refund" "^not refunded: denied" "$out"
check_match "README quick start: get_order allowed, issue_refund denied by the callback" \
  "get_order \{'order_id': 'A-1004'\} allow policy.*issue_refund \{'order_id': 'A-1004', 'amount': 640(\.0)?\} deny uid:0" "$out"
qs_log=$(printf '%s\n' "$out" | sed -n 's/^audit log: //p')
check "README quick start: its audit log verifies" sh -c '"$1" audit verify "$2" >/dev/null' sh "$TG" "$qs_log"
[ -n "$qs_log" ] && rm -f "$qs_log"


# A program that is PID 1 of its PID namespace (a container with no
# init) would be the parent of its sandboxes' orphans and reap none of
# them: Sandbox refuses there, naming the fix, before anything runs.
out=$(unshare --pid --fork --mount-proc env TOLLGATE="$TG" TOLLGATE_ROOTFS="$BUILD/rootfs/python" "$PY" -c '
from tollgate_sdk import Sandbox, SandboxUnavailable
try:
    Sandbox().run("print(1)")
    print("it ran")
except SandboxUnavailable as e:
    print("refused:", e)' 2>&1)
check_match "a program that is PID 1 of its PID namespace: Sandbox refuses, naming an init as the fix" \
  "^refused: this program is PID 1 .*docker run --init.*nothing was run" "$out"

# An SDK program in another PID namespace (`tollgate mcp` or serve in a
# container that shares /tmp) must not take this one's state directory for
# a dead owner's: this program's pid means nothing there.  The holder has
# run once (its state directory holds its host config) and runs again
# after the other's sweep; a sweep that removed the directory made that
# second run fail ("host config ... does not exist").
holder_in=$TG_ROOT/holder.in
mkfifo "$holder_in"
TOLLGATE="$TG" TOLLGATE_ROOTFS="$BUILD/rootfs/python" "$PY" -c '
import sys
from tollgate_sdk import Sandbox
sb = Sandbox(runtime="runc")
print("first", sb.run("print(6 * 7)").stdout.strip(), flush=True)
open(sys.argv[1]).read()
print("second", sb.run("print(7 * 7)").stdout.strip(), flush=True)
sb.close()' "$holder_in" >"$TG_ROOT/holder.out" 2>&1 &
holder=$!
wait_for 120 grep -q '^first' "$TG_ROOT/holder.out"
check_eq "another PID namespace: the holder's first run" "first 42" "$(head -1 "$TG_ROOT/holder.out")"
out=$(unshare --pid --fork --mount-proc --kill-child tini -s -- env TOLLGATE="$TG" \
      TOLLGATE_ROOTFS="$BUILD/rootfs/python" "$PY" -c '
from tollgate_sdk import Sandbox
print("there", Sandbox(runtime="runc").run("print(1 + 1)").stdout.strip())' 2>&1)
check_eq "another PID namespace: a Sandbox runs there (and sweeps)" "there 2" "$out"
echo go >"$holder_in"
wait "$holder"
check_eq "another PID namespace: its sweep left the holder's state directory, whose second run works" \
  "second 49" "$(sed -n 2p "$TG_ROOT/holder.out")"

"$PY" "$sdk_tests/run_unit.py" 2>"$TG_ROOT/unit.err"
[ -s "$TG_ROOT/unit.err" ] && grep -v '^$' "$TG_ROOT/unit.err" | grep -iv 'warning' | sed 's/^/   # /' | tail -n 40

bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python"
# run_shell needs a shell in the rootfs (cached like the other).
bash "$(dirname "$0")/../../bundles/rootfs/python.sh" "$BUILD/rootfs/python-shell" --shell
for backend in $BACKENDS; do
  TG=$TG TOLLGATE_ROOTFS=$BUILD/rootfs/python TOLLGATE_SHELL_ROOTFS=$BUILD/rootfs/python-shell timeout 600 "$PY" "$sdk_tests/integration.py" "$backend" "$TG_ROOT"
  status=$?
  check_eq "$backend: the SDK integration driver exits 0" 0 "$status"
done

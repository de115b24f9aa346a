#!/usr/bin/env bash
# The host SDK's unit tests (sdk/tests, pytest, no containers) with the
# project's virtual environment (make deps: sdk/venv.sh).  Prints pytest's
# own summary, then one line CI reads: "sdk-unit: N passed, N failed", and
# adds "sdk-unit P F" to $COUNTS_FILE like the other suites.
# Usage: tests/run-sdk-unit.sh VENV
set -u
venv=${1:?usage: run-sdk-unit.sh VENV}
cd "$(dirname "$0")/.."
if [ ! -x "$venv/bin/pytest" ]; then
  echo "sdk-unit: $venv/bin/pytest is missing; run 'make deps' (sdk/venv.sh makes $venv)" >&2
  [ -n "${COUNTS_FILE:-}" ] && echo "sdk-unit 0 1" >>"$COUNTS_FILE"
  exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$venv/bin/pytest" -q -p no:cacheprovider -o console_output_style=classic sdk/tests 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
summary=$(grep -E '^[=[:space:]]*[0-9]+ (passed|failed|error)' "$out" | tail -n 1)
count() { printf '%s\n' "$summary" | grep -oE "[0-9]+ $1" | head -n 1 | cut -d' ' -f1; }
passed=$(count passed); failed=$(count failed); errors=$(count error)
passed=${passed:-0}; failed=$(( ${failed:-0} + ${errors:-0} ))
# pytest failed without a count of its own (a collection error, no tests)
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "sdk-unit: $passed passed, $failed failed"
[ -n "${COUNTS_FILE:-}" ] && echo "sdk-unit $passed $failed" >>"$COUNTS_FILE"
[ "$failed" -eq 0 ]

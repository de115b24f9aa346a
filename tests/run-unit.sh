#!/usr/bin/env bash
# Run every Criterion unit-test binary given as an argument and print one
# summary line that CI reads: "unit: N passed, N failed".
set -u
passed=0 failed=0 failing=""
for bin in "$@"; do
  echo "== $(basename "$bin")"
  if "$bin" --jobs 1 --short-filename; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failing="$failing $(basename "$bin")"
  fi
done
[ -n "$failing" ] && echo "failing suites:$failing"
echo "unit: $passed passed, $failed failed"
[ -n "${COUNTS_FILE:-}" ] && echo "unit $passed $failed" >>"$COUNTS_FILE"
[ "$failed" -eq 0 ]

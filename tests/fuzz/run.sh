#!/usr/bin/env bash
# Build and run every tests/fuzz/fuzz_*.c libFuzzer target for SECONDS in
# total (split evenly).  Each target names the library sources it needs on
# a "FUZZ_SOURCES:" line.  Corpora grow in build/fuzz/corpus/<target>,
# seeded from tests/fuzz/corpus/<target>.  A crash leaves its input in
# build/fuzz/ and makes this script fail.
# Usage: tests/fuzz/run.sh SECONDS     (make fuzz-smoke: 20, make fuzz: 300)
set -euo pipefail
seconds=${1:?usage: run.sh SECONDS}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${BUILD:-$top/build}/fuzz
mkdir -p "$out"
command -v clang >/dev/null || { echo "fuzz: clang is missing; run 'make deps'" >&2; exit 1; }
targets=("$here"/fuzz_*.c)
per=$(( seconds / ${#targets[@]} )); [ "$per" -ge 1 ] || per=1
cflags="-g -O1 -std=c11 -D_GNU_SOURCE -I$top $(pkg-config --cflags yajl)"
libs="$(pkg-config --libs yajl libcrypto) -lpthread"
status=0
for src in "${targets[@]}"; do
  name=$(basename "$src" .c)
  srcs=$(sed -n 's/^.*FUZZ_SOURCES:[[:space:]]*//p' "$src" | head -n1)
  bin=$out/$name
  # Rebuild only when the target or one of its sources changed.
  if [ ! -x "$bin" ] || [ -n "$(cd "$top" && find "$src" $srcs base/*.h bridge/*.h governance/*.h -newer "$bin" 2>/dev/null)" ]; then
    (cd "$top" && clang $cflags -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -o "$bin" "$src" $srcs $libs)
  fi
  corpus=$out/corpus/$name
  mkdir -p "$corpus"
  [ -d "$here/corpus/$name" ] && cp -n "$here/corpus/$name"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $name for ${per}s"
  if ! (cd "$out" && "$bin" -max_total_time="$per" -max_len=70000 \
        -print_final_stats=0 "$corpus" >"$out/$name.log" 2>&1); then
    echo "fuzz: $name FAILED; see $out/$name.log and the crash-* input in $out" >&2
    tail -n 30 "$out/$name.log" >&2
    status=1
  else
    grep -E '^(#[0-9]+|Done)' "$out/$name.log" | tail -n 1
  fi
done
exit $status

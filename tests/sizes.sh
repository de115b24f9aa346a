#!/usr/bin/env bash
# One job per file and per function (docs/architecture.md): no C source of
# tollgate's (tests aside) over 800 lines, no function over 150.  Prints
# each one over, with where it starts, and fails.
set -u
cd "$(dirname "$0")/.."
max_file=800 max_fn=150
files=$(find base oci governance bridge shim bench -name '*.[ch]' | sort)
bad=0
for f in $files; do
  n=$(wc -l < "$f")
  if [ "$n" -gt $max_file ]; then
    echo "sizes: $f is $n lines (at most $max_file): split it by job" >&2
    bad=1
  fi
done
# A function starts at a line at brace depth 0 that ends in "{" and is no
# initializer or type; its name is on the last column-0 line with "(" before
# it; it ends where the depth returns to 0.
over=$(awk -v max=$max_fn '
  FNR == 1 { depth = 0; sig = "" }
  {
    line = $0
    if (depth == 0 && line ~ /^[A-Za-z_]/ && line ~ /\(/) sig = line
    if (depth == 0 && line ~ /\{[ \t]*$/ && line !~ /=/ &&
        line !~ /^(struct|enum|union|typedef)[ \t]/ && sig != "") { start = FNR; name = sig; infn = 1 }
    opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
    depth += opens - closes
    if (infn && depth == 0) {
      if (FNR - start + 1 > max) {
        sub(/\(.*/, "", name)
        printf "sizes: %s:%d: %s is %d lines (at most %d): split it into its steps\n", FILENAME, start, name, FNR - start + 1, max
      }
      infn = 0; sig = ""
    }
  }' $(echo "$files" | grep '\.c$'))
if [ -n "$over" ]; then echo "$over" >&2; bad=1; fi
[ $bad = 0 ] && echo "sizes: no file over $max_file lines, no function over $max_fn"
exit $bad

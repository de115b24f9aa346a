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
# Functions come from universal-ctags, which parses C (comments, strings
# and character literals included): a brace counter was fooled by them and
# missed a 162-line function (issue 38).  %e is the line of the closing
# brace.
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "sizes: universal-ctags is needed to find each function's extent (Debian: universal-ctags)" >&2
  exit 1
fi
over=$(ctags -x --_xformat='%F %n %e %N' --kinds-C=f --languages=C --langmap=C:.c \
         $(echo "$files" | grep '\.c$') |
       awk -v max=$max_fn '$3 - $2 + 1 > max {
         printf "sizes: %s:%d: %s is %d lines (at most %d): split it into its steps\n", $1, $2, $4, $3 - $2 + 1, max }')
if [ -n "$over" ]; then echo "$over" >&2; bad=1; fi
[ $bad = 0 ] && echo "sizes: no file over $max_file lines, no function over $max_fn"
exit $bad

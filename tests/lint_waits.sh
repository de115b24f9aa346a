#!/usr/bin/env bash
# A wait that cannot end: `wait_for 30 test -z "$(pids)"` expands the
# substitution once, when wait_for is called, and polls that constant
# until its time runs out (test_reaper lost 30 s to one, and a check
# written so passes or fails on its first look).  The condition goes in
# single quotes for eval (or bash -c), where each poll expands it again.
# This fails on any wait_for whose arguments, outside single quotes, hold
# a command substitution, and prints the line.
set -u
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r hit; do
  line=${hit#*:*:}
  [[ $line =~ ^[[:space:]]*# ]] && continue
  rest=${line#*wait_for }
  unquoted=$(sed -E "s/'[^']*'//g; s/\\$\\(\\(//g" <<<"$rest")
  case $unquoted in
  *'$('*)
    echo "tests: a wait_for condition expanded once, at the call (quote it for eval): $hit"
    bad=1
    ;;
  esac
done < <(grep -rnE '(^|[^_[:alnum:]])wait_for ' tests --include='*.sh' | grep -v '^tests/integration/lib.sh:.*wait_for()')
exit "$bad"

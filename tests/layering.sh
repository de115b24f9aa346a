#!/usr/bin/env bash
# The floors go one way (docs/architecture.md):
#   base/  <-  oci/, governance/  <-  bridge/  <-  shim/ (lifecycle/ <- cli/)
# A floor may include its own headers and those of the floors below it,
# never one above: this fails on any include that points back up and
# prints the offending line.  bridge/client/ runs inside the container and
# includes nothing of the tree.
# The Python floor above shim/cli (sdk/tollgate_sdk) is checked here too,
# by tests/layering_py.py: the core never imports tollgate_sdk.mcp, serve or
# an integration (nor anything outside the standard library), mcp/ and
# serve/ never each other or an integration.  sdk/tests/test_api.py (make
# sdk-unit) adds no import cycle and none hidden in a function.
set -u
cd "$(dirname "$0")/.."

# floor -> the include prefixes it may use (besides its own)
declare -A may=(
  [base]=""
  [oci]="base/"
  [governance]="base/"
  [bridge]="base/ governance/"
  [bridge/client]=""
  [shim/lifecycle]="base/ oci/ governance/ bridge/ shim/context.h"
  [shim/cli]="base/ oci/ governance/ bridge/ shim/context.h shim/lifecycle/"
  [shim]="base/"
)

# headers internal to their floor: no other floor includes them
declare -A internal=(
  [oci/transform.h]=oci
  [governance/gate_state.h]=governance
  [governance/ceiling_cases.h]=governance
  [bridge/server_state.h]=bridge
  [bridge/server_watcher.h]=bridge
  [bridge/server_pool.h]=bridge
  [bridge/server_answer.h]=bridge
)

bad=0
check() { # floor dir (non-recursive)
  local floor=$1 file line inc ok p
  for file in "$floor"/*.c "$floor"/*.h; do
    [ -e "$file" ] || continue
    while IFS= read -r line; do
      inc=${line#*\"}; inc=${inc%%\"*}
      ok=0
      # its own headers: directly in the floor's directory, not a subfolder
      case $inc in "$floor"/*) case ${inc#"$floor"/} in */*) ;; *) ok=1 ;; esac ;; esac
      for p in ${may[$floor]}; do
        case $inc in "$p"*) ok=1 ;; esac
      done
      if [ -n "${internal[$inc]:-}" ] && [ "${internal[$inc]}" != "$floor" ]; then
        echo "layering: $file: $line  ($inc is internal to ${internal[$inc]}/: use its public header)" >&2
        bad=1
      fi
      if [ $ok = 0 ]; then
        echo "layering: $file: $line  ($floor/ may include only its own headers${may[$floor]:+ and }${may[$floor]})" >&2
        bad=1
      fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" | sed 's/^\([0-9]*\):/line \1: /')
  done
}
for floor in "${!may[@]}"; do check "$floor"; done
python3 tests/layering_py.py || bad=1
if [ $bad = 0 ]; then
  echo "layering: every include points down (${#may[@]} floors)"
fi
exit $bad

# Sourced by every integration test script.  Provides:
#   TG            the tollgate binary under test
#   TG_ROOT       a private --root for this script (removed at exit)
#   tg ARGS...    tollgate with --root "$TG_ROOT"
#   check NAME CMD...          ok when CMD exits 0
#   check_eq NAME WANT GOT     ok when the strings are equal
#   check_match NAME REGEX GOT ok when GOT matches the extended regex
#   check_fails NAME CMD...    ok when CMD exits non-zero
#   on_exit CMD                run CMD at exit (cleanups run last-in first-out)
#   BACKENDS      "runsc runc" unless overridden
set -u
TG=${TG:-$BUILD/tollgate}
TG_ROOT=$(mktemp -d /tmp/tollgate-root.XXXXXX)
BACKENDS=${BACKENDS:-"runsc runc"}
_cleanups=()
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
  local i
  for ((i=${#_cleanups[@]}-1; i>=0; i--)); do eval "${_cleanups[$i]}" >/dev/null 2>&1 || true; done
  # Anything the script left in its root is a leak: force-delete it so the
  # machine stays clean, and report it as a failure.
  if [ -x "$TG" ]; then
    for id in $("$TG" --root "$TG_ROOT" list -q 2>/dev/null); do
      echo "FAIL - leaked container $id"
      "$TG" --root "$TG_ROOT" delete --force "$id" >/dev/null 2>&1 || true
    done
  fi
  if grep -q " $TG_ROOT" /proc/self/mounts; then
    echo "FAIL - leaked mounts under $TG_ROOT"
    grep " $TG_ROOT" /proc/self/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l
  fi
  rm -rf "$TG_ROOT"
}
trap _run_cleanups EXIT
tg() { "$TG" --root "$TG_ROOT" "$@"; }
check() { local n=$1; shift; if "$@"; then echo "ok - $n"; else echo "FAIL - $n (command: $*)"; fi; }
check_fails() { local n=$1; shift; if "$@"; then echo "FAIL - $n (expected failure: $*)"; else echo "ok - $n"; fi; }
check_eq() { if [ "$2" == "$3" ]; then echo "ok - $1"; else echo "FAIL - $1: want [$2] got [$3]"; fi; }
check_match() { if [[ "$3" =~ $2 ]]; then echo "ok - $1"; else echo "FAIL - $1: [$3] does not match /$2/"; fi; }

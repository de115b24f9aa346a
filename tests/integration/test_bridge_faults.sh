#!/usr/bin/env bash
# Faults, under runsc and runc, with the detached sidecar (create/start):
#  - kill -9 of the sidecar mid-call: the client gets a clear error within
#    its own timeout, the running tool dies with the sidecar, and delete
#    still cleans everything up;
#  - the container killed mid-call: the sidecar notices through its pidfd
#    and exits; after delete nothing is left (process, mount, state).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

chmod 755 "$TG_ROOT"
POL=$TG_ROOT/pol
mkdir -p "$POL"
cp "$here/bridge/upper.py" "$here/bridge/slow.py" "$POL/"
cat > "$POL/policy.json" <<'P'
{"version": 1,
 "tools": {"slow": {"backend": {"type": "exec", "argv": ["slow.py"]}, "timeout": 20,
                    "rules": [{"effect": "allow"}]}},
 "budgets": {"max_tool_calls": 100}}
P
chmod -R a+rX "$POL"

sidecar_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sidecar_pid"])' "$TG_ROOT/$1/state.json"; }
# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done
}
tool_running() { pgrep -f "$POL/slow.py" >/dev/null; }
tool_gone() { ! tool_running; }
pid_gone() { ! kill -0 "$1" 2>/dev/null; }
no_mounts() { ! grep -q " $TG_ROOT/$1" /proc/self/mounts; }

for rt in $BACKENDS; do
  # --- kill -9 of the sidecar while a call is running ---
  id=sck-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    '/run/tollgate/tollgate-call --timeout 4 slow "{\"s\":6}"; echo "rc=$?"'
  out=$TG_ROOT/$id.out
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >"$out" 2>&1
  on_exit "tg delete --force $id"
  sc=$(sidecar_of "$id")
  check "$rt: sidecar running after create (pid $sc)" kill -0 "$sc"
  check "$rt: the sidecar is not create's child" test "$(ps -o ppid= -p "$sc" | tr -d ' ')" != "$$"
  tg start "$id"
  check "$rt: tool call in flight" wait_for 10 tool_running
  kill -9 "$sc"
  check "$rt: client gave up within its timeout" wait_for 15 grep -q '^rc=' "$out"
  check_eq "$rt: client exit status: no answer (12)" "rc=12" "$(grep '^rc=' "$out")"
  check_match "$rt: client error names the dead bridge" "no answer from the tollgate bridge" "$(cat "$out")"
  check "$rt: the running tool died with the sidecar" wait_for 5 tool_gone
  check "$rt: delete after a dead sidecar" tg delete --force "$id"
  check "$rt: no mount left after delete" no_mounts "$id"
  check "$rt: no state left after delete" test ! -e "$TG_ROOT/$id"

  # --- the container killed while a call is running ---
  id=ck-$rt
  make_bundle "$TG_ROOT/bundles/$id" sh -c \
    '/run/tollgate/tollgate-call slow "{\"s\":4}"; echo "rc=$?"; sleep 60'
  tg --runtime "$rt" create --policy "$POL/policy.json" -b "$TG_ROOT/bundles/$id" "$id" >/dev/null 2>&1
  on_exit "tg delete --force $id"
  sc=$(sidecar_of "$id")
  tg start "$id"
  check "$rt: tool call in flight" wait_for 10 tool_running
  tg kill "$id" KILL
  check "$rt: sidecar exits when the container dies" wait_for 15 pid_gone "$sc"
  check "$rt: no tool process left" wait_for 5 tool_gone
  check "$rt: delete after the container died" tg delete --force "$id"
  check "$rt: no mount left" no_mounts "$id"
  check "$rt: no state left" test ! -e "$TG_ROOT/$id"
  check_eq "$rt: audit log closed and verifies" 0 "$(tg audit verify "$TG_ROOT/audit/$id.jsonl" >/dev/null 2>&1; echo $?)"
done
check_eq "no tollgate containers left" "" "$(tg list -q 2>/dev/null)"

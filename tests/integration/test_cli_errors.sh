#!/usr/bin/env bash
# Every error a user or containerd meets at the CLI: one clear line that
# names the fix, a non-zero status, a runc-style JSON line in --log, and
# no partial state after a failed create (under runsc and runc).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

work=$TG_ROOT/work
mkdir -p "$work"
log=$work/errors.log

# expect_error NAME REGEX CMD...: fails, one line on stderr matching REGEX,
# and (when CMD logs) the last --log line is a JSON error with that msg.
expect_error() {
  local name=$1 re=$2; shift 2
  local out rc
  out=$("$@" 2>&1 </dev/null)
  rc=$?
  check_fails "$name: non-zero status" test "$rc" -eq 0
  check_eq "$name: one line" 1 "$(printf '%s\n' "$out" | wc -l)"
  check_match "$name: says what and how to fix" "$re" "$out"
}

make_bundle "$work/good"
expect_error "missing bundle" 'bundle .*/nope does not exist: pass --bundle' \
  tg create --bundle "$work/nope" e1
mkdir -p "$work/nocfg"
expect_error "bundle without config.json" 'has no config.json: write one with' \
  tg create --bundle "$work/nocfg" e1
mkdir -p "$work/badjson"
printf '{"ociVersion": "1.0.2",\n "process": {"args": ["sh",]}}\n' >"$work/badjson/config.json"
cp "$work/badjson/config.json" "$work/badjson.before"
expect_error "bad JSON" 'config.json: .*line 2, column [0-9]+.*fix the JSON' \
  tg create --bundle "$work/badjson" e1
check "bad JSON: config.json untouched" cmp -s "$work/badjson/config.json" "$work/badjson.before"
check_fails "bad JSON: no original written" test -e "$work/badjson/config.json.orig"
# A crash can leave the (unsynced) effective config half-written: the
# error then points at the original that an earlier create kept.
make_bundle "$work/halfwritten"
mv "$work/halfwritten/config.json" "$work/halfwritten/config.json.orig"
printf '{"ociVersion": "1.0.2", "annotations": {"dev.tollgate.eff' >"$work/halfwritten/config.json"
expect_error "half-written effective config" 'config.json: .*fix the JSON; config.json.orig beside it is the original .*move config.json.orig back to config.json' \
  tg create --bundle "$work/halfwritten" e1
check "half-written effective config: the original is untouched" \
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/halfwritten/config.json.orig"
check_fails "half-written effective config: no state left" test -e "$TG_ROOT/e1"
make_bundle "$work/norootfs"
edit_json "$work/norootfs/config.json" 'c["root"]["path"] = "/nonexistent/rootfs"'
cp "$work/norootfs/config.json" "$work/norootfs.before"
expect_error "missing rootfs" 'root.path /nonexistent/rootfs is not a usable directory \(build the rootfs' \
  tg create --bundle "$work/norootfs" e1
check "missing rootfs: config.json untouched" cmp -s "$work/norootfs/config.json" "$work/norootfs.before"
check_fails "missing rootfs: no state left" test -e "$TG_ROOT/e1"
# JSON holds only UTF-8: a config.json string that is not (an overlong
# '/', which yajl's lexer lets by) and a bundle path that is not are named
# when the effective config or state.json is written, with no state left.
make_bundle "$work/overlong"
python3 - "$work/overlong/config.json" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
open(sys.argv[1], "wb").write(b.replace(b'"TERM=xterm"', b'"X=..\xc0\xafetc", "TERM=xterm"', 1))
PY
expect_error "config.json string not UTF-8" 'effective config.json: the string at process.env\[1\] is not valid UTF-8.*give it in UTF-8' \
  tg create --bundle "$work/overlong" e1
check_fails "config.json string not UTF-8: no state left" test -e "$TG_ROOT/e1"
make_bundle "$work/bad"$'\xff'"path"
expect_error "bundle path not UTF-8" 'the string at bundle is not valid UTF-8' \
  tg create --bundle "$work/bad"$'\xff'"path" e1
check_fails "bundle path not UTF-8: no state left" test -e "$TG_ROOT/e1"
expect_error "unknown command" 'unknown command "frobnicate".*tollgate help' tg frobnicate
expect_error "unknown flag" 'create: unknown flag --frob.*tollgate help create' \
  tg create --frob --bundle "$work/good" e1
expect_error "unknown global flag" 'unknown flag --frob' tg --frob list
expect_error "invalid id" 'invalid container id "\.\./x"' tg create --bundle "$work/good" ../x
expect_error "invalid id in state" 'invalid container id' tg state 'a/b'
expect_error "reserved id" 'reserved' tg create --bundle "$work/good" backend
expect_error "delete of an unknown id" 'container nosuch does not exist' tg delete nosuch
check "delete --force of an unknown id succeeds, as runc's does" tg delete --force nosuch
expect_error "state of an unknown id" 'container nosuch does not exist' tg state nosuch
expect_error "kill of an unknown id" 'container nosuch does not exist' tg kill nosuch KILL
expect_error "unknown signal" 'unknown signal "BOGUS"' tg kill x BOGUS
expect_error "exec without command" 'no command given' tg exec x

# A missing backend: never a fall back to runc.
write_config runtime_path='"/nonexistent"'
expect_error "missing runsc" 'runsc \(gVisor\) not found at /nonexistent.*make deps.*--runtime runc' \
  tg create --bundle "$work/good" e2
check_fails "missing runsc: no state left" test -e "$TG_ROOT/e2"
check_fails "missing runsc: bundle untouched" test -e "$work/good/config.json.orig"
write_config runtime='"runc"' runtime_path='"/nonexistent"'
expect_error "missing runc" 'runc not found at /nonexistent' tg create --bundle "$work/good" e2
write_config bogus=1
expect_error "unknown host config key" 'host config .*unknown key "bogus"' \
  tg create --bundle "$work/good" e2
write_config
expect_error "missing --config file" 'host config .* does not exist' \
  "$TG" --root "$TG_ROOT" --config "$work/none.json" create --bundle "$work/good" e2

# Errors in --log: runc's JSON lines, appended.
rm -f "$log"
"$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --log "$log" --log-format json delete nosuch 2>/dev/null
"$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --log "$log" --log-format json kill nosuch 2>/dev/null
check_eq "log: one line per error" 2 "$(wc -l <"$log")"
check "log: runc-style JSON error lines" python3 - "$log" <<'PY'
import json, re, sys
for line in open(sys.argv[1]):
    v = json.loads(line)
    assert list(v) == ["level", "msg", "time"], v
    assert v["level"] == "error"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", v["time"]), v
    assert "container nosuch does not exist" in v["msg"], v
PY

# A create that fails in the backend leaves nothing behind.  The backend is
# made to fail by a global flag it does not know (a missing rootfs would now
# be caught by tollgate itself, before the backend runs).
for rt in $BACKENDS; do
  b=$work/broken-$rt
  make_bundle "$b"
  write_config 'runtime_args=["--no-such-flag"]'
  cp "$b/config.json" "$work/broken-$rt.before"
  tg --runtime "$rt" create --bundle "$b" --pid-file "$work/broken-$rt.pid" "broken-$rt" \
    </dev/null >"$work/broken-$rt.out" 2>&1
  check_fails "$rt: failed create exits non-zero" test $? -eq 0
  write_config
  check_match "$rt: failed create names the backend" "$rt create" "$(tail -n1 "$work/broken-$rt.out")"
  check_fails "$rt: no state directory" test -e "$TG_ROOT/broken-$rt"
  check_fails "$rt: no pid file" test -e "$work/broken-$rt.pid"
  check "$rt: config.json restored" cmp -s "$b/config.json" "$work/broken-$rt.before"
  check_fails "$rt: no original left" test -e "$b/config.json.orig"
  check_eq "$rt: backend has no container" "" \
    "$(command "$rt" --root "$TG_ROOT/backend/$rt" list -q 2>/dev/null | grep -v '^ID' || true)"
  check_eq "$rt: list is empty" "" "$(tg list -q)"
done

# A second create of a live id is refused and leaves the first alone.
tg create --bundle "$work/good" dup </dev/null >/dev/null 2>&1
expect_error "duplicate id" 'container with id exists: dup' tg create --bundle "$work/good" dup
check_eq "duplicate id: the first is intact" created \
  "$(tg state dup | json_get status)"
check "duplicate id: delete" tg delete dup

# help, version and features: no backend needed.
check_match "help lists every lifecycle verb" 'create.*start.*run.*state.*kill.*delete.*exec.*ps.*list.*pause.*resume.*update.*features' \
  "$(tg help | tr '\n' ' ')"
check_match "--help" 'usage: tollgate' "$(tg --help)"
check_match "create --help" 'usage: tollgate .*create .*--bundle' "$(tg create --help)"
check_match "version" '^tollgate version [0-9.]+' "$(tg version)"
check_match "--version names the spec" 'spec: 1\.0' "$(tg --version)"
check "features is the runtime-spec features JSON" python3 -c '
import json, sys
f = json.load(sys.stdin)
assert f["ociVersionMin"] and f["ociVersionMax"]
assert "CAP_SYS_ADMIN" in f["linux"]["capabilities"]
assert "SCMP_ACT_ERRNO" in f["linux"]["seccomp"]["actions"]
assert "network" in f["linux"]["namespaces"]
' < <(tg features)

# create racing delete --force on one id: the delete waits for the create
# (or finds nothing), so the end is a whole container or none, never half.
for i in 1 2 3; do
  tg create --bundle "$work/good" race </dev/null >/dev/null 2>&1 &
  creator=$!
  tg delete --force race 2>/dev/null
  wait "$creator"
  if tg state race >/dev/null 2>&1; then
    check_eq "race $i: a whole container" created \
      "$(tg state race | json_get status)"
    tg delete --force race
  else
    check_fails "race $i: no container and no state directory" test -e "$TG_ROOT/race"
  fi
  check_fails "race $i: no mount left" grep -q " $TG_ROOT/race/" /proc/self/mounts
done
check_eq "race: the backend has no container" "" "$(runsc --root "$TG_ROOT/backend/runsc" list -q 2>/dev/null)"

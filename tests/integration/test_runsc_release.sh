#!/usr/bin/env bash
# The flags tollgate derives from the runsc release, checked against what
# the binary itself lists (`runsc flags`), so the script holds for 20221219
# (ptrace, no directfs) and 20240729 (systrap, directfs) alike; run it with
# `tests/integration/run.sh --runsc PATH` for the other one.
#   - platform "auto": ptrace on every release (docs/performance.md); an
#     explicit "systrap" where the release lists it; recorded in
#     state.json and printed by `tollgate version`;
#   - --directfs=false wherever the release has directfs, after the host's
#     runtime_args (a host config cannot turn it back on);
#   - systrap asked of a runsc without it: refused at create, with the fix,
#     nothing left behind;
#   - the version is asked once per binary and cached under <root>/backend/;
#   - the marker race directfs caused: 300 tollgate.py calls and 20 markers
#     beside directory bodies, from inside a real container, none failing.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
case " $BACKENDS " in *" runsc "*) ;; *) echo "ok - runsc not among BACKENDS: nothing to check"; exit 0 ;; esac

RUNSC_BIN=${TG_RUNSC:-$(command -v runsc)}
flags=$("$RUNSC_BIN" flags 2>&1)
release=$("$RUNSC_BIN" --version | head -n1)
if grep -q 'specifies which platform to use:.*systrap' <<<"$flags"; then has_systrap=1; else has_systrap=0; fi
want_platform=ptrace
if grep -qE '^ *-directfs$' <<<"$flags"; then has_directfs=1; else has_directfs=0; fi
echo "# $release: platform $want_platform (systrap listed: $has_systrap), directfs $has_directfs"

state_args() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["backend_args"]))' "$TG_ROOT/$1/state.json"; }

b=$TG_ROOT/bundles/sleep
make_bundle "$b" sleep 60
cp "$b/config.json" "$TG_ROOT/spec.json"

# --- auto --------------------------------------------------------------------
# A host asking for directfs (only a release that has the flag takes it).
if [ "$has_directfs" = 1 ]; then write_config 'runtime_args=["--directfs=true"]'; else write_config; fi
fresh "$TG_ROOT/spec.json" "$b"
if tg --runtime runsc create --bundle "$b" rel-auto 2>"$TG_ROOT/err"; then
  args=$(state_args rel-auto)
  check_match "auto: --platform=$want_platform for $release" "^--platform=$want_platform " "$args"
  if [ "$has_directfs" = 1 ]; then
    check_match "directfs: off, after the host's --directfs=true" '--directfs=true .*--directfs=false$' "$args"
  else
    check_match "directfs: not passed to a release without it" '^--platform=[a-z]+ --network=none --oci-seccomp$' "$args"
  fi
  check "the version is cached under <root>/backend/" \
    grep -q "\"path\": \"$(realpath "$RUNSC_BIN")\"" "$TG_ROOT"/backend/runsc-*.version.json
  check_match "the cache records the release" "\"version\": \"$release\"" "$(cat "$TG_ROOT"/backend/runsc-*.version.json)"
  tg delete --force rel-auto
else
  check "auto: create" false; sed 's/^/# /' "$TG_ROOT/err"
fi
check_match "version: names the release" "backend version: $release" "$(tg --runtime runsc version)"
check_match "version: names the platform" "backend flags: --platform=$want_platform " "$(tg --runtime runsc version)"

# --- explicit platforms --------------------------------------------------------
write_config 'platform="ptrace"'
fresh "$TG_ROOT/spec.json" "$b"
if tg --runtime runsc create --bundle "$b" rel-ptrace 2>"$TG_ROOT/err"; then
  check_match "platform ptrace is kept as written" '^--platform=ptrace ' "$(state_args rel-ptrace)"
  tg delete --force rel-ptrace
else
  check "platform ptrace: create" false; sed 's/^/# /' "$TG_ROOT/err"
fi
write_config 'platform="systrap"'
fresh "$TG_ROOT/spec.json" "$b"
# To a file, not $(...): a created container keeps create's stdio open.
tg --runtime runsc create --bundle "$b" rel-systrap >"$TG_ROOT/out" 2>&1
rc=$?
msg=$(cat "$TG_ROOT/out")
if [ "$has_systrap" = 1 ]; then
  check_eq "platform systrap: created" 0 "$rc"
  [ "$rc" = 0 ] && check_match "platform systrap: recorded" '^--platform=systrap ' "$(state_args rel-systrap)"
  tg delete --force rel-systrap 2>/dev/null
else
  check "platform systrap on $release: refused" test "$rc" -ne 0
  check_match "platform systrap: the message names the fix" 'no systrap platform.*"auto" or "ptrace".*make deps' "$msg"
  check_eq "platform systrap: no container left" "" "$(tg list -q)"
  check_eq "platform systrap: nothing in runsc" "" "$(runsc --root "$TG_ROOT/backend/runsc" list -q 2>/dev/null)"
  check "platform systrap: the bundle is the user's again" cmp -s "$TG_ROOT/spec.json" "$b/config.json"
fi
write_config

# --- the marker race (directfs) ----------------------------------------------------
bridge_fixtures
r=$TG_ROOT/bundles/race
py_bundle "$r" python3 /t/marker_race.py 300 20
out=$(tg --runtime runsc run --policy "$POL/policy.json" -b "$r" release-race 2>&1)
check_eq "marker race: the run exits 0" 0 "$?"
check_match "marker race: every call answered, every marker made" \
  '^marker race: 300 calls, 0 failed; 20 markers, errors none$' "$(grep '^marker race' <<<"$out")"

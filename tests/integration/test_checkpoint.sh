#!/usr/bin/env bash
# checkpoint / restore (issue 17): `tollgate checkpoint` then `restore` of a
# running, governed container under runsc, directly and through a private
# containerd's `ctr task checkpoint` + `ctr container restore`.  After the
# restore the process carries on from its saved state, a governed tool call
# from inside works, and the audit log (continued in the same file, the
# chain unbroken) verifies once the container is deleted.  runc: criu.
# A checkpoint whose container's audit log lost its closing records (a
# full audit disk) fails, naming them.
set -u
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$(dirname "$0")/../.." && pwd)

python3 - "$TOP/bundles/kubernetes/policies.yaml" "$TG_ROOT/policies" <<'PY'
import sys, yaml
cm = yaml.safe_load(open(sys.argv[1]))
for name, text in cm["data"].items():
    open(f"{sys.argv[2]}/{name}", "w").write(text)
PY
POLICY=$TG_ROOT/policies/orders.json
B=$TG_ROOT/bundle
# A counter the restore must carry on from (memory and the sandbox's /tmp).
make_bundle "$B" sh -c 'i=0; while true; do i=$((i+1)); echo $i > /tmp/n; sleep 1; done'
on_exit tg delete --force ck1
call() { tg exec "$1" /run/tollgate/tollgate-call lookup_order "{\"order_id\": \"$2\"}" 2>&1; }

check "checkpoint --help succeeds" tg checkpoint --help
check "restore --help succeeds" tg restore --help
check_match "restore without --image-path says what is missing" 'image-path DIR is required' \
  "$(tg restore --detach --bundle "$B" ck0 2>&1)"

for b in ${SKIP_DIRECT:+none} $BACKENDS; do [ "$b" = none ] && break
  write_config "runtime=\"$b\""
  if [ "$b" = runc ]; then
    echo "ok - # SKIP runc: checkpoint/restore needs criu (3.17 here) dumping a runc container whose seccomp, user and network namespaces tollgate sets up; not covered by this test yet"
    continue
  fi
  rm -rf "$TG_ROOT/img"
  tg run -d --bundle "$B" --policy "$POLICY" ck1 </dev/null >/dev/null 2>&1
  check_eq "$b: running" running "$(tg state ck1 | json_get status)"
  out=$(call ck1 A-1001); check_match "$b: governed call before checkpoint" 'A-1001' "$out"
  sleep 2
  check "$b: tollgate checkpoint" tg checkpoint --image-path "$TG_ROOT/img" ck1
  check "$b: the image is written" test -s "$TG_ROOT/img/checkpoint.img"
  check "$b: checkpoint sealed the image" test -s "$TG_ROOT/img/tollgate.seal.json"
  check_match "$b: the seal records the hardened credentials" '\\"profile\\":\\"hardened\\"' \
    "$(cat "$TG_ROOT/img/tollgate.seal.json")"
  check_eq "$b: the checkpoint key was made 0600 root" "600 0" "$(stat -c '%a %u' "$TG_ROOT/checkpoint.key")"
  check_fails "$b: the key is not in the image" grep -rqF "$(od -An -tx1 "$TG_ROOT/checkpoint.key" | tr -d ' \n')" "$TG_ROOT/img"
  before=$(cat "$TG_ROOT/img/../bundle/config.json" | sha256sum)
  check "$b: delete after checkpoint" tg delete --force ck1
  # A sealed image changed afterwards: one byte of the process state.
  rm -rf "$TG_ROOT/img-t"; cp -a "$TG_ROOT/img" "$TG_ROOT/img-t"
  printf 'X' | dd of="$TG_ROOT/img-t/checkpoint.img" bs=1 seek=4096 conv=notrunc status=none
  out=$(tg restore --image-path "$TG_ROOT/img-t" --detach --bundle "$B" --policy "$POLICY" ck1 2>&1); rc=$?
  check_eq "$b: a tampered sealed image is refused" 1 "$rc"
  check_match "$b: the refusal names the seal and the fix" 'has a seal that does not verify.*changed after tollgate sealed it.*restore only an image that `tollgate checkpoint` took' "$out"
  check_fails "$b: nothing is left of the refused restore" tg state ck1
  # A file added to the image, and a link in it.
  rm -rf "$TG_ROOT/img-t"; cp -a "$TG_ROOT/img" "$TG_ROOT/img-t"; echo extra > "$TG_ROOT/img-t/extra"
  check_match "$b: an image with a file added is refused" 'does not verify' \
    "$(tg restore --image-path "$TG_ROOT/img-t" --detach --bundle "$B" ck1 2>&1)"
  rm -f "$TG_ROOT/img-t/extra"; ln -s /etc/shadow "$TG_ROOT/img-t/extra"
  check_match "$b: an image holding a symbolic link is refused" 'extra is a symbolic link: a checkpoint image holds only directories and regular files' \
    "$(tg restore --image-path "$TG_ROOT/img-t" --detach --bundle "$B" ck1 2>&1)"
  # The seal under another host's key does not verify here.
  mv "$TG_ROOT/checkpoint.key" "$TG_ROOT/checkpoint.key.mine"
  head -c 32 /dev/urandom > "$TG_ROOT/checkpoint.key"; chmod 600 "$TG_ROOT/checkpoint.key"
  check_match "$b: a seal made under another key is refused" 'does not verify under this host' \
    "$(tg restore --image-path "$TG_ROOT/img" --detach --bundle "$B" ck1 2>&1)"
  mv -f "$TG_ROOT/checkpoint.key.mine" "$TG_ROOT/checkpoint.key"
  rm -rf "$TG_ROOT/img-t"
  check_fails "$b: nothing is left of the refused restores" tg state ck1
  check "$b: tollgate restore" tg restore --image-path "$TG_ROOT/img" --detach --bundle "$B" --policy "$POLICY" ck1
  check_eq "$b: restored container runs" running "$(tg state ck1 | json_get status)"
  n=$(tg exec ck1 cat /tmp/n 2>&1)
  check_match "$b: the process carried on from its saved counter" '^[0-9]+$' "$n"
  check_eq "$b: the restored config is hardened as create hardens it" "$before" "$(sha256sum < "$B/config.json")"
  out=$(call ck1 A-1002); rc=$?
  check_eq "$b: governed call after restore succeeds" 0 "$rc"
  check_match "$b: governed call after restore returns the result" 'A-1002' "$out"
  check "$b: delete the restored container" tg delete --force ck1
  log=$TG_ROOT/audit/ck1.jsonl
  check_match "$b: the audit log holds the call before the checkpoint" 'A-1001' "$(cat "$log")"
  check_match "$b: and the call after the restore" 'A-1002' "$(cat "$log")"
  check "$b: audit verify passes" tg audit verify "$log"
  rm -f "$log"
done

# The attack of issue 27: a checkpoint of a really unhardened container
# (passthrough: root with CAP_SYS_ADMIN, NET_RAW and SYS_PTRACE) restored
# with a hardened bundle would keep the image's uid and capabilities.
case " $BACKENDS " in *" runsc "*)
  HB=$TG_ROOT/hostile
  make_bundle "$HB" sh -c 'while true; do sleep 1; done'
  python3 - "$HB/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
caps = ["CAP_SYS_ADMIN", "CAP_NET_RAW", "CAP_SYS_PTRACE", "CAP_KILL", "CAP_CHOWN"]
c["process"]["user"] = {"uid": 0, "gid": 0}
c["process"]["capabilities"] = {k: caps for k in ("bounding", "effective", "permitted")}
c["process"]["noNewPrivileges"] = False
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
  write_config 'runtime="runsc"' allow_passthrough=true 'profile="passthrough"'
  on_exit tg delete --force hc1
  rm -rf "$TG_ROOT/himg"
  tg run -d --bundle "$HB" hc1 </dev/null >/dev/null 2>&1
  st=$(tg exec hc1 cat /proc/1/status 2>&1)
  check_match "runsc: the unhardened container runs as root" $'Uid:\t0\t0\t0\t0' "$st"
  capeff=$(printf '%s\n' "$st" | awk '/^CapEff/ {print $2}')
  check_eq "runsc: with CAP_SYS_ADMIN (CapEff $capeff)" 1 "$(( (0x${capeff:-0} >> 21) & 1 ))"
  check "runsc: the unhardened container is checkpointed (sealed with what it had)" \
    tg checkpoint --image-path "$TG_ROOT/himg" hc1
  check_match "runsc: its seal records uid 0 and the passthrough profile" '\\"profile\\":\\"passthrough\\".*\\"uid\\":0' \
    "$(cat "$TG_ROOT/himg/tollgate.seal.json")"
  tg delete --force hc1 >/dev/null 2>&1
  write_config 'runtime="runsc"'
  out=$(tg restore --image-path "$TG_ROOT/himg" --detach --bundle "$HB" hc1 2>&1); rc=$?
  check_eq "runsc: restore of the unhardened image into a hardened bundle is refused" 1 "$rc"
  check_match "runsc: the refusal says the image's credentials are not the hardened spec's" 'checkpointed from container hc1 whose process ran with .*"uid":0.*CAP_SYS_ADMIN.*hardened spec gives .*"profile":"hardened".*start the container anew' "$out"
  check_fails "runsc: no restored container is left" tg state hc1
  # The same image without its seal (as a checkpoint taken by the backend
  # itself, or by anyone else, would be).
  rm -f "$TG_ROOT/himg/tollgate.seal.json"
  out=$(tg restore --image-path "$TG_ROOT/himg" --detach --bundle "$HB" hc1 2>&1); rc=$?
  check_eq "runsc: an unsealed image is refused" 1 "$rc"
  check_match "runsc: the refusal names the missing seal, the rule and the opt-in" 'is not sealed \(the image has no tollgate.seal.json\).*allow_unsealed_restore' "$out"
  write_config 'runtime="runsc"' allow_unsealed_restore=true
  out=$(tg restore --image-path "$TG_ROOT/himg" --detach --bundle "$HB" hc1 2>&1); rc=$?
  check_eq "runsc: allow_unsealed_restore does not admit it under runsc" 1 "$rc"
  check_match "runsc: the refusal says why runsc cannot be checked" 'allow_unsealed_restore does not apply under runsc: .*sentry' "$out"
  check_fails "runsc: still no restored container" tg state hc1
  write_config 'runtime="runsc"'
  rm -rf "$TG_ROOT/himg"
  ;;
esac
echo "ok - # SKIP runc: allow_unsealed_restore's check of the restored processes (/proc/PID/status) needs a runc restore, and criu 3.17.1's own check fails on this kernel (docs/cli.md)"

# A full audit disk as the container stops with its checkpoint: the gate's
# closing records are lost, and checkpoint says so instead of exiting 0
# (issue 38).  A tmpfs of a few KiB is the audit directory; once the gate
# has opened, a filler takes the rest of it.
case " $BACKENDS " in *" runsc "*)
  FULL=$TG_ROOT/fullaudit
  mkdir -p "$FULL"
  if mount -t tmpfs -o size=64k tmpfs "$FULL"; then
    on_exit "umount -l '$FULL'"
    write_config 'runtime="runsc"' "audit_dir=\"$FULL\""
    on_exit tg delete --force cfull
    rm -rf "$TG_ROOT/fimg"
    tg run -d --bundle "$B" --policy "$POLICY" cfull </dev/null >/dev/null 2>&1
    check_eq "runsc: full audit disk: running" running "$(tg state cfull | json_get status)"
    dd if=/dev/zero of="$FULL/filler" bs=1k count=1024 2>/dev/null
    # tmpfs gives the log whole pages: calls fill the one it has, then
    # every record fails and the gate refuses calls (fail closed).
    for _ in $(seq 1 30); do
      tg exec cfull /run/tollgate/tollgate-call lookup_order '{"order_id": "A-1001"}' >/dev/null 2>&1
      crc=$?
      [ "$crc" -eq 10 ] && break
    done
    check_eq "runsc: full audit disk: calls are refused once the log cannot grow (audit_unavailable)" 10 "$crc"
    out=$(tg checkpoint --image-path "$TG_ROOT/fimg" cfull 2>&1); rc=$?
    check_eq "runsc: full audit disk: checkpoint fails" 1 "$rc"
    check_match "runsc: ... naming the lost closing records and the fix" \
      "audit log in $FULL lost records as it closed.*free space there" "$out"
    check "runsc: ... though the image is written and sealed" test -s "$TG_ROOT/fimg/tollgate.seal.json"
    rm -f "$FULL/filler"
    check "runsc: full audit disk: delete" tg delete --force cfull
    rm -rf "$TG_ROOT/fimg"
    write_config 'runtime="runsc"'
  else
    echo "FAIL - runsc: full audit disk: cannot mount a tmpfs at $FULL"
  fi
  ;;
esac

# Through a private containerd: `ctr task checkpoint` (containerd's runc v2
# shim calls `tollgate checkpoint --image-path ... --work-path ...
# --leave-running`), then a new container from the checkpoint
# (`ctr container restore --live`) whose task start is `tollgate restore`.
case " $BACKENDS " in *" runsc "*) ;; *) exit 0 ;; esac
. "$(dirname "$0")/containerd_lib.sh"
write_config 'runtime="runsc"'
# runsc 20221219's `checkpoint --leave-running` (what `ctr task checkpoint`
# asks for) stops the sandbox instead of restarting it: seen here, the task
# is STOPPED afterwards.  That release's direct checkpoint/restore (above)
# works; the ctr flow needs the 20240729 release.
rel=$(tg --runtime runsc version 2>/dev/null | sed -n "s/^backend version: runsc version //p")
case "$rel" in
  *20221219*) echo "ok - # SKIP ctr checkpoint/restore: runsc $rel stops the sandbox on checkpoint --leave-running"; exit 0 ;;
esac
ctrd_start || exit 1
ctrd_import busybox
BB=localhost/tollgate/busybox:test
ctr_tg -d --annotation dev.tollgate.policy=orders "$BB" ctk1 sh -c 'i=0; while true; do i=$((i+1)); echo $i > /tmp/n; sleep 1; done' >/dev/null 2>&1
sleep 2
out=$(ctr task checkpoint ctk1 2>&1); rc=$?
check_eq "ctr task checkpoint succeeds ($out)" 0 "$rc"
ref=$(printf '%s\n' "$out" | tail -n1)
check_match "ctr task checkpoint names the checkpoint image" 'checkpoint' "$ref"
check_eq "the task runs on after ctr task checkpoint" RUNNING "$(ctr task ls | awk '$1 == "ctk1" {print $3}')"
ctr image rm "$ref" >/dev/null 2>&1
# containerd names a task checkpoint after the second it was taken: one the
# container checkpoint below takes in that same second shares its name with
# the image just removed, and its restore failed "media type not found"
# (seen once in the full suite, not alone).
sleep 1.1
# ctr 1.6 restores from a container checkpoint, which holds the task's
# checkpoint (the same `tollgate checkpoint` call) with the image and spec.
out=$(ctr container checkpoint --task --image ctk1 localhost/ckpt/ctk1:1 2>&1)
check_eq "ctr container checkpoint --task ($out)" 0 "$?"
ctr task kill -s KILL ctk1 >/dev/null 2>&1; sleep 1
ctr task delete ctk1 >/dev/null 2>&1; ctr container delete ctk1 >/dev/null 2>&1
# containerd 1.6 unpacks the checkpoint into /tmp/ctrd-checkpoint<N> for
# the restore and leaves it there: the ones this restore makes are removed.
before_dirs=$(ls -d /tmp/ctrd-checkpoint* 2>/dev/null)
out=$(ctr container restore --live ctk2 localhost/ckpt/ctk1:1 2>&1)
check_eq "ctr container restore --live ($out)" 0 "$?"
for d in /tmp/ctrd-checkpoint*; do
  [ -d "$d" ] || continue
  case $'\n'"$before_dirs"$'\n' in *$'\n'"$d"$'\n'*) continue ;; esac
  check "the checkpoint containerd unpacked carries the seal" test -s "$d/tollgate.seal.json"
  on_exit "rm -rf '$d'"
done
check_eq "restored task is running" RUNNING "$(ctr task ls | awk '$1 == "ctk2" {print $3}')"
check_match "the restored process carried on" '^[0-9]+$' "$(ctr_exec ctk2 e1 cat /tmp/n 2>&1)"
out=$(ctr_exec ctk2 e2 /run/tollgate/tollgate-call lookup_order '{"order_id": "A-2002"}' 2>&1)
check_eq "governed call in the ctr-restored container succeeds ($out)" 0 "$?"
ctr task kill -s KILL ctk2 >/dev/null 2>&1; sleep 1
check "ctr task delete of the restored task" ctr task delete ctk2
log=$TG_ROOT/audit/ctk2.jsonl
check_match "the ctr-restored container's audit log records the call" 'A-2002' "$(cat "$log" 2>&1)"
check "the ctr-restored container's audit log verifies" tg audit verify "$log"
ctr container delete ctk2 >/dev/null 2>&1
ctr image rm localhost/ckpt/ctk1:1 >/dev/null 2>&1
ctrd_check_clean "after checkpoint/restore" runsc

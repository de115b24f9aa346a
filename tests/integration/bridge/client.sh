# Runs inside a container on the busybox rootfs: the static C client.
C=/run/tollgate/tollgate-call
ok() { echo "ok - c: $1"; }
bad() { echo "FAIL - c: $1"; }
r=$($C echo '{"text":"héllo ✓"}'); [ "$r" = '{"text":"héllo ✓"}' ] && ok "echo round-trips unicode" || bad "echo [$r]"
r=$($C upper '{"text":"abc"}'); case "$r" in *'"upper":"ABC"'*) ok "exec tool upper";; *) bad "upper [$r]";; esac
$C refund '{"amount":1}' >/dev/null 2>&1; rc=$?
[ $rc -eq 3 ] && ok "denied exits 3" || bad "denied exit $rc"
$C nothere 2>/dev/null; rc=$?; [ $rc -eq 6 ] && ok "unknown tool exits 6" || bad "unknown exit $rc"
$C upper '{"text":"x","fail":true}' 2>/dev/null; rc=$?; [ $rc -eq 7 ] && ok "tool failure exits 7" || bad "tool failed exit $rc"
$C upper '{"text":5}' 2>/dev/null; rc=$?; [ $rc -eq 2 ] && ok "schema violation exits 2" || bad "bad_request exit $rc"
big=$(head -c 61440 /dev/zero | tr '\0' 'x')
r=$(echo "{\"text\":\"$big\"}" | $C echo -)
[ "$r" = "{\"text\":\"$big\"}" ] && ok "60 KiB payload" || bad "60 KiB payload (${#r} bytes back)"
# 8 concurrent callers, each answer checked against its own question
for t in 1 2 3 4 5 6 7 8; do
  ( n=0; for i in $(seq 1 25); do
      r=$($C echo "{\"t\":$t,\"i\":$i}"); [ "$r" = "{\"t\":$t,\"i\":$i}" ] && n=$((n+1))
    done; echo "count $t $n" ) &
done
wait
echo "c client done"

#!/usr/bin/env bash
# `tollgate serve` driven by the unmodified e2b and e2b-code-interpreter
# SDKs from PyPI (pinned in sdk/requirements.lock), over loopback, under
# runsc (docs/serve.md): create, cells that keep state, commands (one in
# the background, fed stdin and killed), 1 MiB files, set_timeout,
# operations racing a pause and a kill,
# connect from a second process, list by metadata, a deadline kept within
# 2 s, kill, pause and resume; a governed call decided by the tenant's
# policy and approved through /tollgate/ and with the tollgate CLI; the
# refusals (keys, another tenant, envd tokens, the quota); 10 clients at
# once; 1,100 connections of one client that never send a whole request
# (the others are served); 16 uploads of 10 MiB at once; 4 that never
# finish beside a write; 300 cells of one tenant held (another tenant is
# served, a cell whose client left never runs); kill -9 of the service, tollgate gc taking a
# sandbox whose deadline passed meanwhile, and a restart that takes the others back (one paused).
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
repo=$(cd "$here/../.." && pwd)
PY=$repo/.venv/bin/python
[ -x "$PY" ] || { echo "FAIL - the project venv $PY is missing: make deps"; exit 1; }
bash "$repo/bundles/rootfs/debian.sh" "$BUILD/rootfs/debian" 2>/dev/null || echo "FAIL - debian rootfs build"
# The service's template is a copy of its own: the runtimes make their
# mount points in a template they run, and the cached tree is test_images'
# untouched input (its tests run on overlays of it).
cp -a "$BUILD/rootfs/debian" "$TG_ROOT/debian"

S=$TG_ROOT/serve
mkdir -p "$S/pol"
cat > "$S/pol/policy.json" <<'P'
{"version": 1,
 "tools": {"echo":    {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "allow"}]},
           "shout":   {"backend": {"type": "builtin", "name": "echo"}, "rules": [{"effect": "deny", "reason": "never"}]},
           "careful": {"backend": {"type": "builtin", "name": "echo"},
                       "rules": [{"effect": "approve", "reason": "a person decides"}]},
           "lookup":  {"backend": {"type": "client"}, "description": "an order, from the client's host",
                       "args": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                "required": ["order_id"], "additionalProperties": false},
                       "rules": [{"effect": "allow"}]}},
 "approval": {"timeout": 60},
 "budgets": {"max_tool_calls": 100}}
P
chmod -R a+rX "$S/pol"
KEY=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
OTHER=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat > "$S/tenants.json" <<J
{"tenants": {"acme":  {"api_keys": ["$KEY"], "policy": "$S/pol/policy.json", "max_sandboxes": 12,
                       "audit_dir": "$S/audit-acme"},
             "other": {"api_keys": ["$OTHER"], "max_sandboxes": 5, "memory": "256m", "max_memory": "512m",
                       "audit_dir": "$S/audit-other"}}}
J
chmod 600 "$S/tenants.json"
port=$(( 20000 + RANDOM % 20000 ))
export E2B_API_KEY=$KEY OTHER_KEY=$OTHER TENANT_AUDIT=$S/audit-acme E2B_DOMAIN=e2b.invalid TG SERVE_ROOT=$S/state/root \
       E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port

serve_pid=""
# The service's soft open-file limit is 1,024, a systemd unit's default.
start_serve() {
  ( ulimit -Sn 1024; exec "$TG" serve --listen 127.0.0.1:$port --tenants "$S/tenants.json" --state "$S/state" \
    --template "base=$TG_ROOT/debian" --log "$S/events.log" --transfer-timeout 8 \
    --socket "$S/serve.sock" --socket-group nogroup >>"$S/serve.out" 2>&1 ) &
  serve_pid=$!
  wait_for 30 curl -s -o /dev/null "http://127.0.0.1:$port/v2/sandboxes"
}
stop_serve() { [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null; serve_pid=""; }
# Whatever the service left is this script's to remove.
on_exit 'stop_serve; for c in $("$TG" --root "$S/state/root" list -q 2>/dev/null); do "$TG" --root "$S/state/root" delete --force "$c"; done; grep " $S/" /proc/self/mounts | cut -d" " -f2 | xargs -r -n1 umount -l'
client() { timeout 600 "$PY" "$repo/tests/serve/e2b_client.py" "$@"; }
containers() { "$TG" --root "$S/state/root" list -q 2>/dev/null | grep -c .; }
no_containers() { [ "$(containers)" = 0 ]; }

check "the service starts and answers" start_serve
# The pipes the service holds when nothing runs (its event loop's own).
pipes_of_serve() { find /proc/$serve_pid/fd -lname 'pipe:*' 2>/dev/null | grep -c .; }
idle_pipes=$(pipes_of_serve)
pipes_back() { [ "$(pipes_of_serve)" -le "$idle_pipes" ]; }
out=$(client basics); echo "$out" | grep -E '^(ok|FAIL) - '
sid=$(echo "$out" | sed -n 's/^SANDBOX //p')
client connect "$sid" | grep -E '^(ok|FAIL) - '
client gone | grep -E '^(ok|FAIL) - '
check "a killed or expired sandbox leaves no container" wait_for 10 no_containers
client killed | grep -E '^(ok|FAIL) - '
check "a sandbox whose container died leaves no container" wait_for 10 no_containers
client pause | grep -E '^(ok|FAIL) - '
# A pause, a command, a write and a cell at once on one sandbox (a kill
# too, in the last round): each answered with what the closed session or
# the removed container said ("container sdk-... does not exist", "no
# answer from the session's interpreter in time", a 500 naming pause()).
client races 3 | grep -E '^(ok|FAIL) - '
check "after the races no container is left" wait_for 10 no_containers
check_eq "after the races no sandbox record is left (a restart would find them)" "" "$(ls "$S/state/sandboxes")"
# Every command's pipes are closed when it ends, not when collected: under
# churn the service held two of each ended command.
check "after the races the service holds no pipe of an ended command (idle: $idle_pipes)" wait_for 10 pipes_back
client governed | grep -E '^(ok|FAIL) - '
for f in "$S"/audit-acme/*.jsonl; do check "audit verify $(basename "$f")" "$TG" audit verify "$f"; done
client refusals | grep -E '^(ok|FAIL) - '
# The SDK's client mode, as an unprivileged user (nobody) through the
# unix socket (0660, group nogroup), with Debian's python3 (the SDK's client
# mode needs nothing but the standard library): host functions as governed tools.
chmod 755 "$S"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
      timeout 300 /usr/bin/python3 "$repo/tests/serve/remote_client.py" "unix:$S/serve.sock" "$KEY" orphan 2>&1)
echo "$out" | grep -E '^(ok|FAIL) - '
orphan=$(echo "$out" | sed -n 's/^ORPHAN //p')
check "the client mode made a sandbox whose client then died" test -n "$orphan"
[ -n "$orphan" ] && client orphan "$orphan" | grep -E '^(ok|FAIL) - '
client crowd 10 5 | grep -E '^(ok|FAIL) - '
check "after the crowd no container is left" wait_for 10 no_containers
# 1,100 connections that never send a whole request: they held a file
# each, for ever, and at the 1,024 open files the service could take no
# connection, so no sandbox was made or used while they were held.
client flood 1100 | grep -E '^(ok|FAIL) - '
check "after the flood no container is left" wait_for 10 no_containers
# 16 uploads of 10 MiB at once into one sandbox: the service held every
# body (and its parts) at once, and beside them the sandbox's 64 MiB /tmp
# was full (and at 24 MiB its helpers ended the sandbox); /files
# transfers now take a few places at a time (5 files fit).
client uploads 16 10 "$serve_pid" | grep -E '^(ok|FAIL) - '
check "after the uploads no container is left" wait_for 10 no_containers
# 4 uploads of one tenant whose bodies never arrive held all its places
# for /files, for ever: its next write got 503 after 30 s.  Each is cut
# at --transfer-timeout (8 s here) and the write lands.
client trickle 4 | grep -E '^(ok|FAIL) - '
check "after the trickles no container is left" wait_for 10 no_containers
# 300 cells of one sandbox held at once: each waited for its turn in a
# thread of the service's one pool of 256, and another tenant's create
# got no thread; cells whose clients had left still ran, one by one.
client cells 300 "$serve_pid" | grep -E '^(ok|FAIL) - '
check "after the cells no container is left" wait_for 10 no_containers

# kill -9 of the service with two sandboxes running and one paused.  Their
# containers have no owner and the sandbox's deadline plus 5 s
# (docs/serve.md): the one whose deadline passes while the service is down
# goes with tollgate gc; the restarted service takes the other two back.
out=$(client before_kill)
# Killed at once: the expiring sandbox must still be the service's own
# when it dies (its checks below read what tollgate recorded).
kill -9 "$serve_pid"; wait "$serve_pid" 2>/dev/null; serve_pid=""
echo "$out" | grep -E '^(ok|FAIL) - '
end=$(echo "$out" | sed -n 's/^END //p' | cut -d. -f1)
made=$(echo "$out" | sed -n 's/^SANDBOX //p')
check "the expiring sandbox was not yet due at the kill" test "$(date +%s)" -lt "$end"
check_eq "2 containers running at the kill" 2 "$(containers)"
# The expiring one's container deadline is its end plus 5 s, rounded up to
# the second (the API's endAt is whole seconds: at most its end plus 6).
# It was counted in seconds from when tollgate ran, up to a second and a
# process start later, and gc at the end plus 6 s once found it not yet due.
end_s=$(echo "$out" | sed -n 's/^END //p' | cut -d. -f1)
dls=$(for c in $("$TG" --root "$S/state/root" list -q 2>/dev/null); do
        json_get deadline <"$S/state/root/$c/lifetime.json" 2>/dev/null; echo; done | tr '\n' ' ')
check_match "the expiring sandbox's container deadline is its end plus 5 or 6 s ($((end_s + 5)) or $((end_s + 6)))" \
  "(^| )($((end_s + 5))|$((end_s + 6)))( |$)" "$dls"
# While the deadline comes: TLS from given certificate files, a second
# listener of the same code.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$S/tls.key" -out "$S/tls.crt" >/dev/null 2>&1
tport=$((port + 1))
"$TG" serve --listen 127.0.0.1:$tport --tenants "$S/tenants.json" --state "$S/state-tls" \
  --template "base=$TG_ROOT/debian" --tls-cert "$S/tls.crt" --tls-key "$S/tls.key" >>"$S/serve-tls.out" 2>&1 &
tls_pid=$!
on_exit "kill $tls_pid"
check "the TLS listener answers over HTTPS" wait_for 30 curl -sf --cacert "$S/tls.crt" -H "X-API-Key: $KEY" \
  "https://127.0.0.1:$tport/v2/sandboxes"
check_fails "and not over plain HTTP" curl -sf -H "X-API-Key: $KEY" "http://127.0.0.1:$tport/v2/sandboxes"
kill "$tls_pid"; wait "$tls_pid" 2>/dev/null
while [ "$(date +%s)" -le $((end + 6)) ]; do sleep 0.5; done
gc_out=$("$TG" gc --all-roots 2>&1)
check_eq "with no service, gc past the deadline deleted the expired one only" 1 "$(containers)"
[ "$(containers)" = 1 ] || echo "diagnosis: now $(date +%s.%N), end $end, gc: $gc_out"
check "the service starts again" start_serve
check_eq "and took the two back" 2 "$(grep -c '"sandbox_readopted"' "$S/events.log")"
dropped=$(grep '"sandbox_dropped"' "$S/events.log" | grep -c 'its container is gone')
check_eq "the expired one is recorded, with the reason" 1 "$dropped"
[ "$dropped" = 1 ] ||
  echo "diagnosis: dropped: $(grep '"sandbox_dropped"' "$S/events.log" | cut -c1-400); gc: $gc_out"
client after_restart $made | grep -E '^(ok|FAIL) - '
check "nothing of them left" wait_for 10 no_containers
stop_serve
check_eq "nothing left under the service's root" 0 "$(containers)"
check_eq "no sandbox records left" "" "$(ls "$S/state/sandboxes" 2>/dev/null)"
check_eq "no bundles or paused images left" "" "$(ls "$S/state/paused" "$S/state/paused/bundles" 2>/dev/null | grep sdk-)"

# kill -9 of the service in the middle of a pause and of a resume.  A
# pause is `tollgate checkpoint` (which seals the image last), the
# session's record beside the image, the container's removal and then the
# service's record: killed after the seal, the restarted service found a
# running record and no running container, and dropped the sandbox, image
# and all.  The kill comes as the first's image is sealed; the second's
# resume is wherever it is then.
check "the service starts for a pause cut short" start_serve
out=$(client pause_setup); echo "$out" | grep -E '^(ok|FAIL) - '
read -r pa pb <<<"$(echo "$out" | sed -n 's/^SANDBOX //p' | tr '\n' ' ')"
pcid=$(json_get container_id <"$S/state/sandboxes/$pa.json" 2>/dev/null)
timeout 120 "$PY" "$repo/tests/serve/e2b_client.py" pause_go "$pa" "$pb" >"$S/pause_go.out" 2>&1 &
go_pid=$!
on_exit "kill $go_pid"
check "pausekill: the first's image is sealed" \
  wait_for -i 0.01 60 test -f "$S/state/paused/$pcid/image/tollgate.seal.json"
kill -9 "$serve_pid"; wait "$serve_pid" 2>/dev/null; serve_pid=""
wait "$go_pid"
check "the service starts again after the pause cut short" start_serve
check_match "pausekill: the restart keeps the first paused, finishing its pause" \
  '"sandbox_readopted".*"state": "paused", "pause_finished": true' "$(grep "\"$pa\"" "$S/events.log" | tail -n1)"
check_eq "pausekill: neither is dropped" "" "$(grep '"sandbox_dropped"' "$S/events.log" | grep -E "\"($pa|$pb)\"")"
client pause_after "$pa" "$pb" | grep -E '^(ok|FAIL) - '
check "pausekill: nothing of them left" wait_for 10 no_containers
stop_serve
check_eq "pausekill: no sandbox records, bundles or paused images left" "" \
  "$(ls "$S/state/sandboxes" "$S/state/paused" "$S/state/paused/bundles" 2>/dev/null | grep -E 'sdk-|json')"

# TERM while a client's long command and long cell are in flight: uvicorn
# waited for their streams, so the service did not stop (nor delete the
# sandbox) until they ended.  It must stop at once, and the calls end.
check "the service starts for a TERM under load" start_serve
# Not through client(): $! is then timeout's own pid, which passes the
# kill below on to the client (a subshell's kill left it for 2 minutes).
timeout 600 "$PY" "$repo/tests/serve/e2b_client.py" hold >"$S/hold.out" 2>&1 &
hold_pid=$!
on_exit "kill $hold_pid"
check "a long command and a long cell are running" wait_for 60 grep -q '^HOLDING' "$S/hold.out"
stops=$(grep -c '"event": "stopped"' "$S/events.log")
kill "$serve_pid"
check "TERM with calls in flight: the service ends within 20 s" wait_for 20 pid_gone "$serve_pid"
wait "$serve_pid" 2>/dev/null; serve_pid=""
check_eq "... its sandbox deleted" 0 "$(containers)"
check_eq "... and its stop recorded" $((stops + 1)) "$(grep -c '"event": "stopped"' "$S/events.log")"
check "... the client's command and cell ended rather than hang" \
  wait_for 30 eval '[ "$(grep -c "^ENDED" "$S/hold.out")" = 2 ]'
kill "$hold_pid" 2>/dev/null; wait "$hold_pid" 2>/dev/null

# The service as PID 1 of a PID namespace (a container started with no
# init, `docker run IMAGE tollgate serve`).  Every sandbox's orphans are
# that PID 1's to reap, and runsc's delete waits for its sandbox's
# process: reaping nothing, the service took 2 minutes per kill.  It now
# splits in two (sdk/tollgate_sdk/_pid1.py): PID 1 stays an init that
# reaps them and passes TERM on.
p1port=$((port + 2))
unshare --pid --fork --mount-proc --kill-child "$TG" serve --listen 127.0.0.1:$p1port \
  --tenants "$S/tenants.json" --state "$S/state-pid1" --template "base=$TG_ROOT/debian" \
  --log "$S/events-pid1.log" >>"$S/serve-pid1.out" 2>&1 &
p1=$!
on_exit "kill -9 $p1 2>/dev/null"
check "as PID 1: the service starts and answers" wait_for 30 curl -s -o /dev/null "http://127.0.0.1:$p1port/v2/sandboxes"
E2B_API_URL=http://127.0.0.1:$p1port E2B_SANDBOX_URL=http://127.0.0.1:$p1port client pid1 | grep -E '^(ok|FAIL) - '
init=$(pgrep -P "$p1")
check_eq "as PID 1: the first process stays, with the service as its one child" 1 "$(pgrep -P "$init" | grep -c .)"
zombies() { ps -o stat= --ppid "$init" | grep -c Z; }
check "as PID 1: no zombie is left under it" wait_for 5 eval '[ "$(zombies)" = 0 ]'
kill -TERM "$init"
wait "$p1"
check_eq "as PID 1: TERM to it is passed on, and the service ends with exit 0" 0 "$?"
check_eq "as PID 1: nothing left under its root" "" "$("$TG" --root "$S/state-pid1/root" list -q 2>/dev/null)"
check_eq "as PID 1: the service recorded its stop" 1 "$(grep -c '"event": "stopped"' "$S/events-pid1.log")"

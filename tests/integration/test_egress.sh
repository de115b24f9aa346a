#!/usr/bin/env bash
# Governed egress (docs/egress.md) with real containers under runsc and
# runc: an http tool whose allow list names http://127.0.0.1:PORT/prefix/.
# Everything runs inside a network namespace this script makes (loopback
# only), with the HTTP server on 127.0.0.1 there, so no request can leave
# the machine even if the code is wrong.  Covered: an allowed GET that
# reaches the server with the injected credential while neither the
# program, nor the audit log, nor `calls` ever holds it; a path outside
# the prefix, "..", another method, another port; the rules and approvals
# on top; redirects out of the prefix, back in, to a name that resolves to
# loopback, in a loop; the metadata address and each numeric spelling of
# loopback, refused before any connect (the server's log did not grow);
# CR/LF in a header and in the URL; the program setting the credential or
# Host itself; a request body and a response over their size limits; the
# time limit; binary bodies; a per-tool call budget; the request made as
# the tools' uid in namespaces of its own; the audit records (method,
# URL with the query redacted, status, bytes each way, time); other
# spellings of a denied path (percent-encoded, double-encoded, ";", dot
# segments, "//", backslash, overlong UTF-8, case), each canonicalised
# before the rules or refused, with no request the most lenient server
# would route there arriving; and a credential a server copies into a
# refused redirect at every offset around the message's cut.
if [ -z "${EGRESS_NETNS:-}" ]; then
  exec unshare --net env EGRESS_NETNS=1 bash "$0" "$@"
fi
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ip link set lo up
bridge_fixtures

PORT=8080 PORT2=8081
srv_log=$TG_ROOT/server.log srv2_log=$TG_ROOT/server2.log
: > "$srv_log"; : > "$srv2_log"
python3 "$here/egress/server.py" $PORT "$srv_log" &
srv=$!
on_exit "kill $srv"
python3 "$here/egress/server.py" $PORT2 "$srv2_log" &
srv2=$!
on_exit "kill $srv2"
up() { python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$1" 2>/dev/null; }
check "the test servers listen on 127.0.0.1 in the test's own network namespace" \
  wait_for 10 up $PORT
wait_for 10 up $PORT2
check_fails "the test's namespace reaches no other network" \
  python3 -c 'import socket; socket.create_connection(("192.0.2.1", 80), 1)'

TOKEN=tok-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat > "$POL/egress.json" <<P
{"version": 1,
 "tools": {
   "fetch": {"backend": {"type": "http",
               "allow": [{"url": "http://127.0.0.1:$PORT/prefix/", "methods": ["GET", "POST", "PUT"]},
                         {"url": "http://localhost:$PORT/prefix/", "methods": ["GET"]}],
               "inject_headers": {"Authorization": "Bearer \${env:EGRESS_TOKEN}"},
               "redact_query": true, "max_redirects": 3},
             "timeout": 20,
             "rules": [{"if": {"arg": "path", "op": "prefix", "value": "/prefix/admin/"},
                        "effect": "deny", "reason": "the admin area"},
                       {"if": {"arg": "path", "op": "prefix", "value": "/prefix/forbidden"},
                        "effect": "deny", "reason": "the forbidden page"},
                       {"if": {"arg": "method", "op": "==", "value": "PUT"},
                        "effect": "approve", "reason": "writes need a person"},
                       {"effect": "allow"}]},
   "fetch_once": {"backend": {"type": "http",
                    "allow": [{"url": "http://127.0.0.1:$PORT/prefix/", "methods": ["GET"]}]},
                  "max_calls": 1, "rules": [{"effect": "allow"}]},
   "fetch_quick": {"backend": {"type": "http", "max_request_bytes": 16,
                     "allow": [{"url": "http://127.0.0.1:$PORT/prefix/", "methods": ["GET"]}]},
                   "timeout": 2, "rules": [{"effect": "allow"}]}},
 "approval": {"timeout": 1},
 "budgets": {"max_tool_calls": 300}}
P
check "policy check accepts the http tool" tg policy check "$POL/egress.json"
cat > "$POL/bad.json" <<P
{"version": 1, "tools": {"f": {"backend": {"type": "http",
  "allow": [{"url": "http://2130706433/", "methods": ["get"]}],
  "inject_headers": {"Authorization": "Bearer \${env:}"}}, "rules": [{"effect": "allow"}]}}}
P
check_refused "policy check refuses a bad http backend" 'spelled another way' tg policy check "$POL/bad.json"
msg=$(tg policy check "$POL/bad.json" 2>&1)
check_match "policy check names every problem of it" 'uppercase.*variable name|variable name.*uppercase' "$(tr '\n' ' ' <<<"$msg")"

# A policy ceiling compares the canonical forms: another spelling of the
# ceiling's path is within it, a path the canonical form refuses is a
# policy error, not a way around the ceiling.
ceil_policy() { # FILE ALLOW-URL
  cat > "$1" <<P
{"version": 1, "tools": {"api": {"backend": {"type": "http",
  "allow": [{"url": "$2", "methods": ["GET"]}]}, "rules": [{"effect": "allow"}]}}}
P
}
ceil_policy "$POL/ceil.json" "https://api.example.com/v1/"
ceil_policy "$POL/ceil-spelled.json" "https://api.example.com/v%31/invoices/"
ceil_policy "$POL/ceil-params.json" "https://api.example.com/v1/..;/admin/"
ceil_policy "$POL/ceil-out.json" "https://api.example.com/%61dmin/"
check "--within: another spelling of the ceiling's path is within it" \
  tg policy check --within "$POL/ceil.json" "$POL/ceil-spelled.json"
check_refused "--within: an allow entry with ..; is a policy error" "';'" \
  tg policy check --within "$POL/ceil.json" "$POL/ceil-params.json"
out=$(tg policy check --within "$POL/ceil.json" "$POL/ceil-out.json" 2>&1)
check_match "--within: an encoded path outside the ceiling is refused, named canonically" \
  'GET https://api.example.com/admin/ in the policy, within no allow entry' "$out"

# v KEY: the value at KEY (case.path, see egress/flatten.py) of this run;
# has KEY: it is there at all.
v() { awk -F'\t' -v k="$1" '$1 == k {print $2; found = 1; exit} END {exit !found}' "$flat"; }
has() { v "$1" >/dev/null; }
refused() { # NAME CODE REGEX: case NAME failed with CODE and a message matching REGEX
  check_eq "$rt: $1 is refused with $2" "false $2" "$(v $1.ok) $(v $1.code)"
  check_match "$rt: $1: the message says why" "$3" "$(v $1.message)"
}
seen() { grep -c "\"path\": \"$1" "$srv_log"; }

for rt in $BACKENDS; do
  id=egress-$rt
  : > "$srv_log"; : > "$srv2_log"
  make_bundle "$TG_ROOT/bundles/$id" python3 /e/prog.py $PORT $PORT2
  edit_json "$TG_ROOT/bundles/$id/config.json" 'c["root"]["path"] = args[0]' "$PY_ROOTFS"
  add_ro_bind "$TG_ROOT/bundles/$id/config.json" /e "$here/egress"
  EGRESS_TOKEN=$TOKEN tg --runtime "$rt" run --policy "$POL/egress.json" \
    -b "$TG_ROOT/bundles/$id" "$id" > "$TG_ROOT/$id.out" 2>&1 &
  runpid=$!
  # The first case waits 6 s for its answer: meanwhile, the process that
  # makes the request is there to look at.
  fetcher=""
  check "$rt: a request is made by a tollgate-http process" \
    wait_for 60 eval 'fetcher=$(pgrep -x tollgate-http | head -n1); [ -n "$fetcher" ]'
  check_eq "$rt: ... as the tools' uid, not root" 65533 "$(host_uid "$fetcher")"
  check_eq "$rt: ... in the gate's network namespace (the container has none)" \
    "$(readlink /proc/self/ns/net)" "$(readlink /proc/"$fetcher"/ns/net)"
  check "$rt: ... in user and pid namespaces of its own" test \
    "$(readlink /proc/"$fetcher"/ns/user) $(readlink /proc/"$fetcher"/ns/pid)" != \
    "$(readlink /proc/self/ns/user) $(readlink /proc/self/ns/pid)"
  wait $runpid
  out=$(cat "$TG_ROOT/$id.out")
  log=$TG_ROOT/audit/$id.jsonl
  flat=$TG_ROOT/$id.flat
  python3 "$here/egress/flatten.py" "$flat" "$log" <<<"$out"
  check_match "$rt: the program ran every case" '"case": "once_2"' "$out"
  check_eq "$rt: the program's environment holds no token" '[]' "$(v env.result)"
  check_fails "$rt: the program's output never holds the secret" grep -q "$TOKEN" <<<"$out"

  # --- allowed requests ---
  check_eq "$rt: an allowed GET returns 200" "true 200" "$(v get.ok) $(v get.result.status)"
  check_eq "$rt: the server got the program's own header" "t1" "$(v get.result.body~.headers.X-Trace)"
  check_eq "$rt: the credential the server echoed is redacted in the result" "[redacted]" \
    "$(v get.result.body~.headers.Authorization)"
  check_eq "$rt: a response header echoing it is redacted" "[redacted]" "$(v get.result.headers.x-echo-auth)"
  check_fails "$rt: the response header named in inject_headers is dropped" has get.result.headers.authorization
  check "$rt: the server saw the injected credential" \
    grep -q "\"path\": \"/prefix/echo?q=secretquery\".*\"Authorization\": \"Bearer $TOKEN\"" "$srv_log"
  check_eq "$rt: tollgate.http.get works" "200" "$(v helper_get.result.status)"
  check_eq "$rt: tollgate.http.post sends its body" "hello body" "$(v helper_post.result.body~.body)"
  check_eq "$rt: a binary body comes back as base64" \
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==" \
    "$(v binary.result.body_base64)"

  # --- refused by the allow list, the rules and approvals: never sent ---
  refused path_outside denied 'not in the tool.s allow list'
  refused dotdot bad_request '"\.\." segment'
  refused method denied 'DELETE is not allowed .*allowed: GET, POST, PUT'
  refused port denied "127.0.0.1:$PORT2/prefix/echo-port is not in the tool.s allow list"
  refused rule_denied denied 'the forbidden page'
  refused approval approval_timeout 'approval timed out'
  for p in /other/ /prefix/echo-method /prefix/forbidden /prefix/echo-put; do
    check_eq "$rt: the server never saw $p" 0 "$(seen $p)"
  done
  check_eq "$rt: the server on the other port saw nothing" 0 "$(wc -l < "$srv2_log")"

  # --- redirects: each hop checked again ---
  refused redirect_out tool_failed 'redirect is refused: GET http://127.0.0.1:8080/other/x is not in the tool.s allow list'
  check_eq "$rt: the redirect out was answered once and never followed" "1 0" \
    "$(seen /prefix/redirect-out) $(seen /other/x)"
  check_eq "$rt: a redirect within the prefix is followed" "200 1" \
    "$(v redirect_in.result.status) $(v redirect_in.result.redirects)"
  check "$rt: the credential goes to the same origin after a redirect" \
    grep -q "\"path\": \"/prefix/echo?from=redirect\".*\"Authorization\": \"Bearer $TOKEN\"" "$srv_log"
  refused redirect_localhost tool_failed 'localhost resolves to (127\.0\.0\.1|::1), a loopback address'
  check_eq "$rt: the redirect to a name of loopback never connected" 0 "$(seen /prefix/echo-via-name)"
  refused redirect_loop tool_failed 'more than 3 redirects'

  # --- SSRF: the metadata address and loopback's numeric spellings ---
  refused metadata denied '169.254.169.254'
  refused metadata_mapped denied '::ffff:169.254.169.254'
  for i in 0 1 2 3 4; do refused numeric_$i bad_request 'IPv4 address 127.0.0.1 spelled another way'; done
  refused numeric_5 denied '\[::ffff:127.0.0.1\]:8080/prefix/echo-numeric-5 is not in'
  refused numeric_6 denied '\[::1\]:8080'
  refused numeric_7 denied '0.0.0.0:8080'
  refused numeric_8 denied '\[::\]:8080'
  refused numeric_9 tool_failed 'localhost resolves to (127\.0\.0\.1|::1), a loopback address'
  refused numeric_10 bad_request 'trailing dot'
  refused numeric_11 bad_request 'percent-encoded host'
  refused numeric_12 bad_request 'userinfo'
  check_eq "$rt: no spelling of loopback reached the server" 0 "$(seen /prefix/echo-numeric)"

  # --- headers and URL bytes ---
  refused crlf_header bad_request 'control byte 0x0d'
  refused crlf_url bad_request 'control byte 0x0d'
  refused own_auth bad_request 'set by the host \(inject_headers\)'
  refused host_header bad_request 'Host frames or routes'
  for p in /prefix/echo-crlf /prefix/echo-auth /prefix/echo-host; do
    check_eq "$rt: the server never saw $p" 0 "$(seen $p)"
  done
  check_fails "$rt: no request carried an injected line" grep -q 'X-Evil' "$srv_log"

  # --- bounds ---
  check_eq "$rt: a slow answer within the tool's timeout arrives" "200 late" \
    "$(v slow.result.status) $(v slow.result.body)"
  refused quick_timeout tool_timeout 'fetch_quick did not finish within 2000 ms'
  refused body_too_big bad_request 'request body has 17 bytes, more than max_request_bytes \(16\)'
  check_eq "$rt: the body over the limit was never sent" 0 "$(seen /prefix/echo-big-body)"
  refused big tool_failed 'larger than max_response_bytes \(262144\)'
  check_eq "$rt: a per-tool budget: the first call runs" "200" "$(v once_1.result.status)"
  refused once_2 budget_exhausted 'fetch_once'
  check_eq "$rt: the call over the per-tool budget was never sent" 1 "$(seen /prefix/echo-once)"

  # --- one canonical URL (issue 38.6): other spellings of /prefix/admin/ ---
  refused admin_0 denied 'the admin area'
  refused admin_1 denied 'the admin area'
  refused admin_2 denied 'the admin area'
  refused admin_3 bad_request 'double encoding'
  refused admin_4 bad_request 'double encoding'
  refused admin_5 bad_request "';'"
  refused admin_6 bad_request "';'"
  refused admin_7 bad_request "';'"
  refused admin_8 bad_request '"\.\." segment'
  refused admin_9 bad_request '"\.\." segment'
  refused admin_10 bad_request 'empty segment'
  refused admin_11 bad_request 'backslash'
  refused admin_12 bad_request '0x5c'
  refused admin_13 bad_request 'not UTF-8'
  check_eq "$rt: /prefix/ADMIN/ is another path (paths keep their case): the server has none" \
    "true 404" "$(v admin_14.ok) $(v admin_14.result.status)"
  check_eq "$rt: no spelling of the admin area reached the server, even read leniently" 0 \
    "$(grep -c '"resolved": "/prefix/admin/' "$srv_log")"
  check_eq "$rt: the canonical request is the one sent" 1 \
    "$(grep -c '"path": "/prefix/echo-canon/caf%C3%A9?k=v%2F"' "$srv_log")"
  check_eq "$rt: the program's result names the canonical URL" \
    "200 http://127.0.0.1:$PORT/prefix/echo-canon/caf%C3%A9?k=v%2F" \
    "$(v canon_sent.result.status) $(v canon_sent.result.url)"
  check_eq "$rt: the audit log records the canonical URL" \
    "http://127.0.0.1:$PORT/prefix/echo-canon/caf%C3%A9?[redacted]" "$(v audit_canon.args.url)"

  # --- a secret echoed into a message at every offset around its cut (issue 38.7) ---
  check "$rt: no message, audit record or calls line holds 8 bytes of the token" \
    python3 "$here/egress/pieces.py" "$TOKEN" "$TG_ROOT/$id.out" "$log" <(tg calls "$id" --format json)

  # --- the audit log and calls ---
  check "$rt: the audit log verifies" tg audit verify "$log"
  check_fails "$rt: the audit log never holds the secret" grep -q "$TOKEN" "$log"
  check_fails "$rt: the audit log never holds a redacted query" grep -q "secretquery" "$log"
  check_eq "$rt: the audit record holds method, URL (query redacted) and status" \
    "GET http://127.0.0.1:$PORT/prefix/echo?[redacted] 200" \
    "$(v audit_get.http.method) $(v audit_get.http.url) $(v audit_get.http.status)"
  check_match "$rt: ... and bytes each way and the time" '^[0-9]+ [1-9][0-9]* [0-9]+$' \
    "$(v audit_get.http.bytes_sent) $(v audit_get.http.bytes_received) $(v audit_get.http.duration_ms)"
  check_eq "$rt: the audit args hold the program's headers, not the credential" "t1" \
    "$(v audit_get.args.headers.X-Trace)"
  check_eq "$rt: a request body is logged by its size" "10 10" \
    "$(v audit_post.args.body_bytes) $(v audit_post.http.bytes_sent)"
  calls=$(tg calls "$id" --format json)
  check_match "$rt: calls lists the http calls" '"tool": "fetch"' "$calls"
  check_fails "$rt: calls never holds the secret" grep -q "$TOKEN" <<<"$calls"
  tg delete --force "$id" >/dev/null 2>&1
done

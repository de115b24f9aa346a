#!/usr/bin/env bash
# `tollgate mcp` (docs/mcp.md) driven by the official MCP Python SDK (the
# pinned `mcp` package of the project's .venv, tests/mcp/py_client.py), over
# stdio and over Streamable HTTP (`tollgate mcp --http`), for each protocol
# revision the server speaks: 2025-11-25 (initialize; approvals by
# elicitation) and 2026-07-28 (no handshake; approvals by input_required).
# Each: tools/list, a program whose governed calls run, two parked calls
# put to the person (one approved, one denied), a running program cancelled
# (its later call never runs); at 2026-07-28 also the tasks extension (a
# run as a task polled to completion, another cancelled by tasks/cancel).
# Over HTTP also with 1,100 connections of another address held that never
# send a whole request (the server's soft open-file limit 1,024).
# Under the first backend only: the protocol is the same for both, and
# test_mcp.sh runs both backends.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/mcp
py=$top/.venv/bin/python3
if ! "$py" -c 'import mcp' 2>/dev/null; then
  echo "FAIL - the project's .venv has no mcp package: run 'make deps'"
  exit 0
fi
bash "$top/bundles/rootfs/python.sh" "$BUILD/rootfs/python"
# The policy's exec tool must be reachable by the tools' user (65534).
stage=$(mktemp -d /tmp/tollgate-mcp-py.XXXXXX)
on_exit "rm -rf $stage"
chmod 755 "$stage"
cp "$here/policy.json" "$stage/policy.json"
cp -r "$top/bundles/examples/orders/tools" "$stage/tools"
chmod -R go+rX "$stage"
write_config mcp_elicit_approvals=true
backend=${BACKENDS%% *}
server=("$TG" --root "$TG_ROOT" --config "$TG_CONFIG" --runtime "$backend" mcp --policy "$stage/policy.json"
        --tools "$here/py_tools.py" --rootfs "$BUILD/rootfs/python")
argv=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "${server[@]}")

for rev in 2025-11-25 2026-07-28; do
  timeout 180 "$py" "$here/py_client.py" "stdio $rev" "$rev" "$TG_ROOT/audit" stdio "$argv"
  check_eq "stdio $rev: the Python client exits 0" 0 "$?"
done

# The server as PID 1 of a PID namespace (a container started with no
# init): it splits in two (sdk/tollgate_sdk/_pid1.py), the first process
# staying an init that reaps the sandboxes' orphans, so the client's
# whole run works as above, and no zombie waits under that init.
pid1=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \
       unshare --pid --fork --mount-proc --kill-child "${server[@]}")
timeout 180 "$py" "$here/py_client.py" "stdio as PID 1" 2026-07-28 "$TG_ROOT/audit" stdio "$pid1"
check_eq "stdio as PID 1 of a PID namespace: the Python client exits 0" 0 "$?"

# Streamable HTTP on loopback: one server for both revisions.
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Its soft open-file limit is 1,024, a systemd unit's default.
( ulimit -Sn 1024; exec "${server[@]}" --http "127.0.0.1:$port" 2>"$stage/http.err" ) &
http_pid=$!
on_exit "kill $http_pid; wait $http_pid"
port_open() { "$py" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; }
check "http: the server listens on 127.0.0.1:$port" wait_for 30 port_open
for rev in 2025-11-25 2026-07-28; do
  timeout 180 "$py" "$here/py_client.py" "http $rev" "$rev" "$TG_ROOT/audit" http "http://127.0.0.1:$port/mcp"
  check_eq "http $rev: the Python client exits 0" 0 "$?"
done
# 1,100 connections from another address that never send a whole
# request (an MCP client is untrusted before it says anything): at the
# 1,024 open files they stopped the server accepting anyone while held.
"$py" - "$port" >"$stage/flood.out" 2>&1 <<'P' &
import resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
held = []
for _ in range(1100):
    s = socket.socket(); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    held.append(s)
print("held", len(held), flush=True)
time.sleep(600)
P
flood_pid=$!
on_exit "kill $flood_pid"
flooded() { grep -q '^held 1100' "$stage/flood.out"; }
check "http: 1,100 connections held from another address" wait_for 60 flooded
timeout 180 "$py" "$here/py_client.py" "http, flooded" 2026-07-28 "$TG_ROOT/audit" http "http://127.0.0.1:$port/mcp"
check_eq "http: with them held, the Python client is served and exits 0" 0 "$?"
kill "$flood_pid"; wait "$flood_pid" 2>/dev/null
if [ -d "$here/node_modules/@modelcontextprotocol/inspector" ]; then
  # The Inspector's CLI over Streamable HTTP, as docs/mcp.md writes it.
  out=$(cd "$here" && timeout 120 npx --no-install mcp-inspector --cli "http://127.0.0.1:$port/mcp" \
        --method tools/list 2>"$stage/inspector.err")
  check_match "http: the Inspector's CLI lists the tools" '"name": "run_python"' "$out"
fi
check_fails "http: a non-loopback address is refused without --http-any-host" \
  "${server[@]}" --http 198.18.0.1:9
# Eight clients' first calls of one session name at once: one session,
# shared (each had opened a container of its own, and all but one were
# lost: running, beyond end_session and the cap, until the server ended).
out=$("$py" - "http://127.0.0.1:$port/mcp" <<'P' 2>&1
import sys, anyio
from mcp import Client
async def one(seen):
    async with Client(sys.argv[1], mode="legacy") as c:
        r = await c.call_tool("run_python", {"code": "n = globals().get('n', 0) + 1\nprint(n)", "session": "shared"})
        seen.append(r.content[0].text.split("--- stdout ---\n", 1)[-1].split("\n", 1)[0])
async def main():
    seen = []
    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(one, seen)
    print("counts", " ".join(sorted(seen, key=lambda v: int(v) if v.isdigit() else -1)))
anyio.run(main)
P
)
check_eq "http: 8 first calls of one session name at once share one session" \
  "counts 1 2 3 4 5 6 7 8" "$(echo "$out" | grep '^counts')"
sessions_made() { ls -d "$TG_ROOT"/sdk-* 2>/dev/null | grep -c .; }
check_eq "http: one container for the shared session" 1 "$(sessions_made)"
# A program still running, and the session still open, at SIGTERM: the
# server closes both itself and exits 0 (uvicorn raised the signal again
# after its shutdown, and the server died before its clean-up: the
# containers were left to whichever tollgate command swept the root next).
"$py" - "http://127.0.0.1:$port/mcp" >"$stage/long.out" 2>&1 <<'P' &
import sys, anyio
from mcp import Client
async def main():
    async with Client(sys.argv[1], mode="legacy") as c:
        await c.call_tool("run_python", {"code": "import time; time.sleep(120)"})
anyio.run(main)
P
long_pid=$!
on_exit "kill $long_pid 2>/dev/null"
two_running() { [ "$(sessions_made)" = 2 ]; }
check "http: a one-shot program runs beside the session" wait_for 60 two_running
kill -TERM "$http_pid"
wait_for 60 pid_gone "$http_pid"
check "http: SIGTERM ends the server" pid_gone "$http_pid"
wait "$http_pid"
check_eq "http: the server exits 0 after SIGTERM (it did its clean-up)" 0 "$?"
# Looked at without a tollgate command, which would sweep what a dead
# owner left and hide it.
check_eq "http: the server removed the session's and the program's containers itself" "" \
  "$(ls -d "$TG_ROOT"/sdk-* 2>/dev/null | tr '\n' ' ')"
kill "$long_pid" 2>/dev/null; wait "$long_pid" 2>/dev/null
check_eq "no container of the MCP servers is left" "" "$(tg list -q 2>/dev/null | tr '\n' ' ')"
check_eq "the MCP servers' audit logs verify" "ok " \
  "$(for l in "$TG_ROOT"/audit/sdk-*.jsonl; do "$TG" audit verify "$l" >/dev/null && echo ok || echo "bad $l"; done | sort -u | tr '\n' ' ')"

# The server's unit tests (pytest, no containers: sdk/tests/test_mcp_*.py)
# and its types (mypy --strict on tollgate_sdk.mcp; the core it imports is
# checked where it is typed), until `make check` runs them itself.
(cd "$top/sdk" && "$py" -m pytest -q -p no:cacheprovider tests/test_mcp_server.py >"$stage/pytest.out" 2>&1)
check_eq "the MCP server's unit tests pass ($(tail -1 "$stage/pytest.out"))" 0 "$?"
(cd "$top/sdk" && "$py" -m mypy --strict --follow-imports=silent --cache-dir "$stage/mypy-cache" tollgate_sdk/mcp >"$stage/mypy.out" 2>&1)
check_eq "mypy --strict reports nothing in tollgate_sdk.mcp ($(tail -1 "$stage/mypy.out"))" 0 "$?"

# A Python without the `mcp` package: refused at once, naming the fix.  (The
# runs above used the project's .venv, which `tollgate mcp` picks itself.)
nomcp=$(mktemp -d /tmp/tollgate-nomcp.XXXXXX)
on_exit "rm -rf $nomcp"
python3 -m venv --without-pip "$nomcp"
out=$(TOLLGATE_PYTHON=$nomcp/bin/python3 "${server[@]}" </dev/null 2>&1)
check_eq "a Python without mcp: tollgate mcp fails" 1 "$?"
check_match "a Python without mcp: the error names make deps" 'package `mcp` is missing.*make deps' "$out"

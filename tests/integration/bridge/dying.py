#!/usr/bin/python3
# In-container harness of test_bridge_faults.sh: N concurrent callers of the
# slow tool (half through tollgate-call, half through tollgate.py), while the
# host kills the sidecar with SIGKILL.  Each caller prints one JSON line:
# how its call ended and when (time.time(), set against the host's time of
# the kill).  Then, once a new sidecar has rewritten tools.json (bounded
# wait), one more call through each client, which must succeed.
import json
import os
import subprocess
import sys
import threading
import time

import tollgate

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8
TOOLS = "/run/tollgate/tools.json"
lock = threading.Lock()


def say(**kw):
    with lock:
        print(json.dumps(kw), flush=True)


def c_call(seconds, timeout):
    p = subprocess.run(["/run/tollgate/tollgate-call", "--timeout", str(timeout), "slow",
                        json.dumps({"s": seconds})], capture_output=True, text=True)
    return p.returncode, p.stderr.strip()[-400:]


def py_call(seconds, timeout):
    try:
        tollgate.call("slow", _timeout=timeout, s=seconds)
        return "ok", ""
    except tollgate.TollgateError as e:
        return e.code, e.message[-400:]


def caller(i):
    t0 = time.time()
    if i % 2 == 0:
        rc, msg = c_call(30, 60)
        say(caller=i, client="c", rc=rc, msg=msg, start=t0, end=time.time())
    else:
        code, msg = py_call(30, 60)
        say(caller=i, client="py", code=code, msg=msg, start=t0, end=time.time())


before = os.stat(TOOLS)
threads = [threading.Thread(target=caller, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
# A new sidecar rewrites tools.json (write and rename) once it serves.
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    st = os.stat(TOOLS)
    if (st.st_ino, st.st_mtime_ns) != (before.st_ino, before.st_mtime_ns):
        break
    time.sleep(0.05)
rc, msg = c_call(0, 20)
code, pmsg = py_call(0, 20)
say(after=True, c_rc=rc, c_msg=msg, py_code=code, py_msg=pmsg)
# Stay up (bounded) until the host has looked at the state: it creates
# calls/go.
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not os.path.exists("/run/tollgate/calls/go"):
    time.sleep(0.1)

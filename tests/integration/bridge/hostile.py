# Runs inside a container (minimal Python rootfs) and attacks the bridge
# through /run/tollgate/calls.  argv[1] is a host path the symlinks point
# at.  Prints ok/FAIL lines; the host checks afterwards that the file was
# neither read nor changed and that the bridge kept serving.
import errno
import json
import os
import sys
import time

import tollgate

SECRET = sys.argv[1]
REQ = "/run/tollgate/calls/req"
RESP = "/run/tollgate/calls/resp"
n = 0


def check(name, cond, detail=""):
    print(("ok - " if cond else "FAIL - ") + "hostile: " + name +
          ("" if cond else " " + repr(detail)), flush=True)


def new_id():
    global n
    n += 1
    return "h%08d%s" % (n, os.urandom(4).hex())


def put(path, data):
    with open(path, "wb") as f:
        f.write(data)


def marker(cid):
    put(os.path.join(REQ, cid + ".done"), b"")


def body(cid, data):
    tmp = os.path.join(REQ, "." + cid + ".tmp")
    put(tmp, data)
    os.rename(tmp, os.path.join(REQ, cid + ".json"))


def response(cid, wait=10.0):
    end = time.monotonic() + wait
    done = os.path.join(RESP, cid + ".done")
    while time.monotonic() < end:
        if os.path.exists(done):
            with open(os.path.join(RESP, cid + ".json"), "rb") as f:
                r = json.loads(f.read())
            os.unlink(done)
            os.unlink(os.path.join(RESP, cid + ".json"))
            return r
        time.sleep(0.002)
    return None


def error_code(r):
    return r and not r.get("ok") and r["error"]["code"]


def legit(name):
    try:
        r = tollgate.call("echo", probe=name)
        check("legitimate call works after " + name, r == {"probe": name}, r)
    except tollgate.TollgateError as e:
        check("legitimate call works after " + name, False, str(e))


# A symlink as the request body, pointing at a host file.
cid = new_id()
os.symlink(SECRET, os.path.join(REQ, cid + ".json"))
marker(cid)
r = response(cid)
check("symlink body: bad_request", error_code(r) == "bad_request", r)
check("symlink body: host file content not leaked", SECRET not in json.dumps(r or {}) or
      "symbolic link" in json.dumps(r), r)
# A symlink as the marker.
cid = new_id()
body(cid, b'{"v":1,"tool":"echo","args":{"via":"marker-link"}}')
try:
    os.symlink(SECRET, os.path.join(REQ, cid + ".done"))
except FileNotFoundError:
    pass  # gVisor's gofer looks the new link up again; the host may have consumed it already
r = response(cid)
check("symlink marker: only a marker, call answered", r and r.get("ok"), r)
# A symlink planted where the response will be written.
cid = new_id()
os.symlink(SECRET, os.path.join(RESP, cid + ".json"))
body(cid, b'{"v":1,"tool":"echo","args":{"x":1}}')
marker(cid)
r = response(cid)
check("symlink at the response path: replaced, not followed", r == {"v": 1, "ok": True, "result": {"x": 1}}, r)
legit("symlinks")

# A FIFO and a directory as the request body.
cid = new_id()
os.mkfifo(os.path.join(REQ, cid + ".json"))
marker(cid)
# gVisor keeps a FIFO made inside the sandbox to itself (the host sees no
# body: a withdrawn call, not answered); under runc the host sees the FIFO
# and refuses it without opening it blocking.
in_gvisor = os.uname().release == "4.4.0"
r = response(cid, 2.0 if in_gvisor else 10.0)
check("FIFO body: bad_request (gVisor: unseen by the host, withdrawn), host not blocked",
      r is None if in_gvisor else error_code(r) == "bad_request", r)
cid = new_id()
os.makedirs(os.path.join(REQ, cid + ".json", "sub", "deeper"))
marker(cid)
check("directory body: bad_request", error_code(response(cid)) == "bad_request")
legit("FIFO and directory")

# Oversize, malformed, deeply nested.
cid = new_id()
body(cid, b'{"v":1,"tool":"echo","args":{"t":"' + b"x" * (70 * 1024) + b'"}}')
marker(cid)
r = response(cid)
check("oversize request: bad_request naming the limit",
      error_code(r) == "bad_request" and "limit" in r["error"]["message"], r)
for label, data in [("malformed", b'{"v":1,"tool":"echo",'),
                    ("not UTF-8", b'{"v":1,"tool":"echo","args":{"t":"\xff\xfe"}}'),
                    ("deeply nested", b'{"v":1,"tool":"echo","args":{"a":' + b"[" * 100000 + b"]" * 100000 + b"}}"),
                    ("wrong shape", b'[1,2,3]'),
                    ("duplicate keys", b'{"v":1,"tool":"echo","tool":"refund","args":{}}')]:
    cid = new_id()
    body(cid, data[:60000])
    marker(cid)
    check(label + " request: bad_request", error_code(response(cid)) == "bad_request")
legit("bad bodies")

# Ids that are not ids: never a path, counted, removed.
for name in ["..done", "...done", "a.b.done", "x" * 65 + ".done", "é.done", " .done",
             "..%2f..%2fetc%2fpasswd.done"]:
    put(os.path.join(REQ, name), b"")
time.sleep(0.3)
left = [f for f in os.listdir(REQ) if f.endswith(".done")]
check("invalid-id markers removed", not left, left)
legit("invalid ids")

# A marker without a body (a withdrawn call: audited as withdrawn, no
# response left for nobody to collect), a body without a marker.
cid = new_id()
marker(cid)
r = response(cid, 1.0)
check("marker without body: withdrawn, not answered", r is None, r)
check("marker without body: the marker is removed",
      not os.path.exists(os.path.join(REQ, cid + ".done")))
cid = new_id()
body(cid, b'{"v":1,"tool":"echo","args":{}}')
check("body without marker: not answered", response(cid, 0.5) is None)
legit("half-written requests")

# A replayed id is never answered twice.
cid = new_id()
body(cid, b'{"v":1,"tool":"echo","args":{"first":true}}')
marker(cid)
check("first use of an id answered", (response(cid) or {}).get("ok") is True)
body(cid, b'{"v":1,"tool":"echo","args":{"second":true}}')
marker(cid)
check("replayed id not answered", response(cid, 1.0) is None)
legit("replay")

# A flood of 10,000 junk files.  Past bridge_refused_per_second the host
# pauses reading this container (the attempt budget), so the files may
# fill the area first: the writer then gets ENOSPC, which is the flood's
# own cost; the host clears them after the pause either way.
written = 0
for i in range(10000):
    try:
        put(os.path.join(REQ, "junk%05d" % i), b"j")
        written += 1
    except OSError as e:
        check("junk flood: only the area's own limit stops it (ENOSPC)", e.errno == errno.ENOSPC, e)
        break
end = time.monotonic() + 20
while time.monotonic() < end and any(f.startswith("junk") for f in os.listdir(REQ)):
    time.sleep(0.1)
legit("%d junk files" % written)
end = time.monotonic() + 20
while time.monotonic() < end and any(f.startswith("junk") for f in os.listdir(REQ)):
    time.sleep(0.1)
check("junk files cleared by the host", not any(f.startswith("junk") for f in os.listdir(REQ)))

# A full tmpfs: a clear error, and calls work again once space frees.
fill = os.path.join(REQ, ".fill")
with open(fill, "wb") as f:
    try:
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    except OSError as e:
        check("bridge area fills up (ENOSPC)", e.errno == errno.ENOSPC, e)
try:
    tollgate.call("echo", x=1)
    check("full area: clear BridgeFull error", False, "call succeeded")
except tollgate.BridgeFull as e:
    check("full area: clear BridgeFull error", "full" in e.message, e.message)
except OSError as e:
    check("full area: clear BridgeFull error", False, repr(e))
os.unlink(fill)
legit("a full area")
print("hostile done", flush=True)

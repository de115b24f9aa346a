# Runs inside a container: many calls in a row through tollgate.py, each
# creating its .done marker that the sidecar consumes at once, plus markers
# beside directory bodies (consumed and removed the fastest).  Under runsc
# 20240729 with directfs on, the create of such a marker failed with ENOENT
# inside the container although the file had been made and served on the
# host (about one call in eight).  Prints one summary line.
import errno
import os
import sys
import time

import tollgate

REQ = "/run/tollgate/calls/req"
calls, dirs = int(sys.argv[1]), int(sys.argv[2])
failed = []
for i in range(calls):
    try:
        if tollgate.call("echo", i=i) != {"i": i}:
            failed.append("call %d: wrong answer" % i)
    except Exception as e:  # any failure is one to report
        failed.append("call %d: %s" % (i, e))
marker_errors = []
for i in range(dirs):
    cid = "race%06d" % i
    os.makedirs(os.path.join(REQ, cid + ".json", "sub"))
    try:
        os.close(os.open(os.path.join(REQ, cid + ".done"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError as e:
        marker_errors.append(errno.errorcode.get(e.errno, str(e.errno)))
    time.sleep(0.02)
print("marker race: %d calls, %d failed%s; %d markers, errors %s" % (
    calls, len(failed), (" (first: %s)" % failed[0]) if failed else "", dirs, marker_errors or "none"))

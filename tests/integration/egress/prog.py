# Runs inside the container: every egress case through the tollgate
# client, one JSON line per case (the result, or the error's code and
# message).  The host-side script judges them.
import json
import os
import sys

import tollgate
from tollgate import fetch

port, port2 = sys.argv[1], sys.argv[2]
base = "http://127.0.0.1:%s" % port


def attempt(name, fn):
    try:
        out = {"case": name, "ok": True, "result": fn()}
    except tollgate.TollgateError as e:
        out = {"case": name, "ok": False, "code": e.code, "message": e.message}
    print(json.dumps(out), flush=True)


print(json.dumps({"case": "env", "ok": True,
                  "result": sorted(k for k in os.environ if "TOKEN" in k)}), flush=True)
# First: a slow answer, while the host-side script looks at the process
# that makes the request.
attempt("slow", lambda: fetch(method="GET", url=base + "/prefix/slow"))
attempt("get", lambda: fetch(method="GET", url=base + "/prefix/echo?q=secretquery",
                             headers={"X-Trace": "t1"}))
attempt("helper_get", lambda: tollgate.http.get(base + "/prefix/echo", tool="fetch"))
attempt("helper_post", lambda: tollgate.http.post(base + "/prefix/echo", body="hello body",
                                                  tool="fetch"))
attempt("binary", lambda: fetch(method="GET", url=base + "/prefix/binary"))
attempt("path_outside", lambda: fetch(method="GET", url=base + "/other/x"))
attempt("dotdot", lambda: fetch(method="GET", url=base + "/prefix/%2e%2e/other/dotdot"))
attempt("method", lambda: fetch(method="DELETE", url=base + "/prefix/echo-method"))
attempt("port", lambda: fetch(method="GET", url="http://127.0.0.1:%s/prefix/echo-port" % port2))
attempt("rule_denied", lambda: fetch(method="GET", url=base + "/prefix/forbidden"))
attempt("approval", lambda: fetch(method="PUT", url=base + "/prefix/echo-put", body="x"))
attempt("redirect_out", lambda: fetch(method="GET", url=base + "/prefix/redirect-out"))
attempt("redirect_in", lambda: fetch(method="GET", url=base + "/prefix/redirect-in"))
attempt("redirect_localhost", lambda: fetch(method="GET", url=base + "/prefix/redirect-localhost"))
attempt("redirect_loop", lambda: fetch(method="GET", url=base + "/prefix/redirect-loop"))
attempt("metadata", lambda: fetch(method="GET", url="http://169.254.169.254/latest/meta-data/"))
attempt("metadata_mapped", lambda: fetch(method="GET",
                                         url="http://[::ffff:169.254.169.254]/latest/meta-data/"))
hosts = ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "0x7f000001", "[::ffff:127.0.0.1]",
         "[::1]", "0.0.0.0", "[::]", "localhost", "127.0.0.1.", "%31%32%37.0.0.1",
         "evil@127.0.0.1"]
for i, h in enumerate(hosts):
    attempt("numeric_%d" % i, lambda: fetch(
        method="GET", url="http://%s:%s/prefix/echo-numeric-%d" % (h, port, i)))
attempt("crlf_header", lambda: fetch(method="GET", url=base + "/prefix/echo-crlf",
                                     headers={"X-A": "a\r\nX-Evil: 1"}))
attempt("crlf_url", lambda: fetch(method="GET", url=base + "/prefix/echo-crlf\r\nX-Evil: 1"))
attempt("own_auth", lambda: fetch(method="GET", url=base + "/prefix/echo-auth",
                                  headers={"authorization": "Bearer mine"}))
attempt("host_header", lambda: fetch(method="GET", url=base + "/prefix/echo-host",
                                     headers={"Host": "metadata.google.internal"}))
attempt("big", lambda: fetch(method="GET", url=base + "/prefix/big"))
attempt("quick_timeout", lambda: tollgate.call("fetch_quick", method="GET",
                                                url=base + "/prefix/slow"))
attempt("body_too_big", lambda: tollgate.call("fetch_quick", method="GET",
                                               url=base + "/prefix/echo-big-body",
                                               body="x" * 17))
attempt("once_1", lambda: tollgate.call("fetch_once", method="GET", url=base + "/prefix/echo-once"))
attempt("once_2", lambda: tollgate.call("fetch_once", method="GET", url=base + "/prefix/echo-once"))

# Runs inside the container: every egress case through the tollgate
# client, one JSON line per case (the result, or the error's code and
# message).  The host-side script judges them.
import json
import os
import re
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

# Issue 38.6: other spellings of /prefix/admin/ against the rule that
# denies it.  Each is canonicalised so that the rule fires, or refused.
spellings = ["/prefix/admin/secret", "/prefix/%61dmin/secret", "/prefix/adm%69n/secret",
             "/prefix/%2561dmin/secret", "/prefix/%25%36%31dmin/secret",
             "/prefix/x/..;/admin/secret", "/prefix/admin;x/secret", "/prefix/admin%3bx/secret",
             "/prefix/x/%2e%2e/admin/secret", "/prefix/x/%2E./admin/secret",
             "/prefix//admin/secret", "/prefix\\admin/secret", "/prefix/x%5c..%5cadmin/secret",
             "/prefix/x/%c0%ae%c0%ae/admin/secret", "/prefix/ADMIN/secret"]
for i, p in enumerate(spellings):
    attempt("admin_%d" % i, lambda: fetch(method="GET", url=base + p))
attempt("canon_sent", lambda: fetch(method="GET", url=base + "/prefix/%65cho-canon/caf%c3%a9?k=%76%2f"))
# Issue 38.7: the credential echoed into a refused redirect at offsets
# around the message's cut.  The padding a message shows at most is
# where the cut falls (found with a probe that is cut for sure); the sweep
# puts the credential from 50 bytes before that to 3 after, where a cut
# made before scrubbing would split it, whatever the message's wording.
def leak(n):
    try:
        fetch(method="GET", url=base + "/prefix/leak?n=%d" % n)
        return ""
    except tollgate.TollgateError as e:
        return e.message
shown = max((len(r) for r in re.findall("p+", leak(4000))), default=0)
print(json.dumps({"case": "leak_probe", "ok": True, "result": shown}), flush=True)
for n in range(shown - 50, shown + 4):
    attempt("leak_%d" % n, lambda: fetch(method="GET", url=base + "/prefix/leak?n=%d" % n))

# The egress tests' HTTP server, run on 127.0.0.1 inside the test's own
# network namespace.  It appends one JSON line per request it saw to LOG,
# so that "refused before any connect" is checked as "the log did not
# grow".  Routes under /prefix/: echo (the request back, and the
# Authorization header it got in a response header too), big (300000
# bytes), binary, redirect-out/-in/-localhost/-loop, slow, leak?n=N (the
# credential in a Location after N bytes), and admin/ as the most lenient
# server would resolve the path (lenient below).
import http.server
import json
import posixpath
import sys
import time
import urllib.parse

port, log = int(sys.argv[1]), sys.argv[2]


def lenient(raw):
    """The path the most lenient server would route on: decoded twice,
    backslashes as slashes, ";params" stripped, "//" merged, dot segments
    resolved.  A request tollgate let through must not reach /prefix/admin/
    under this reading either."""
    p = urllib.parse.unquote(urllib.parse.unquote(raw.split("?")[0])).replace("\\", "/")
    p = "/".join(seg.split(";")[0] for seg in p.split("/"))
    trail = p.endswith("/")
    p = posixpath.normpath("/" + p.lstrip("/"))
    return p + "/" if trail and p != "/" else p


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "resolved": lenient(self.path),
                                "headers": dict(self.headers.items()),
                                "body": body.decode("utf-8", "replace")}) + "\n")
        path = self.path.split("?")[0]
        auth = self.headers.get("Authorization", "")
        if lenient(self.path).startswith("/prefix/admin/"):
            self.send(200, b"the admin area")
        elif path == "/prefix/leak":
            # The injected credential copied into a Location after N bytes
            # of padding: the refused redirect's message is cut near it.
            n = int(urllib.parse.parse_qs(self.path.split("?", 1)[1])["n"][0])
            self.send(302, b"", [("Location", "/prefix/" + "p" * n + "/" + auth)])
        elif path.startswith("/prefix/echo"):
            out = json.dumps({"method": self.command, "path": self.path,
                              "headers": dict(self.headers.items()),
                              "body": body.decode("utf-8", "replace")}).encode()
            self.send(200, out, [("Content-Type", "application/json"),
                                 ("X-Echo-Auth", auth), ("Authorization", auth)])
        elif path == "/prefix/big":
            self.send(200, b"x" * 300000)
        elif path == "/prefix/binary":
            self.send(200, bytes(range(256)), [("Content-Type", "application/octet-stream")])
        elif path == "/prefix/redirect-out":
            self.send(302, b"", [("Location", "/other/x")])
        elif path == "/prefix/redirect-in":
            self.send(302, b"", [("Location", "/prefix/echo?from=redirect")])
        elif path == "/prefix/redirect-localhost":
            self.send(302, b"", [("Location", "http://localhost:%d/prefix/echo-via-name" % port)])
        elif path == "/prefix/redirect-loop":
            self.send(302, b"", [("Location", "/prefix/redirect-loop")])
        elif path == "/prefix/slow":
            time.sleep(6)
            self.send(200, b"late")
        else:
            self.send(404, b"no such page")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()

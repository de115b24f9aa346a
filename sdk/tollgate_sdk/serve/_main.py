"""`tollgate serve`: the command line, the event log, and the listeners
(TCP, loopback by default, optionally TLS; and a unix socket)."""
from __future__ import annotations

import argparse
import asyncio
import grp
import json
import os
import sys
import threading
import time
from typing import Any

import uvicorn

from .._errors import TollgateSDKError
from .._listener import Limits, guard_protocol, listener_bounds, raise_fd_limit, start_servers
from .._pid1 import split_when_pid1
from .._sandbox import SOURCE_TREE, find_tollgate
from ._adopt import readopt
from ._app import App
from ._boxes import Boxes
from ._tenants import Tenants
from ._shares import REQUESTS, Shares
from ._transfers import TIME_LIMIT, Transfers

__all__ = ["main"]


class EventLog:
    """One JSON object per line, appended (0600): what the service did to
    sandboxes and why, for the operator."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        line = json.dumps(dict(event, time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))) + "\n"
        with self.lock:
            if self.path:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as f:
                    f.write(line)
            else:
                sys.stderr.write("tollgate serve: " + line)


# Seconds a request may still run once TERM or INT stopped the service
# (its sandbox is being deleted meanwhile); then it is cancelled.
STOP_GRACE = 10

def _listen(spec: str) -> tuple[str, int]:
    host, sep, port = spec.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SystemExit("tollgate serve: --listen takes HOST:PORT (for example 127.0.0.1:3000), not %r" % spec)
    return host.strip("[]") or "127.0.0.1", int(port)


def _templates(items: list[str]) -> dict[str, str]:
    out = {}
    for it in items:
        name, sep, path = it.partition("=")
        if not sep or not name or not os.path.isabs(path):
            raise SystemExit("tollgate serve: --template takes NAME=/absolute/rootfs, not %r" % it)
        if not os.path.isfile(os.path.join(path, "usr", "bin", "python3")):
            raise SystemExit("tollgate serve: template %s: %s has no usr/bin/python3 (build one with "
                             "bash bundles/rootfs/debian.sh DIR)" % (name, path))
        out[name] = path
    if not out:
        default = os.path.join(SOURCE_TREE, "build", "rootfs", "debian")
        if not os.path.isfile(os.path.join(default, "usr", "bin", "python3")):
            raise SystemExit("tollgate serve: no template: give --template base=/rootfs (bash "
                             "bundles/rootfs/debian.sh DIR builds a Debian one)")
        out["base"] = default
    out.setdefault("code-interpreter-v1", out.get("base", next(iter(out.values()))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tollgate serve", description="a self-hosted sandbox service "
                                 "that the e2b SDKs use (docs/serve.md)")
    ap.add_argument("--listen", default="127.0.0.1:3000", help="HOST:PORT for the API and sandbox traffic")
    ap.add_argument("--tenants", required=True, help="the tenants file (root-owned, 0600)")
    ap.add_argument("--socket", help="also listen on this unix socket")
    ap.add_argument("--socket-group", help="the group that may use the unix socket (mode 0660)")
    ap.add_argument("--state", default="/var/lib/tollgate/serve", help="the service's state directory")
    ap.add_argument("--template", action="append", default=[], metavar="NAME=ROOTFS")
    ap.add_argument("--runtime", default="runsc", choices=("runsc", "runc"))
    ap.add_argument("--audit-root", default="/var/log/tollgate/serve", help="tenants' audit logs, by default")
    ap.add_argument("--tollgate", help="the tollgate binary")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--log", help="append the service's events (JSON lines) here instead of stderr")
    ap.add_argument("--max-connections", type=int, default=Limits.max_connections, metavar="N",
                    help="connections held at once; one more gets 503 (default %(default)s)")
    ap.add_argument("--max-connections-per-client", type=int, default=Limits.per_client, metavar="N",
                    help="connections from one address; one more gets 429 (default %(default)s)")
    ap.add_argument("--max-requests-per-tenant", type=int, default=REQUESTS, metavar="N",
                    help="one tenant's requests at once; one more gets 429 (default %(default)s)")
    ap.add_argument("--transfer-timeout", type=float, default=TIME_LIMIT, metavar="SECONDS",
                    help="a /files upload or download is cut after this (408) (default %(default)s)")
    ap.add_argument("--header-timeout", type=float, default=Limits.header_timeout, metavar="SECONDS",
                    help="a request's headers arrive within this, or the connection is closed "
                    "(default %(default)s)")
    a = ap.parse_args(argv)
    if a.max_connections < 1 or a.max_connections_per_client < 1 or a.max_requests_per_tenant < 1 \
            or not a.header_timeout > 0 or not a.transfer_timeout > 0:
        raise SystemExit("tollgate serve: --max-connections, --max-connections-per-client and "
                         "--max-requests-per-tenant take a whole number of at least 1, --header-timeout and --transfer-timeout a number of seconds "
                         "above 0")
    split_when_pid1()  # PID 1 of a container with no init: stay its init (_pid1.py)
    host, port = _listen(a.listen)
    if bool(a.tls_cert) != bool(a.tls_key):
        raise SystemExit("tollgate serve: --tls-cert and --tls-key go together")
    templates = _templates(a.template)
    try:
        tenants = Tenants.load(a.tenants, default_audit_root=a.audit_root, default_runtime=a.runtime)
    except TollgateSDKError as e:
        raise SystemExit("tollgate serve: %s" % e) from None
    tg = find_tollgate(a.tollgate)
    if tg is None:
        raise SystemExit("tollgate serve: the tollgate binary was not found: --tollgate PATH, or make")
    os.makedirs(a.state, mode=0o700, exist_ok=True)
    log = EventLog(a.log)
    boxes = Boxes(tenants, state_dir=os.path.abspath(a.state), templates=templates, tollgate=tg, log=log)
    readopt(boxes)
    boxes.start()
    app = App(boxes, tenants, Transfers(time_limit=a.transfer_timeout), Shares(requests=a.max_requests_per_tenant))
    # Anyone who reaches the port holds connections before a key is
    # checked: bounded, so that they cannot use up the open files every
    # sandbox needs (tollgate_sdk._listener).
    limits, fitted = listener_bounds(Limits(a.max_connections, a.max_connections_per_client, a.header_timeout),
                                     raise_fd_limit())
    if fitted:
        log({"event": "connections", "note": fitted})
    guard = guard_protocol(limits)
    servers = [uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                             ssl_certfile=a.tls_cert, ssl_keyfile=a.tls_key,
                                             timeout_keep_alive=75, lifespan="on", http=guard,
                                             timeout_graceful_shutdown=STOP_GRACE))]
    if a.socket:
        servers.append(uvicorn.Server(uvicorn.Config(app, uds=a.socket, log_level="warning", lifespan="off",
                                                     http=guard, timeout_graceful_shutdown=STOP_GRACE)))
    log({"event": "serving", "listen": "%s:%d" % (host, port), "socket": a.socket,
         "tenants": sorted(tenants.by_name), "templates": templates})

    closing = threading.Thread(target=boxes.close, name="tollgate-serve-stop", daemon=True)

    async def run() -> None:
        def stop(_signo: int) -> None:
            # The sandboxes go now, not after the last request: a client's
            # long command or cell held its stream open, and uvicorn waited
            # for it, so TERM did not stop the service (15 s and on, seen
            # with one `commands.run("sleep 600")`).  Their requests end
            # with the sandbox gone.
            if closing.ident is None:
                closing.start()
        tasks = start_servers(servers, stop)
        if a.socket:
            while not servers[-1].started and not tasks[-1].done():
                await asyncio.sleep(0.05)
            gid = grp.getgrnam(a.socket_group).gr_gid if a.socket_group else -1
            os.chown(a.socket, -1, gid)
            os.chmod(a.socket, 0o660 if a.socket_group else 0o600)
        await asyncio.gather(*tasks)

    try:
        asyncio.run(run())
    finally:
        if closing.ident is not None:
            closing.join()
        boxes.close()  # what a request made meanwhile; all of it when no signal came
        log({"event": "stopped"})
    return 0

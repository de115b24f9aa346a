"""The control plane (e2b's REST API) and tollgate's extensions under
/tollgate/: create, connect, list, get, kill, timeout, pause; a sandbox's
pending approvals, decisions, audit log and budget use."""
from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.parse
from typing import Any

from .._audit import budget_used, calls_of_last_run, read_records
from ._boxes import Box, Boxes
from ._service_error import ServiceError
from ._tenants import Tenant

__all__ = ["route"]

SANDBOX = re.compile(r"^/sandboxes/([a-z0-9]{1,64})(?:/(timeout|pause|connect|resume|metrics))?$")
EXT = re.compile(r"^/tollgate/sandboxes/([a-z0-9]{1,64})/(pending|audit|budget|calls/([0-9a-f]{1,64})/(approve|deny)"
                 r"|tool-calls(?:/([0-9a-f]{1,64}))?)$")
DEFAULT_TIMEOUT = 300
META_MAX = 64


def _int(v: Any, what: str, default: int) -> int:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ServiceError(400, "%s must be whole seconds" % what)
    return v


def _strings(v: Any, what: str) -> dict[str, str]:
    if v is None:
        return {}
    if (not isinstance(v, dict) or len(v) > META_MAX
            or not all(isinstance(k, str) and isinstance(x, str) and len(k) <= 256 and len(x) <= 4096
                       for k, x in v.items())):
        raise ServiceError(400, "%s must map at most %d names to strings" % (what, META_MAX))
    return dict(v)


def _create(boxes: Boxes, tenant: Tenant, body: dict[str, Any]) -> tuple[int, Any]:
    template = body.get("templateID") or "base"
    if not isinstance(template, str):
        raise ServiceError(400, "templateID must be a string")
    lifecycle = body.get("lifecycle") or {}
    on_timeout = "pause" if (isinstance(lifecycle, dict) and lifecycle.get("onTimeout") == "pause") or \
        body.get("autoPause") is True else "kill"
    ext = body.get("tollgate") or {}
    if not isinstance(ext, dict):
        raise ServiceError(400, "tollgate must be an object")
    box = boxes.create(tenant, template=template, timeout=_int(body.get("timeout"), "timeout", DEFAULT_TIMEOUT),
                       metadata=_strings(body.get("metadata"), "metadata"),
                       env_vars=_strings(body.get("envVars"), "envVars"), on_timeout=on_timeout,
                       client_tools=ext.get("tools"))
    return 201, box.record.created()


def _metadata_filter(raw: str) -> dict[str, str]:
    out = {}
    for pair in urllib.parse.unquote(raw).split("&"):
        if not pair:
            continue
        k, _, v = pair.partition("=")
        out[urllib.parse.unquote(k)] = urllib.parse.unquote(v)
    return out


def _list(boxes: Boxes, tenant: Tenant, query: dict[str, str]) -> tuple[int, Any]:
    want = _metadata_filter(query.get("metadata", ""))
    states = set((query.get("state") or "running,paused").split(","))
    out = []
    for b in sorted(boxes.of_tenant(tenant), key=lambda b: b.record.started_at,
                    reverse=query.get("order") == "desc"):
        r = b.record
        if r.state in states and all(r.metadata.get(k) == v for k, v in want.items()):
            out.append(r.listed())
    return 200, out


def _log_path(box: Box) -> str:
    if box.session is None:
        raise ServiceError(409, "the sandbox is paused")
    return os.path.join(str(box.session.sb.audit_dir), box.container_id + ".jsonl")


def _extension(boxes: Boxes, box: Box, what: str, call: str | None, method: str,
               body: dict[str, Any], query: dict[str, str]) -> tuple[int, Any]:
    if what.startswith("tool-calls"):
        if box.relay is None:
            raise ServiceError(404, "this sandbox has no client tools")
        answer_id = what[len("tool-calls/"):] if what.startswith("tool-calls/") else None
        if answer_id is None and method == "GET":
            try:
                wait = float(query.get("wait", "10"))
            except ValueError:
                raise ServiceError(400, "wait is seconds") from None
            nxt = box.relay.next_call(wait)
            return (200, nxt) if nxt is not None else (204, None)
        if answer_id is not None and method == "POST":
            if not box.relay.answer(answer_id, body):
                raise ServiceError(404, "no call %s is waiting for an answer" % answer_id)
            return 204, None
    if what == "pending" and method == "GET":
        if box.session is None:
            return 200, []
        cid = box.container_id
        return 200, [p for p in box.session.sb.pending() if p.get("container") == cid]
    if what.startswith("calls/") and method == "POST" and call is not None:
        if box.session is None:
            raise ServiceError(404, "no call %s is waiting for approval" % call)
        cid = box.container_id
        # Only a call of this sandbox's own container can be decided here.
        if not any(p.get("call") == call and p.get("container") == cid for p in box.session.sb.pending()):
            raise ServiceError(404, "no call %s is waiting for approval in this sandbox" % call)
        given = body.get("reason")
        reason = given if isinstance(given, str) else ""
        r = box.session.sb.decide(call, what.endswith("approve"), reason)
        return (200 if r.get("ok") else 409), r
    if what == "audit" and method == "GET":
        log = _log_path(box)
        tg = box.session.sb.tollgate if box.session else None
        # The gate of a running sandbox has not closed its log yet.
        verify = subprocess.run([str(tg), "audit", "verify", log, "--open"], capture_output=True, text=True)
        return 200, {"log": log, "verify": {"ok": verify.returncode == 0,
                                             "message": (verify.stdout + verify.stderr).strip()[-1000:]},
                     "records": read_records(log)[-1000:]}
    if what == "budget" and method == "GET":
        records = read_records(_log_path(box))
        policy = box.session.sb.policy if box.session is not None else {}
        return 200, budget_used(calls_of_last_run(records), policy or {}, records)
    raise ServiceError(405, "%s %s is not served" % (method, what))


def route(boxes: Boxes, tenant: Tenant, method: str, path: str, query: dict[str, str],
          body: dict[str, Any]) -> tuple[int, Any] | None:
    """(status, JSON body) for a control-plane path, None for any other
    path.  Runs in a worker thread: creating and killing block."""
    if path == "/sandboxes" and method == "POST":
        return _create(boxes, tenant, body)
    if path in ("/v2/sandboxes", "/sandboxes") and method == "GET":
        return _list(boxes, tenant, query)
    m = SANDBOX.match(path)
    if m:
        box = boxes.get(m.group(1), tenant)
        verb = m.group(2)
        if verb is None and method == "GET":
            return 200, box.record.detail()
        if verb is None and method == "DELETE":
            boxes.kill(box, "killed through the API")
            return 204, None
        if verb == "timeout" and method == "POST":
            boxes.set_timeout(box, _int(body.get("timeout"), "timeout", DEFAULT_TIMEOUT))
            return 204, None
        if verb == "pause" and method == "POST":
            if box.record.state == "paused":
                raise ServiceError(409, "sandbox %s is already paused" % box.record.sandbox_id)
            boxes.pause(box)
            return 204, None
        if verb in ("connect", "resume") and method == "POST":
            was_paused = box.record.state == "paused"
            boxes.resume(box)
            boxes.set_timeout(box, _int(body.get("timeout"), "timeout", DEFAULT_TIMEOUT), only_extend=True)
            return (201 if was_paused or verb == "resume" else 200), box.record.created()
        if verb == "metrics" and method == "GET":
            return 200, []
        raise ServiceError(405, "%s %s is not served" % (method, path))
    m = EXT.match(path)
    if m:
        box = boxes.get(m.group(1), tenant)
        return _extension(boxes, box, m.group(2), m.group(3), method, body, query)
    return None


def as_json(obj: Any) -> bytes:
    return json.dumps(obj).encode()

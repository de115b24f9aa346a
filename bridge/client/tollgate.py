"""Call host tools from inside a tollgate container.

    import tollgate
    order = tollgate.call("get_order", order_id=42)
    from tollgate import get_order          # generated from tools.json
    order = get_order(order_id=42)
    r = tollgate.http.get("https://api.example.com/v1/items")   # an http tool

Every call crosses the tollgate bridge (docs/bridge-protocol.md) and is
governed on the host: policy, approvals, budgets and the audit log.  A
refusal is never returned as a result: each error code raises its own
exception, all subclasses of TollgateError.  Every refusal (the call never
ran) is a ToolDenied: ApprovalTimeout, BudgetExhausted, UnknownTool,
BadRequest and AnomalyDetected are its subclasses.  The others are
ToolFailed, ToolTimeout (the tool ran), OutcomeUnknown (the sidecar died:
the tool may or may not have run), ContainerStopped, AuditUnavailable,
BridgeFull and BridgeTimeout.  A call that gets no answer
in time raises BridgeTimeout, so a dead bridge is an error, never a hang.

Standard library only; safe to use from many threads at once.
Environment: TOLLGATE_DIR (default /run/tollgate), TOLLGATE_TIMEOUT
(seconds, overrides the per-call default).
"""

import base64
import json
import keyword
import os
import select
import threading
import time

__all__ = [
    "call", "tools", "TollgateError", "ToolDenied", "BudgetExhausted",
    "ApprovalTimeout", "UnknownTool", "BadRequest", "AnomalyDetected", "ToolFailed", "ToolTimeout",
    "ContainerStopped", "AuditUnavailable", "BridgeFull", "BridgeTimeout",
    "OutcomeUnknown", "http",
]

DIR = os.environ.get("TOLLGATE_DIR") or "/run/tollgate"
_REQ = os.path.join(DIR, "calls", "req")
_RESP = os.path.join(DIR, "calls", "resp")
# The sidecar renews this file's mtime every second (bridge/heartbeat.h);
# unchanged for _HEARTBEAT_STALE seconds, nobody is left to answer.
_ALIVE = os.path.join(DIR, "alive")
_HEARTBEAT_STALE = 10.0


class TollgateError(Exception):
    """A tool call that did not produce a result.  .code is the protocol's
    error code, .message the host's explanation, .tool and .call_id say
    which call it was."""

    code = "error"

    def __init__(self, message, tool=None, call_id=None, code=None):
        super().__init__(message)
        self.message = message
        self.tool = tool
        self.call_id = call_id
        if code is not None:
            self.code = code

    def __str__(self):
        # The gate's messages often name the refusal already ("denied: why",
        # "approval timed out: ..."): say it once.
        m = self.message or ""
        if m.startswith((self.code + ":", "denied", "approval timed out")):
            return m
        return "%s: %s" % (self.code, m)


class ToolDenied(TollgateError):
    """tollgate refused the call, so it never ran: the policy denied it, a
    person or hook refused approval, or (the subclasses) nobody approved
    it in time, a budget is used up, the request was malformed, the tool
    is unknown, or the call looked anomalous.  `except ToolDenied` catches
    every refusal; ToolFailed and ToolTimeout (the tool ran) are not."""
    code = "denied"


class ApprovalTimeout(ToolDenied):
    """The call needed approval and nobody approved it in time."""
    code = "approval_timeout"


class BudgetExhausted(ToolDenied):
    """A budget (call cap, cost, irreversible actions, repeats) is used up."""
    code = "budget_exhausted"


class UnknownTool(ToolDenied):
    """No tool of that name is defined for this container."""
    code = "unknown_tool"


class BadRequest(ToolDenied):
    """The request or its arguments were malformed or failed the schema."""
    code = "bad_request"


class AnomalyDetected(ToolDenied):
    """An anomaly limit of the host's policy stopped the run (docs/policy.md,
    "Anomaly limits": too many denials or failures in a row, a burst of
    calls, too many result bytes): this call and every later one are
    refused, and the container is being stopped."""
    code = "anomaly"


class ToolFailed(TollgateError):
    """The tool ran and failed (the message carries its error output)."""
    code = "tool_failed"


class ToolTimeout(TollgateError):
    """The tool ran past its timeout and was stopped."""
    code = "tool_timeout"


class ContainerStopped(TollgateError):
    """The container is stopping; the bridge no longer runs calls."""
    code = "container_stopped"


class AuditUnavailable(TollgateError):
    """The audit log cannot be written, so nothing is allowed to run."""
    code = "audit_unavailable"


class BridgeFull(TollgateError):
    """The bridge area (/run/tollgate/calls) is full; free space there."""
    code = "bridge_full"


class OutcomeUnknown(TollgateError):
    """The host's sidecar died while the call was in flight: the tool may or
    may not have run.  Check its effect before calling again."""
    code = "outcome_unknown"


class BridgeTimeout(TollgateError):
    """No answer arrived in time: the host side of the bridge is gone."""
    code = "bridge_timeout"


_ERRORS = {cls.code: cls for cls in (
    ToolDenied, ApprovalTimeout, BudgetExhausted, UnknownTool, BadRequest, AnomalyDetected,
    ToolFailed, ToolTimeout, ContainerStopped, AuditUnavailable, BridgeFull,
    OutcomeUnknown)}

# Polling: sleep from 20 us up, 1.3 times longer each round, to 2 ms.  No
# busy polling: on a small machine it takes the CPU the host side needs to
# answer (measured: p50 223 us against 351 us with 100 us of busy polling).
_FIRST_WAIT = 0.00002
_GROWTH = 1.3


def _tighten_timer_slack():
    # Sleeps of tens of microseconds are otherwise rounded up by the
    # kernel's default 50 us timer slack.  Best effort: gVisor may refuse.
    try:
        with open("/proc/self/timerslack_ns", "w") as f:
            f.write("1000")
    except OSError:
        pass


_tighten_timer_slack()


class _Waker:
    """Wait for a change in calls/resp, or for a timeout, whichever first.

    Under runc the host's writes to calls/resp raise inotify events in the
    container, so a caller wakes when its marker appears instead of at the
    next step of the back-off (measured: tollgate.py p50 under runc, see
    docs/performance.md).  Under gVisor no event comes for the host's
    writes and the wait is the plain back-off sleep.  One descriptor per
    process (inotify instances are a per-user limit shared with the host),
    used by one thread at a time; the others sleep.  Without ctypes, or if
    inotify is refused, every wait is a sleep."""

    def __init__(self):
        self.fd = -1
        self.pid = None
        self.busy = threading.Lock()

    def _open(self):
        self.pid = os.getpid()
        self.fd = -1
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd < 0:
                return
            # IN_CREATE | IN_MOVED_TO
            if libc.inotify_add_watch(fd, os.fsencode(_RESP), 0x100 | 0x80) < 0:
                os.close(fd)
                return
            self.fd = fd
        except Exception:  # no ctypes, no libc symbol: sleep instead
            self.fd = -1

    def acquire(self):
        """True when this thread may use the descriptor; then release()."""
        if not self.busy.acquire(blocking=False):
            return False
        if self.pid != os.getpid():  # first use, or a forked child
            self._open()
        if self.fd < 0:
            self.busy.release()
            return False
        return True

    def release(self):
        self.busy.release()

    def drain(self):
        """Forget the events so far (call before checking for the marker,
        so an event after the check wakes the next wait)."""
        try:
            while os.read(self.fd, 65536):
                pass
        except OSError:
            pass

    def wait(self, seconds):
        try:
            select.select([self.fd], [], [], seconds)
        except OSError:
            # gVisor may refuse select(2) (EPERM under runsc with
            # --oci-seccomp): stop using the descriptor, sleep instead.
            fd, self.fd = self.fd, -1
            os.close(fd)
            time.sleep(seconds)


_waker = _Waker()
_lock = threading.Lock()
_params = None   # bridge.json
_tools = None    # name -> tool description from tools.json


def _read_json(name, default):
    try:
        with open(os.path.join(DIR, name), "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return default


def _load():
    global _params, _tools
    with _lock:
        if _tools is None:
            _params = _read_json("bridge.json", {})
            raw = _read_json("tools.json", {}).get("tools", [])
            if isinstance(raw, dict):  # {"name": {...}} is accepted too
                raw = [dict(v, name=k) for k, v in raw.items() if isinstance(v, dict)]
            _tools = {t["name"]: t for t in raw
                      if isinstance(t, dict) and isinstance(t.get("name"), str)}
        return _params, _tools


def tools():
    """The tools this container may call: {name: description dict}."""
    return dict(_load()[1])


def _timeout_for(tool):
    env = os.environ.get("TOLLGATE_TIMEOUT")
    if env:
        return float(env)
    params, known = _load()
    approval = float(params.get("approval_timeout_ms", 60000)) / 1000.0
    t = known.get(tool, {}).get("timeout", 60)
    try:
        t = float(t)
    except (TypeError, ValueError):
        t = 60.0
    # The host always answers before this (approvals time out first), so
    # only a dead bridge ever reaches it.
    return approval + t + 10.0


def _write_request(call_id, data):
    # The body goes straight to <id>.json: the host reads it only once the
    # marker exists, and the marker is made after the body is closed.
    final = os.path.join(_REQ, call_id + ".json")
    try:
        fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.close(os.open(os.path.join(_REQ, call_id + ".done"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError as e:
        try:
            os.unlink(final)
        except OSError:
            pass
        if e.errno in (28, 122):  # ENOSPC, EDQUOT
            raise BridgeFull("the bridge area %s is full; remove files there "
                             "and call again" % os.path.dirname(_REQ),
                             call_id=call_id) from None
        if not os.path.isdir(_REQ):
            raise TollgateError("%s is not there: is this a tollgate container?"
                                % _REQ, call_id=call_id) from None
        raise


def _heartbeat():
    """The mtime of the sidecar's heartbeat file, or None without one."""
    try:
        return os.stat(_ALIVE, follow_symlinks=False).st_mtime_ns
    except OSError:
        return None


def _wait_for(marker, deadline, waker, name, call_id, timeout):
    """Return once marker exists; BridgeTimeout after deadline, or once
    the sidecar's heartbeat has stood still for _HEARTBEAT_STALE s."""
    exists = os.path.exists
    now = time.monotonic
    wait = _FIRST_WAIT
    hb_next = 0.0
    hb_seen = hb_changed = None
    while True:
        t0 = now()
        if waker is not None and waker.fd >= 0:
            waker.drain()
        if exists(marker):
            return
        t = now()
        stale = False
        if t >= hb_next:
            # Once a second: the mtime against the last one seen, on this
            # process's own clock.
            hb_next = t + 1.0
            seen = _heartbeat()
            if seen is not None and seen != hb_seen:
                hb_seen, hb_changed = seen, t
            elif seen is not None and t - hb_changed > _HEARTBEAT_STALE:
                if exists(marker):
                    return
                stale = True
        if t > deadline or stale:
            for p in (os.path.join(_REQ, call_id + ".json"),
                      os.path.join(_REQ, call_id + ".done")):
                try:
                    os.unlink(p)
                except OSError:
                    pass
            if stale:
                raise BridgeTimeout(
                    "no answer from the tollgate bridge: its heartbeat (%s) stopped "
                    "%.0f s ago, so neither the sidecar nor its supervisor is "
                    "running; the call may or may not have run" % (_ALIVE, t - hb_changed),
                    tool=name, call_id=call_id)
            raise BridgeTimeout(
                "no answer from the tollgate bridge within %.0f s: the host "
                "side is not running (container stopping, or the sidecar "
                "died); the call may or may not have run" % timeout,
                tool=name, call_id=call_id)
        # Never sleep less than twice what a check costs: under gVisor a
        # check is a round trip to the gofer, shared by every caller.
        wait = min(max(wait, 2 * (t - t0)), 0.002)
        if waker is not None and waker.fd >= 0:
            waker.wait(wait)
        else:
            time.sleep(wait)
        wait *= _GROWTH


def call(name, /, *, _timeout=None, **args):
    """Call the host tool `name` with keyword arguments; return its result.

    Raises a TollgateError subclass when the call is refused or fails, and
    BridgeTimeout when no answer arrives within _timeout seconds (default:
    the approval timeout plus the tool's timeout plus 10 s).  `name` is
    positional-only, so a tool may itself take an argument called name."""
    call_id = os.urandom(16).hex()
    data = json.dumps({"v": 1, "tool": name, "args": args}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")
    timeout = float(_timeout) if _timeout is not None else _timeout_for(name)
    _write_request(call_id, data)
    marker = os.path.join(_RESP, call_id + ".done")
    body = os.path.join(_RESP, call_id + ".json")
    # Adaptive back-off polling, woken early by inotify where the host's
    # writes raise events (runc; not gVisor): see _FIRST_WAIT and _Waker.
    deadline = time.monotonic() + timeout
    waker = _waker if _waker.acquire() else None
    try:
        _wait_for(marker, deadline, waker, name, call_id, timeout)
    finally:
        if waker is not None:
            waker.release()
    with open(body, "rb") as f:
        raw = f.read()
    for p in (marker, body):
        try:
            os.unlink(p)
        except OSError:
            pass
    try:
        resp = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        raise TollgateError("unreadable response: %s" % e, tool=name,
                            call_id=call_id) from None
    if resp.get("ok") is True:
        return resp.get("result")
    err = resp.get("error") or {}
    code = err.get("code", "error")
    cls = _ERRORS.get(code, TollgateError)
    raise cls(err.get("message", ""), tool=name, call_id=call_id, code=code)


class _Http:
    """Helpers over the policy's http tool (docs/egress.md): each is one
    governed call, checked, budgeted, approvable and audited on the host,
    which also adds the credentials the program never sees.  They return
    the tool's result: {"status", "headers", "body" (text) or
    "body_base64" (bytes), "url", "redirects"}.  tool= names the http tool
    when the policy has several; a redirect out of the tool's allow list
    raises ToolFailed."""

    def _tool(self, tool):
        if tool:
            return tool
        names = sorted(n for n, t in _load()[1].items() if t.get("backend") == "http")
        if len(names) == 1:
            return names[0]
        raise UnknownTool("%s http tool in %s/tools.json: pass tool=NAME" % (
            "more than one" if names else "no", DIR), tool=None)

    def request(self, method, url, headers=None, body=None, json_body=None, tool=None,
                _timeout=None):
        args = {"method": method.upper(), "url": url}
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body, separators=(",", ":"))
            headers.setdefault("Content-Type", "application/json")
        if headers:
            args["headers"] = headers
        if isinstance(body, (bytes, bytearray)):
            args["body_base64"] = base64.b64encode(bytes(body)).decode("ascii")
        elif body is not None:
            args["body"] = body
        return call(self._tool(tool), _timeout=_timeout, **args)

    def get(self, url, **kw):
        return self.request("GET", url, **kw)

    def head(self, url, **kw):
        return self.request("HEAD", url, **kw)

    def post(self, url, body=None, **kw):
        return self.request("POST", url, body=body, **kw)

    def put(self, url, body=None, **kw):
        return self.request("PUT", url, body=body, **kw)

    def delete(self, url, **kw):
        return self.request("DELETE", url, **kw)


http = _Http()


def _make_function(tool):
    name = tool["name"]
    schema = tool.get("args") or tool.get("schema") or tool.get("input_schema") or {}
    props = schema.get("properties") or {} if isinstance(schema, dict) else {}
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()

    def fn(**kwargs):
        return call(name, **kwargs)

    lines = [tool.get("description") or "Call the host tool %r." % name, ""]
    if props:
        lines.append("Keyword arguments:")
        for arg, spec in props.items():
            spec = spec if isinstance(spec, dict) else {}
            lines.append("  %s (%s%s)%s" % (
                arg, spec.get("type", "any"),
                ", required" if arg in required else "",
                ": " + spec["description"] if spec.get("description") else ""))
    if tool.get("timeout") is not None:
        lines.append("Timeout on the host: %s s." % tool["timeout"])
    lines.append("Raises a TollgateError subclass when refused or failed.")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "\n".join(lines)
    try:  # a real signature for help() and IDEs; inspect is optional
        import inspect
        params = [inspect.Parameter(a, inspect.Parameter.KEYWORD_ONLY,
                                    default=inspect.Parameter.empty if a in required else None)
                  for a in props if isinstance(a, str) and a.isidentifier()
                  and not keyword.iskeyword(a)]
        params.sort(key=lambda p: p.default is not inspect.Parameter.empty)
        fn.__signature__ = inspect.Signature(params)
    except (ImportError, ValueError):
        pass
    return fn


def _export_tools():
    g = globals()
    for name, tool in _load()[1].items():
        if name.isidentifier() and not keyword.iskeyword(name) and name not in g:
            g[name] = _make_function(tool)


def __getattr__(attr):
    # Tools added after import (tools.json rewritten as the bridge starts).
    global _tools
    if attr.startswith("__"):
        raise AttributeError(attr)
    with _lock:
        _tools = None
    _export_tools()
    if attr in globals():
        return globals()[attr]
    raise AttributeError("module 'tollgate' has no attribute %r (not a tool "
                         "in %s/tools.json)" % (attr, DIR))


_export_tools()

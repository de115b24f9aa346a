"""The service's sandboxes: each is one SDK session (a hardened tollgate
container with its bridge, policy, budgets and audit log, made by the C
runtime), owned by a tenant, with a deadline the reaper enforces."""
from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import re
import subprocess
import secrets
import string
import threading
import time
from typing import Any, Callable

from .._reap import init_pid, pid_ended
from .._tree import remove_tree
from .._errors import TollgateSDKError
from .._sandbox import Sandbox
from .._session import Session, set_max_sessions
from ._procs import Proc
from ._service_error import ServiceError
from ._relay import Relay, relay_tools, without_client_tools
from ._tenants import Tenant, Tenants

__all__ = ["Box", "Boxes", "ServiceError", "Record"]

ID_CHARS = string.ascii_lowercase + string.digits
REAP_EVERY = 0.5    # seconds between deadline checks: a sandbox dies within 2 s of its deadline
ENDED_KEPT = 1024   # sandboxes that ended whose reason a request still hears
PROCS_END_WAIT = 10  # seconds a pause waits for its commands to end after SIGKILL
# A container's own deadline (tollgate's reaper, docs/reliability.md) is the
# sandbox's plus this: while the service runs, its reaper is first (and
# pauses, when asked, or records why); when the service is gone and not
# restarted, tollgate's reaper deletes the container soon after.
LIFETIME_GRACE = 5
ENVD_VERSION = "0.5.7"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


@dataclasses.dataclass
class Record:
    """What the service knows of one sandbox; kept in STATE/sandboxes/ID.json
    (0600: it holds the access tokens)."""
    sandbox_id: str
    tenant: str
    template: str
    metadata: dict[str, str]
    env_vars: dict[str, str]
    started_at: float
    end_at: float
    envd_token: str
    traffic_token: str
    state: str = "running"        # running | paused
    container_id: str = ""
    pause_id: str = ""
    on_timeout: str = "kill"      # kill | pause
    cpu_count: float = 1.0
    memory_mb: int = 512
    # What a restarted service needs to take the session back (_adopt.py):
    # the interpreter's token, the bundle, whether a client served tools.
    session_token: str = ""
    bundle: str = ""
    client_tools: bool = False

    def listed(self) -> dict[str, Any]:
        return {"templateID": self.template, "sandboxID": self.sandbox_id, "clientID": "tollgate",
                "startedAt": _rfc3339(self.started_at), "endAt": _rfc3339(self.end_at),
                "cpuCount": max(1, round(self.cpu_count)), "memoryMB": self.memory_mb, "diskSizeMB": 0, "state": self.state,
                "envdVersion": ENVD_VERSION, "metadata": dict(self.metadata)}

    def detail(self) -> dict[str, Any]:
        d = self.listed()
        d.update({"envdAccessToken": self.envd_token, "domain": None, "allowInternetAccess": False,
                  "lifecycle": {"autoResume": False, "onTimeout": self.on_timeout}})
        return d

    def created(self) -> dict[str, Any]:
        return {"templateID": self.template, "sandboxID": self.sandbox_id, "clientID": "tollgate",
                "envdVersion": ENVD_VERSION, "envdAccessToken": self.envd_token,
                "trafficAccessToken": self.traffic_token, "domain": None}


def ended_error(sandbox_id: str, why: str) -> ServiceError:
    """A request to a sandbox that ended (Box.ended): gone, and why."""
    return ServiceError(404, "sandbox %s not found: it ended, %s; create a new one" % (sandbox_id, why))


INTERPRETER_ENDED = "its session's interpreter ended"


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Box:
    """A running (or paused) sandbox: its record, its session, its processes."""

    def __init__(self, record: Record, session: Session | None) -> None:
        self.record = record
        self.session = session
        self.lock = threading.RLock()
        self.procs: dict[int, Proc] = {}
        self.relay: Relay | None = None        # the client's tools, when it serves some
        self.own_sandbox: Sandbox | None = None  # a Sandbox of its own (with the client's tools)
        self._next_pid = 1000
        self.gone = False
        self.gone_why = ""
        self._init: tuple[str, int] = ("", 0)  # (container, its init's pid), once read (ended())

    def new_pid(self) -> int:
        with self.lock:
            self._next_pid += 1
            return self._next_pid

    def ended(self) -> str | None:
        """Why a running sandbox can serve no more, or None: its session's
        interpreter ended (a cell ended it, or the container died under a
        cell), or its container stopped (killed, crashed, out of memory).
        Not asked while another thread holds the box (a pause or resume
        closes and opens its session)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            s = self.session
            if s is None or self.gone or self.record.state != "running":
                return None
            if s.closed:
                return INTERPRETER_ENDED
            cid = str(s.cid)
            pid = self._init[1] if self._init[0] == cid else 0
            if (pid <= 0 or pid_ended(pid)) and s.sb.root:
                # Read again before judging: a resume restores the same id
                # as another process.
                pid = init_pid(s.sb.root, cid)
                self._init = (cid, pid)
            if pid > 0 and pid_ended(pid):
                return "its container stopped (killed, crashed or out of memory)"
            return None
        finally:
            self.lock.release()

    def removed_error(self) -> ServiceError:
        """The 404 for a request to this box once a kill or the reaper
        removed it, saying why."""
        return ended_error(self.record.sandbox_id, self.gone_why or "it was removed")

    def changed_under(self, session: Session | None) -> ServiceError | None:
        """The error for an operation begun on session that failed because
        the sandbox changed meanwhile: removed (404, and why: "killed
        through the API", "its deadline passed"), or paused or resumed
        (409); None when it did not change.  Without it such a race
        answered with what the closed session or the removed container
        said (a 500 naming pause(), "container sdk-... does not exist").
        Judged under the box's lock: a pause holds it throughout, and the
        operation may have failed (its container stopped by the checkpoint)
        before the pause let go of the session."""
        sid = self.record.sandbox_id
        with self.lock:
            if self.gone:
                return self.removed_error()
            if self.session is not session:
                return ServiceError(409, "sandbox %s was paused or resumed while the operation ran: "
                                         "connect to it and try again" % sid)
        return None

    @property
    def container_id(self) -> str:
        s = self.session
        if s is None:
            raise ServiceError(409, "sandbox %s is paused: connect to resume it" % self.record.sandbox_id)
        if s.cid is None:
            raise ended_error(self.record.sandbox_id, INTERPRETER_ENDED)
        return str(s.cid)


class Boxes:
    """Every sandbox of the service, by id; create, find, kill, pause,
    resume, and the reaper that enforces deadlines."""

    def __init__(self, tenants: Tenants, *, state_dir: str, templates: dict[str, str],
                 tollgate: str | None, log: Callable[[dict[str, Any]], None]) -> None:
        self.tenants = tenants
        self.state_dir = state_dir
        self.templates = templates
        self.tollgate = tollgate
        self.log = log
        self._lock = threading.Lock()
        self._boxes: dict[str, Box] = {}
        # Sandboxes removed because they ended (sandbox id -> tenant, why),
        # the newest ENDED_KEPT: a request for one hears why it is gone.
        self._ended: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()
        self._sandboxes: dict[tuple[str, str], Sandbox] = {}
        self._stop = threading.Event()
        # SDK state directories of a previous run that hold bundles of
        # sandboxes taken back (runc's), removed at close (_adopt.py).
        self.claimed: list[str] = []
        os.makedirs(os.path.join(state_dir, "sandboxes"), mode=0o700, exist_ok=True)
        set_max_sessions(sum(t.max_sandboxes for t in tenants.by_name.values()) + 4)
        self._reaper = threading.Thread(target=self._reap_loop, name="tollgate-serve-reaper", daemon=True)

    # ---- lifecycle of the service ------------------------------------------

    def start(self) -> None:
        """Start the reaper (after _adopt.readopt took back what a previous
        run left)."""
        self._reaper.start()

    def close(self) -> None:
        self._stop.set()
        for box in self.all():
            self._remove(box, "the service stopped")
        with self._lock:
            sandboxes = list(self._sandboxes.values())
            self._sandboxes.clear()
        for sb in sandboxes:
            sb.close()
        for d in self.claimed:
            remove_tree(d)

    @property
    def root(self) -> str:
        """The containers' root (tollgate --root)."""
        return os.path.join(self.state_dir, "root")

    @property
    def pause_dir(self) -> str:
        """Paused images and runsc bundles (PD/bundles/CID)."""
        return os.path.join(self.state_dir, "paused")

    def add(self, box: Box) -> None:
        """Serve a sandbox taken back after a restart (_adopt.py)."""
        with self._lock:
            self._boxes[box.record.sandbox_id] = box

    # ---- lookups ---------------------------------------------------------------

    def all(self) -> list[Box]:
        with self._lock:
            return list(self._boxes.values())

    def get(self, sandbox_id: str, tenant: Tenant | None = None) -> Box:
        with self._lock:
            box = self._boxes.get(sandbox_id)
            ended = self._ended.get(sandbox_id)
        # Another tenant's sandbox is indistinguishable from none at all.
        if box is None or box.gone or (tenant is not None and box.record.tenant != tenant.name):
            if ended is not None and (tenant is None or ended[0] == tenant.name):
                raise ended_error(sandbox_id, ended[1])
            raise ServiceError(404, "sandbox %s not found" % sandbox_id)
        why = box.ended()
        if why is not None:
            self._end(box, why)
            raise ended_error(sandbox_id, why)
        return box

    def _end(self, box: Box, why: str) -> None:
        """Remove a sandbox that can serve no more (Box.ended), and keep
        why for the requests that still name it."""
        with self._lock:
            self._ended[box.record.sandbox_id] = (box.record.tenant, why)
            while len(self._ended) > ENDED_KEPT:
                self._ended.popitem(last=False)
        self._remove(box, why)

    def of_tenant(self, tenant: Tenant) -> list[Box]:
        return [b for b in self.all() if b.record.tenant == tenant.name and not b.gone]

    # ---- create ----------------------------------------------------------------

    def _policy(self, tenant: Tenant) -> dict[str, Any]:
        if tenant.policy is None:
            return {"version": 1, "tools": {}}
        try:
            with open(tenant.policy, encoding="utf-8") as f:
                p = json.load(f)
        except (OSError, ValueError) as e:
            raise ServiceError(500, "tenant %s: its policy %s cannot be read: %s" % (tenant.name, tenant.policy, e))
        if not isinstance(p, dict):
            raise ServiceError(500, "tenant %s: its policy %s is not a JSON object" % (tenant.name, tenant.policy))
        return p

    def _rootfs(self, template: str) -> str:
        rootfs = self.templates.get(template)
        if rootfs is None:
            raise ServiceError(400, "template %r is not served here (known: %s)"
                               % (template, ", ".join(sorted(self.templates))))
        return rootfs

    def _new_sandbox(self, tenant: Tenant, rootfs: str, policy: dict[str, Any], tools: list[Any]) -> Sandbox:
        os.makedirs(tenant.audit_dir, mode=0o750, exist_ok=True)
        # The pause directory is the service's, not the SDK's temporary
        # state: a runsc session's bundle is made there, so the bundle (and
        # a paused sandbox's image) outlives this process for a restarted
        # service to take back.
        return Sandbox(tools, policy=policy, runtime=tenant.runtime, image=rootfs,
                       audit_dir=tenant.audit_dir, root=self.root, pause_dir=self.pause_dir,
                       tollgate=self.tollgate, memory=tenant.memory, cpus=tenant.cpus)

    def _sandbox(self, tenant: Tenant, template: str) -> Sandbox:
        """The tenant's shared Sandbox for a template: its policy without
        the tools only a client serves."""
        rootfs = self._rootfs(template)
        key = (tenant.name, rootfs)
        with self._lock:
            sb = self._sandboxes.get(key)
        if sb is None:
            sb = self._new_sandbox(tenant, rootfs, without_client_tools(self._policy(tenant)), [])
            with self._lock:
                sb = self._sandboxes.setdefault(key, sb)
        return sb

    def _client_sandbox(self, tenant: Tenant, template: str, box: Box, asked: Any) -> Sandbox:
        """A Sandbox of the box's own whose policy keeps the tenant's entries
        of the client tools asked for (their rules govern), served by the
        box's relay."""
        policy = self._policy(tenant)
        relay = Relay()
        tools = relay_tools(relay, policy, asked)
        names = {t.name for t in tools}
        kept = without_client_tools(policy)
        kept["tools"] = dict(kept["tools"], **{n: policy["tools"][n] for n in names})
        box.relay = relay
        box.own_sandbox = self._new_sandbox(tenant, self._rootfs(template), kept, tools)
        return box.own_sandbox

    def create(self, tenant: Tenant, *, template: str, timeout: int, metadata: dict[str, str],
               env_vars: dict[str, str], on_timeout: str, client_tools: Any = None) -> Box:
        timeout = min(timeout, tenant.max_timeout)
        now = time.time()
        rec = Record(sandbox_id="".join(secrets.choice(ID_CHARS) for _ in range(20)), tenant=tenant.name,
                     template=template, metadata=metadata, env_vars=env_vars, started_at=now,
                     end_at=now + timeout, envd_token=secrets.token_hex(16),
                     traffic_token=secrets.token_hex(16), on_timeout=on_timeout,
                     cpu_count=tenant.sandbox_cpus, memory_mb=tenant.sandbox_memory >> 20)
        box = Box(rec, None)
        with self._lock:
            # The quota counts the sandbox being made: two creates at once
            # cannot both take the last place.
            n = sum(1 for b in self._boxes.values() if b.record.tenant == tenant.name and not b.gone)
            if n >= tenant.max_sandboxes:
                raise ServiceError(429, "tenant %s has %d sandboxes, its quota (max_sandboxes %d): kill one "
                                   "first" % (tenant.name, n, tenant.max_sandboxes))
            mem = (n + 1) * tenant.sandbox_memory
            if tenant.max_memory is not None and mem > tenant.max_memory:
                raise ServiceError(429, "tenant %s: another sandbox of %d MiB would take its memory to %d MiB, "
                                   "over its quota (max_memory %d MiB): kill one first"
                                   % (tenant.name, tenant.sandbox_memory >> 20, mem >> 20, tenant.max_memory >> 20))
            cpus = (n + 1) * tenant.sandbox_cpus
            if tenant.max_cpus is not None and cpus > tenant.max_cpus + 1e-9:
                raise ServiceError(429, "tenant %s: another sandbox of %g CPUs would take it to %g CPUs, over its "
                                   "quota (max_cpus %g): kill one first"
                                   % (tenant.name, tenant.sandbox_cpus, cpus, tenant.max_cpus))
            self._boxes[rec.sandbox_id] = box
        try:
            sb = (self._client_sandbox(tenant, template, box, client_tools) if client_tools
                  else self._sandbox(tenant, template))
            session = sb.session()
            if session.closed:
                session.open()
            box.session = session
            rec.container_id = session.cid or ""
            rec.session_token, rec.bundle = session._token, session._bundle_dir
            rec.client_tools = bool(client_tools)
            self.hand_over(box)
            with box.lock:
                # A kill that found it listed before it was made removed no
                # record: one saved now would outlive it.
                if box.gone:
                    raise box.removed_error()
                self._save(rec)
        except BaseException as e:
            with self._lock:
                self._boxes.pop(rec.sandbox_id, None)
            if box.session is not None:
                box.session.close()
            self._close_own(box)
            if isinstance(e, ServiceError):
                raise
            if isinstance(e, TollgateSDKError):
                raise ServiceError(503, "the sandbox could not be made: %s" % e) from None
            raise
        self.log({"event": "sandbox_created", "sandbox": rec.sandbox_id, "tenant": tenant.name,
                  "container": rec.container_id, "end_at": rec.end_at})
        return box

    # ---- deadlines, kill, pause --------------------------------------------------

    def set_timeout(self, box: Box, seconds: int, *, only_extend: bool = False) -> None:
        tenant = self.tenants.by_name[box.record.tenant]
        end = time.time() + min(max(seconds, 0), tenant.max_timeout)
        with box.lock:
            # A kill removed the record: saved again, a restart found a
            # sandbox whose container was gone.
            if box.gone:
                raise box.removed_error()
            if not only_extend or end > box.record.end_at:
                box.record.end_at = end
                self.hand_over(box)
            self._save(box.record)

    def kill(self, box: Box, why: str) -> None:
        self._remove(box, why)

    def _remove(self, box: Box, why: str) -> None:
        with box.lock:
            if box.gone:
                return
            box.gone = True
            box.gone_why = why
            # The record first: a service killed before it went found the
            # container gone and dropped the sandbox as "it died, or its
            # deadline passed".  A container or image left without a record
            # is removed by the next start as named by no sandbox.
            try:
                os.unlink(self._record_path(box.record.sandbox_id))
            except OSError:
                pass
            # Deleting the container ends its processes and their execs.
            if box.session is not None:
                box.session.close()
            if box.record.pause_id:
                self._drop_pause(box)
            self._close_own(box)
        with self._lock:
            self._boxes.pop(box.record.sandbox_id, None)
        self.log({"event": "sandbox_removed", "sandbox": box.record.sandbox_id,
                  "tenant": box.record.tenant, "container": box.record.container_id, "reason": why})

    def _close_own(self, box: Box) -> None:
        if box.relay is not None:
            box.relay.close()
        if box.own_sandbox is not None:
            box.own_sandbox.close()
            box.own_sandbox = None

    def pause(self, box: Box) -> bool:
        """False when it is paused already (the API's 409)."""
        with box.lock:
            gone = box.changed_under(box.session)  # a kill that held the box first
            if gone is not None:
                raise gone
            if box.record.state == "paused":
                return False
            if box.session is None:
                raise ServiceError(409, "sandbox %s is not running" % box.record.sandbox_id)
            # Every command ends first, and its exec with it: a process that
            # `tollgate exec` started has the host's pipes for its stdio,
            # which a restore cannot give back, and a sandbox saved with
            # one running never came back ("no host FD available").
            until = time.monotonic() + PROCS_END_WAIT
            for p in list(box.procs.values()):
                p.signal(9)
            left = [p.pid for p in list(box.procs.values()) if not p.ended_by(until)]
            if left:
                raise ServiceError(500, "pause: command %s did not end within %d s of SIGKILL, and a "
                                   "sandbox saved with it could not be resumed: the sandbox keeps running"
                                   % (", ".join(map(str, left)), PROCS_END_WAIT))
            box.procs.clear()
            try:
                pause_id = box.session.pause()
            except TollgateSDKError as e:
                raise ServiceError(500, "pause: %s" % e) from None
            box.session = None
            box.record.pause_id = str(pause_id)
            box.record.state = "paused"
            self._save(box.record)
        self.log({"event": "sandbox_paused", "sandbox": box.record.sandbox_id, "tenant": box.record.tenant})
        return True

    def resume(self, box: Box) -> None:
        with box.lock:
            gone = box.changed_under(box.session)
            if gone is not None:
                raise gone
            if box.record.state != "paused":
                return
            sb = box.own_sandbox or self._sandbox(self.tenants.by_name[box.record.tenant], box.record.template)
            try:
                session = sb.resume(box.record.pause_id)
            except TollgateSDKError as e:
                raise ServiceError(500, "resume: %s" % e) from None
            box.session = session
            box.record.container_id = session.cid or ""
            box.record.pause_id = ""
            box.record.state = "running"
            try:
                self.hand_over(box)
            except ServiceError:
                self._remove(box, "its lifetime could not be set after the resume")
                raise
            self._save(box.record)
        self.log({"event": "sandbox_resumed", "sandbox": box.record.sandbox_id, "tenant": box.record.tenant})

    def _drop_pause(self, box: Box) -> None:
        if box.record.pause_id and _SAFE_ID.match(box.record.pause_id):
            remove_tree(os.path.join(self.pause_dir, box.record.pause_id))
            remove_tree(os.path.join(self.pause_dir, "bundles", box.record.pause_id))

    def hand_over(self, box: Box) -> None:
        """Give the box's container tollgate's lifetime for a service's
        sandbox: no owner process (the SDK made this process its owner),
        and the sandbox's deadline plus LIFETIME_GRACE.  So a service killed
        with kill -9 and restarted finds its containers still running and
        takes them back (_adopt.py), and one never restarted leaves them to
        tollgate's reaper past their deadlines: never a container without
        an owner and without a deadline."""
        s = box.session
        if s is None or s.cid is None or box.record.end_at == float("inf"):
            return
        # An absolute time, not seconds from now: tollgate counts seconds
        # from when it runs, in whole seconds, which put the container's
        # deadline up to a second and a process start later than this one
        # (gc at the deadline plus 6 s once found it not yet due).
        at = math.ceil(box.record.end_at + LIFETIME_GRACE)
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)) if at > time.time() + 2 else "1"
        p = subprocess.run(s.sb._tg("lifetime", "--owner-pid", "none", "--deadline", when, s.cid),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if p.returncode != 0:
            raise ServiceError(500, "tollgate lifetime %s: %s" % (s.cid, (p.stderr or p.stdout).strip()[-500:]
                                                                 or "exit status %d" % p.returncode))

    def _reap_loop(self) -> None:
        while not self._stop.wait(REAP_EVERY):
            now = time.time()
            for box in self.all():
                why = None if box.gone else box.ended()
                if why is not None:
                    self._end(box, why)
                    continue
                if box.gone or box.record.end_at > now:
                    continue
                try:
                    with box.lock:  # judged again: a kill or a set_timeout may have come first
                        if box.gone or box.record.end_at > time.time():
                            continue
                        if box.record.on_timeout == "pause" and box.record.state == "running":
                            self.pause(box)
                            # Paused past the deadline: kept until killed.
                            box.record.end_at = float("inf")
                            self._save(box.record)
                        elif box.record.state == "running" or box.record.on_timeout != "pause":
                            self._remove(box, "its deadline passed")
                except Exception as e:  # the reaper never dies of one sandbox
                    self.log({"event": "reap_failed", "sandbox": box.record.sandbox_id, "error": str(e)})
                    self._remove(box, "its deadline passed (pause failed: %s)" % e)

    # ---- records -------------------------------------------------------------------

    def _record_path(self, sandbox_id: str) -> str:
        return os.path.join(self.state_dir, "sandboxes", sandbox_id + ".json")

    def _save(self, rec: Record) -> None:
        path = self._record_path(rec.sandbox_id)
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            d = dataclasses.asdict(rec)
            if d["end_at"] == float("inf"):
                d["end_at"] = None
            json.dump(d, f)
        os.replace(tmp, path)

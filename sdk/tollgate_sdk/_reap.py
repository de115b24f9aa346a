"""Nothing outlives its owner (docs/reliability.md): what the SDK does for
tollgate's lifetimes.

Every container a Sandbox creates (runs, sessions, the warm pool) names
this process as its owner (`--owner-pid`), so that when the process dies,
even of kill -9, tollgate's reaper deletes them.  When a Sandbox starts it
runs `tollgate gc --all-roots` (the containers of dead owners, under any
root, are deleted) and removes the state directories of earlier SDK
processes that died (their bundles, policies and sockets), once nothing
of theirs is left running or mounted.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import tempfile
from typing import List, Optional, Tuple

from ._tree import mounts_under, remove_tree

OWNER_FILE = "owner"        # in the SDK's state directory: "PID START PIDNS\n"
STATE_PREFIX = "tollgate-sdk."


def owner_args() -> List[str]:
    """The create/run flags that make this process the container's owner."""
    return ["--owner-pid", str(os.getpid())]


def _identity(pid: int) -> Optional[Tuple[str, int]]:
    """(state, start time) of /proc/PID/stat, or None when there is none."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    rest = raw[raw.rfind(b")") + 2:].split()
    try:
        return rest[0].decode(), int(rest[19])
    except (IndexError, ValueError):
        return None


def init_pid(root: str, cid: str) -> int:
    """The container's init (the sandbox under runsc) as tollgate's own
    state.json under root names it (a file of the host's, never the
    container's), or 0 when it cannot be read."""
    try:
        with open(os.path.join(root, cid, "state.json"), "rb") as f:
            return int(json.loads(f.read(1 << 20)).get("init_pid") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def pid_ended(pid: int) -> bool:
    """Whether process pid is gone or a zombie (its container stopped)."""
    ident = _identity(pid)
    return ident is None or ident[0] in ("Z", "X")


def _pid_namespace() -> int:
    """The inode of this process's PID namespace, or 0."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def mark_owner(state: str) -> None:
    """Record this process as the owner of the SDK state directory: its
    pid, start time and PID namespace (a pid means nothing outside it)."""
    me = _identity(os.getpid())
    if me is None:
        return
    tmp = os.path.join(state, OWNER_FILE + ".tmp")
    with open(tmp, "w", encoding="ascii") as f:
        f.write("%d %d %d\n" % (os.getpid(), me[1], _pid_namespace()))
    os.replace(tmp, os.path.join(state, OWNER_FILE))


def owner_dead(state: str) -> bool:
    """Whether the owner recorded in an SDK state directory is gone.  An
    owner recorded in another PID namespace (a `tollgate serve` or `tollgate
    mcp` in a container, sharing /tmp) cannot be judged from here: its pid
    names another process, or none, in this one.  Such an owner counts as
    alive, as tollgate's reaper counts a container's (lifetime.h)."""
    try:
        with open(os.path.join(state, OWNER_FILE), encoding="ascii") as f:
            fields = [int(v) for v in f.read().split()]
    except (OSError, ValueError):
        return False  # not an SDK state directory we marked: not ours to judge
    if len(fields) == 3:
        pid, start, pidns = fields
        if pidns != _pid_namespace():
            return False
    elif len(fields) == 2:  # written before the namespace was recorded
        pid, start = fields
    else:
        return False
    now = _identity(pid)
    return now is None or now[1] != start or now[0] in ("Z", "X")


def _busy(state: str) -> bool:
    """Anything of it still in use: a container's state directory under
    its root, or a mount under it."""
    root = os.path.join(state, "root")
    try:
        if any(os.path.exists(os.path.join(root, e, "state.json")) for e in os.listdir(root)):
            return True
    except OSError:
        pass
    return bool(mounts_under(state))


def sweep(tollgate: str, root: Optional[str], config: Optional[str]) -> None:
    """Reap what dead owners left: every root's containers (tollgate gc
    --all-roots), then the SDK state directories of dead processes."""
    cmd = [tollgate]
    if root:
        cmd += ["--root", root]
    if config:
        cmd += ["--config", config]
    try:
        subprocess.run(cmd + ["gc", "--all-roots"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return
    for state in glob.glob(os.path.join(tempfile.gettempdir(), STATE_PREFIX + "*")):
        try:
            st = os.lstat(state)
        except OSError:
            continue
        # Only a real directory of ours (root's, not a link planted in /tmp).
        if not os.path.isdir(state) or os.path.islink(state) or st.st_uid != os.geteuid():
            continue
        if owner_dead(state) and not _busy(state):
            remove_tree(state)

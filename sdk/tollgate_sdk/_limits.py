"""What a Sandbox may ask of its containers beyond the profile's defaults:
read-only host mounts (validated before the shim validates and pins them
again) and lower resource limits (memory, cpus, pids, tmp), whose
ceilings are the host config's profile (docs/sdk.md, Files and mounts,
Resources)."""
from __future__ import annotations

import os
from typing import Mapping, TypedDict, Union

from ._errors import InvalidArgument


# Where a mount may not go: the places the profile, the bridge and the SDK
# own, and their parents.
_RESERVED = ("/app", "/tmp", "/run", "/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/sbin", "/lib",
             "/lib64")
# Host places that are never a dataset.
_HOST_SPECIAL = ("/proc", "/sys", "/dev", "/run", "/boot")


def check_mounts(mounts: Mapping[str, str | os.PathLike[str]] | None) -> list[tuple[str, str]]:
    """[(destination, source)] from Sandbox(mounts=...), or ValueError
    naming the entry and the rule.  The shim validates and pins every bind
    again when the container is made (docs/hardening.md)."""
    if mounts is None:
        return []
    if not isinstance(mounts, Mapping):
        raise InvalidArgument('mounts must be a dict such as {"/data": "/srv/datasets/x"}')
    out: list[tuple[str, str]] = []
    for dest, src in mounts.items():
        if not isinstance(dest, str) or not dest.startswith("/") or os.path.normpath(dest) != dest \
                or dest == "/" or "\0" in dest:
            raise InvalidArgument("mounts: the destination %r must be a normalised absolute path other than /"
                             % (dest,))
        for r in _RESERVED:
            if dest == r or dest.startswith(r + "/") or r.startswith(dest + "/"):
                raise InvalidArgument("mounts: %s is (or holds) %s, which the sandbox owns; mount it "
                                 "elsewhere, e.g. /data" % (dest, r))
        if not isinstance(src, (str, os.PathLike)):
            raise InvalidArgument("mounts[%r]: the source must be a host path" % dest)
        src = os.fspath(src)
        if not os.path.isabs(src) or "\0" in src:
            raise InvalidArgument("mounts[%r]: the source %r must be an absolute host path" % (dest, src))
        norm = os.path.normpath(src)
        if norm == "/":
            raise InvalidArgument("mounts[%r]: the host's / is never mounted into a sandbox; name the "
                             "directory the program needs" % dest)
        if os.path.realpath(norm) != norm:
            raise InvalidArgument("mounts[%r]: %s goes through a symbolic link (to %s); name the real "
                             "directory: links are not followed out" % (dest, src, os.path.realpath(norm)))
        for h in _HOST_SPECIAL:
            if norm == h or norm.startswith(h + "/"):
                raise InvalidArgument("mounts[%r]: %s is under the host's %s, which is never mounted into a "
                                 "sandbox" % (dest, src, h))
        if not (os.path.isdir(norm) or os.path.isfile(norm)):
            raise InvalidArgument("mounts[%r]: %s is not a directory or a regular file on the host" % (dest, src))
        out.append((dest, norm))
    return out


# a size: bytes, or text such as "512m" or "1g"
Size = Union[int, str]



class Resources(TypedDict, total=False):
    """A Sandbox's lower limits: bytes, CPUs, processes, bytes."""
    memory: int
    cpus: float
    pids: int
    tmp: int


# oci/limits.c, RUNSC_HOST_TASKS_PER_GUEST: under runsc a container's
# pids.limit in the effective config is its guest processes times this
# (the Sentry's host tasks); the guest count itself is RLIMIT_NPROC.
RUNSC_HOST_TASKS_PER_GUEST = 64
_UNITS: dict[str, int] = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def parse_size(v: Size, what: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    if isinstance(v, str):
        t = v.strip().lower()
        num = t.rstrip("kmgibB")
        unit = t[len(num):]
        try:
            n = float(num)
        except ValueError:
            n = -1
        if n > 0 and unit in _UNITS:
            return int(n * _UNITS[unit])
    raise InvalidArgument("%s=%r: give a size such as \"512m\", \"1g\" or a number of bytes" % (what, v))


def size_text(n: int) -> str:
    for unit, size in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if n % size == 0:
            return "%d%s" % (n // size, unit)
    return "%d bytes" % n


def check_resources(memory: Size | None, cpus: float | None, pids: int | None,
                    tmp: Size | None) -> Resources:
    r: Resources = {}
    if memory is not None:
        r["memory"] = memory_bytes = parse_size(memory, "memory")
        if memory_bytes < (16 << 20):
            raise InvalidArgument("memory=%r: at least 16m, or Python cannot start" % (memory,))
    if tmp is not None:
        r["tmp"] = parse_size(tmp, "tmp")
    if cpus is not None:
        if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not cpus > 0:
            raise InvalidArgument("cpus=%r: give a number of CPUs such as 0.5 or 2" % (cpus,))
        r["cpus"] = float(cpus)
    if pids is not None:
        if isinstance(pids, bool) or not isinstance(pids, int) or pids < 8:
            raise InvalidArgument("pids=%r: give a whole number of processes, at least 8" % (pids,))
        r["pids"] = pids
    return r

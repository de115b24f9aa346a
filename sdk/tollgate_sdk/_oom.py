"""Telling an out-of-memory kill from any other death.

A container at its memory limit meets the kernel's OOM killer: under runc
the program gets SIGKILL (exit 137), under runsc a task of the sandbox is
killed and the run ends with whatever status gVisor gives (often 1), so
the exit status alone cannot say it.  The kernel's log does:
`oom-kill:constraint=CONSTRAINT_MEMCG,...,oom_memcg=/ID,...` names the
memory cgroup, which runc names after the container id and tollgate's
runsc backend after its backend id (shim/lifecycle/backend.c: the container's own
id, or tg-<hex> for a prefix relative).  A Watch opens
/dev/kmsg at its end before the run and reads what came after it.
Root only; without /dev/kmsg it answers False (the doc says so).
"""
from __future__ import annotations

import errno
import hashlib
import os


def backend_ids(cid: str, runtime: str) -> list[str]:
    # runsc knows a container by its own id unless another id of the root
    # is its prefix relative, then by tg-<32 hex of SHA-256> (docs/cli.md)
    if runtime == "runsc":
        return [cid, "tg-" + hashlib.sha256(cid.encode()).hexdigest()[:32]]
    return [cid]


class Watch:
    def __init__(self, cid: str, runtime: str) -> None:
        self.ids = backend_ids(cid, runtime)
        self.found = False
        self.fd = -1
        try:
            self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError:
            self.close()

    def killed(self) -> bool:
        """True when the kernel logged an OOM kill in this container's
        memory cgroup since the Watch began.  Reads at most 10000 records."""
        if self.fd < 0:
            return self.found
        found = self.found
        for _ in range(10000):
            try:
                rec = os.read(self.fd, 8192)
            except OSError as e:
                if e.errno == errno.EPIPE:  # records overwritten meanwhile: go on from here
                    continue
                break
            if not rec:
                break
            text = rec.decode("utf-8", "replace")
            if "oom-kill:" in text and "oom_memcg=" in text:
                memcg = text.split("oom_memcg=", 1)[1].split(",", 1)[0].strip()
                if any(memcg.rstrip("/").rsplit("/", 1)[-1] == i or memcg.endswith("/" + i) for i in self.ids):
                    found = True
        self.found = found  # sticky: later calls read only what came since
        return found

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

"""Removing a directory tree without ever deleting through a mount.

A container's state directory holds bind mounts of host trees: its pins
(pins/rootfs is the image itself), its bridge and its reach.  While a
container's delete has not finished (it failed, or is in flight), those
mounts stand, and shutil.rmtree would follow them and delete the image's
files.  Every tree the SDK removes goes through remove_tree, which leaves a
tree that still has a mount in place: the container's own delete (or the
reaper, docs/reliability.md) unmounts it, and a later sweep removes it.
"""
from __future__ import annotations

import os
import shutil
from typing import List

__all__ = ["mounts_under", "remove_tree"]


def _unescape(field: str) -> str:
    """/proc/self/mountinfo writes space, tab, newline and backslash as \\ooo."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(path: str) -> List[str]:
    """The mount points at or below PATH.  When the mount table cannot be
    read, PATH itself: the caller must then assume the worst."""
    path = os.path.abspath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return [path]
    found = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        point = _unescape(fields[4])
        if point == path or point.startswith(path + "/"):
            found.append(point)
    return found


def remove_tree(path: str) -> bool:
    """rm -rf PATH unless something is mounted at or below it; symbolic
    links are removed, never followed.  True when PATH is gone."""
    if mounts_under(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)

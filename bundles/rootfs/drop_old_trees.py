"""drop_old_trees.py DEST: remove the trees a rebuild moved aside
(DEST.old.*) that no process on the host still uses.

A container whose config names DEST by path (passthrough runs no pin)
keeps using the tree it started on after a rebuild swapped DEST
(replace_tree.py), and that use is not in the builder's mount table: it
is in the container's own mount namespace (runc's init, runsc's gofer).
Emptying such a tree under it made a runsc container in another test lane
fail with 'error finding executable "sh"'.  So every process is looked
at: a mount in its namespace whose root is the tree or below it, or its
root directory or working directory being the tree itself.  A tree some
process uses stays for a later rebuild to drop.
"""
import os
import shutil
import sys


def mount_roots(pid: str) -> list[str]:
    """The root field of each mount in pid's mount namespace."""
    try:
        with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as f:
            fields = (line.split() for line in f)
            return [x[3] for x in fields if len(x) > 3]
    except OSError:  # gone, or a kernel thread
        return []


def in_use(tree: str, pids: list[str]) -> bool:
    st = os.stat(tree, follow_symlinks=False)
    ident = (st.st_dev, st.st_ino)
    for pid in pids:
        for link in ("root", "cwd"):
            try:
                s = os.stat(f"/proc/{pid}/{link}")
            except OSError:
                continue
            if (s.st_dev, s.st_ino) == ident:
                return True
        for root in mount_roots(pid):
            if root == tree or root.startswith(tree + "/"):
                return True
    return False


def main() -> None:
    dest = sys.argv[1]
    parent, base = os.path.split(os.path.abspath(dest))
    old = [os.path.join(parent, n) for n in sorted(os.listdir(parent))
           if n.startswith(base + ".old.")]
    old = [t for t in old if os.path.isdir(t) and not os.path.islink(t)]
    if not old:
        return
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    for tree in old:
        if not in_use(tree, pids):
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()

"""replace_tree.py NEW DEST: put the directory NEW at DEST in one step.

A rootfs builder rebuilds a shared tree while other scripts' containers
use it (a runtime's mount point in it triggers the rebuild).  Moving the
old tree aside and the new one in is two renames, and a create between
them found no DEST at all (seen with three test lanes: "root.path ... no
such entry").  renameat2(RENAME_EXCHANGE) swaps the two names at once;
NEW then names the old tree, which the caller moves aside and removes
once nothing mounts it.  A DEST that does not exist yet is a plain rename.
"""
import ctypes
import os
import sys

AT_FDCWD = -100
RENAME_EXCHANGE = 2

new, dest = sys.argv[1], sys.argv[2]
if not os.path.lexists(dest):
    os.rename(new, dest)
    sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(AT_FDCWD, new.encode(), AT_FDCWD, dest.encode(), RENAME_EXCHANGE) != 0:
    e = ctypes.get_errno()
    sys.exit("replace_tree.py: exchange %s and %s: %s" % (new, dest, os.strerror(e)))

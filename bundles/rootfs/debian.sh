#!/usr/bin/env bash
# Build a Debian 12 root filesystem as an ordinary user would, with
# mmdebstrap from Debian's archive: `--variant=minbase --include=python3
# bookworm`, nothing of tollgate's added or removed.  It is the input
# tollgate did not make (tests/integration/test_images.sh): about 15 s and
# 220 MiB the first time, then DEST is kept and reused (rebuilt only when
# it is missing or unfinished; delete it to refresh it).  The tests never
# run on DEST itself: each run gets an overlay over it, as containerd's
# snapshotter gives a container, so DEST stays exactly what mmdebstrap made.
# Usage: bundles/rootfs/debian.sh DEST
set -euo pipefail
dest=${1:?usage: debian.sh DEST}
mkdir -p "$(dirname "$dest")"
# Two test scripts may want the tree at once (the integration runner runs
# two in parallel): the second waits for the first's build rather than
# building its own and replacing the tree under the first's containers.
exec 8>"$dest.lock"
flock 8
if [ -f "$dest.built" ] && [ -x "$dest/usr/bin/python3" ]; then
  exit 0
fi
command -v mmdebstrap >/dev/null ||
  { echo "debian.sh: mmdebstrap is missing; run 'make deps' (package mmdebstrap)" >&2; exit 1; }
tmp="$dest.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$(dirname "$dest")"
mmdebstrap --quiet --variant=minbase --include=python3 bookworm "$tmp" >&2
[ -x "$tmp/usr/bin/python3" ] || { echo "debian.sh: $tmp has no /usr/bin/python3" >&2; exit 1; }
# The marker of a finished build sits beside the tree, not in it (that
# would be a change to the image).
rm -rf "$dest" "$dest.built"
mv "$tmp" "$dest"
trap - EXIT
touch "$dest.built"
echo "debian rootfs: $dest ($(du -sh "$dest" | cut -f1))" >&2

#!/usr/bin/env bash
# Build a busybox root filesystem from Debian's busybox-static, offline and
# deterministically: DEST is rebuilt only when the busybox binary or this
# script changed (a stamp file records both), or when the tree no longer
# holds exactly what was built (a runtime made a mount point in it).
#
# Like an ordinary image, it has no /run and nothing of tollgate's: the
# bridge's /run/tollgate and any other mount point are the runtime's to
# make (tollgate makes them as host root under runc's user namespace,
# docs/hardening.md "What tollgate makes in a rootfs"), so every test that
# uses this tree takes that path.
# Usage: bundles/rootfs/busybox.sh DEST
set -euo pipefail
dest=${1:?usage: busybox.sh DEST}
# Scripts in other lanes check and rebuild the same tree: one at a time.
mkdir -p "$(dirname "$dest")"
exec 8>"$dest.lock"
flock 8
bb=/bin/busybox
[ -x "$bb" ] || { echo "busybox.sh: $bb is missing; run 'make deps' (package busybox-static)" >&2; exit 1; }
"$bb" true || { echo "busybox.sh: $bb does not run" >&2; exit 1; }
stamp="$(sha256sum "$bb" "$0" | sha256sum | cut -d' ' -f1)"
# The tree's shape: every path, with no content (cheap: ~400 entries).
shape() { (cd "$1" && find . ! -name .tollgate-rootfs | LC_ALL=C sort | sha256sum | cut -d' ' -f1); }
if [ -f "$dest/.tollgate-rootfs" ] && [ "$(head -n1 "$dest/.tollgate-rootfs")" = "$stamp" ] &&
   [ "$(sed -n 2p "$dest/.tollgate-rootfs")" = "$(shape "$dest")" ]; then
  exit 0
fi
tmp="$dest.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"/{bin,dev,etc,proc,sys,tmp,root,home,var,mnt}
chmod 1777 "$tmp/tmp"
cp "$bb" "$tmp/bin/busybox"
for applet in $("$bb" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$tmp/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' > "$tmp/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/sh' >> "$tmp/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$tmp/etc/group"
printf '%s\n%s\n' "$stamp" "$(shape "$tmp")" > "$tmp/.tollgate-rootfs"
# Fixed timestamps keep the tree byte-for-byte the same from run to run.
find "$tmp" -exec touch -h -d @0 {} +
# A tree a container still uses (its pin, a bind mount, is a mount whose
# root is that tree) is moved aside, not emptied under it; trees moved
# aside earlier go once no process uses them, in any mount namespace
# (drop_old_trees.py).
# One step, so that a create beside the rebuild never finds no tree:
# $tmp names the old tree afterwards (bundles/rootfs/replace_tree.py).
python3 "$(dirname "$0")/replace_tree.py" "$tmp" "$dest"
[ -e "$tmp" ] && mv "$tmp" "$dest.old.$$"
python3 "$(dirname "$0")/drop_old_trees.py" "$dest"
echo "busybox rootfs: $dest ($(du -sh "$dest" | cut -f1))" >&2

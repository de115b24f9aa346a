#!/usr/bin/env bash
# Build a busybox root filesystem from Debian's busybox-static, offline and
# deterministically: DEST is rebuilt only when the busybox binary or this
# script changed (a stamp file records both).
# Usage: bundles/rootfs/busybox.sh DEST
set -euo pipefail
dest=${1:?usage: busybox.sh DEST}
bb=/bin/busybox
[ -x "$bb" ] || { echo "busybox.sh: $bb is missing; run 'make deps' (package busybox-static)" >&2; exit 1; }
"$bb" true || { echo "busybox.sh: $bb does not run" >&2; exit 1; }
stamp="$(sha256sum "$bb" "$0" | sha256sum | cut -d' ' -f1)"
if [ -f "$dest/.tollgate-rootfs" ] && [ "$(cat "$dest/.tollgate-rootfs")" = "$stamp" ]; then
  exit 0
fi
tmp="$dest.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"/{bin,dev,etc,proc,sys,tmp,run/tollgate,root,home,var,mnt}
chmod 1777 "$tmp/tmp"
cp "$bb" "$tmp/bin/busybox"
for applet in $("$bb" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$tmp/bin/$applet"
done
echo 'root:x:0:0:root:/root:/bin/sh' > "$tmp/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/sh' >> "$tmp/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$tmp/etc/group"
echo "$stamp" > "$tmp/.tollgate-rootfs"
# Fixed timestamps keep the tree byte-for-byte the same from run to run.
find "$tmp" -exec touch -h -d @0 {} +
rm -rf "$dest"
mv "$tmp" "$dest"
echo "busybox rootfs: $dest ($(du -sh "$dest" | cut -f1))" >&2

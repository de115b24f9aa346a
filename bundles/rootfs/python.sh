#!/usr/bin/env bash
# Build a minimal Python 3 root filesystem from the Debian interpreter
# (/usr/bin/python3.11, never a pyenv build): the interpreter, the shared
# libraries it and its extension modules need (found with ldd), and the
# standard library without tests, IDLE, tkinter, pip/ensurepip, 2to3,
# distutils and the build config.  No shell unless --shell is given (then
# busybox's sh from busybox-static).  /tmp exists so temp files work on a
# read-only root.  Like an ordinary image it has no /run and nothing of
# tollgate's: the bridge's mount points are the runtime's to make
# (docs/hardening.md "What tollgate makes in a rootfs").
#
# DEST is rebuilt only when the interpreter, the Debian packages or this
# script changed (a stamp file records them), or when the tree no longer
# holds exactly what was built (a runtime made a mount point in it).
# Prints the size; fails if it is 60 MiB or more.
# Usage: bundles/rootfs/python.sh DEST [--shell]
set -euo pipefail
dest=${1:?usage: python.sh DEST [--shell]}
# Scripts in other lanes check and rebuild the same tree: one at a time.
mkdir -p "$(dirname "$dest")"
exec 8>"$dest.lock"
flock 8
shell=${2:-}
py=/usr/bin/python3.11
stdlib=/usr/lib/python3.11
limit_kib=$((60 * 1024))
[ -x "$py" ] || { echo "python.sh: $py is missing; run 'make deps' (package python3)" >&2; exit 1; }
[ -d "$stdlib" ] || { echo "python.sh: $stdlib is missing; run 'make deps'" >&2; exit 1; }

stamp="$( { sha256sum "$py" "$0"; echo "$shell";
            dpkg-query -W python3.11-minimal libpython3.11-minimal libpython3.11-stdlib 2>/dev/null; } \
          | sha256sum | cut -d' ' -f1)"
# The tree's shape: every path, with no content.
shape() { (cd "$1" && find . ! -name .tollgate-rootfs | LC_ALL=C sort | sha256sum | cut -d' ' -f1); }
if [ -f "$dest/.tollgate-rootfs" ] && [ "$(head -n1 "$dest/.tollgate-rootfs")" = "$stamp" ] &&
   [ "$(sed -n 2p "$dest/.tollgate-rootfs")" = "$(shape "$dest")" ]; then
  exit 0
fi

tmp="$dest.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp"/{usr/bin,usr/lib,usr/lib64,dev,etc,proc,sys,tmp,home,root}
chmod 1777 "$tmp/tmp"
# Debian is merged-/usr: keep the same shape so ldd's paths resolve.
ln -s usr/lib "$tmp/lib"
ln -s usr/lib64 "$tmp/lib64"
ln -s usr/bin "$tmp/bin"

cp "$py" "$tmp/usr/bin/python3.11"
ln -s python3.11 "$tmp/usr/bin/python3"
ln -s python3.11 "$tmp/usr/bin/python"

# The standard library, without what a sandboxed program never imports.
tar -C /usr/lib -cpf - \
    --exclude='python3.11/test' --exclude='python3.11/*/test' --exclude='python3.11/*/tests' \
    --exclude='python3.11/idlelib' --exclude='python3.11/tkinter' \
    --exclude='python3.11/turtledemo' --exclude='python3.11/ensurepip' \
    --exclude='python3.11/lib2to3' --exclude='python3.11/distutils' \
    --exclude='python3.11/config-3.11-*' --exclude='python3.11/pydoc_data' \
    --exclude='python3.11/site-packages' --exclude='python3.11/dist-packages' \
    --exclude='python3.11/__phello__' \
    python3.11 | tar -C "$tmp/usr/lib" -xf -

# Shared libraries of the interpreter and of every extension module.
copy_lib() {
  local p=$1 r
  r=$(readlink -f "$p")
  [ -e "$tmp$r" ] || { mkdir -p "$tmp$(dirname "$r")"; cp "$r" "$tmp$r"; }
  # The name the loader asks for (a symlink on the host) must exist too.
  local want=$p
  case $want in /lib/*|/lib64/*) want=/usr$want ;; esac
  if [ "$want" != "$r" ] && [ ! -e "$tmp$want" ]; then
    mkdir -p "$tmp$(dirname "$want")"
    ln -s "$r" "$tmp$want"
  fi
}
for f in "$py" "$stdlib"/lib-dynload/*.so; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]+/{print $1}'
done | sort -u | while read -r lib; do copy_lib "$lib"; done

if [ "$shell" = "--shell" ]; then
  cp /bin/busybox "$tmp/usr/bin/busybox"
  ln -s busybox "$tmp/usr/bin/sh"
fi

echo 'root:x:0:0:root:/root:/nonexistent' > "$tmp/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/nonexistent:/nonexistent' >> "$tmp/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$tmp/etc/group"

# It must run before it is published.
if ! chroot "$tmp" /usr/bin/python3.11 -S -c 'import json, os, threading, time; print("ok")' >/dev/null; then
  echo "python.sh: the rootfs in $tmp does not run python3.11" >&2
  exit 1
fi
size_kib=$(du -sk "$tmp" | cut -f1)
if [ "$size_kib" -ge "$limit_kib" ]; then
  echo "python.sh: the rootfs is $((size_kib / 1024)) MiB, over the 60 MiB limit" >&2
  exit 1
fi
printf '%s\n%s\n' "$stamp" "$(shape "$tmp")" > "$tmp/.tollgate-rootfs"
# Timestamps are kept as installed: the .pyc files record their source's
# mtime, and a changed one makes every start recompile (and try to write
# into the read-only root).
# A tree a container still uses (its pin, a bind mount, is a mount whose
# root is that tree) is moved aside, not emptied under it; trees moved
# aside earlier go once no process uses them, in any mount namespace
# (drop_old_trees.py).
# One step, so that a create beside the rebuild never finds no tree:
# $tmp names the old tree afterwards (bundles/rootfs/replace_tree.py).
python3 "$(dirname "$0")/replace_tree.py" "$tmp" "$dest"
[ -e "$tmp" ] && mv "$tmp" "$dest.old.$$"
python3 "$(dirname "$0")/drop_old_trees.py" "$dest"
trap - EXIT
echo "python rootfs: $dest ($((size_kib / 1024)) MiB)" >&2

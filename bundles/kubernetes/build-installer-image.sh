#!/usr/bin/env bash
# Build the installer image of the tollgate DaemonSet, offline:
#
#   bundles/kubernetes/build-installer-image.sh BUILD_DIR [NAME]
#
# writes BUILD_DIR/images/installer.tar (an OCI archive; NAME defaults to
# localhost/tollgate/installer:dev).  Push it to your registry with any OCI
# tool, e.g. `ctr image import` then `ctr image push`, and set the image in
# installer.yaml.  The image holds:
#
#   /opt/tollgate/bin/tollgate           built with RPATH $ORIGIN/../lib
#   /opt/tollgate/bin/runsc              this machine's runsc (a static binary)
#   /opt/tollgate/lib/                   tollgate's libraries except glibc
#                                        (yajl, libseccomp, libcap-ng, libmnl,
#                                        libcrypto), so a node needs none of them
#   /opt/tollgate/lib/tollgate/          the in-container clients
#   /opt/tollgate/share/tollgate/        hardening profiles and seccomp lists
#   /opt/tollgate-installer/             install.sh and sync.sh
#
# on a busybox root (with glibc, so install.sh can run tollgate --version).
# Nodes need a glibc at least as new as this machine's (Debian 12: 2.36).
set -euo pipefail
build=$(realpath -m "${1:?usage: build-installer-image.sh BUILD_DIR [NAME]}")
name=${2:-localhost/tollgate/installer:dev}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
obj=$build/installer
stage=$build/installer-rootfs
P=$stage/opt/tollgate

# tollgate (bin/) and tollgate-http (lib/tollgate/) find their libraries
# in the tree's lib/ wherever the tree is copied.
make -s -C "$top" BUILD="$obj" LDLIBS='-Wl,-rpath,\$$ORIGIN/../lib:\$$ORIGIN/..' \
  "$obj/tollgate" "$obj/tollgate-call" "$obj/tollgate-http" >&2
runsc=$(command -v runsc) || { echo "build-installer-image.sh: runsc is missing; run 'make deps'" >&2; exit 1; }
bash "$top/bundles/rootfs/busybox.sh" "$build/rootfs/busybox" 2>/dev/null

rm -rf "$stage"
cp -a "$build/rootfs/busybox" "$stage"
rm -f "$stage/.tollgate-rootfs"
install -D -m 0755 "$obj/tollgate" "$P/bin/tollgate"
install -D -m 0755 "$runsc" "$P/bin/runsc"
install -D -m 0755 "$obj/tollgate-call" "$P/lib/tollgate/tollgate-call"
# The http tool's request maker (docs/egress.md), where an installed
# tollgate looks for it: without it every http tool on the node fails.
install -D -m 0755 "$obj/tollgate-http" "$P/lib/tollgate/tollgate-http"
install -D -m 0644 "$top/bridge/client/tollgate.py" "$P/lib/tollgate/tollgate.py"
mkdir -p "$P/share/tollgate"
cp -r "$top/bundles/profiles" "$top/bundles/seccomp" "$P/share/tollgate/"
cp "$top/bundles/backend-floor.json" "$P/share/tollgate/"
install -D -m 0755 "$here/installer/install.sh" "$stage/opt/tollgate-installer/install.sh"
install -D -m 0755 "$here/installer/sync.sh" "$stage/opt/tollgate-installer/sync.sh"

# Libraries: glibc stays the node's own (it must match the node's loader);
# everything else travels with tollgate.  The image itself gets glibc and
# the loader at their usual paths so tollgate runs inside the installer.
ldd "$obj/tollgate" "$obj/tollgate-http" | awk '/=>/ {print $3} /ld-linux/ {print $1}' | while read -r lib; do
  [ -f "$lib" ] || continue
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*)
      install -D -m 0755 "$(realpath "$lib")" "$stage$lib" ;;
    *)
      install -D -m 0644 "$(realpath "$lib")" "$P/lib/$(basename "$lib")" ;;
  esac
done

mkdir -p "$build/images"
python3 "$top/bundles/containerd/oci-image.py" --rootfs "$stage" --name "$name" \
  --out "$build/images/installer.tar" --cmd /opt/tollgate-installer/install.sh

#!/usr/bin/env bash
# Build tollgate's test images as OCI archives, offline, from the project's
# own rootfs scripts; `ctr image import` loads them.
#
#   bundles/containerd/build-images.sh BUILD_DIR [busybox|pause|probe|python|debian]...
#
# Writes BUILD_DIR/images/<name>.tar (default: every image whose inputs
# exist, but debian, which needs Debian's archive the first time).  Each
# archive is rebuilt only when its inputs changed (a stamp beside it
# records their hashes), so test runs after the first are cheap.
#
#   localhost/tollgate/busybox:test  bundles/rootfs/busybox.sh
#   localhost/tollgate/pause:test    busybox running `sleep` forever: the CRI pod sandbox image
#   localhost/tollgate/probe:test    busybox + BUILD_DIR/tollgate-probe at /usr/bin/tollgate-probe
#   localhost/tollgate/python:test   bundles/rootfs/python.sh (python3); PYTHONPATH=/run/tollgate,
#                                    where the bridge mounts the client (import tollgate)
#   localhost/tollgate/debian:test   bundles/rootfs/debian.sh: mmdebstrap's Debian 12 with python3,
#                                    an input tollgate did not make (cached in BUILD_DIR/rootfs/debian);
#                                    nothing added, the device nodes of its /dev left out
set -euo pipefail
build=${1:?usage: build-images.sh BUILD_DIR [busybox|pause|probe|python|debian]...}
shift
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mkdir -p "$build/images"
# One build at a time: two test scripts run in parallel, and each builds
# what it imports; the second finds the first's archives up to date.
exec 9>"$build/images/.lock"
flock 9
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=(busybox pause probe)
  [ -f "$top/bundles/rootfs/python.sh" ] && names+=(python)
fi

# stamp_ok OUT INPUT...: true when OUT exists and was built from these inputs.
stamp_of() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }
build_one() {
  local name=$1 out=$build/images/$1.tar; shift
  local stamp; stamp=$(stamp_of "$here/oci-image.py" "$0" "$@")
  if [ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  echo "$stamp" > "$out.stamp.new"
  return 1
}
finish() { mv "$1.stamp.new" "$1.stamp"; }

busybox_rootfs=$build/rootfs/busybox
bash "$top/bundles/rootfs/busybox.sh" "$busybox_rootfs" 2>/dev/null

for name in "${names[@]}"; do
  out=$build/images/$name.tar
  case $name in
    busybox)
      build_one busybox "$busybox_rootfs/.tollgate-rootfs" && continue
      python3 "$here/oci-image.py" --rootfs "$busybox_rootfs" --out "$out" \
        --name localhost/tollgate/busybox:test --cmd sh
      ;;
    pause)
      build_one pause "$busybox_rootfs/.tollgate-rootfs" && continue
      python3 "$here/oci-image.py" --rootfs "$busybox_rootfs" --out "$out" \
        --name localhost/tollgate/pause:test --cmd /bin/sleep --cmd 2147483647
      ;;
    probe)
      probe=$build/tollgate-probe
      [ -x "$probe" ] || { echo "build-images.sh: $probe is missing; run 'make all' first" >&2; exit 1; }
      build_one probe "$busybox_rootfs/.tollgate-rootfs" "$probe" && continue
      python3 "$here/oci-image.py" --rootfs "$busybox_rootfs" --out "$out" \
        --name localhost/tollgate/probe:test --add "$probe:/usr/bin/tollgate-probe" \
        --cmd /usr/bin/tollgate-probe
      ;;
    python)
      script=$top/bundles/rootfs/python.sh
      [ -f "$script" ] || { echo "build-images.sh: $script is missing (the bridge work provides it)" >&2; exit 1; }
      rootfs=$build/rootfs/python
      bash "$script" "$rootfs" >&2
      build_one python "$script" "$rootfs/.tollgate-rootfs" && continue
      python3 "$here/oci-image.py" --rootfs "$rootfs" --out "$out" \
        --name localhost/tollgate/python:test --cmd python3 \
        --env PATH=/usr/local/bin:/usr/bin:/bin --env PYTHONPATH=/run/tollgate
      ;;
    debian)
      script=$top/bundles/rootfs/debian.sh
      rootfs=$build/rootfs/debian
      bash "$script" "$rootfs"
      # The tree is rebuilt only when it is missing: its marker's time says
      # which build this is.
      build_one debian "$script" <(stat -c %Y "$rootfs.built") && continue
      python3 "$here/oci-image.py" --rootfs "$rootfs" --out "$out" --drop-devices \
        --name localhost/tollgate/debian:test --cmd python3
      ;;
    *) echo "build-images.sh: unknown image '$name' (busybox, pause, probe, python or debian)" >&2; exit 2 ;;
  esac
  finish "$out"
done

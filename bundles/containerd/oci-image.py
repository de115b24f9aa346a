#!/usr/bin/env python3
"""Write an OCI image archive from a root filesystem directory, offline.

    oci-image.py --rootfs DIR --name REF --out FILE.tar [--cmd ARG]... [--env K=V]...
                 [--add SRC:DEST]... [--workdir DIR] [--drop-devices]

The archive is an OCI image layout (oci-layout, index.json, blobs/sha256/...)
packed in a tar, which is what `ctr image import` reads.  One uncompressed
layer holds the whole tree: local imports gain nothing from gzip and the
layer digest stays stable.  --add puts an extra host file into the layer
(e.g. the static probe into a busybox tree) without touching DIR, which is
shared with other tests.  --drop-devices leaves out the character and block
device nodes of DIR (a debootstrap or mmdebstrap tree has /dev/null and
friends): an image layer carries none, the runtime makes /dev.  Without it
a device node is refused.

Deterministic: entries are sorted, owned by 0:0 and dated at the epoch, so
the same inputs always give the same image digest.  The manifest carries
both `io.containerd.image.name` (the full reference ctr names the image
by) and `org.opencontainers.image.ref.name` (the tag, for other tools).
"""
import argparse
import hashlib
import io
import json
import os
import stat
import sys
import tarfile


def tarinfo_for(path, arcname):
    st = os.lstat(path)
    ti = tarfile.TarInfo(arcname)
    ti.mode = stat.S_IMODE(st.st_mode)
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    ti.mtime = 0
    if stat.S_ISLNK(st.st_mode):
        ti.type = tarfile.SYMTYPE
        ti.linkname = os.readlink(path)
    elif stat.S_ISDIR(st.st_mode):
        ti.type = tarfile.DIRTYPE
    elif stat.S_ISREG(st.st_mode):
        ti.type = tarfile.REGTYPE
        ti.size = st.st_size
    else:
        # Device nodes, FIFOs and sockets have no place in an image layer:
        # the runtime provides /dev.  Refuse rather than silently drop.
        raise SystemExit(f"oci-image: {path}: not a file, directory or symlink; "
                         "remove it from the rootfs")
    return ti


def is_device(path):
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def build_layer(rootfs, adds, drop_devices=False):
    """Return the layer tar bytes: the rootfs tree plus --add files."""
    buf = io.BytesIO()
    added = {dest.strip("/"): src for src, dest in adds}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = []
        for dirpath, dirnames, filenames in os.walk(rootfs):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, rootfs)
            for name in sorted(dirnames + filenames):
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if rel == ".tollgate-rootfs" or rel in added:
                    continue
                if drop_devices and is_device(os.path.join(dirpath, name)):
                    continue
                entries.append((rel, os.path.join(dirpath, name)))
        for rel, src in sorted(added.items()):
            entries.append((rel, src))
        for rel, path in sorted(entries):
            ti = tarinfo_for(path, rel)
            if ti.type == tarfile.REGTYPE:
                with open(path, "rb") as f:
                    tar.addfile(ti, f)
            else:
                tar.addfile(ti)
    return buf.getvalue()


def blob(out_tar, data):
    digest = hashlib.sha256(data).hexdigest()
    ti = tarfile.TarInfo(f"blobs/sha256/{digest}")
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    out_tar.addfile(ti, io.BytesIO(data))
    return "sha256:" + digest


def add_bytes(out_tar, name, data):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    out_tar.addfile(ti, io.BytesIO(data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rootfs", required=True)
    ap.add_argument("--name", required=True, help="full reference, e.g. localhost/tollgate/busybox:test")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cmd", action="append", default=[])
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--add", action="append", default=[], metavar="SRC:DEST")
    ap.add_argument("--workdir", default="/")
    ap.add_argument("--drop-devices", action="store_true",
                    help="leave out device nodes (an image layer carries none)")
    a = ap.parse_args()

    if not os.path.isdir(a.rootfs):
        sys.exit(f"oci-image: rootfs {a.rootfs} is not a directory; build it first "
                 "(bundles/rootfs/*.sh)")
    adds = []
    for spec in a.add:
        src, sep, dest = spec.partition(":")
        if not sep or not os.path.isfile(src):
            sys.exit(f"oci-image: --add {spec}: want SRC:DEST with SRC an existing file")
        adds.append((src, dest))
    tag = a.name.rsplit(":", 1)[1] if ":" in a.name.rsplit("/", 1)[-1] else "latest"

    layer = build_layer(a.rootfs, adds, a.drop_devices)
    layer_digest = "sha256:" + hashlib.sha256(layer).hexdigest()
    env = a.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    config = {
        "created": "1970-01-01T00:00:00Z",
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": env, "Cmd": a.cmd or ["sh"], "WorkingDir": a.workdir},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created": "1970-01-01T00:00:00Z",
                     "created_by": "tollgate bundles/containerd/oci-image.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()

    tmp = a.out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as out:
        add_bytes(out, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        config_digest = blob(out, config_bytes)
        blob(out, layer)
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": len(config_bytes)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest, "size": len(layer)}],
        }
        manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        manifest_digest = blob(out, manifest_bytes)
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest, "size": len(manifest_bytes),
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {"io.containerd.image.name": a.name,
                                "org.opencontainers.image.ref.name": tag},
            }],
        }
        add_bytes(out, "index.json", json.dumps(index, sort_keys=True).encode())
    os.replace(tmp, a.out)
    print(f"image {a.name}: {a.out} ({len(layer) // 1024} KiB layer, {manifest_digest[:19]})",
          file=sys.stderr)


if __name__ == "__main__":
    main()

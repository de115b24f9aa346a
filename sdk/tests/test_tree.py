"""remove_tree never deletes through a mount (tollgate_sdk._tree).

The real case: a container's delete failed, its state directory still
holds pins/rootfs, a bind mount of the image, and the SDK removes its
state.  shutil.rmtree would empty the image; remove_tree leaves the tree."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import pathlib

import pytest

from tollgate_sdk._tree import mounts_under, remove_tree

MS_BIND = 4096
MNT_DETACH = 2


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _bind(src: pathlib.Path, dst: pathlib.Path) -> None:
    if _libc().mount(str(src).encode(), str(dst).encode(), None, MS_BIND, None) != 0:
        pytest.skip("bind mount refused (errno %d): needs root" % ctypes.get_errno())


def _umount(p: pathlib.Path) -> None:
    _libc().umount2(str(p).encode(), MNT_DETACH)


def test_a_tree_without_mounts_goes(tmp_path: pathlib.Path) -> None:
    tree = tmp_path / "state"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f").write_text("x")
    os.symlink("/etc", tree / "link")  # removed, never followed
    assert remove_tree(str(tree))
    assert not tree.exists()
    assert os.path.exists("/etc/passwd")


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_a_bind_mounted_image_is_never_emptied(tmp_path: pathlib.Path) -> None:
    image = tmp_path / "image"
    (image / "usr" / "bin").mkdir(parents=True)
    (image / "usr" / "bin" / "python3").write_text("#!")
    tree = tmp_path / "state"
    pin = tree / "root" / "c1" / "pins" / "rootfs"
    pin.mkdir(parents=True)
    _bind(image, pin)
    try:
        assert mounts_under(str(tree)) == [str(pin)]
        assert not remove_tree(str(tree))
        assert (image / "usr" / "bin" / "python3").exists()
        assert (pin / "usr" / "bin" / "python3").exists()
    finally:
        _umount(pin)
    assert remove_tree(str(tree))
    assert (image / "usr" / "bin" / "python3").exists()


def test_a_sibling_with_a_common_prefix_is_not_under(tmp_path: pathlib.Path) -> None:
    assert mounts_under(str(tmp_path / "nothing-mounted-here")) == []

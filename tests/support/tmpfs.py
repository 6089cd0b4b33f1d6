"""A small tmpfs mounted for one test: a disk that really fills up or turns read-only.

Mounting needs root (CI runs the suite as root, inside ``unshare -n``, which keeps mounting
allowed). A test that is not run as root is skipped, saying so; a root that still may not
mount fails, since the fault suite would then prove nothing.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, size: str = "2m") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` on ``folder`` (created), unmounted afterwards.

    Args:
        folder: The mount point.
        size: The file system's size (``mount -o size=``).

    Yields:
        ``folder``, now the root of an empty tmpfs.
    """
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs the fault suite as root)")
    folder.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)]
    subprocess.run(mount, check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def remount(folder: Path, *, read_only: bool) -> None:
    """Turn a mounted tmpfs read-only, or writable again, under whoever has it open.

    Args:
        folder: The mount point.
        read_only: Read-only (else read-write).
    """
    option = "remount,ro" if read_only else "remount,rw"
    subprocess.run(["mount", "-o", option, str(folder)], check=True, capture_output=True)


def fill(folder: Path, leave_blocks: int) -> Path:
    """Fill the file system of ``folder`` until only ``leave_blocks`` blocks are free.

    Args:
        folder: A folder on the file system.
        leave_blocks: Blocks to leave free (``0``: a full disk).

    Returns:
        The filler file (remove it to free the space again).
    """
    filler = folder / "filler.bin"
    info = os.statvfs(folder)
    size = max(0, info.f_bavail - leave_blocks) * info.f_frsize
    with filler.open("wb") as handle:
        handle.write(b"\0" * size)
    assert os.statvfs(folder).f_bavail == leave_blocks, "the disk did not fill as planned"
    return filler

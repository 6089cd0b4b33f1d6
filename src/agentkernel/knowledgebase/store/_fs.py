"""Small filesystem primitives for ``LocalDocumentStore``: probing, umask, fsync, cleanup."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile

logger = logging.getLogger(__name__)


def probe_writable(root: str) -> bool:
    """Whether a file can really be created in ``root``; the probe file is removed again.

    ``os.access`` alone is not enough: it ignores read-only mounts on some systems and ACLs
    on others, so a real temporary file settles the question.

    Args:
        root: An existing directory.

    Returns:
        True when a file was created (and removed) there.
    """
    if not os.access(root, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(prefix=".ak-probe-", dir=root)
    except OSError as exc:
        logger.debug("%s is not writable: %s", root, exc)
        return False
    os.close(fd)
    remove_quietly(probe)
    return True


def current_umask() -> int:
    """Read the process umask without changing it (Linux); assume ``0o022`` elsewhere.

    Returns:
        The umask bits.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def remove_quietly(path: str) -> None:
    """Remove a file if it is there; a failure is ignored (it was a temporary file).

    Args:
        path: The file to remove.
    """
    with contextlib.suppress(OSError):
        os.unlink(path)


def fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable; filesystems that cannot do it are tolerated.

    Args:
        directory: The directory whose entries changed.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

"""Where a per-user cache lives, and how its folders are made: one rule for every cache.

``$<VARIABLE>`` when it is set, else ``$XDG_CACHE_HOME/agentkernel/<leaf>`` (``~/.cache`` when
``XDG_CACHE_HOME`` is unset). The vector cache and the node cache follow it.

Caches hold what private buckets and bundles hold, so they are private to their user: every
folder a cache creates is ``0700`` and every file ``0600`` (:data:`PRIVATE_FILE`), whatever the
umask; a cache folder of this user found looser (made by an earlier version) is tightened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_FILE", "PRIVATE_FOLDER", "cache_root", "private_folder"]

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def cache_root(variable: str, leaf: str) -> Path:
    """The root of one cache (not created here).

    Args:
        variable: The environment variable that names the root outright.
        leaf: The folder under ``$XDG_CACHE_HOME/agentkernel`` otherwise.

    Returns:
        The folder, ``~`` expanded.
    """
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "agentkernel" / leaf


def private_folder(path: str | os.PathLike[str]) -> Path:
    """Create a cache folder and its missing parents as ``0700`` (whatever the umask).

    Folders that exist keep their mode, except ``path`` itself when it belongs to this user
    and others may enter it: a cache folder made looser by an earlier version is tightened
    (the parents are the operator's, a shared ``hostPath`` say, and stay as they are).

    Args:
        path: The folder.

    Returns:
        The folder, as a ``Path``.

    Raises:
        OSError: A folder cannot be created (a read-only disk, a file in the way).
    """
    folder = Path(path)
    missing = []
    probe = folder
    while not probe.is_dir() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for created in reversed(missing):
        try:
            os.mkdir(created, PRIVATE_FOLDER)
        except FileExistsError:
            if not created.is_dir():
                raise
            continue  # another process made it: theirs to set (the same rule)
        os.chmod(created, PRIVATE_FOLDER)  # the umask may have taken bits mkdir asked for
    if not missing:
        info = folder.stat()
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(folder, stat.S_IMODE(info.st_mode) & ~0o077)
    return folder

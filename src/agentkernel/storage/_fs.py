"""Small filesystem primitives for ``LocalDocumentStore``: probing, umask, fsync, cleanup.

Temporary files are named ``.<name>~<host>-<pid>-<random>.tmp``: hidden, so a walk never
lists them, and carrying the writer's host (a hash of its name) and process id, so that a
later write can tell a file abandoned by a killed writer from one another writer is still
filling. :func:`remove_abandoned_temps` removes only the former.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import socket
import time

logger = logging.getLogger(__name__)

ABANDONED_AFTER_SECONDS = 3600.0
"""A temporary file this old is abandoned whoever wrote it (a write takes far less)."""

_TEMP_NAME = re.compile(r"\..*~(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]{1,10})-[a-z0-9_]+\.tmp")


def probe_writable(root: str) -> bool:
    """Whether ``root`` looks writable, asked without writing anything there.

    A probe that created a file would change the folder (its mtime, a watcher's event) on
    what is meant to be a read path, so the question goes to the system instead: the
    permission bits and ACLs (``access(2)``) and the mount (a read-only mount says no). A
    write the filesystem still refuses (a quota, an exotic ACL) raises ``PermissionError``
    naming the file, at write time.

    Args:
        root: An existing directory.

    Returns:
        True when this process may create files in ``root``.
    """
    if not os.access(root, os.W_OK | os.X_OK):
        return False
    try:
        flags = os.statvfs(root).f_flag
    except (OSError, AttributeError):  # no statvfs on this platform: trust access(2)
        return True
    if flags & getattr(os, "ST_RDONLY", 1):
        logger.debug("%s is on a read-only mount", root)
        return False
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


@functools.cache
def _host_tag() -> str:
    """This host's tag in temporary names: a short hash of its name (no dots, fixed length)."""
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temp_prefix(name: str) -> str:
    """The ``mkstemp`` prefix of a temporary file for ``name`` written by this process.

    Args:
        name: The file the temporary one will become (only its first 64 characters are kept).

    Returns:
        ``.<name>~<host>-<pid>-``; ``mkstemp`` adds the random part and the ``.tmp`` suffix.
    """
    return f".{name[:64]}~{_host_tag()}-{os.getpid()}-"


def remove_abandoned_temps(directory: str, *, now: float | None = None) -> list[str]:
    """Remove the temporary files in ``directory`` that no live writer can still be filling.

    A file is abandoned when it was written on this host by a process that no longer exists
    (a writer killed mid-write), or when it is older than ``ABANDONED_AFTER_SECONDS`` (a
    writer on another host, or a process id since reused). A file of a live process of this
    host, this process included, is left alone until then. Failures are ignored: cleaning
    up never fails the write that triggered it.

    Args:
        directory: The directory a write just went to.
        now: The current time (seconds since the epoch); the clock when ``None``.

    Returns:
        The names removed.
    """
    removed: list[str] = []
    try:
        names = os.listdir(directory)  # plain names: far cheaper than DirEntry objects
    except OSError:
        return removed
    for name in names:
        match = _TEMP_NAME.fullmatch(name) if name[:1] == "." else None
        if match is None:
            continue  # not ours: a hidden file of the user's stays
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        age = (time.time() if now is None else now) - info.st_mtime
        host, pid = match.group("host"), int(match.group("pid"))
        dead = host == _host_tag() and pid != os.getpid() and not _alive(pid)
        if dead or age > ABANDONED_AFTER_SECONDS:
            remove_quietly(path)
            removed.append(name)
    if removed:
        logger.info("removed %d abandoned temporary file(s) in %s", len(removed), directory)
    return removed


def _alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (when unsure: yes)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else, or the platform cannot say
        return True
    return True

"""Atomic file writes and an inter-process lock file, for the file store.

A write goes to a hidden temporary file beside its destination, then replaces it with one
rename. A writer killed between the two (``kill -9``, a power cut) leaves that temporary file
behind; its name says which host and process wrote it (``.index.md.ak-<host>-<pid>-<rand>.tmp``),
so the next write in the same folder removes it once its writer is gone: at once when the
writer ran on this host and its process no longer exists, after :data:`STALE_AFTER` seconds
otherwise. A live writer's temporary file is never touched. No scan reads these files: their
names start with a dot and end in ``.tmp``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

STALE_AFTER = 3600.0
"""Seconds after which any leftover temporary file is removed, whoever wrote it."""

_TEMP = re.compile(r"^\..+\.ak-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")
_LEGACY_TEMP = re.compile(r"^\..+\.md\.\d+\.[0-9a-f]{8}\.tmp$")
"""The temporary files of earlier versions (no host): removed by age only."""


def _host_tag() -> str:
    # Hashed: a host name may hold dots and characters a file name can't.
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temp_name(name: str) -> str:
    """Return a fresh temporary file name for a write to the file ``name``.

    Args:
        name: The destination's file name.

    Returns:
        ``.<name>.ak-<host>-<pid>-<random>.tmp``.
    """
    return f".{name}.ak-{_host_tag()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _process_exists(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":
        return True  # on Windows, os.kill(pid, 0) would send CTRL_C_EVENT: rely on age there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or a pid we can't probe: assume alive
    return True


def is_abandoned(name: str, age: float, *, host: str | None = None) -> bool:
    """Tell whether ``name`` is a temporary file whose writer is gone.

    Args:
        name: A file name.
        age: Seconds since the file was last modified.
        host: This host's tag (computed when ``None``).

    Returns:
        ``True`` for a leftover temporary file: its writer ran on this host and is no longer
        running, or it is older than :data:`STALE_AFTER`. ``False`` for any other file.
    """
    match = _TEMP.match(name)
    if match is None:
        return _LEGACY_TEMP.match(name) is not None and age > STALE_AFTER
    if age > STALE_AFTER:
        return True
    mine = match.group("host") == (host or _host_tag())
    return mine and not _process_exists(int(match.group("pid")))


def remove_abandoned_temps(folder: Path) -> list[str]:
    """Remove the temporary files that interrupted writes left in ``folder``.

    Args:
        folder: The folder about to be written in.

    Returns:
        The names removed.
    """
    removed: list[str] = []
    host = _host_tag()
    now = time.time()
    try:
        entries = [e for e in os.scandir(folder) if e.name[0] == "." and e.name[-4:] == ".tmp"]
    except OSError:
        return removed
    for entry in entries:
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if entry.is_file(follow_symlinks=False) and is_abandoned(entry.name, age, host=host):
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue  # gone already, or not ours to remove
    return removed


def atomic_write(
    path: Path, text: str | Sequence[str], *, durable: bool = True, tidy: bool = True
) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never a part.

    The text goes to a temporary file in the same folder (a hidden name that is no ``.md``),
    is flushed to disk when ``durable``, and replaces ``path`` with one rename. Temporary
    files that interrupted writes left in that folder are removed first.

    Args:
        path: The destination.
        text: UTF-8 text, or pieces of it written one after the other.
        durable: Wait for the disk before the rename; skip it only for a file that can be
            rebuilt from the others (the index).
        tidy: Remove leftover temporary files first; a caller that knows nothing else wrote
            in the folder since it last tidied it skips that scan of the whole folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if tidy:
        remove_abandoned_temps(path.parent)
    temp = path.with_name(temp_name(path.name))
    try:
        with open(temp, "w", encoding="utf-8", newline="\n") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created if missing) across processes.

    Args:
        lock_file: The lock file's path.

    Yields:
        Nothing; the lock is released on exit.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        else:  # pragma: no cover - Windows
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

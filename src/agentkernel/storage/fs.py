"""Files on a local disk for every store: the atomic write, the temp-file sweep, a lock, probes.

``LocalDocumentStore`` (OKF bundles) and ``FileKnowledgeStore`` (curated pages) both write
through :func:`atomic_write`: the bytes go to a hidden temporary file beside the destination,
are flushed to disk, and replace it with one rename, so a reader sees the old file or the new
one, never a part.

Temporary files are named ``.<name>~<host>-<pid>-<random>.tmp``: hidden, so no walk or scan
lists them, and carrying the writer's host (a hash of its name) and process id, so that a
later write can tell a file abandoned by a killed writer from one another writer is still
filling. :func:`remove_abandoned_temps` removes only the former, and only names of this form
(or of the forms earlier versions used, by age alone): a file the stores did not create is
never touched.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Callable, Iterator, Sequence

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

logger = logging.getLogger(__name__)

_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_MODE = 0o666  # a new file's bits before the umask

ABANDONED_AFTER_SECONDS = 3600.0
"""A temporary file this old is abandoned whoever wrote it (a write takes far less)."""

_TEMP_NAME = re.compile(r"\..*~(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]{1,10})-[a-z0-9_]+\.tmp")
# The temporary files of earlier versions of the curated file store: removed by age alone.
_EARLIER_TEMP_NAME = re.compile(r"\..+(\.ak-[0-9a-f]{8}-\d+-|\.md\.\d+\.)[0-9a-f]{8}\.tmp")


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
def host_tag() -> str:
    """This host's tag in temporary names and batch records: a short hash of its name."""
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temp_name(name: str) -> str:
    """Return a fresh temporary file name for a write to the file ``name`` by this process.

    Args:
        name: The file the temporary one will become (only its first 64 characters are kept,
            so a long name still leaves room for the rest).

    Returns:
        ``.<name>~<host>-<pid>-<random>.tmp``.
    """
    return f".{name[:64]}~{host_tag()}-{os.getpid()}-{secrets.token_hex(6)}.tmp"


_IOV_MAX = 1024  # the pieces one writev(2) takes at most (POSIX requires at least 16)


def write_pieces(fd: int, pieces: Sequence[bytes]) -> None:
    """Write every byte of ``pieces`` to ``fd``, in order, a few system calls in all.

    A large file assembled from cached pieces (an index of megabytes) goes to the kernel with
    ``writev(2)``, many pieces per call, instead of one ``write`` per piece through a buffer.

    Args:
        fd: An open file descriptor.
        pieces: The bytes to write.
    """
    views = [memoryview(piece) for piece in pieces if piece]
    writev = getattr(os, "writev", None)
    at = 0
    while at < len(views):
        batch = views[at : at + _IOV_MAX]
        written = writev(fd, batch) if writev is not None else os.write(fd, batch[0])
        while at < len(views) and written >= len(views[at]):  # whole pieces written
            written -= len(views[at])
            at += 1
        if written:  # a short write stopped inside a piece: the rest of it goes next
            views[at] = views[at][written:]


Filler = Callable[[str], object]
"""Writes a temporary file itself, given its path (a download to a path); what it returns is
ignored, and what it raises aborts the write."""


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes | str | Sequence[str] | Sequence[bytes] | Filler,
    *,
    durable: bool = True,
    overwrite: bool = True,
    tidy: bool = True,
    mode: int | None = None,
) -> os.stat_result:
    """Write ``data`` to ``path`` so readers see the old file or the new one, never a part.

    Missing parent folders are created. The new file keeps the permission bits of the file
    it replaces; a new file gets the umask's. Temporary files that interrupted writes left in
    the folder are removed afterwards (:func:`remove_abandoned_temps`).

    Args:
        path: The destination.
        data: Bytes, UTF-8 text, or pieces of text or of bytes written one after the other;
            or a :data:`Filler` that creates and writes the temporary file at the path it is
            given (a download), and may raise to abandon the write (the node cache checks
            a download's size and digest there).
        durable: Wait for the disk (the file, then the folder's entry) before returning; skip
            it only for a file that can be rebuilt from the others.
        overwrite: When false, the file is linked into place with ``link(2)``, which fails
            if the destination exists: the check and the write are one atomic step, so of
            concurrent writers exactly one wins.
        tidy: Sweep the folder for abandoned temporary files; a caller that knows nothing
            else wrote there since it last swept skips that listing of the whole folder.
        mode: The new file's permission bits, whatever the umask and the file replaced
            (``0o600`` for a cache's private files); ``None`` keeps the rule above.

    Returns:
        The written file's status (size, mtime, inode), taken before the rename.

    Raises:
        FileExistsError: ``overwrite`` is false and ``path`` exists.
        OSError: The write failed; the destination is unchanged and no temporary file stays.
    """
    target = os.fspath(path)
    folder = os.path.dirname(target) or "."
    os.makedirs(folder, exist_ok=True)
    temp = os.path.join(folder, temp_name(os.path.basename(target)))
    try:
        fd = _filled(temp, data, mode)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
            if durable:
                os.fsync(fd)
            info = os.fstat(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(temp, target)
        else:
            os.link(temp, target)
            os.unlink(temp)
    except BaseException:
        remove_quietly(temp)
        raise
    if durable:
        fsync_directory(folder)
    if tidy:
        remove_abandoned_temps(folder)
    return info


def _filled(
    temp: str, data: bytes | str | Sequence[str] | Sequence[bytes] | Filler, mode: int | None
) -> int:
    """Create and fill the temporary file; return an open descriptor of it."""
    if callable(data):
        data(temp)
        # O_NOFOLLOW: what the filler left at that name must be a file, not a link
        return os.open(temp, os.O_RDONLY | _NO_FOLLOW | _CLOEXEC)
    # O_EXCL: never write through a file or link someone else put at that name
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, _MODE if mode is None else mode
    )
    try:
        if isinstance(data, bytes | bytearray | memoryview):
            write_pieces(fd, [bytes(data)] if not isinstance(data, bytes) else [data])
        elif isinstance(data, str):
            write_pieces(fd, [data.encode("utf-8")])
        else:
            write_pieces(fd, [p.encode("utf-8") if isinstance(p, str) else p for p in data])
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_abandoned_temps(
    directory: str | os.PathLike[str], *, now: float | None = None
) -> list[str]:
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
        if name[:1] != "." or name[-4:] != ".tmp":
            continue
        match = _TEMP_NAME.fullmatch(name)
        if match is None and _EARLIER_TEMP_NAME.fullmatch(name) is None:
            continue  # not ours: a hidden file of the user's stays
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        age = (time.time() if now is None else now) - info.st_mtime
        dead = (
            match is not None
            and match.group("host") == host_tag()
            and not process_alive(int(match.group("pid")))
        )
        if dead or age > ABANDONED_AFTER_SECONDS:
            remove_quietly(path)
            removed.append(name)
    if removed:
        logger.info("removed %d abandoned temporary file(s) in %s", len(removed), directory)
    return removed


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (when unsure, or this one: yes)."""
    if pid <= 0 or pid == os.getpid() or os.name == "nt":
        return True  # on Windows, os.kill(pid, 0) would send CTRL_C_EVENT: rely on age there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # someone else's process, or an id the system refuses
        return True
    return True


@contextlib.contextmanager
def locked(
    lock_file: str | os.PathLike[str], *, mode: int | None = None, follow: bool = True
) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created if missing) across processes.

    The one lock helper: the stores' writers and the node cache's downloaders take it. It is
    released when the holder exits, whether it returns, raises or is killed.

    Args:
        lock_file: The lock file's path.
        mode: A new lock file's permission bits, whatever the umask (``0o600`` in a
            private cache); ``None``: the umask's.
        follow: ``False`` refuses a symlink planted at ``lock_file`` (``ELOOP``) instead of
            locking (and creating) what it points to.

    Yields:
        Nothing; the lock is released on exit.
    """
    os.makedirs(os.path.dirname(os.fspath(lock_file)) or ".", exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | _CLOEXEC | (0 if follow else _NO_FOLLOW)
    fd = os.open(lock_file, flags, _MODE if mode is None else mode)
    with os.fdopen(fd, "a+b") as handle:
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

"""``LocalDocumentStore``: a bundle in a directory on the local filesystem.

Containment is checked twice for every path, by :func:`~agentkernel.storage._confine.confined`
(the one check every local path built from outside data goes through): lexically (no ``..``,
no absolute path, no NUL byte, no backslash, nothing hidden), then physically by resolving
symlinks and refusing any target outside the root. Files are opened without following a final
symlink and must be regular files, so a path swapped for a symlink or a FIFO after the check
is refused rather than followed or blocked on. (A directory component swapped for a symlink
between the check and the open is outside this store's threat model: that needs write access
to the bundle directory itself.)

Writes go to a hidden temporary file in the target's directory, are flushed to disk, and are
renamed into place, so a reader sees the old bytes or the new, never a torn file. A writer
killed mid-write leaves its temporary file behind: the walk never lists it (it is hidden), and
a write in that directory (when someone else wrote there since this store object last did,
and at least once a minute) removes it once its writer is known to be gone (see
:func:`~agentkernel.storage.fs.atomic_write`).

Messages raised by operations name the bundle by :attr:`label` (its directory's name), never
by its absolute path: they reach agents.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import stat
import time
from collections.abc import Iterator, Sequence

from typing_extensions import override

from agentkernel.errors import KnowledgePathError, WriteConflictError, echo
from agentkernel.storage._confine import confined
from agentkernel.storage.base import (
    MAX_RECORD_BYTES,
    RECORDS_FOLDER,
    DocumentStore,
    StoredFile,
    clean_file_path,
    clean_path,
    is_record_name,
    is_walkable,
    require_record_name,
)
from agentkernel.storage.fs import atomic_write, fsync_directory, locked, probe_writable

logger = logging.getLogger(__name__)

__all__ = ["LocalDocumentStore"]


class LocalDocumentStore(DocumentStore):
    """A bundle stored in a local directory.

    Example:
        >>> store = LocalDocumentStore("./bundle", writable=False)  # doctest: +SKIP
        >>> [f.path for f in store.walk()]  # doctest: +SKIP
        ['index.md', 'tables/orders.md']
    """

    def __init__(self, root: str | os.PathLike[str], writable: bool | None = None) -> None:
        """Open a directory as a store; no file is read.

        Args:
            root: The bundle directory; it must exist. Symlinks in it are resolved once, here.
            writable: ``None`` asks the filesystem (permissions and mount; nothing is
                written); ``False`` makes the store read-only whatever the permissions;
                ``True`` declares it writable (a write that the filesystem refuses still
                raises ``PermissionError``).

        Raises:
            FileNotFoundError: ``root`` does not exist (the message hints at ``python:`` when
                the value looks like a dotted class path).
            NotADirectoryError: ``root`` is not a directory.
        """
        given = os.fspath(root)
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            if os.path.exists(real):
                raise NotADirectoryError(f"Document store root {given!r} is not a directory.")
            hint = ""
            if "." in given and "/" not in given and not given.startswith("."):
                hint = f"; to name a DocumentStore subclass write 'python:{given}'"
            raise FileNotFoundError(f"Document store root {given!r} does not exist{hint}.")
        self._root = real
        self._prefix = real if real.endswith(os.sep) else real + os.sep
        self._writable = probe_writable(real) if writable is None else bool(writable)
        # directory -> (when a write last swept it, its (inode, mtime) after this store's write)
        self._tidied: dict[str, tuple[float, tuple[int, int] | None]] = {}

    @property
    def root(self) -> str:
        """The resolved absolute root directory."""
        return self._root

    @property
    @override
    def writable(self) -> bool:  # probed or declared at construction
        return self._writable

    @property
    @override
    def location(self) -> str:  # the resolved root directory
        return self._root

    def __repr__(self) -> str:
        # names the bundle, not the absolute root: a repr can end up in a tool's output
        return f"LocalDocumentStore({self.label!r}, writable={self._writable})"

    def walk(self, prefix: str = "") -> Iterator[StoredFile]:
        """List every visible regular file below ``prefix``, depth first, sorted by name.

        Hidden entries (``.git``, temporary files) are skipped silently; names that are not
        clean bundle paths, symlinks resolving outside the root (or to a hidden entry), broken
        symlinks, special files and symlink cycles are skipped with a diagnostic.

        Args:
            prefix: A directory relative to the root; ``""`` is the whole store. A prefix that
                does not exist lists nothing.

        Yields:
            One ``StoredFile`` per regular file; its token is ``"<mtime_ns>:<size>:<inode>"``.

        Raises:
            KnowledgePathError: ``prefix`` is not a clean, visible relative path, or resolves
                outside the root.
            FileNotFoundError: The root itself no longer exists.
            OSError: The root cannot be listed.
        """
        start = clean_path(prefix)
        top = self._resolve(start) if start else self._root
        self._reset_diagnostics()
        if not os.path.isdir(self._root):
            raise FileNotFoundError(f"Document store root {self.label!r} no longer exists.")
        if not os.path.isdir(top):
            return
        top_stat = os.stat(top)
        visited: set[tuple[int, int]] = set()
        # Real directories first, depth first; directories reached through a symlink last, so
        # a directory is listed under its own path and an alias of it is the one skipped.
        stack = [(top, start, (top_stat.st_dev, top_stat.st_ino))]
        linked: list[tuple[str, str, tuple[int, int]]] = []  # (real path, bundle path, inode)
        while stack or linked:
            directory, rel, key = stack.pop() if stack else linked.pop(0)
            if key in visited:
                self._diagnose(f"skipped {rel!r}: a symlink to a directory already listed")
                continue
            visited.add(key)
            try:
                with os.scandir(directory) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as exc:
                if directory == self._root:
                    raise
                self._diagnose(f"skipped directory {rel!r}: cannot list it ({exc.strerror})")
                continue
            subdirectories: list[tuple[str, str, tuple[int, int]]] = []
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                child = f"{rel}/{entry.name}" if rel else entry.name
                found = self._examine(entry, child)
                if found is None:
                    continue
                real, info = found
                if stat.S_ISREG(info.st_mode):
                    yield StoredFile(child, info.st_size, file_token(info))
                elif stat.S_ISDIR(info.st_mode):
                    queue = linked if real != entry.path else subdirectories
                    queue.append((real, child, (info.st_dev, info.st_ino)))
                else:
                    self._diagnose(f"skipped {child!r}: not a regular file or directory")
            stack.extend(reversed(subdirectories))

    @override
    def read(self, path: str) -> bytes:
        # also IsADirectoryError for a directory, KnowledgePathError for a special file
        with os.fdopen(self._open(path), "rb") as handle:
            return handle.read()

    @override
    def read_head(self, path: str, max_bytes: int) -> bytes:  # never reads more
        self._check_max_bytes(max_bytes)
        with os.fdopen(self._open(path), "rb") as handle:
            return handle.read(max_bytes)

    def read_heads(
        self, paths: Sequence[str], max_bytes: int, *, workers: int = 1
    ) -> list[bytes | Exception]:
        """Leading reads of many files, resolving each directory once rather than each file.

        Each directory is checked for containment and opened once; its files are then opened
        relative to that handle without following a symlink, and must be regular files. A
        file this cannot open plainly (a symlink, a special file, an error) gets exactly
        :meth:`read_head`'s answer instead. Reads are sequential: on a local disk, threads
        only add GIL contention.

        Args:
            paths: Bundle-relative paths.
            max_bytes: The most bytes to return per path.
            workers: Ignored.

        Returns:
            Per path, in order: its leading bytes, or the exception :meth:`read_head` raised.
        """
        self._check_max_bytes(max_bytes)
        directories: dict[str, int | None] = {}
        results: list[bytes | Exception] = []
        try:
            for path in paths:
                data = self._read_head_relative(path, max_bytes, directories)
                if data is not None:
                    results.append(data)
                    continue
                try:
                    results.append(self.read_head(path, max_bytes))
                except Exception as exc:  # one unreadable document must not fail the others
                    results.append(exc)
        finally:
            for handle in directories.values():
                if handle is not None:
                    os.close(handle)
        return results

    def _read_head_relative(
        self, path: str, max_bytes: int, directories: dict[str, int | None]
    ) -> bytes | None:
        """Read through an open directory handle; ``None`` leaves the path to ``read_head``."""
        try:
            cleaned = clean_file_path(path)
        except KnowledgePathError:
            return None
        parent, _, name = cleaned.rpartition("/")
        if parent not in directories:
            directories[parent] = self._open_directory(parent)
        directory = directories[parent]
        if directory is None:
            return None
        try:
            fd = os.open(name, _READ_FLAGS | _NO_FOLLOW, dir_fd=directory)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            os.set_blocking(fd, True)
            data = os.read(fd, max_bytes)
            if len(data) == max_bytes or len(data) >= info.st_size:
                return data
            chunks = [data]  # a short read before the end (the file grew, a signal): read on
            wanted = max_bytes - len(data)
            while wanted > 0 and chunks[-1]:
                chunks.append(os.read(fd, wanted))
                wanted -= len(chunks[-1])
            return b"".join(chunks)
        finally:
            os.close(fd)

    def _open_directory(self, directory: str) -> int | None:
        """Open a contained, visible directory of the bundle; ``None`` when it is not one."""
        try:
            real = self._resolve(directory) if directory else self._root
            return os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (OSError, KnowledgePathError):
            return None

    def write(
        self, path: str, data: bytes, *, overwrite: bool = True, durable: bool = True
    ) -> StoredFile:
        """Store ``data`` at ``path`` through a temporary file renamed into place.

        Args:
            path: A bundle-relative path; missing directories are created.
            data: The complete new content.
            overwrite: When false, the file is linked into place with ``link(2)``, which
                fails if the target exists: the check and the write are one atomic step, so
                of concurrent writers exactly one wins.
            durable: When false, the write does not wait for the disk (other readers see it
                at once all the same): only for a file rebuilt from the others.

        Returns:
            The stored file with its new change token.

        Raises:
            PermissionError: The store is read-only, or the filesystem refuses the write.
            KnowledgePathError: The path escapes the root or is hidden.
            FileExistsError: ``overwrite`` is false and ``path`` exists.
            NotADirectoryError: A file stands where a parent directory is needed.
        """
        self._require_writable(path)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"write() takes bytes, got {type(data).__name__}.")
        cleaned = clean_file_path(path)
        target = self._resolve(path)
        try:
            return self._write(cleaned, target, data, overwrite, durable)
        except OSError as exc:
            if exc.errno in _REFUSED:
                # the construction-time probe asks access(2), which a quota or an ACL the
                # kernel checks only on create can still contradict
                raise PermissionError(
                    exc.errno,
                    f"the filesystem refuses writes in document store {self.label!r} "
                    f"({exc.strerror}); fix its permissions or open it with writable=False",
                    cleaned,
                ) from exc
            raise _named(exc, cleaned) from exc

    def _write(
        self, cleaned: str, target: str, data: bytes, overwrite: bool, durable: bool
    ) -> StoredFile:
        path = cleaned
        parent = os.path.dirname(target)
        try:
            os.makedirs(parent, exist_ok=True)
        except FileExistsError:
            raise NotADirectoryError(f"Cannot write {echo(path)}: a file is in the way.") from None
        if os.path.realpath(parent) != parent:
            raise KnowledgePathError(f"Path {echo(path)} changed under the store while writing.")
        now = time.monotonic()
        swept, mine = self._tidied.get(parent, (-math.inf, None))
        # someone else wrote there since (a killed writer among them?), or it is time anyway
        tidy = now - swept >= TIDY_SECONDS or _folder_token(parent) != mine
        try:
            info = atomic_write(target, data, overwrite=overwrite, durable=durable, tidy=tidy)
        except FileExistsError:
            if overwrite:
                raise
            raise FileExistsError(
                f"{echo(cleaned)} already exists in {self.label!r}; not overwritten."
            ) from None
        self._tidied[parent] = (now if tidy else swept, _folder_token(parent))
        logger.debug("wrote %s (%d bytes) in %s", cleaned, info.st_size, self._root)
        return StoredFile(cleaned, info.st_size, file_token(info))

    @property
    def compare_and_swap(self) -> bool:
        """Always: a lock file at the root orders conditional writes across processes."""
        return True

    @override
    def read_versioned(self, path: str) -> tuple[bytes, str]:
        # the token comes from the open file, so it names the very content read
        with os.fdopen(self._open(path), "rb") as handle:
            info = os.fstat(handle.fileno())
            return handle.read(), file_token(info)

    @override
    def read_bounded(self, path: str, max_bytes: int) -> bytes:
        return self.read_versioned_bounded(path, max_bytes)[0]

    @override
    def read_versioned_bounded(self, path: str, max_bytes: int) -> tuple[bytes, str]:
        # the open file's size is checked before reading, and a file growing meanwhile is
        # cut at one byte past the bound: never more is held
        self._check_max_bytes(max_bytes)
        with os.fdopen(self._open(path), "rb") as handle:
            info = os.fstat(handle.fileno())
            token = file_token(info)
            self._refuse_size(path, info.st_size, max_bytes, token)
            return self._within(path, handle.read(max_bytes + 1), max_bytes, token), token

    def write_if(
        self, path: str, data: bytes, token: str | None, *, durable: bool = True
    ) -> StoredFile:
        """Store ``data`` at ``path`` only if it still has ``token`` (``None``: if absent).

        The check and the rename into place happen under :data:`CAS_LOCK_FILE`, a lock file
        every conditional writer of this folder takes (on any host sharing the filesystem
        with working ``flock``); a file is always replaced by a rename, so its token changes
        with every write.

        Args:
            path: A bundle-relative path.
            data: The complete new content.
            token: The token of the content the change is based on, or ``None``.
            durable: When false, the write does not wait for the disk (see :meth:`write`).

        Returns:
            The stored file with its new token.

        Raises:
            WriteConflictError: The file changed, appeared or vanished since ``token``.
            PermissionError: The store is read-only.
        """
        self._require_writable(path)
        with locked(os.path.join(self._root, CAS_LOCK_FILE)):
            self._require_token(path, token)
            return self.write(path, data, durable=durable)

    @override
    def delete_if(self, path: str, token: str) -> None:  # under the lock, as write_if
        self._require_writable(path)
        with locked(os.path.join(self._root, CAS_LOCK_FILE)):
            self._require_token(path, token)
            os.unlink(self._resolve(path))

    def _require_token(self, path: str, token: str | None) -> None:
        """Refuse unless ``path``'s current token is ``token`` (``None``: no file there)."""
        try:
            current: str | None = file_token(os.stat(self._resolve(path)))
        except FileNotFoundError:
            current = None
        if current != token:
            raise WriteConflictError(
                f"{echo(path)} changed in {self.label!r} since it was read; nothing was written.",
                clean_file_path(path),
            )

    def _records_folder(self, *, create: bool = False) -> str | None:
        """The records folder (a real folder at the root, never a symlink); ``None``: none yet.

        Raises:
            KnowledgePathError: Something else than a folder stands in its place.
        """
        folder = os.path.join(self._root, RECORDS_FOLDER)
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            if not create:
                return None
            os.makedirs(folder, exist_ok=True)
            fsync_directory(self._root)
            mode = os.lstat(folder).st_mode
        if not stat.S_ISDIR(mode):
            raise KnowledgePathError(f"{RECORDS_FOLDER} in {self.label!r} is not a folder.")
        return folder

    @override
    def _records(self) -> list[str] | None:
        # a folder that can't be listed raises (as the walk does): "no records" would show the
        # pages of a half-written batch; something else in its place is no folder of ours
        try:
            folder = self._records_folder()
            names = os.listdir(folder) if folder is not None else []
        except (FileNotFoundError, KnowledgePathError):
            return []
        return sorted(n for n in names if not n.startswith(".") and is_record_name(n))

    @override
    def _read_record(self, name: str) -> bytes:
        folder = self._records_folder()
        if folder is None:
            raise FileNotFoundError(f"No record {name!r} in {self.label!r}.")
        path = os.path.join(folder, require_record_name(name))
        fd = os.open(path, _READ_FLAGS | _NO_FOLLOW)
        with os.fdopen(fd, "rb") as handle:
            os.set_blocking(handle.fileno(), True)
            return handle.read(MAX_RECORD_BYTES + 1)

    @override
    def _write_record(self, name: str, data: bytes) -> None:
        self._require_writable(name)
        name = require_record_name(name)
        for attempt in range(3):
            try:
                folder = self._records_folder(create=True)
                assert folder is not None
                atomic_write(os.path.join(folder, name), data)
                return
            except FileNotFoundError as exc:
                # the folder was removed by hand (or by an earlier version) just now: make it again
                if attempt == 2:
                    raise _named(exc, f"{RECORDS_FOLDER}/{name}") from exc
            except OSError as exc:
                raise _named(exc, f"{RECORDS_FOLDER}/{name}") from exc

    @override
    def _delete_record(self, name: str) -> bool:
        folder = self._records_folder()
        if folder is None:
            return False
        try:
            os.unlink(os.path.join(folder, require_record_name(name)))
        except FileNotFoundError:
            return False
        # the folder stays: removing it with the last record cost two more directory syncs a
        # batch, and raced the next writer's record
        fsync_directory(folder)
        return True

    def _resolve(self, path: str) -> str:
        """Map a caller's path to a real path inside the root, or refuse it."""
        return confined(self._root, path, label=self.label)

    def _open(self, path: str) -> int:
        """Open ``path`` read-only as a file descriptor of a regular file inside the root."""
        real = self._resolve(path)
        try:
            fd = os.open(real, _READ_FLAGS | _NO_FOLLOW)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise KnowledgePathError(f"Path {echo(path)} became a symlink.") from exc
            raise _named(exc, path) from exc
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(f"Path {echo(path)} is a directory in {self.label!r}.")
            if not stat.S_ISREG(mode):
                raise KnowledgePathError(f"Path {echo(path)} is not a regular file.")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _examine(self, entry: os.DirEntry[str], child: str) -> tuple[str, os.stat_result] | None:
        """Stat one walk entry, following a contained symlink; ``None`` when it is skipped."""
        if not is_walkable(child) or not _encodable(entry.name):
            self._diagnose(f"skipped {child!r}: its name is not a clean bundle path")
            return None
        try:
            if not entry.is_symlink():
                return entry.path, entry.stat(follow_symlinks=False)
            real = os.path.realpath(entry.path)
            inside = real[len(self._prefix) :] if real.startswith(self._prefix) else None
            if real == self._root:
                inside = ""  # a link to the root: listed once, below, as a directory alias
            if inside is None or any(p.startswith(".") for p in inside.split(os.sep)):
                self._diagnose(f"skipped {child!r}: a symlink resolving outside the bundle")
                return None
            return real, os.stat(real)
        except OSError as exc:
            self._diagnose(f"skipped {child!r}: {exc.strerror or exc}")
            return None


TIDY_SECONDS = 60.0
"""How often a directory written in is swept for temporary files abandoned by killed writers
(hidden, so never listed: they cost only space until then)."""

# non-blocking, so opening a FIFO planted in the bundle cannot hang the walk
CAS_LOCK_FILE = ".agentkernel-cas.lock"
"""The lock file conditional writes take at the store's root (hidden: no walk lists it)."""

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


_REFUSED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def _named(exc: OSError, path: str) -> OSError:
    """The same error naming the bundle path instead of the absolute one: messages reach agents.

    Errors this module words itself (no ``errno``) are returned unchanged.
    """
    if exc.errno is None or exc.filename is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, path)


def file_token(info: os.stat_result) -> str:
    """The change token of a file's status: ``"<mtime_ns>:<size>:<inode>"``."""
    return f"{info.st_mtime_ns}:{info.st_size}:{info.st_ino}"


def _folder_token(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns


def _encodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes surface as lone surrogates
        return False
    return True

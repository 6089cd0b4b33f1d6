"""What a bundle holds, kept current by change tokens: the store is listed once, then polled.

A :class:`Listing` knows every visible file of a :class:`~agentkernel.storage.DocumentStore`
with its change token, and tells, at each :meth:`Listing.poll`, which paths changed since the
last one. Two ways to find out:

* :class:`WalkListing` (any store; S3): one walk of the store (one ``ListObjectsV2`` per
  thousand keys), reused for reads until it is ``refresh_seconds`` old;
* :class:`FolderListing` (a :class:`~agentkernel.storage.local.LocalDocumentStore`): the
  folders' tokens ``(device, inode, mtime)``. Adding, removing or renaming an entry moves its
  folder's mtime (every write of a store is a rename into place), so a poll costs one ``stat``
  per folder and lists only the folders that moved; a listing that names the same entries
  with the same inodes (which the listing gives for free) as the last one changed nothing,
  and otherwise only the entries that are new or were replaced are ``stat``-ed. A folder
  whose mtime was very recent when it was looked at (two kernel ticks, :data:`RACY_FINE_SECONDS`,
  :data:`RACY_SECONDS` on a file system keeping whole seconds) is listed again at the next
  poll: a change in the same timestamp tick leaves the same mtime. An edit made in place (no
  rename) moves no folder: every :data:`FULL_SWEEP_SECONDS` a poll compares every file.
  A poll the store makes before writing again, knowing its own writes were the only ones
  since the last poll (``own``), lists no folder whose token did not move since it was listed
  or written by the store, recent or not: a run of creates lists no folder again.

The file tokens are the store's own (:meth:`DocumentStore.walk`), so a token held here can be
passed to :meth:`DocumentStore.write_if`. Polling reads no file and writes nothing.
"""

from __future__ import annotations

import bisect
import math
import os
import posixpath
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING

from agentkernel.storage.base import RECORDS_FOLDER, is_walkable
from agentkernel.storage.local import file_token

if TYPE_CHECKING:
    from agentkernel.storage.base import DocumentStore
    from agentkernel.storage.local import LocalDocumentStore

FULL_SWEEP_SECONDS = 5.0
"""How stale an edit made in place (by hand: no rename) may be before a poll sees it."""

RACY_SECONDS = 2.0
"""A folder whose mtime (in whole seconds: a coarse file system) is this close to when it was
looked at is listed again: a change in the same tick leaves the same mtime."""

_COARSE_CLOCK = 5  # Linux's CLOCK_REALTIME_COARSE, the clock file timestamps are taken from


def _tick_seconds() -> float:
    try:
        return time.clock_getres(_COARSE_CLOCK)
    except (OSError, AttributeError):  # not Linux: assume the slowest kernel tick (100 Hz)
        return 0.01


RACY_FINE_SECONDS = 2 * min(max(_tick_seconds(), 0.001), 0.01)
"""The same for a file system keeping sub-second mtimes, taken from the kernel's coarse clock:
two of its ticks (the tick is 1 to 10 ms)."""

_DirToken = tuple[int, int, int]  # (device, inode, mtime_ns)


class Listing(ABC):
    """Every visible file of a store with its change token, kept current by :meth:`poll`."""

    def __init__(self, documents: DocumentStore) -> None:
        """Start with nothing listed.

        Args:
            documents: The store listed.
        """
        self.documents = documents
        self.tokens: dict[str, str] = {}
        """Every visible file (bundle-relative) -> its change token, as of the last poll."""
        self.records: list[str] | None = None
        """The store's own records (``DocumentStore._records``) as of the last poll."""
        self._markdown: list[str] = []

    @property
    def markdown(self) -> list[str]:
        """The markdown files, sorted: the same list object while that set is unchanged."""
        return self._markdown

    @abstractmethod
    def poll(self, *, fresh: bool = False, full: bool = False, own: bool = False) -> list[str]:
        """Bring :attr:`tokens` up to date and return the paths whose token changed.

        Args:
            fresh: The caller is about to write or check: the answer may not be stale
                (a :class:`WalkListing` lists the store however recent its listing is).
            full: Compare every file (a lost race is being retried).
            own: The caller is about to write and knows of no change since its last poll
                but its own writes (another writer would have moved a file it checked): a
                folder whose token did not move is taken as listed, however recent its
                mtime. A change someone else made within that timestamp tick is then seen
                by the next poll without ``own`` (or by the write's compare-and-swap).

        Returns:
            Paths that appeared, vanished or changed token since the last poll.
        """

    def size(self, path: str) -> int | None:
        """The size the last poll listed for ``path`` (checked against a bound before a read).

        Args:
            path: A bundle-relative path.

        Returns:
            Its size in bytes, or ``None`` when the listing does not know it.
        """
        return None

    def recheck(self, path: str) -> bool:
        """Compare one file's token now (an edit in place shows up); a no-op by default.

        Args:
            path: A bundle-relative path.

        Returns:
            Whether its token changed.
        """
        return False

    def before_write(self, path: str) -> object:
        """Note that this process is about to write ``path``; pass the answer to :meth:`wrote`.

        Args:
            path: A bundle-relative path.

        Returns:
            What :meth:`wrote` needs to know about the moment before (``None`` here).
        """
        return None

    def wrote(self, path: str, token: str | None, before: object = None) -> None:
        """Record this process's own write (``token``) or removal (``None``) of ``path``.

        Args:
            path: A bundle-relative path.
            token: The token the store gave the written file; ``None``: it was removed.
            before: What :meth:`before_write` answered.
        """
        if token is None:
            if self.tokens.pop(path, None) is not None and path.endswith(".md"):
                self._markdown = [p for p in self._markdown if p != path]
            return
        if path not in self.tokens and path.endswith(".md"):
            markdown = list(self._markdown)
            bisect.insort(markdown, path)
            self._markdown = markdown
        self.tokens[path] = token


class WalkListing(Listing):
    """A :class:`Listing` that walks the whole store, at most every ``refresh_seconds``."""

    def __init__(self, documents: DocumentStore, refresh_seconds: float) -> None:
        """List nothing yet.

        Args:
            documents: The store.
            refresh_seconds: How old a listing a poll that is not ``fresh`` may keep.
        """
        super().__init__(documents)
        self._refresh_seconds = refresh_seconds
        self._listed_at = -math.inf
        self._sizes: dict[str, int] = {}

    def poll(self, *, fresh: bool = False, full: bool = False, own: bool = False) -> list[str]:
        """Walk the store unless the last walk is recent (see :meth:`Listing.poll`)."""
        now = time.monotonic()
        if not (fresh or full) and now - self._listed_at < self._refresh_seconds:
            return []
        # a store that can't be listed (a bucket that is gone) raises: it is no empty store
        files = list(self.documents.walk(""))
        listed = {f.path: f.token for f in files}
        self._sizes = {f.path: f.size for f in files}
        self._listed_at = now
        self.records = self.documents._records()  # as the walk saw them: no request
        changed = [p for p, t in listed.items() if self.tokens.get(p) != t]
        changed += [p for p in self.tokens if p not in listed]
        if changed:
            if listed.keys() != self.tokens.keys():
                self._markdown = sorted(p for p in listed if p.endswith(".md"))
            self.tokens = listed
        return changed

    def size(self, path: str) -> int | None:
        """The size the last walk listed (see :meth:`Listing.size`)."""
        return self._sizes.get(path)


def _dir_token(path: str) -> _DirToken | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    return info.st_dev, info.st_ino, info.st_mtime_ns


def _racy_ns(mtime_ns: int) -> int:
    coarse = mtime_ns % 1_000_000_000 == 0
    return int((RACY_SECONDS if coarse else RACY_FINE_SECONDS) * 1e9)


def _raw(path: str) -> dict[str, int] | None:
    """Every entry of a folder (hidden ones too) -> its inode; ``None``: it can't be listed."""
    try:
        with os.scandir(path) as entries:
            return {entry.name: entry.inode() for entry in entries}
    except OSError:
        return None


class FolderListing(Listing):
    """A :class:`Listing` of a local folder, polled by its folders' tokens.

    Where a symlink is met, the store's own walk (:meth:`LocalDocumentStore.walk`, whose rules
    for links are the store's) lists everything, at every poll.
    """

    def __init__(self, documents: LocalDocumentStore) -> None:
        """List nothing yet.

        Args:
            documents: The local store.
        """
        super().__init__(documents)
        self._root = documents.root
        # folder (bundle-relative, "" the root) -> (its token, wall clock ns just before)
        self._dirs: dict[str, tuple[_DirToken, int]] = {}
        self._files: dict[str, dict[str, int]] = {}  # folder -> its files' names -> inodes
        self._subdirs: dict[str, set[str]] = {}  # folder -> its subfolders' names
        self._raw: dict[str, dict[str, int]] = {}  # folder -> every entry -> inode, as listed
        self._next_sweep = -math.inf
        self._linked = False  # a symlink was met: the store's own walk decides
        self._changed: set[str] = set()
        self._own = False  # the last poll was made with ``own``: see ``before_write``

    def poll(self, *, fresh: bool = False, full: bool = False, own: bool = False) -> list[str]:
        """Compare the folders' tokens, list the moved ones (see :meth:`Listing.poll`)."""
        self._changed = set()
        self._own = own
        due = time.monotonic() >= self._next_sweep or "" not in self._dirs
        if self._linked or full or due:
            self._sweep()
        else:
            for folder in list(self._dirs):
                if folder not in self._dirs:
                    continue  # dropped with its parent meanwhile
                token, seen_at = self._dirs[folder]
                now_token = _dir_token(self._path(folder))
                racy = not own and token[2] >= seen_at - _racy_ns(token[2])
                if now_token != token or racy:
                    self._rescan(folder, now_token)
                if self._linked:  # met a symlink just now
                    self._sweep()
                    break
        changed = sorted(self._changed)
        if any(p.endswith(".md") for p in changed):
            markdown = sorted(p for p in self.tokens if p.endswith(".md"))
            if markdown != self._markdown:
                self._markdown = markdown
        # the records folder is listed only while it exists (the root's listing names it)
        there = self._linked or RECORDS_FOLDER in self._raw.get("", {})
        self.records = self.documents._records() if there else []
        return changed

    def before_write(self, path: str) -> object:
        """The folder of ``path`` if nobody changed it since it was last listed, else ``None``.

        A folder listed within its mtime's tick counts as changed unless the last poll was
        made with ``own`` (the writer knows of no change but its own).
        """
        folder = posixpath.dirname(path)
        recorded = self._dirs.get(folder)
        if recorded is None:
            return None
        token, seen_at = recorded
        racy = not self._own and token[2] >= seen_at - _racy_ns(token[2])
        return folder if not racy and _dir_token(self._path(folder)) == token else None

    def wrote(self, path: str, token: str | None, before: object = None) -> None:
        """Record an own write; in a folder nobody else changed, take its new token too.

        The folder then needs no listing at the next poll (unless its new mtime is racy): a
        change someone else made between :meth:`before_write` and the write itself, which
        takes the store's compare-and-swap lock, is seen at the next full sweep.
        """
        super().wrote(path, token)
        if not isinstance(before, str) or before not in self._dirs:
            return
        seen_at = time.time_ns()
        new = _dir_token(self._path(before))
        raw, files = self._raw.get(before), self._files.get(before)
        if new is None or raw is None or files is None:
            return
        name = posixpath.basename(path)
        if token is None:
            raw.pop(name, None)
            files.pop(name, None)
        else:
            raw[name] = files[name] = int(token.rpartition(":")[2])  # see ``file_token``
        self._dirs[before] = (new, seen_at)

    def size(self, path: str) -> int | None:
        """The size in the file's token (see :meth:`Listing.size` and ``file_token``)."""
        token = self.tokens.get(path)
        if token is None:
            return None
        size = token.split(":")[1:2]
        return int(size[0]) if size and size[0].isdigit() else None

    def recheck(self, path: str) -> bool:
        """``stat`` one file now (see :meth:`Listing.recheck`)."""
        token = self._stat_token(path)
        if token == self.tokens.get(path):
            return False
        if token is None:
            self.tokens.pop(path, None)
        else:
            self.tokens[path] = token
        return True

    def _put(self, rel: str, token: str | None) -> None:
        if token is None:
            if self.tokens.pop(rel, None) is not None:
                self._changed.add(rel)
        elif self.tokens.get(rel) != token:
            self.tokens[rel] = token
            self._changed.add(rel)

    def _path(self, folder: str) -> str:
        return os.path.join(self._root, *folder.split("/")) if folder else self._root

    def _stat_token(self, path: str) -> str | None:
        try:
            info = os.stat(os.path.join(self._root, *path.split("/")), follow_symlinks=False)
        except OSError:
            return None
        return file_token(info) if stat.S_ISREG(info.st_mode) else None

    def _sweep(self) -> None:
        """List every folder and compare every file."""
        self._dirs.clear()
        self._files.clear()
        self._subdirs.clear()
        self._raw.clear()
        self._linked = not self._scan_tree("")
        tokens: dict[str, str] = {}
        if self._linked:
            try:
                tokens = {f.path: f.token for f in self.documents.walk("")}
            except FileNotFoundError:
                tokens = {}
        else:
            for folder, names in self._files.items():
                prefix = f"{folder}/" if folder else ""
                for name in names:
                    token = self._stat_token(prefix + name)
                    if token is not None:
                        tokens[prefix + name] = token
        self._changed.update(p for p, t in tokens.items() if self.tokens.get(p) != t)
        self._changed.update(p for p in self.tokens if p not in tokens)
        self.tokens = tokens
        self._next_sweep = time.monotonic() + FULL_SWEEP_SECONDS

    def _scan_tree(self, folder: str) -> bool:
        """Record ``folder`` and every folder below; ``False`` when a symlink was met."""
        seen_at = time.time_ns()
        token = _dir_token(self._path(folder))
        if token is None:
            return True
        listed = self._scan(folder)
        if listed is None:
            return False
        files, subdirs = listed
        self._dirs[folder] = (token, seen_at)
        self._files[folder] = files
        self._subdirs[folder] = subdirs
        prefix = f"{folder}/" if folder else ""
        return all(self._scan_tree(prefix + d) for d in sorted(subdirs))

    def _scan(self, folder: str) -> tuple[dict[str, int], set[str]] | None:
        """A folder's visible files (name -> inode) and subfolders; ``None``: a symlink is in it.

        What was listed is kept (:meth:`_rescan` compares the next listing with it).
        """
        raw = _raw(self._path(folder))
        if raw is None:
            return {}, set()
        self._raw[folder] = raw
        return self._classify(folder, raw, raw, {}, set())

    def _classify(
        self,
        folder: str,
        raw: dict[str, int],
        names: Iterable[str],
        files: dict[str, int],
        subdirs: set[str],
    ) -> tuple[dict[str, int], set[str]] | None:
        """Sort ``names`` of a folder's listing ``raw`` into ``files`` and ``subdirs``.

        Returns:
            Both, or ``None`` when one is a symlink.
        """
        prefix = f"{folder}/" if folder else ""
        for name in names:
            files.pop(name, None)
            subdirs.discard(name)
            if name not in raw or name.startswith(".") or not is_walkable(prefix + name):
                continue  # gone; hidden; or skipped by the store's walk too (diagnosed there)
            try:
                info = os.lstat(os.path.join(self._path(folder), name))
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                return None
            if stat.S_ISDIR(info.st_mode):
                subdirs.add(name)
            elif stat.S_ISREG(info.st_mode):
                files[name] = info.st_ino
        return files, subdirs

    def _drop(self, folder: str) -> None:
        """Forget a folder that is gone, with everything below it."""
        self._dirs.pop(folder, None)
        self._raw.pop(folder, None)
        prefix = f"{folder}/" if folder else ""
        for name in self._files.pop(folder, {}):
            self._put(prefix + name, None)
        for name in self._subdirs.pop(folder, set()):
            self._drop(prefix + name)

    def _rescan(self, folder: str, token: _DirToken | None) -> None:
        """List one folder that moved: ``stat`` only entries that are new or were replaced."""
        seen_at = time.time_ns()
        raw = _raw(self._path(folder)) if token is not None else None
        if raw is None or token is None:
            self._drop(folder)
            return
        last = self._raw.get(folder, {})
        if raw == last:
            self._dirs[folder] = (token, seen_at)
            return
        moved = {n for n, _ in raw.items() ^ last.items()}  # new, gone or replaced
        known_dirs = set(self._subdirs.get(folder, set()))
        listed = self._classify(
            folder, raw, moved, dict(self._files.get(folder, {})), set(known_dirs)
        )
        if listed is None:
            self._linked = True
            return
        files, subdirs = listed
        prefix = f"{folder}/" if folder else ""
        for name in self._files.get(folder, {}).keys() - files.keys():
            self._put(prefix + name, None)
        for name in moved:
            if name in files:
                self._put(prefix + name, self._stat_token(prefix + name))
        for name in known_dirs - subdirs:
            self._drop(prefix + name)
        self._dirs[folder] = (token, seen_at)
        self._files[folder] = files
        self._subdirs[folder] = subdirs
        self._raw[folder] = raw
        for name in sorted(subdirs - known_dirs):
            if not self._scan_tree(prefix + name):
                self._linked = True
                return
            self._stat_files(prefix + name)

    def _stat_files(self, folder: str) -> None:
        """Take the tokens of every file of a folder just scanned, and below it."""
        prefix = f"{folder}/" if folder else ""
        for name in self._files.get(folder, {}):
            self._put(prefix + name, self._stat_token(prefix + name))
        for name in self._subdirs.get(folder, set()):
            self._stat_files(prefix + name)

"""A node-local cache of immutable files from object storage, shared by the processes of a node.

Object stores hold files that never change once written (a Lance dataset's data and index
files, a document at a given ETag). A pod keeps them in a folder on the node's disk and asks
the object store only for what it does not hold. Several processes (pods mounting one
``hostPath``) share the folder safely:

* **Confined.** Every path below the cache is built by :meth:`NodeCache.path` from names that
  came from outside (a manifest, an index listing, a version record, a document's key), and
  goes through :func:`~agentkernel.storage._confine.confined`: an absolute name, ``..``, a
  hidden name or one of the cache's own bookkeeping names is refused
  (:class:`CachePathError`), and a symlink planted in the folder is never followed out of
  it. Nothing is created or written outside the cache, whatever the bucket holds.
* **Private.** Folders the cache creates are ``0700``, its files ``0600``, whatever the umask.
* **No torn file is ever used.** A file is downloaded to a temporary name beside its final
  one, its size and digest checked, and renamed into place, through the one atomic write
  (:func:`~agentkernel.storage.fs.atomic_write`; a killed downloader's temporary file is
  removed by the next :meth:`NodeCache.evict`). Two processes fetching the same file write
  the same bytes; the last rename wins and either copy is whole.
* **Corruption is detected, never served.** Each installed file's size and SHA-256 are
  recorded in a ledger beside it at download (the bytes are also checked against the
  object's ETag when that is a plain MD5, which a single-part upload's is).
  :meth:`NodeCache.check` hashes a cached file the first time a process uses it and compares
  it with its ledger, so a flipped byte is found whatever its size and mtime say; later
  checks in the process compare the file's identity (inode, size, mtime) with the one
  hashed, and ``again=True`` (after a read error) hashes it anew. A file that fails, or has
  no readable ledger, is removed and the caller fetches it again.
* **Bounded.** :meth:`NodeCache.evict` removes the least recently used files beyond
  ``max_bytes``, except those the caller still needs.
* **One downloader at a time.** :meth:`NodeCache.lock` is an ``flock`` on a file in the
  namespace, so pods of one node starting together download a file once.

Nothing here imports an SDK: the caller passes a function that streams the object.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from agentkernel.errors import AKError, KnowledgePathError
from agentkernel.storage._confine import confined
from agentkernel.storage.cachedir import PRIVATE_FILE, cache_root, private_folder
from agentkernel.storage.fs import atomic_write, locked, remove_abandoned_temps

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 20 * 2**30
LEDGER_SUFFIX = ".akdigest"
_TMP_MARK = ".aktmp-"  # earlier versions' download names: refused as names, never evicted
_CHUNK = 1 << 20

Writer = Callable[[BinaryIO], "FetchedObject"]
PathWriter = Callable[[Path], "FetchedObject"]


class CacheIntegrityError(AKError, OSError):
    """A downloaded object does not match what the object store said it holds."""


class CachePathError(AKError, ValueError):
    """A name from outside (a manifest, a listing, a record) would leave the node cache."""


@dataclass(frozen=True)
class FetchedObject:
    """What the object store said about an object it streamed.

    Attributes:
        size: ``Content-Length`` (``-1`` when unknown).
        etag: The ETag, quotes stripped (``""`` when unknown).
    """

    size: int
    etag: str


@dataclass(frozen=True)
class Digest:
    """A cached file's size and SHA-256 (hex)."""

    size: int
    sha256: str


def default_cache_root() -> Path:
    """The node cache root when none is given.

    ``$AGENTKERNEL_NODE_CACHE``, else ``$XDG_CACHE_HOME/agentkernel/node`` (``~/.cache``).

    Returns:
        The folder (not created here).
    """
    return cache_root("AGENTKERNEL_NODE_CACHE", "node")


def namespace_for(location: str) -> str:
    """A folder name for what lives at ``location`` (readable tail, collision-free hash).

    Args:
        location: An object-store URI (``s3://bucket/kb.lance``).

    Returns:
        ``<tail>-<16 hex>``.
    """
    tail = "".join(c if c.isalnum() or c in "._-" else "_" for c in location.rstrip("/"))
    digest = hashlib.sha256(location.encode()).hexdigest()[:16]
    return f"{tail[-40:].lstrip('._-') or 'x'}-{digest}"


class NodeCache:
    """A folder of immutable files, verified on install and on check, bounded in size."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """Name the cache folder (created on first install).

        Args:
            root: The node cache root.
            max_bytes: The size bound :meth:`evict` enforces.

        Raises:
            ValueError: ``max_bytes`` is not positive.
        """
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
        self.root = Path(root)
        self._real_root = os.path.realpath(self.root)  # the operator's: resolved once, here
        self.max_bytes = max_bytes
        self.downloaded_bytes = 0
        self.downloads = 0
        self._checked: dict[Path, tuple[int, int, int]] = {}  # path -> (inode, size, mtime_ns)

    def folder(self, namespace: str) -> Path:
        """The folder of one namespace (created, private).

        Args:
            namespace: From :func:`namespace_for`.

        Returns:
            The folder.

        Raises:
            CachePathError: The namespace's folder is a symlink out of the cache.
        """
        return private_folder(self._confine(namespace))

    def path(self, namespace: str, name: str) -> Path:
        """The local path of a file named from outside, inside one namespace (not created).

        Args:
            namespace: From :func:`namespace_for`, or a folder of the cache's own below it
                (``<namespace>/dataset``).
            name: A ``/``-separated name relative to that folder, as a manifest, a listing
                or a record gave it; judged on its own (``/x`` is refused, not joined).

        Returns:
            The path, inside the cache.

        Raises:
            CachePathError: The name is absolute, climbs with ``..``, is hidden or one of
                the cache's bookkeeping names, or resolves out of the cache through a
                symlink. Nothing was created.
        """
        if any(part.endswith(LEDGER_SUFFIX) or _TMP_MARK in part for part in str(name).split("/")):
            raise CachePathError(f"node cache: refused {name!r}: a name the cache keeps for itself")
        return self._confine(name, under=namespace)

    def _confine(self, name: str, under: str = "") -> Path:
        try:
            return Path(confined(self._real_root, name, label="node cache", under=under))
        except KnowledgePathError as exc:
            raise CachePathError(f"node cache: refused {name!r}: {exc}") from None

    @contextlib.contextmanager
    def lock(self, namespace: str) -> Iterator[None]:
        """Hold the namespace's lock (an ``flock``, released if the holder dies).

        Args:
            namespace: From :func:`namespace_for`.

        Yields:
            Nothing; the lock is held inside the block.
        """
        with locked(self.folder(namespace) / ".lock", mode=PRIVATE_FILE, follow=False):
            yield

    def install(self, target: Path, fetch: Writer) -> Digest:
        """Download a file to ``target`` through an open handle (see :meth:`install_file`).

        Args:
            target: The final path (inside this cache).
            fetch: Streams the object into the handle it is given and says what the
                object store claimed (size, ETag).

        Returns:
            The installed file's digest, as :meth:`install_file` returns it (and raises).
        """

        def into(scratch: Path) -> FetchedObject:
            # O_EXCL | O_NOFOLLOW: never write through a file or a link put at that name
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(scratch, flags, PRIVATE_FILE), "wb") as handle:
                return fetch(handle)

        return self.install_file(target, into)

    def install_file(self, target: Path, download: PathWriter) -> Digest:
        """Download a file to ``target``: to a temporary name, checked, then renamed.

        Args:
            target: The final path (inside this cache).
            download: Writes the object to the path it is given (a temporary name beside
                ``target``) and says what the object store claimed (size, ETag).

        Returns:
            The installed file's digest (also written to its ledger).

        Raises:
            CacheIntegrityError: The bytes received do not match the size or the plain-MD5
                ETag; nothing was installed.
            OSError: The download or the write failed; nothing was installed.
        """
        private_folder(target.parent)
        checked: list[Digest] = []

        def fill(scratch: str) -> None:
            claimed = download(Path(scratch))
            digest, md5 = _file_digest(
                Path(scratch), sync=True, md5=_plain_md5(claimed) is not None
            )
            _check_claim(target.name, digest.size, md5, claimed)
            _write_ledger(target, digest)
            checked.append(digest)

        # the file is fsync'd as it is hashed, before the rename; the folder is not (a lost
        # entry is fetched again, as a missing file is)
        atomic_write(target, fill, mode=PRIVATE_FILE, tidy=False, durable=False)
        digest = checked[0]
        self.downloads += 1
        self.downloaded_bytes += digest.size
        stat = target.stat()
        self._checked[target] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        return digest

    def check(self, target: Path, *, again: bool = False) -> bool:
        """Whether a cached file is present, whole and as recorded (corrupt ones are removed).

        The file is hashed the first time this process checks it (again if it was replaced
        since, or with ``again``) and compared with the digest recorded at download; later
        checks compare its identity (inode, size, mtime) with the one hashed.

        Args:
            target: A path inside this cache (from :meth:`path`).
            again: Hash it even if this process already did (after a read error).

        Returns:
            ``True`` when the file can be served.
        """
        try:
            stat = target.stat()
        except FileNotFoundError:
            return False
        identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if not again and self._checked.get(target) == identity:
            return True
        recorded = _read_ledger(target)
        if recorded is not None and recorded.size == stat.st_size:
            try:
                whole = _file_digest(target)[0] == recorded
            except OSError:
                whole = False
            if whole:
                self._checked[target] = identity
                return True
        logger.warning("node cache: %s is corrupt or truncated; fetching it again", target)
        for path in (target, _ledger_path(target)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._checked.pop(target, None)
        return False

    def touch(self, paths: Iterable[Path]) -> None:
        """Mark files as used now (eviction removes the least recently used first).

        Args:
            paths: Cached files.
        """
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.utime(_ledger_path(path))

    def size(self) -> int:
        """Bytes held (files and ledgers).

        Returns:
            The total.
        """
        return sum(entry.stat().st_size for entry in self._files())

    def evict(self, keep: Iterable[Path] = ()) -> int:
        """Remove least recently used files until the cache fits ``max_bytes``.

        Files in ``keep`` (what the caller serves now) and temporary files of a live
        downloader younger than an hour stay; older ones, or a killed downloader's, go.

        Args:
            keep: Files not to remove.

        Returns:
            Bytes freed.
        """
        kept = {Path(p) for p in keep}
        entries = []
        total = 0
        temporaries: set[Path] = set()  # folders holding a download's temporary file
        for path in self._files():
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                temporaries.add(path.parent)
            if path.name.endswith(LEDGER_SUFFIX) or path.name.startswith("."):
                continue  # ledgers go with their files; the lock and records' temporaries stay
            stat = path.stat()
            total += stat.st_size
            if path in kept:
                continue
            ledger = _ledger_path(path)
            used = ledger.stat().st_mtime if ledger.exists() else stat.st_mtime
            entries.append((used, path, stat.st_size))
        freed = 0
        for _, path, size in sorted(entries):
            if total - freed <= self.max_bytes:
                break
            if _TMP_MARK in path.name:
                continue
            for doomed in (path, _ledger_path(path)):
                with contextlib.suppress(FileNotFoundError):
                    doomed.unlink()
            freed += size
        for folder in temporaries:  # those of a killed downloader, or older than an hour
            remove_abandoned_temps(folder)
        if freed:
            logger.info("node cache %s: evicted %d bytes", self.root, freed)
        return freed

    def _files(self) -> Iterator[Path]:
        if not self.root.exists():
            return
        for folder, _, names in os.walk(self.root):
            for name in names:
                yield Path(folder) / name


def _ledger_path(target: Path) -> Path:
    return target.with_name(target.name + LEDGER_SUFFIX)


def _write_ledger(target: Path, digest: Digest) -> None:
    held = json.dumps({"size": digest.size, "sha256": digest.sha256})
    atomic_write(_ledger_path(target), held, tidy=False, mode=PRIVATE_FILE, durable=False)


def _read_ledger(target: Path) -> Digest | None:
    """The digest recorded at download (``None``: none, unreadable, or an older kind)."""
    try:
        held = json.loads(_ledger_path(target).read_text())
        digest = Digest(int(held["size"]), str(held["sha256"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # an older cache's ledger (MD5, trusted by mtime): fetched again once
    return digest


def _file_digest(path: Path, *, sync: bool = False, md5: bool = False) -> tuple[Digest, str]:
    """A file's size and SHA-256, and its MD5 when asked (else ``""``).

    With ``sync``, its bytes are flushed to disk first (before a rename). SHA-256 runs at
    1.5 GB/s on CPUs with SHA extensions (most x86 and ARM servers): a warm pod hashing its
    version costs little beside opening it (``bench/RESULTS.md``).
    """
    sha = hashlib.sha256()
    plain = hashlib.md5(usedforsecurity=False) if md5 else None
    size = 0
    with open(path, "rb") as handle:
        if sync:
            os.fsync(handle.fileno())
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
            if plain is not None:
                plain.update(chunk)
            size += len(chunk)
    return Digest(size, sha.hexdigest()), plain.hexdigest() if plain is not None else ""


def _plain_md5(claimed: FetchedObject) -> str | None:
    """The ETag when it is a plain MD5 (a single-part upload's), else ``None``."""
    etag = claimed.etag.strip('"').lower()
    return etag if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag) else None


def _check_claim(name: str, size: int, md5: str, claimed: FetchedObject) -> None:
    if claimed.size >= 0 and claimed.size != size:
        raise CacheIntegrityError(
            f"{name}: received {size} bytes, the object store announced {claimed.size}"
        )
    etag = _plain_md5(claimed)
    if etag is not None and etag != md5:
        raise CacheIntegrityError(f"{name}: the bytes received do not match the ETag {etag}")


class DocumentCache:
    """Documents ``fetch`` reads, kept on the node by their change token.

    A document is cached only when its bytes are proven to be the version its token names
    (the token is a plain-MD5 ETag and the bytes hash to it), and served from the cache only
    for that token: a document whose token moved (a new index version) is read again. Stores
    whose tokens are not content hashes (a local folder's) are never cached, and need not be.
    """

    def __init__(self, cache: NodeCache, location: str) -> None:
        """Attach to a node cache for one store.

        Args:
            cache: The node cache.
            location: The store's location (its namespace in the cache).
        """
        self._cache = cache
        self._namespace = namespace_for(location)
        cache.folder(self._namespace)
        self.hits = 0

    def read(self, path: str, token: str, load: Callable[[], bytes]) -> bytes:
        """The document's bytes at ``token``: from the node cache, else loaded (and kept).

        Args:
            path: The bundle-relative path.
            token: The change token the caller serves (the index row's).
            load: Reads the document from its store.

        Returns:
            The bytes.
        """
        etag = token.strip('"').lower()
        if len(etag) != 32 or not all(c in "0123456789abcdef" for c in etag):
            return load()
        name = hashlib.sha256(f"{path}\0{etag}".encode()).hexdigest()
        target = self._cache.path(self._namespace, f"documents/{name[:2]}/{name}")
        if self._cache.check(target):
            self.hits += 1
            return target.read_bytes()
        data = load()
        if hashlib.md5(data, usedforsecurity=False).hexdigest() != etag:
            return data  # the store holds another version than the token: serve it, keep none

        def write(handle: BinaryIO) -> FetchedObject:
            handle.write(data)
            return FetchedObject(len(data), etag)

        try:
            self._cache.install(target, write)
        except OSError as exc:  # a full or read-only disk costs the cache, not the read
            logger.warning("node cache: could not keep %s: %s", path, exc)
        return data

"""Serve a bundle index in S3 from the node cache: the files of the version served, on local disk.

Lance writes every data, deletion and index file once and never changes it; a new version
is a new manifest naming the files it keeps and the few it adds. A pod therefore keeps the
files of the version it serves in the node cache (:mod:`agentkernel.storage.nodecache`) and
opens that folder with Lance as a local dataset:

* **search** reads local files only: no object-store request;
* **refresh** lists the ``_versions/`` folder (one request); when the newest version is the
  one served, that is all;
* **a new version** costs its manifest, a listing of each index folder it adds, and the
  files it adds; files already held (from earlier versions, or fetched by another pod of
  the node) are not fetched again.

Which files a version needs is read from its manifest by Lance itself (opened from the
local folder holding only that manifest): its fragments' data and deletion files and its
indexes' folders. A version is complete on the node once every file is installed and
checked; only then is it written to ``versions/<n>.json`` and opened. Lance's own caches
hold decoded pages in memory; they do not persist across processes or avoid the first read
of a file over the network, which is why this layer exists (``docs/index.md``).

Every local path is built from a name the bucket gave (a manifest's file, an index
folder's listing, a record of them) through :meth:`NodeCache.path`, which refuses any name
that would leave the cache (``..``, an absolute path, a symlink out of it): a version naming
one is refused whole (:class:`~agentkernel.storage.nodecache.CachePathError`) before any of
its files is fetched, and the version served stays. The records (``versions/<n>.json``,
``indices/<uuid>.json``) carry their own SHA-256, so a damaged record is rebuilt from the
manifest, never followed.

Only ``s3://`` indexes are mirrored; local ones are opened in place. Listings go through
``pyarrow``'s S3 file system (loaded with Lance already; they give each file's size), and
every file is downloaded by Lance's own object store (``lance.file.LanceFileSession``): one
GET per file streamed to disk, no HEAD, up to 16 at once, the index folders listed while the
data files arrive. A cold start is then bound by its largest file, not by the sum of round
trips (``bench/RESULTS.md``, issue 24).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import threading
import warnings
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agentkernel.knowledgebase.okf.bundleindex import lancesdk
from agentkernel.storage.cachedir import PRIVATE_FILE
from agentkernel.storage.fs import atomic_write
from agentkernel.storage.nodecache import (
    CachePathError,
    FetchedObject,
    NodeCache,
    namespace_for,
)

logger = logging.getLogger(__name__)

_U64_MAX = 2**64 - 1
_WORKERS = 16  # concurrent GETs: a cold start is bound by round trips, not bandwidth


class MirroredIndex:
    """One S3 index, mirrored version by version into the node cache."""

    def __init__(self, uri: str, options: Mapping[str, str], cache: NodeCache) -> None:
        """Name the index and its cache folder (no request is made).

        Args:
            uri: ``s3://bucket/prefix/name.lance``.
            options: Lance's object-store options (``aws_endpoint``, ``aws_region``, keys...).
            cache: The node cache.
        """
        location = lancesdk.describe(uri)
        bucket, _, key = location[len("s3://") :].partition("/")
        self.location = location
        self.cache = cache
        self._bucket = bucket
        self._prefix = key.rstrip("/") + "/"
        self._namespace = namespace_for(location)
        cache.folder(self._namespace)
        self.local = cache.path(self._namespace, "dataset")
        self._fs = s3_filesystem(options)
        self._options = dict(options)
        self._files: Any = None  # lance.file.LanceFileSession, on the first download
        self._session_lock = threading.Lock()

    # -- what a pod calls -----------------------------------------------------------------

    def latest(self) -> tuple[int, str, int]:
        """Ask the object store for the newest version: one listing of ``_versions/``.

        Returns:
            ``(version, manifest file name, its size in bytes)``.

        Raises:
            FileNotFoundError: The index has no version.
        """
        return max(self.versions())

    def versions(self) -> list[tuple[int, str, int]]:
        """Every version the object store holds: one listing of ``_versions/``.

        Returns:
            ``(version, manifest file name, its size in bytes)`` of each, in no order.

        Raises:
            FileNotFoundError: The index has no version.
        """
        found = [
            (version, name, size)
            for name, size in self._list("_versions/")
            if (version := manifest_version(name)) is not None
        ]
        if not found:
            raise FileNotFoundError(f"No bundle index at {self.location}")
        return found

    def open(self, version: int, manifest: str, size: int = -1) -> Any:
        """Make one version complete on the node and open it from local disk.

        Args:
            version: The version.
            manifest: Its manifest file name (from :meth:`latest`).
            size: The manifest's size (``-1``: unknown).

        Returns:
            A ``lance.LanceDataset`` reading the node cache.

        Raises:
            CachePathError: The version names a file outside the index (a hostile or broken
                manifest or listing); nothing of it was fetched or written.
        """
        import lance

        with self.cache.lock(self._namespace):
            files = self._complete(version, manifest, size)
            self.cache.touch(files)
            self.cache.evict(keep=files)
        return lance.dataset(str(self.local), version=version, session=lancesdk.local_session())

    def repair(self, version: int) -> Any | None:
        """Hash a version's files anew and fetch the damaged ones (after a read error).

        Args:
            version: A version opened before (its record names its files).

        Returns:
            The version opened again when a file was damaged (and is whole now), else
            ``None``: the read error was not the cache's.
        """
        import lance

        listed = self._record(f"versions/{version}.json")
        if listed is None:
            return None
        with self.cache.lock(self._namespace):
            damaged = [(r, s) for r, s in listed if not self.cache.check(self._path(r), again=True)]
            self._fetch_all(damaged)
        if not damaged:
            return None
        logger.warning(
            "bundle index %s: %d damaged file(s) of version %d fetched again",
            self.location,
            len(damaged),
            version,
        )
        return lance.dataset(str(self.local), version=version, session=lancesdk.new_local_session())

    # -- internals ------------------------------------------------------------------------

    def _complete(self, version: int, manifest: str, size: int) -> list[Path]:
        record = f"versions/{version}.json"
        listed = self._record(record)
        if listed is not None:  # a restart: each file is hashed and checked against its ledger
            try:
                self._fetch_all(listed)
                return [self._path(rel) for rel, _ in listed]
            except OSError as exc:  # CacheIntegrityError among them
                # a record that disagrees with the bucket (sizes, names): rebuilt below
                logger.warning("node cache: %s of %s is stale (%s)", record, self.location, exc)
        manifest_file = (f"_versions/{manifest}", size)
        self._fetch_all([manifest_file])
        with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
            needed = [manifest_file, *self._referenced(version, pool)]
        self._write_record(record, needed)
        return [self._path(rel) for rel, _ in needed]

    def _path(self, rel: str) -> Path:
        """The local path of a dataset file the bucket named (refused if it would leave)."""
        try:
            return self.cache.path(f"{self._namespace}/dataset", rel)
        except CachePathError as exc:
            raise CachePathError(
                f"bundle index {self.location} names a file outside the index, {rel!r}: "
                "refused, nothing fetched (a damaged or hostile manifest or listing)"
            ) from exc

    def _record(self, name: str) -> list[tuple[str, int]] | None:
        """A record of files and sizes, when whole and every name in it stays inside."""
        listed = _read_list(self.cache.path(self._namespace, name))
        if listed is None:
            return None
        try:
            for rel, _ in listed:
                self._path(rel)
        except CachePathError:
            return None  # not what this cache wrote: rebuilt from the manifest
        return listed

    def _write_record(self, name: str, items: list[tuple[str, int]]) -> None:
        path = self.cache.path(self._namespace, name)
        self.cache.folder(f"{self._namespace}/{posixpath.dirname(name)}")
        body = json.dumps(items)
        held = json.dumps({"sha256": hashlib.sha256(body.encode()).hexdigest(), "files": items})
        atomic_write(path, held, tidy=False, mode=PRIVATE_FILE, durable=False)

    def _referenced(self, version: int, pool: ThreadPoolExecutor) -> list[tuple[str, int]]:
        """Fetch the files a version's manifest names; return them with their sizes.

        The data and deletion files are named by the manifest (with their sizes, when the
        writer recorded them); each index folder is listed. Downloads start as soon as a
        file is known, so the listings overlap the data files' transfer.
        """
        import lance

        dataset = lance.dataset(str(self.local), version=version, session=lancesdk.local_session())
        found: list[tuple[str, int]] = []
        for fragment in dataset.get_fragments():
            for data in fragment.metadata.files:
                size = int(getattr(data, "file_size_bytes", None) or -1)
                found.append((posixpath.join("data", data.path), size))
            deletion = fragment.metadata.deletion_file
            if deletion is not None:
                found.append((deletion.path(fragment.fragment_id), -1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            indices = [str(index["uuid"]) for index in dataset.list_indices()]
        for rel in [*(rel for rel, _ in found), *(f"_indices/{name}/x" for name in indices)]:
            self._path(rel)  # the whole version is refused before any of it is fetched
        listing = [pool.submit(self._index_files, name) for name in indices]
        fetching = [pool.submit(self._fetch_all, [item]) for item in dict.fromkeys(found)]
        for listed in listing:
            files = listed.result()
            found += files
            fetching += [pool.submit(self._fetch_all, [item]) for item in files]
        for future in fetching:
            future.result()
        return list(dict.fromkeys(found))

    def _index_files(self, name: str) -> list[tuple[str, int]]:
        record = f"indices/{name}.json"
        listed = self._record(record)
        if listed is None:
            folder = f"_indices/{name}/"
            listed = [(folder + rel, size) for rel, size in self._list(folder)]
            for rel, _ in listed:
                self._path(rel)  # refused before it is recorded or fetched
            self._write_record(record, listed)
        return listed

    def _list(self, folder: str) -> list[tuple[str, int]]:
        """The files below a folder of the dataset: one listing (a page per 1,000 keys)."""
        from pyarrow import fs

        base = f"{self._bucket}/{self._prefix}{folder}"
        selector = fs.FileSelector(base, recursive=True, allow_not_found=True)
        return [
            (info.path[len(base) :], int(info.size if info.size is not None else -1))
            for info in self._fs.get_file_info(selector)
            if info.type == fs.FileType.File
        ]

    def _fetch_all(self, files: list[tuple[str, int]]) -> None:
        """Download the files the node does not hold (checked), all at once."""
        missing = [(rel, size) for rel, size in files if not self.cache.check(self._path(rel))]
        if len(missing) == 1:
            self._fetch(*missing[0])
        elif missing:
            with ThreadPoolExecutor(max_workers=min(_WORKERS, len(missing))) as pool:
                for _ in pool.map(lambda item: self._fetch(*item), missing):
                    pass

    def _fetch(self, rel: str, size: int) -> None:
        """One GET, streamed to disk by Lance's object store (no HEAD, no whole-file buffer)."""
        session = self._session()

        def download(scratch: Path) -> FetchedObject:
            session.download_file(rel, str(scratch))
            return FetchedObject(size, "")

        self.cache.install_file(self._path(rel), download)

    def _session(self) -> Any:
        with self._session_lock:
            if self._files is None:
                from lance.file import LanceFileSession

                base = f"s3://{self._bucket}/{self._prefix}".rstrip("/")
                self._files = LanceFileSession(base, storage_options=dict(self._options))
            return self._files


def manifest_version(name: str) -> int | None:
    """The version a manifest file name carries (both of Lance's naming schemes).

    Args:
        name: ``12.manifest`` (V1) or ``18446744073709551603.manifest`` (V2).

    Returns:
        The version, or ``None`` for another file.
    """
    stem, dot, ext = name.partition(".")
    if ext != "manifest" or not dot or not stem.isdigit():
        return None
    number = int(stem)
    return _U64_MAX - number if len(stem) == 20 else number


def s3_filesystem(options: Mapping[str, str]) -> Any:
    """A ``pyarrow`` S3 file system from Lance's object-store options.

    pyarrow is loaded with Lance already; its S3 client costs a pod about 1 MB of private
    memory where boto3's costs 27 MB (measured, ``bench/RESULTS.md``).

    Args:
        options: ``aws_endpoint``/``endpoint``, ``aws_region``/``region``, and keys; without
            keys the AWS default chain (environment, profile, instance role) is used, and
            without an endpoint ``$AWS_ENDPOINT_URL_S3`` or ``$AWS_ENDPOINT_URL``.

    Returns:
        A ``pyarrow.fs.S3FileSystem``.
    """
    from pyarrow import fs

    def pick(*names: str) -> str | None:
        for name in names:
            value = options.get(name) or options.get(name.upper())
            if value:
                return str(value)
        return None

    kwargs: dict[str, Any] = {}
    # the variables boto3 and Lance read, so the indexer and the pods reach the same server
    endpoint = pick("aws_endpoint", "endpoint", "aws_endpoint_url") or os.environ.get(
        "AWS_ENDPOINT_URL_S3", os.environ.get("AWS_ENDPOINT_URL")
    )
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        kwargs |= {"endpoint_override": parsed.netloc, "scheme": parsed.scheme}
    region = pick("aws_region", "region") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    key, secret = (
        pick("aws_access_key_id", "access_key_id"),
        pick("aws_secret_access_key", "secret_access_key"),
    )
    if key and secret:
        kwargs |= {"access_key": key, "secret_key": secret}
        token = pick("aws_session_token", "session_token")
        if token:
            kwargs["session_token"] = token
    return fs.S3FileSystem(**kwargs)


def _read_list(path: Path) -> list[tuple[str, int]] | None:
    """A record of files and their sizes (``-1``: unknown), when its SHA-256 matches.

    ``None`` for a missing, damaged or older (unsummed) record: it is rebuilt.
    """
    try:
        held = json.loads(path.read_text())
        items = held["files"]
        if hashlib.sha256(json.dumps(items).encode()).hexdigest() != held["sha256"]:
            return None
        return [(str(rel), int(size)) for rel, size in items]
    except (OSError, ValueError, KeyError, TypeError):
        return None

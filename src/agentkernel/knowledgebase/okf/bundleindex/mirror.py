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

Only ``s3://`` indexes are mirrored (through ``pyarrow``'s S3 file system, loaded with
Lance already); local ones are opened in place.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import uuid
import warnings
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

from agentkernel.knowledgebase.okf.bundleindex import _lance
from agentkernel.storage.nodecache import FetchedObject, NodeCache, namespace_for

logger = logging.getLogger(__name__)

_U64_MAX = 2**64 - 1
_WORKERS = 8
_CHUNK = 16 << 20


class MirroredIndex:
    """One S3 index, mirrored version by version into the node cache."""

    def __init__(self, uri: str, options: Mapping[str, str], cache: NodeCache) -> None:
        """Name the index and its cache folder (no request is made).

        Args:
            uri: ``s3://bucket/prefix/name.lance``.
            options: Lance's object-store options (``aws_endpoint``, ``aws_region``, keys...).
            cache: The node cache.
        """
        location = _lance.describe(uri)
        bucket, _, key = location[len("s3://") :].partition("/")
        self.location = location
        self.cache = cache
        self._bucket = bucket
        self._prefix = key.rstrip("/") + "/"
        self._namespace = namespace_for(location)
        self._root = cache.folder(self._namespace)
        self.local = self._root / "dataset"
        self._fs = s3_filesystem(options)

    # -- what a pod calls -----------------------------------------------------------------

    def latest(self) -> tuple[int, str]:
        """Ask the object store for the newest version: one listing of ``_versions/``.

        Returns:
            ``(version, manifest file name)``.

        Raises:
            FileNotFoundError: The index has no version.
        """
        best: tuple[int, str] | None = None
        for name, _ in self._list("_versions/"):
            version = manifest_version(name)
            if version is not None and (best is None or version > best[0]):
                best = (version, name)
        if best is None:
            raise FileNotFoundError(f"No bundle index at {self.location}")
        return best

    def open(self, version: int, manifest: str) -> Any:
        """Make one version complete on the node and open it from local disk.

        Args:
            version: The version.
            manifest: Its manifest file name (from :meth:`latest`).

        Returns:
            A ``lance.LanceDataset`` reading the node cache.
        """
        import lance

        with self.cache.lock(self._namespace):
            files = self._complete(version, manifest)
            self.cache.touch(files)
            self.cache.evict(keep=files)
        return lance.dataset(str(self.local), version=version)

    # -- internals ------------------------------------------------------------------------

    def _complete(self, version: int, manifest: str) -> list[Path]:
        record = self._root / "versions" / f"{version}.json"
        listed = _read_list(record)
        if listed is not None:
            paths = [self.local / rel for rel in listed]
            held = zip(listed, paths, strict=True)
            missing = [rel for rel, path in held if not self.cache.check(path)]
            self._fetch_all(missing)
            return paths
        manifest_rel = f"_versions/{manifest}"
        if not self.cache.check(self.local / manifest_rel):
            self._fetch_all([manifest_rel])
        needed = [manifest_rel, *self._referenced(version)]
        missing = [rel for rel in needed if not self.cache.check(self.local / rel)]
        self._fetch_all(missing)
        _write_list(record, needed)
        return [self.local / rel for rel in needed]

    def _referenced(self, version: int) -> list[str]:
        """The files a version's manifest names (its index folders listed when not held)."""
        import lance

        dataset = lance.dataset(str(self.local), version=version)
        found: list[str] = []
        for fragment in dataset.get_fragments():
            found += [posixpath.join("data", f.path) for f in fragment.metadata.files]
            deletion = fragment.metadata.deletion_file
            if deletion is not None:
                found.append(deletion.path(fragment.fragment_id))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            indices = dataset.list_indices()
        for index in indices:
            found += self._index_files(str(index["uuid"]))
        return list(dict.fromkeys(found))

    def _index_files(self, name: str) -> list[str]:
        record = self._root / "indices" / f"{name}.json"
        listed = _read_list(record)
        if listed is None:
            folder = f"_indices/{name}/"
            listed = [folder + rel for rel, _ in self._list(folder)]
            _write_list(record, listed)
        return listed

    def _list(self, folder: str) -> list[tuple[str, int]]:
        """The files below a folder of the dataset: one listing (a page per 1,000 keys)."""
        from pyarrow import fs

        base = f"{self._bucket}/{self._prefix}{folder}"
        selector = fs.FileSelector(base, recursive=True, allow_not_found=True)
        return [
            (info.path[len(base) :], int(info.size or 0))
            for info in self._fs.get_file_info(selector)
            if info.type == fs.FileType.File
        ]

    def _fetch_all(self, rels: list[str]) -> None:
        if not rels:
            return
        if len(rels) == 1:
            self._fetch(rels[0])
            return
        with ThreadPoolExecutor(max_workers=min(_WORKERS, len(rels))) as pool:
            for _ in pool.map(self._fetch, rels):
                pass

    def _fetch(self, rel: str) -> None:
        path = f"{self._bucket}/{self._prefix}{rel}"

        def stream(handle: BinaryIO) -> FetchedObject:
            with self._fs.open_input_file(path) as source:  # its size: one HEAD
                size = int(source.size())
                offset = 0
                while offset < size:  # a ranged GET per chunk: never the whole file in memory
                    chunk = source.read_at(min(_CHUNK, size - offset), offset)
                    if not chunk:
                        break
                    handle.write(chunk)
                    offset += len(chunk)
            return FetchedObject(size, "")

        self.cache.install(self.local / rel, stream)


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


def _read_list(path: Path) -> list[str] | None:
    try:
        held = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return [str(item) for item in held] if isinstance(held, list) else None


def _write_list(path: Path, items: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
    scratch.write_text(json.dumps(items))
    os.replace(scratch, path)

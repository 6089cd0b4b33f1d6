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

Only ``s3://`` indexes are mirrored (``boto3``, the ``aws`` extra); local ones are opened
in place.
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

from agentkernel.knowledgebase.okf.bundleindex import _lance
from agentkernel.storage.nodecache import FetchedObject, NodeCache, namespace_for

logger = logging.getLogger(__name__)

_U64_MAX = 2**64 - 1
_WORKERS = 8
_CHUNK = 1 << 20


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
        self._client = s3_client(options)

    # -- what a pod calls -----------------------------------------------------------------

    def latest(self) -> tuple[int, str]:
        """Ask the object store for the newest version: one listing of ``_versions/``.

        Returns:
            ``(version, manifest file name)``.

        Raises:
            FileNotFoundError: The index has no version.
        """
        best: tuple[int, str] | None = None
        prefix = self._prefix + "_versions/"
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self._bucket, "Prefix": prefix, "MaxKeys": 100}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._client.list_objects_v2(**kwargs)
            for item in page.get("Contents", ()):
                name = item["Key"][len(prefix) :]
                version = manifest_version(name)
                if version is not None and (best is None or version > best[0]):
                    best = (version, name)
                    if len(name.split(".")[0]) == 20:
                        break  # V2 names list newest first
            token = page.get("NextContinuationToken")
            if not token or (best and len(best[1].split(".")[0]) == 20):
                break
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
            prefix = f"{self._prefix}_indices/{name}/"
            listed = []
            paginator = self._client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
                listed += [
                    "_indices/" + item["Key"][len(self._prefix) + len("_indices/") :]
                    for item in page.get("Contents", ())
                ]
            _write_list(record, listed)
        return listed

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
        key = self._prefix + rel

        def stream(handle: BinaryIO) -> FetchedObject:
            reply = self._client.get_object(Bucket=self._bucket, Key=key)
            body = reply["Body"]
            try:
                while chunk := body.read(_CHUNK):
                    handle.write(chunk)
            finally:
                body.close()
            return FetchedObject(int(reply.get("ContentLength", -1)), str(reply.get("ETag", "")))

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


def s3_client(options: Mapping[str, str]) -> Any:
    """A boto3 S3 client from Lance's object-store options.

    Args:
        options: ``aws_endpoint``/``endpoint``, ``aws_region``/``region``, and keys.

    Returns:
        The client.

    Raises:
        ImportError: ``boto3`` (the ``aws`` extra) is not installed.
    """
    import boto3
    from botocore.config import Config

    def pick(*names: str) -> str | None:
        for name in names:
            value = options.get(name) or options.get(name.upper())
            if value:
                return str(value)
        return None

    return boto3.client(
        "s3",
        endpoint_url=pick("aws_endpoint", "endpoint", "aws_endpoint_url"),
        region_name=pick("aws_region", "region") or os.environ.get("AWS_DEFAULT_REGION"),
        aws_access_key_id=pick("aws_access_key_id", "access_key_id"),
        aws_secret_access_key=pick("aws_secret_access_key", "secret_access_key"),
        aws_session_token=pick("aws_session_token", "session_token"),
        config=Config(max_pool_connections=_WORKERS * 2, retries={"max_attempts": 3}),
    )


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

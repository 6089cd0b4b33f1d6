"""``S3DocumentStore``: a bundle under a prefix of an S3 bucket (the ``aws`` extra).

One paginated ``ListObjectsV2`` walks the store (the ETag is the change token), a ranged
``GET`` serves the bounded leading read, and a ``PUT`` writes. An S3 ``PUT`` is atomic by
nature: readers see the old object or the new. ``overwrite=False`` is a conditional ``PUT``
(``If-None-Match: *``), so the existence check and the write are one step on the server.
No temporary object is ever created, so an interrupted write leaves nothing behind to clean
up: the ``PUT`` either completed or never happened.

Writability is a declaration, never probed: probing a bucket would mean writing to it.

Every S3 or connection failure is translated at this boundary into an ``OSError``
(``FileNotFoundError``, ``PermissionError``, ``FileExistsError``, ``ConnectionError`` for
a connection refused, reset, cut short or timed out, or a plain ``OSError``) whose message
names the ``s3://`` location, with the botocore error kept as ``__cause__``. To observe
requests (tests count them), register botocore event handlers on
:attr:`S3DocumentStore.client`, for example ``before-send.s3.GetObject``.
"""

from __future__ import annotations

import logging
import mimetypes
import secrets
from collections.abc import Iterator
from typing import Any

from typing_extensions import override

from agentkernel.errors import (
    AKConfigError,
    KnowledgePathError,
    WriteConflictError,
    echo,
    missing_extra,
)
from agentkernel.storage import _paths as paths
from agentkernel.storage.base import DocumentStore, StoredFile

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        HTTPClientError,
        IncompleteReadError,
        NoCredentialsError,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError
except ImportError as exc:
    raise missing_extra("boto3", "aws", feature="S3DocumentStore") from exc

logger = logging.getLogger(__name__)

__all__ = ["S3DocumentStore"]

_NOT_FOUND = {"NoSuchKey", "NotFound", "404"}
_DENIED = {
    "AccessDenied",
    "403",
    "AllAccessDisabled",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
}
_CONFLICT = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}

OPS_METADATA = "agentkernel-ops"
"""The user metadata (``x-amz-meta-agentkernel-ops``) a conditional write stores with the
object: the ids of the last :data:`OPS_KEPT` writes that made it, oldest first. A write whose
answer was lost recognises its own id there and is not redone; the object's bytes (and so its
ETag) are not changed by it."""

OPS_KEPT = 8
"""How many write ids an object carries (each writer keeps the ids of the version it changed)."""

_OPS_REMEMBERED = 4096  # objects whose ids this store keeps from its reads and writes
_SUPERSEDED = '"agentkernel-superseded"'  # a token no object has: the next write re-reads


class S3DocumentStore(DocumentStore):
    """A bundle stored under ``s3://bucket/prefix``.

    Example:
        >>> store = S3DocumentStore("my-bucket", "bundles/warehouse")  # doctest: +SKIP
        >>> store.location  # doctest: +SKIP
        's3://my-bucket/bundles/warehouse'
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        writable: bool = True,
        client: Any = None,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        profile_name: str | None = None,
        config: Config | None = None,
        page_size: int = 1000,
    ) -> None:
        """Describe the store; no request is made (writability is declared, not probed).

        Args:
            bucket: The bucket name.
            prefix: The key prefix holding the bundle (``"bundles/warehouse"``); ``""`` is
                the whole bucket. A file ``a/b.md`` is the object ``<prefix>/a/b.md``.
            writable: Whether writes are allowed (a declaration, defaulting to writable).
            client: A ready ``boto3`` S3 client; the store does not close it. Excludes the
                four client options below.
            endpoint_url: An S3-compatible endpoint (MinIO, a local test server).
            region_name: The AWS region.
            profile_name: A profile from the AWS configuration files.
            config: A ``botocore.config.Config``; the default retries three times in
                ``standard`` mode and pools 16 connections (for concurrent reads).
            page_size: Keys per ``ListObjectsV2`` page (S3 caps it at 1000).

        Raises:
            AKConfigError: The bucket or prefix is unusable, ``client`` is combined with
                client options, or the AWS profile does not exist.
        """
        if not isinstance(bucket, str) or not bucket or "/" in bucket:
            raise AKConfigError(
                f"An S3 bucket name must be a non-empty name without '/', got {bucket!r}."
            )
        try:
            cleaned = paths.clean_path(prefix)
        except KnowledgePathError as exc:
            raise AKConfigError(f"Unusable S3 prefix {prefix!r}: {exc}") from exc
        self._bucket = bucket
        self._keyprefix = f"{cleaned}/" if cleaned else ""
        self._location = f"s3://{bucket}/{cleaned}" if cleaned else f"s3://{bucket}"
        self._writable = bool(writable)
        self._page_size = max(1, int(page_size))
        # path -> (ETag, the write ids stored with it), from this store's reads and writes
        self._ops: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._walked_records: list[str] | None = None  # what the last whole walk saw
        options = (endpoint_url, region_name, profile_name, config)
        if client is not None:
            if any(option is not None for option in options):
                raise AKConfigError(
                    "Give S3DocumentStore either client= or endpoint_url/region_name/"
                    "profile_name/config, not both."
                )
            self._client, self._owns_client = client, False
            return
        try:
            session = boto3.session.Session(profile_name=profile_name, region_name=region_name)
        except BotoCoreError as exc:
            raise AKConfigError(f"Cannot configure S3 for {self._location}: {exc}") from exc
        default = Config(retries={"mode": "standard", "max_attempts": 3}, max_pool_connections=16)
        self._client = session.client("s3", endpoint_url=endpoint_url, config=config or default)
        self._owns_client = True

    @property
    def client(self) -> Any:
        """The boto3 S3 client (register botocore event handlers on it to observe requests)."""
        return self._client

    @property
    def bucket(self) -> str:
        """The bucket name."""
        return self._bucket

    @property
    @override
    def writable(self) -> bool:  # as declared
        return self._writable

    @property
    @override
    def location(self) -> str:
        return self._location

    def __repr__(self) -> str:
        return f"S3DocumentStore({self._location!r}, writable={self._writable})"

    def walk(self, prefix: str = "") -> Iterator[StoredFile]:
        """List every visible object below ``prefix`` with one paginated listing.

        Directory markers (keys ending in ``/``) and hidden keys are skipped silently; keys
        that are not clean bundle paths (``a//b``, ``../x``, a backslash) are skipped with a
        diagnostic, because reading them back by their path would name another object.

        Args:
            prefix: A directory relative to the store's prefix; ``""`` is the whole store.

        Yields:
            One ``StoredFile`` per object, in key order; its token is the ETag.

        Raises:
            KnowledgePathError: ``prefix`` is not a clean, visible relative path.
            FileNotFoundError: The bucket does not exist.
            PermissionError: Listing is denied.
            ConnectionError: The endpoint cannot be reached.
            OSError: Any other S3 failure.
        """
        start = paths.clean_path(prefix)
        if start and not paths.is_walkable(start):
            raise KnowledgePathError(f"Prefix {echo(prefix)} names a hidden entry.")
        self._reset_diagnostics()
        list_prefix = self._keyprefix + (f"{start}/" if start else "")
        paginator = self._client.get_paginator("list_objects_v2")
        records: list[str] = []
        try:
            for page in paginator.paginate(
                Bucket=self._bucket,
                Prefix=list_prefix,
                PaginationConfig={"PageSize": self._page_size},
            ):
                for item in page.get("Contents", ()):
                    key: str = item["Key"]
                    path = key[len(self._keyprefix) :]
                    if key.endswith("/") or _hidden(path):
                        folder, _, name = path.partition("/")
                        if folder == paths.RECORDS_FOLDER and paths.is_record_name(name):
                            records.append(name)
                        continue
                    if not paths.is_walkable(path):
                        self._diagnose(f"skipped key {key!r}: not a clean bundle path")
                        continue
                    yield StoredFile(path, int(item["Size"]), str(item["ETag"]))
        except (ClientError, BotoCoreError) as exc:
            raise self._os_error(exc, "listing", start) from exc
        if not start:
            self._walked_records = sorted(records)

    @override
    def read(self, path: str) -> bytes:  # one GET; other S3 failures as OSError (see walk)
        cleaned = paths.clean_file_path(path)
        return self._get(cleaned, None)

    @override
    def read_head(self, path: str, max_bytes: int) -> bytes:
        # one ranged GET (none for 0 bytes); the body is read with a bound too, so a server
        # ignoring Range still cannot make this read more than max_bytes
        self._check_max_bytes(max_bytes)
        cleaned = paths.clean_file_path(path)
        if max_bytes == 0:
            return b""
        return self._get(cleaned, max_bytes)

    def write(self, path: str, data: bytes, *, overwrite: bool = True) -> StoredFile:
        """Store ``data`` at ``path`` with one ``PUT`` (atomic on S3).

        Args:
            path: A bundle-relative path.
            data: The complete new content.
            overwrite: When false, the ``PUT`` carries ``If-None-Match: *`` and the server
                refuses it if the key exists (needs an S3 API with conditional writes: AWS
                since August 2024, moto 5; an endpoint ignoring the header overwrites).

        Returns:
            The stored file with its new ETag.

        Raises:
            PermissionError: The store is declared read-only, or the write is denied.
            KnowledgePathError: The path is not clean or is hidden.
            FileExistsError: ``overwrite`` is false and ``path`` exists.
            OSError: Any other S3 failure.
        """
        condition = {} if overwrite else {"IfNoneMatch": "*"}
        try:
            return self._put(path, data, condition)
        except WriteConflictError as exc:
            raise FileExistsError(
                f"{echo(exc.path)} already exists in {self._location}; not overwritten."
            ) from None

    def _put(
        self,
        path: str,
        data: bytes,
        condition: dict[str, str],
        metadata: dict[str, str] | None = None,
    ) -> StoredFile:
        """One ``PUT``, conditional when ``condition`` names a header; a lost one conflicts."""
        cleaned = self._writable_path(path)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"write() takes bytes, got {type(data).__name__}.")
        body = bytes(data)
        content_type = mimetypes.guess_type(cleaned)[0] or "application/octet-stream"
        try:
            response = self._client.put_object(
                Bucket=self._bucket,
                Key=self._keyprefix + cleaned,
                Body=body,
                ContentType=content_type,
                **({"Metadata": metadata} if metadata else {}),
                **condition,
            )
        except (ClientError, BotoCoreError) as exc:
            if condition:
                raise self._conflict_or_error(exc, "write", cleaned) from exc
            raise self._os_error(exc, "write", cleaned) from exc
        logger.debug("wrote %s (%d bytes) in %s", cleaned, len(body), self._location)
        return StoredFile(cleaned, len(body), str(response["ETag"]))

    @property
    def compare_and_swap(self) -> bool:
        """Always: S3 conditional writes (``If-Match`` / ``If-None-Match``) order writers."""
        return True

    @override
    def read_versioned(self, path: str) -> tuple[bytes, str]:  # one GET; the token is the ETag
        return self._get_versioned(paths.clean_file_path(path), None)

    @override
    def read_bounded(self, path: str, max_bytes: int) -> bytes:
        self._check_max_bytes(max_bytes)
        return self._get_versioned(paths.clean_file_path(path), max_bytes)[0]

    @override
    def read_versioned_bounded(self, path: str, max_bytes: int) -> tuple[bytes, str]:
        self._check_max_bytes(max_bytes)
        return self._get_versioned(paths.clean_file_path(path), max_bytes)

    def _get_versioned(self, cleaned: str, limit: int | None) -> tuple[bytes, str]:
        """One GET of the whole object; over ``limit`` it is refused unread, or cut.

        The announced ``Content-Length`` is checked before the body is read, and the body is
        read with a bound of one byte past ``limit``, so a server announcing less than it
        sends (or nothing: chunked) still cannot make this hold more.
        """
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=self._keyprefix + cleaned)
            body = response["Body"]
            token = str(response["ETag"])
            self._remember_ops(cleaned, token, _ops_of(response))
            try:
                if limit is None:
                    data: bytes = body.read()
                else:
                    announced = response.get("ContentLength")
                    if announced is not None:
                        self._refuse_size(cleaned, int(announced), limit, token)
                    data = self._within(cleaned, body.read(limit + 1), limit, token)
            finally:
                body.close()
        except (ClientError, BotoCoreError) as exc:
            raise self._os_error(exc, "read", cleaned) from exc
        return data, token

    @override
    def write_if(self, path: str, data: bytes, token: str | None) -> StoredFile:
        """One conditional ``PUT`` (``If-Match`` the ETag, or ``If-None-Match: *``), idempotent.

        The ``PUT`` carries a fresh write id in :data:`OPS_METADATA`, after the ids of the
        version it changes. When its answer is lost (the server stored it, the connection
        dropped) botocore sends it again and the server refuses the copy (412): the object is
        then asked for its ids, and one that holds this write's id is this write, succeeded
        (the id is kept by every later write, so a writer that came in between is no matter).
        Needs an S3 API with conditional writes (AWS since 2024, moto 5): an endpoint ignoring
        them overwrites.

        Args:
            path: A bundle-relative path.
            data: The complete new content.
            token: The ETag the change is based on; ``None``: only where nothing is stored.

        Returns:
            The stored file; its token is the object's ETag, or one that matches nothing when
            another write followed this one (the next change then reads the object again).

        Raises:
            WriteConflictError: The object changed since ``token``; nothing was written.
            OSError: S3 failed, and the object does not hold this write.
        """
        cleaned = self._writable_path(path)
        condition = {"IfNoneMatch": "*"} if token is None else {"IfMatch": token}
        seen = self._ops.get(cleaned)
        before = seen[1] if token is not None and seen is not None and seen[0] == token else ()
        op = secrets.token_hex(8)
        ops = (*before, op)[-OPS_KEPT:]
        try:
            stored = self._put(cleaned, data, condition, {OPS_METADATA: " ".join(ops)})
        except (WriteConflictError, OSError) as exc:
            if isinstance(exc, PermissionError):
                raise
            landed = self._landed(cleaned, op)
            if landed is None:
                raise
            logger.info("%s in %s: the answer to a write was lost; it was stored", cleaned, self)
            stored = StoredFile(cleaned, len(data), landed)
        self._remember_ops(cleaned, stored.token, ops)
        return stored

    def _landed(self, cleaned: str, op: str) -> str | None:
        """The token of the object if it holds the write ``op``; ``None``: it doesn't.

        The object's current ETag when ``op`` made it; a token matching nothing when later
        writes followed (they kept ``op`` among their ids).
        """
        try:
            response = self._client.head_object(Bucket=self._bucket, Key=self._keyprefix + cleaned)
        except (ClientError, BotoCoreError):
            return None
        ops = _ops_of(response)
        if op not in ops:
            return None
        return str(response["ETag"]) if ops[-1] == op else _SUPERSEDED

    def _remember_ops(self, cleaned: str, etag: str, ops: tuple[str, ...]) -> None:
        self._ops.pop(cleaned, None)
        if len(self._ops) >= _OPS_REMEMBERED:
            del self._ops[next(iter(self._ops))]  # the one remembered longest ago
        self._ops[cleaned] = (etag, ops)

    # -- records (see ``DocumentStore._records``) ---------------------------------------

    @override
    def _records(self) -> list[str] | None:
        if self._walked_records is None:
            for _ in self.walk(""):  # sets the records as a walk sees them
                pass
        return list(self._walked_records or [])

    def _record_key(self, name: str) -> str:
        return f"{self._keyprefix}{paths.RECORDS_FOLDER}/{paths.require_record_name(name)}"

    @override
    def _read_record(self, name: str) -> bytes:
        return self._get(
            f"{paths.RECORDS_FOLDER}/{paths.require_record_name(name)}", paths.MAX_RECORD_BYTES + 1
        )

    @override
    def _write_record(self, name: str, data: bytes) -> None:
        self._require_writable(name)
        key = self._record_key(name)
        try:
            self._client.put_object(
                Bucket=self._bucket, Key=key, Body=data, ContentType="application/json"
            )
        except (ClientError, BotoCoreError) as exc:
            raise self._os_error(exc, "write", f"{paths.RECORDS_FOLDER}/{name}") from exc
        if self._walked_records is not None and name not in self._walked_records:
            self._walked_records = sorted([*self._walked_records, name])

    @override
    def _delete_record(self, name: str) -> bool:
        key = self._record_key(name)
        try:
            self._client.head_object(Bucket=self._bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _NOT_FOUND:
                self._forget_record(name)
                return False
            raise self._os_error(exc, "delete", f"{paths.RECORDS_FOLDER}/{name}") from exc
        except BotoCoreError as exc:
            raise self._os_error(exc, "delete", f"{paths.RECORDS_FOLDER}/{name}") from exc
        try:
            self._client.delete_object(Bucket=self._bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise self._os_error(exc, "delete", f"{paths.RECORDS_FOLDER}/{name}") from exc
        self._forget_record(name)
        return True

    def _forget_record(self, name: str) -> None:
        if self._walked_records is not None and name in self._walked_records:
            self._walked_records = [n for n in self._walked_records if n != name]

    @override
    def delete_if(self, path: str, token: str) -> None:  # one DELETE carrying If-Match
        cleaned = self._writable_path(path)
        try:
            self._client.delete_object(
                Bucket=self._bucket, Key=self._keyprefix + cleaned, IfMatch=token
            )
        except (ClientError, BotoCoreError) as exc:
            raise self._conflict_or_error(exc, "delete", cleaned) from exc

    def _writable_path(self, path: str) -> str:
        self._require_writable(path)
        return paths.clean_file_path(path)

    def _conflict_or_error(self, exc: Exception, action: str, cleaned: str) -> Exception:
        """A lost condition as ``WriteConflictError``; anything else as :meth:`_os_error`."""
        if isinstance(exc, ClientError) and (_code(exc) in _CONFLICT or _code(exc) in _NOT_FOUND):
            return WriteConflictError(
                f"{echo(cleaned)} changed in {self._location} since it was read; nothing was "
                "written.",
                cleaned,
            )
        return self._os_error(exc, action, cleaned)

    def close(self) -> None:
        """Close the client if this store created it."""
        if self._owns_client:
            self._client.close()

    def _get(self, cleaned: str, max_bytes: int | None) -> bytes:
        options = {} if max_bytes is None else {"Range": f"bytes=0-{max_bytes - 1}"}
        try:
            try:
                response = self._client.get_object(
                    Bucket=self._bucket, Key=self._keyprefix + cleaned, **options
                )
            except ClientError as exc:
                if max_bytes is not None and _code(exc) == "InvalidRange":
                    return b""  # a range starting at 0 is invalid only for an empty object
                raise
            body = response["Body"]
            try:
                data: bytes = body.read() if max_bytes is None else body.read(max_bytes)
            finally:
                body.close()
            return data
        except (ClientError, BotoCoreError) as exc:
            raise self._os_error(exc, "read", cleaned) from exc

    def _os_error(self, exc: Exception, action: str, path: str) -> OSError:
        """Translate a botocore failure into the ``OSError`` subclass a caller can act on."""
        where = f"{self._location}/{path}" if path else self._location
        if isinstance(exc, ClientError):
            code = _code(exc)
            message = f"S3 {action} of {where} failed ({code}): {exc}"
            if code == "NoSuchBucket":
                return FileNotFoundError(f"S3 bucket {self._bucket!r} does not exist ({where}).")
            if code in _NOT_FOUND:
                return FileNotFoundError(f"Nothing is stored at {where}.")
            if code in _DENIED:
                return PermissionError(message)
            return OSError(message)
        message = f"S3 {action} of {where} failed: {exc}"
        if isinstance(exc, NoCredentialsError):
            return PermissionError(message)
        if isinstance(exc, BotoConnectionError | HTTPClientError | IncompleteReadError):
            # the endpoint refused, reset or cut the connection short, or timed out: the same
            # request may well succeed when made again
            return ConnectionError(message)
        return OSError(message)


def _code(exc: ClientError) -> str:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    if not code:
        code = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
    return code


def _ops_of(response: dict[str, Any]) -> tuple[str, ...]:
    """The write ids an S3 answer (``GetObject``, ``HeadObject``) carries, oldest first."""
    metadata = response.get("Metadata") or {}
    return tuple(str(metadata.get(OPS_METADATA, "")).split())


def _hidden(path: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in path.split("/"))

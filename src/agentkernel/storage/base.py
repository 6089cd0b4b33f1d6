"""The ``DocumentStore`` contract: bytes at bundle-relative paths, contained.

A store supplies bytes; what they mean is decided by a ``DocumentKnowledgeBase`` (such as
``OKFManager``). Containment is the store's obligation: every path a store accepts, whoever
supplied it (an agent tool, a link in a document, its own walk), goes through
:func:`clean_path` first, and a local store also refuses symlinks that resolve outside its root.
"""

from __future__ import annotations

import importlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from agentkernel.errors import AKConfigError, DocumentTooLargeError, echo

# the path and record-name rules live in ``paths``; their names stay importable from here
from agentkernel.storage._paths import MAX_RECORD_BYTES as MAX_RECORD_BYTES
from agentkernel.storage._paths import RECORDS_FOLDER as RECORDS_FOLDER
from agentkernel.storage._paths import bundle_label as bundle_label
from agentkernel.storage._paths import bundle_name as bundle_name
from agentkernel.storage._paths import clean_file_path as clean_file_path
from agentkernel.storage._paths import clean_path as clean_path
from agentkernel.storage._paths import is_record_name as is_record_name
from agentkernel.storage._paths import is_walkable as is_walkable
from agentkernel.storage._paths import require_record_name as require_record_name

logger = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
"""The one size bound of a document read whole from a bundle (4 MiB): an OKF concept or
listing file (``OKFManager.max_document_bytes``), a curated store's page, ``index.md`` and
overview. Larger ones are skipped or refused with :func:`oversized`'s message, never buffered."""


@dataclass(frozen=True)
class StoredFile:
    """One file in a store, as a walk lists it.

    Attributes:
        path: Bundle-relative POSIX path (``"tables/orders.md"``).
        size: Size in bytes.
        token: Change token: differs whenever the content may have changed
            (``"<mtime_ns>:<size>:<inode>"`` locally, so a rename-into-place write is seen
            even within one timestamp tick; the ETag on S3). Opaque: compare, never parse.
    """

    path: str
    size: int
    token: str


def oversized(size: int, limit: int, *, at_least: bool = False) -> str:
    """The one message of the document size bound, for a skip, a refused read or a write.

    Args:
        size: The document's size in bytes (listed, announced or about to be written).
        limit: The bound it is over.
        at_least: The size is a lower bound: a stream delivered more than ``limit`` bytes.

    Returns:
        ``oversized: 5000000 bytes (the limit is max_document_bytes=4194304)``.
    """
    amount = f"more than {limit}" if at_least else str(size)
    return f"oversized: {amount} bytes (the limit is max_document_bytes={limit})"


class DocumentStore(ABC):
    """Bytes at bundle-relative paths, with change tokens, atomic writes and containment.

    Implementations: :class:`~agentkernel.storage.local.LocalDocumentStore`,
    :class:`~agentkernel.storage.s3.S3DocumentStore`, or your own subclass,
    reachable from configuration as ``python:yourpkg.module.YourStore``.
    """

    @property
    @abstractmethod
    def writable(self) -> bool:
        """Whether ``write`` may be called."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store lives, for messages (``/srv/kb``, ``s3://bucket/prefix``)."""

    @property
    def label(self) -> str:
        """The bundle's name as agents see it: never an absolute local path.

        Schemas, descriptions and messages that reach an agent name the bundle by this, so
        they do not disclose where it lives on the host. The default is the last segment of
        a local path (``/srv/kb`` is ``kb``) and the location itself otherwise
        (``s3://bucket/prefix``, ``memory://notes``).
        """
        return bundle_label(self.location)

    @abstractmethod
    def walk(self, prefix: str = "") -> Iterator[StoredFile]:
        """List every file below ``prefix``, recursively, in no guaranteed order.

        Entries that break containment (a symlink out of the root, say) are skipped and
        recorded in :attr:`diagnostics`; they never stop the walk.

        Args:
            prefix: A directory relative to the root; ``""`` is the whole store.

        Yields:
            One ``StoredFile`` per regular file.

        Raises:
            KnowledgePathError: ``prefix`` is not a clean relative path.
            OSError: The store itself cannot be listed (a missing root, a network failure).
        """

    @abstractmethod
    def read(self, path: str) -> bytes:
        """Return the whole content of ``path``.

        Args:
            path: A bundle-relative path.

        Returns:
            The bytes stored there.

        Raises:
            KnowledgePathError: The path is not clean, is hidden or escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """

    @abstractmethod
    def read_head(self, path: str, max_bytes: int) -> bytes:
        """Return at most the first ``max_bytes`` bytes of ``path`` (a ranged read).

        Args:
            path: A bundle-relative path.
            max_bytes: The most bytes to return (``0`` returns ``b""``).

        Returns:
            The leading bytes.

        Raises:
            ValueError: ``max_bytes`` is negative.
            KnowledgePathError: The path is not clean, is hidden or escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """

    def read_bounded(self, path: str, max_bytes: int) -> bytes:
        """Return the whole content of ``path``, refusing one larger than ``max_bytes``.

        The default is a leading read of ``max_bytes + 1`` bytes, so a store whose
        :meth:`read_head` is bounded never holds more than that; the built-in stores check the
        size they are told (``fstat``, ``Content-Length``) before reading, and cut a stream
        that delivers more.

        Args:
            path: A bundle-relative path.
            max_bytes: The most bytes the content may have.

        Returns:
            The bytes stored there.

        Raises:
            DocumentTooLargeError: The content is larger (named with :func:`oversized`).
            KnowledgePathError: The path is not clean, is hidden or escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """
        self._check_max_bytes(max_bytes)
        return self._within(path, self.read_head(path, max_bytes + 1), max_bytes)

    def read_versioned_bounded(self, path: str, max_bytes: int) -> tuple[bytes, str]:
        """:meth:`read_versioned`, refusing content larger than ``max_bytes``.

        The default reads the whole content and then refuses it; the built-in stores check
        the announced size first and never read more than ``max_bytes + 1`` bytes. A store
        of your own with compare-and-swap should override it the same way.

        Args:
            path: A bundle-relative path.
            max_bytes: The most bytes the content may have.

        Returns:
            ``(bytes, token)``, as :meth:`read_versioned`.

        Raises:
            DocumentTooLargeError: The content is larger; its ``token`` is the content's.
            NotImplementedError: The store offers no compare-and-swap.
            KnowledgePathError: The path is not clean, is hidden or escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """
        self._check_max_bytes(max_bytes)
        data, token = self.read_versioned(path)
        self._refuse_size(path, len(data), max_bytes, token)
        return data, token

    @staticmethod
    def _within(path: str, data: bytes, max_bytes: int, token: str | None = None) -> bytes:
        """``data``, unless a read cut at ``max_bytes + 1`` bytes delivered more than the bound.

        Raises:
            DocumentTooLargeError: It did (the size named as a lower bound).
        """
        if len(data) > max_bytes:
            raise DocumentTooLargeError(path, oversized(len(data), max_bytes, at_least=True), token)
        return data

    @staticmethod
    def _refuse_size(path: str, size: int, max_bytes: int, token: str | None = None) -> None:
        """Refuse, before reading, content announced larger than ``max_bytes``.

        Raises:
            DocumentTooLargeError: ``size`` is over the bound.
        """
        if size > max_bytes:
            raise DocumentTooLargeError(path, oversized(size, max_bytes), token)

    def read_heads(
        self, paths: Sequence[str], max_bytes: int, *, workers: int = 1
    ) -> list[bytes | Exception]:
        """Leading reads of many documents, as a walk needs them; one failure fails one path.

        The default calls :meth:`read_head` for each path, on ``workers`` threads when there
        are more than a few (worth it when each read is a network round trip). A store with a
        cheaper way to read many files at once overrides this.

        Args:
            paths: Bundle-relative paths.
            max_bytes: The most bytes to return per path.
            workers: Concurrent reads allowed.

        Returns:
            Per path, in order: its leading bytes, or the exception :meth:`read_head` raised
            for it (``FileNotFoundError``, ``KnowledgePathError``, ...).
        """

        def head(path: str) -> bytes | Exception:
            try:
                return self.read_head(path, max_bytes)
            except Exception as exc:  # one unreadable document must not fail the others
                return exc

        if workers > 1 and len(paths) > 16:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="store-read") as pool:
                return list(pool.map(head, paths))
        return [head(path) for path in paths]

    @abstractmethod
    def write(self, path: str, data: bytes, *, overwrite: bool = True) -> StoredFile:
        """Store ``data`` at ``path`` atomically: readers see the old bytes or the new.

        Args:
            path: A bundle-relative path; missing directories are created.
            data: The complete new content.
            overwrite: When false, fail instead of replacing an existing file; the check and
                the write are one atomic step, so concurrent writers never clobber each other.

        Returns:
            The stored file with its new change token.

        Raises:
            KnowledgePathError: The path escapes the root.
            PermissionError: The store is read-only.
            FileExistsError: ``overwrite`` is false and ``path`` exists.
        """

    @staticmethod
    def _check_max_bytes(max_bytes: int) -> None:
        """Refuse a negative size for a leading read (``read_head``, ``read_heads``).

        Args:
            max_bytes: The most bytes a read may return.

        Raises:
            ValueError: ``max_bytes`` is negative.
        """
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}.")

    def _require_writable(self, path: str) -> None:
        """Refuse a write to a read-only store, naming the bundle by :attr:`label`.

        Args:
            path: The path the refused write named.

        Raises:
            PermissionError: The store is read-only.
        """
        if not self.writable:
            raise PermissionError(
                f"Document store {self.label!r} is read-only: cannot write {echo(path)}."
            )

    @property
    def compare_and_swap(self) -> bool:
        """Whether :meth:`read_versioned`, :meth:`write_if` and :meth:`delete_if` work here.

        Many writers sharing one store (several processes, pods or functions) need them to
        never lose an acknowledged change; the default store offers none.
        """
        return False

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """Return the content of ``path`` with the token of exactly that content.

        Args:
            path: A bundle-relative path.

        Returns:
            ``(bytes, token)``; pass the token to :meth:`write_if` to change what was read.

        Raises:
            NotImplementedError: The store offers no compare-and-swap.
            KnowledgePathError: The path is not clean, is hidden or escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """
        raise NotImplementedError(f"{type(self).__name__} offers no compare-and-swap")

    def write_if(self, path: str, data: bytes, token: str | None) -> StoredFile:
        """Store ``data`` at ``path`` only if ``path`` is still as last read (compare-and-swap).

        Args:
            path: A bundle-relative path; missing directories are created.
            data: The complete new content.
            token: The token :meth:`read_versioned` (or a walk) gave for the content the
                change is based on; ``None``: only if nothing is stored at ``path`` yet.

        Returns:
            The stored file with its new token.

        Raises:
            NotImplementedError: The store offers no compare-and-swap.
            WriteConflictError: ``path`` changed (or appeared, or vanished) since; nothing
                was written.
            PermissionError: The store is read-only, or the write is denied.
        """
        raise NotImplementedError(f"{type(self).__name__} offers no compare-and-swap")

    def delete_if(self, path: str, token: str) -> None:
        """Remove ``path`` only if it still holds the content of ``token``.

        Args:
            path: A bundle-relative path.
            token: The token of the content to remove.

        Raises:
            NotImplementedError: The store offers no compare-and-swap.
            WriteConflictError: ``path`` changed or vanished since; nothing was removed.
            PermissionError: The store is read-only, or the delete is denied.
        """
        raise NotImplementedError(f"{type(self).__name__} offers no compare-and-swap")

    # -- the store's own records -----------------------------------------------------------
    # Small files a writer keeps in the hidden folder :data:`RECORDS_FOLDER` beside the
    # bundle (the curated store's batch intents): no walk lists them, no reader of the bundle
    # sees them, and no bundle file can sit there (bundle paths are never hidden).

    def _records(self) -> list[str] | None:
        """Return the names of the records kept now, sorted; ``None``: this store keeps none.

        A store over the network may answer as of its last walk of the whole store (the
        records are listed with it, at no extra request).
        """
        return None

    def _read_record(self, name: str) -> bytes:
        """Return one record's bytes.

        Args:
            name: A name :meth:`_records` gave.

        At most :data:`MAX_RECORD_BYTES` and one byte more are read (a record is outside
        data like any file of the store: a longer one is refused by its reader).

        Raises:
            FileNotFoundError: It is gone.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no records")

    def _write_record(self, name: str, data: bytes) -> None:
        """Store a record durably (a write after this returns finds it, whatever happens).

        Args:
            name: Lowercase letters, digits and hyphens, then ``.json``.
            data: Its content.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no records")

    def _delete_record(self, name: str) -> bool:
        """Remove a record; return whether it was there (``False``: someone removed it first)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no records")

    @property
    def diagnostics(self) -> list[str]:
        """Problems met by the most recent walk (skipped entries and why), oldest first.

        Each walk starts a fresh list (see :meth:`_reset_diagnostics`), so a bundle refreshed
        every few minutes reports its current problems, not an ever-growing history. Copy the
        list after a walk to keep it.
        """
        found: list[str] = self.__dict__.setdefault("_diagnostics", [])
        return found

    def _reset_diagnostics(self) -> None:
        """Start a fresh diagnostics list; implementations call it when a walk begins.

        The old list object is left untouched, so a caller holding it keeps what it saw.
        """
        self.__dict__["_diagnostics"] = []

    def _diagnose(self, message: str) -> None:
        """Record one skipped entry; log it at WARNING the first time, at DEBUG on later walks.

        Args:
            message: What was skipped and why, naming the path.
        """
        logged: set[str] = self.__dict__.setdefault("_logged_diagnostics", set())
        level = logging.DEBUG if message in logged else logging.WARNING
        logged.add(message)
        logger.log(level, "%s: %s", self.location, message)
        self.diagnostics.append(message)

    def close(self) -> None:
        """Release clients; the default does nothing."""

    @staticmethod
    def from_uri(value: str, **kwargs: Any) -> DocumentStore:
        """Resolve one configuration string to a store.

        ===============================  ====================================
        ``./bundle``, ``/srv/kb``        ``LocalDocumentStore``
        ``file:///srv/kb``               ``LocalDocumentStore``
        ``s3://bucket/prefix``           ``S3DocumentStore`` (``aws`` extra)
        ``python:mypkg.stores.GitStore`` your ``DocumentStore`` subclass
        ===============================  ====================================

        A dotted path without ``python:`` is a local path: the discriminator is mandatory
        because a dotted name is itself a valid directory name.

        Args:
            value: The location string.
            **kwargs: Passed to the store's constructor (``writable=...``, ...).

        Returns:
            A constructed store.

        Raises:
            AKConfigError: The value is empty, has an unknown scheme, or names something that
                is not a ``DocumentStore`` subclass.
            FileNotFoundError: A local root does not exist (stores fail at construction).
            MissingExtraError: An ``s3://`` value without the ``aws`` extra installed.
        """
        if not isinstance(value, str) or not value.strip():
            raise AKConfigError(f"A document store URI must be a non-empty string, got {value!r}.")
        value = value.strip()
        scheme, sep, rest = value.partition(":")
        if not sep or len(scheme) == 1 or "/" in scheme or "." in scheme:
            # a plain path (a Windows drive letter counts as one)
            return _local_store(value, **kwargs)
        scheme = scheme.lower()
        if scheme == "file":
            if not rest.startswith("//"):
                raise AKConfigError(f"A file URI needs 'file:///absolute/path', got {value!r}.")
            host_and_path = rest[2:]
            host, _, path = host_and_path.partition("/")
            if host not in ("", "localhost"):
                raise AKConfigError(f"A file URI names no remote host, got {value!r}.")
            return _local_store("/" + unquote(path), **kwargs)
        if scheme == "s3":
            if not rest.startswith("//") or not rest[2:].split("/", 1)[0]:
                raise AKConfigError(f"An S3 URI needs 's3://bucket/prefix', got {value!r}.")
            bucket, _, prefix = rest[2:].partition("/")
            store: DocumentStore = _built_in("s3")(bucket, prefix, **kwargs)
            return store
        if scheme == "python":
            return _python_store(rest, value, **kwargs)
        raise AKConfigError(
            f"Unknown document store scheme {scheme!r} in {value!r}: use a path, file://, "
            "s3://bucket/prefix or python:package.module.StoreClass."
        )


# The built-in schemes name their store class by dotted path, as ``python:`` values and
# configuration ``type:`` entries do: the contract imports none of its implementations (they
# import it), and only the scheme in use is imported (``s3`` needs the ``aws`` extra).
_BUILT_IN: dict[str, str] = {
    "file": "agentkernel.storage.local.LocalDocumentStore",
    "s3": "agentkernel.storage.s3.S3DocumentStore",
}


def _built_in(scheme: str) -> Any:
    """The store class of a built-in scheme (its ``MissingExtraError`` propagates)."""
    module_name, _, class_name = _BUILT_IN[scheme].rpartition(".")
    return getattr(importlib.import_module(module_name), class_name)


def _local_store(root: str, **kwargs: Any) -> DocumentStore:
    local: DocumentStore = _built_in("file")(root, **kwargs)
    return local


def _python_store(dotted: str, value: str, **kwargs: Any) -> DocumentStore:
    return load_store_class(dotted.strip(), value)(**kwargs)


def load_store_class(dotted: str, context: str | None = None) -> type[DocumentStore]:
    """Import a ``DocumentStore`` subclass named by its dotted path.

    Args:
        dotted: ``package.module.ClassName``.
        context: What named it (a URI, a configuration entry), for the error message.

    Returns:
        The class.

    Raises:
        AKConfigError: The path is malformed, cannot be imported, or names something that is
            not a ``DocumentStore`` subclass.
    """
    where = f" in {context}" if context else ""
    module_name, _, class_name = dotted.rpartition(".")
    if not module_name or not class_name:
        raise AKConfigError(f"A store class needs 'package.module.Class', got {dotted!r}{where}.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AKConfigError(f"Cannot import module {module_name!r}{where}: {exc}") from exc
    store_class = getattr(module, class_name, None)
    if not (isinstance(store_class, type) and issubclass(store_class, DocumentStore)):
        raise AKConfigError(f"{dotted!r}{where} is not a DocumentStore subclass.")
    return store_class

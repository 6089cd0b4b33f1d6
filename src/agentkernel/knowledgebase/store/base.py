"""The ``DocumentStore`` contract: bytes at bundle-relative paths, contained.

A store supplies bytes; what they mean is decided by a ``DocumentKnowledgeBase`` (such as
``OKFManager``). Containment is the store's obligation: every path a store accepts, whoever
supplied it (an agent tool, a link in a document, its own walk), goes through
:func:`clean_path` first, and a local store also refuses symlinks that resolve outside its root.
"""

from __future__ import annotations

import importlib
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase.errors import KnowledgePathError


@dataclass(frozen=True)
class StoredFile:
    """One file in a store, as a walk lists it.

    Attributes:
        path: Bundle-relative POSIX path (``"tables/orders.md"``).
        size: Size in bytes.
        token: Change token: differs whenever the content may have changed
            (``"<mtime_ns>:<size>"`` locally, the ETag on S3).
    """

    path: str
    size: int
    token: str


def clean_path(path: str) -> str:
    """Normalise a bundle-relative path, refusing anything that could leave the root.

    Args:
        path: A path as given by a caller; ``""`` (or ``"."``) is the root.

    Returns:
        The path in POSIX form with no leading ``./``, no duplicate slashes and no trailing
        slash; ``""`` for the root.

    Raises:
        KnowledgePathError: The path is not a string, is absolute, holds ``..``, a NUL byte,
            a backslash, or a drive letter.
    """
    if not isinstance(path, str):
        raise KnowledgePathError(f"A path must be a string, got {type(path).__name__}.")
    if "\x00" in path:
        raise KnowledgePathError(f"Path {path!r} contains a NUL byte.")
    if "\\" in path:
        raise KnowledgePathError(f"Path {path!r} contains a backslash; use '/' separators.")
    if path.startswith("/") or (len(path) >= 2 and path[1] == ":"):
        raise KnowledgePathError(f"Path {path!r} is absolute; give it relative to the bundle.")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise KnowledgePathError(f"Path {path!r} climbs out of the bundle with '..'.")
    return posixpath.join(*parts) if parts else ""


class DocumentStore(ABC):
    """Bytes at bundle-relative paths, with change tokens, atomic writes and containment.

    Implementations: :class:`~agentkernel.knowledgebase.store.local.LocalDocumentStore`,
    :class:`~agentkernel.knowledgebase.store.s3.S3DocumentStore`, or your own subclass,
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
            KnowledgePathError: The path escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """

    @abstractmethod
    def read_head(self, path: str, max_bytes: int) -> bytes:
        """Return at most the first ``max_bytes`` bytes of ``path`` (a ranged read).

        Args:
            path: A bundle-relative path.
            max_bytes: The most bytes to return.

        Returns:
            The leading bytes.

        Raises:
            KnowledgePathError: The path escapes the root.
            FileNotFoundError: Nothing is stored at ``path``.
        """

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

    @property
    def diagnostics(self) -> list[str]:
        """Problems met while walking (skipped entries and why), oldest first."""
        found: list[str] = self.__dict__.setdefault("_diagnostics", [])
        return found

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
            return _local_store("/" + path, **kwargs)
        if scheme == "s3":
            if not rest.startswith("//") or not rest[2:].split("/", 1)[0]:
                raise AKConfigError(f"An S3 URI needs 's3://bucket/prefix', got {value!r}.")
            bucket, _, prefix = rest[2:].partition("/")
            from agentkernel.knowledgebase.store.s3 import S3DocumentStore

            return S3DocumentStore(bucket, prefix, **kwargs)
        if scheme == "python":
            return _python_store(rest, value, **kwargs)
        raise AKConfigError(
            f"Unknown document store scheme {scheme!r} in {value!r}: use a path, file://, "
            "s3://bucket/prefix or python:package.module.StoreClass."
        )


def _local_store(root: str, **kwargs: Any) -> DocumentStore:
    from agentkernel.knowledgebase.store.local import LocalDocumentStore

    return LocalDocumentStore(root, **kwargs)


def _python_store(dotted: str, value: str, **kwargs: Any) -> DocumentStore:
    module_name, _, class_name = dotted.strip().rpartition(".")
    if not module_name or not class_name:
        raise AKConfigError(f"A python: store needs 'python:package.module.Class', got {value!r}.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AKConfigError(
            f"Cannot import module {module_name!r} for store {value!r}: {exc}"
        ) from exc
    store_class = getattr(module, class_name, None)
    if not (isinstance(store_class, type) and issubclass(store_class, DocumentStore)):
        raise AKConfigError(f"{dotted!r} in {value!r} is not a DocumentStore subclass.")
    return store_class(**kwargs)

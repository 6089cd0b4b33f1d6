"""A custom DocumentStore (reachable from config.yaml by its dotted path) that counts I/O.

It is a real store: it serves a real directory through LocalDocumentStore and records every
walk and read, so tests can prove when a bundle is first touched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from agentkernel.storage.base import DocumentStore, StoredFile
from agentkernel.storage.local import LocalDocumentStore

CALLS: Counter[str] = Counter()


class CountingStore(DocumentStore):
    def __init__(self, location: str) -> None:
        CALLS["open"] += 1
        self._inner = LocalDocumentStore(location)

    @property
    def writable(self) -> bool:
        return self._inner.writable

    @property
    def location(self) -> str:
        return self._inner.location

    def walk(self, prefix: str = "") -> Iterator[StoredFile]:
        CALLS["walk"] += 1
        return self._inner.walk(prefix)

    def read(self, path: str) -> bytes:
        CALLS["read"] += 1
        return self._inner.read(path)

    def read_head(self, path: str, max_bytes: int) -> bytes:
        CALLS["read"] += 1
        return self._inner.read_head(path, max_bytes)

    def write(self, path: str, data: bytes, *, overwrite: bool = True) -> StoredFile:
        CALLS["write"] += 1
        return self._inner.write(path, data, overwrite=overwrite)


class ReadOnlyStore(LocalDocumentStore):
    """A directory served read-only, as under a read-only volume mount (root ignores mode bits)."""

    def __init__(self, location: str) -> None:
        super().__init__(location, writable=False)

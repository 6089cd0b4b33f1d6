"""The curated store over any ``DocumentStore``: one implementation, local or on S3.

:class:`BundleKnowledgeStore` is :class:`~agentkernel.knowledgestore.pages_store.PagesStore`
over a :class:`~agentkernel.knowledgestore._bundle_backend.BundlePageBackend` on a document
store you pass: a :class:`~agentkernel.storage.local.LocalDocumentStore` folder, an S3 prefix
(:class:`~agentkernel.storage.s3.S3DocumentStore`), or your own. Many writers (processes,
pods, functions) can share it; what they may count on (compare-and-swap on every file, all or
none batches across a crash, a retried write applied once, storage failures named, never taken
for content) is the backend's module's to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentkernel.knowledgestore._bundle_backend import BundlePageBackend
from agentkernel.knowledgestore.model import PageType
from agentkernel.knowledgestore.pages_store import PagesStore

if TYPE_CHECKING:
    import os

    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.storage.base import DocumentStore


class BundleKnowledgeStore(PagesStore):
    """A :class:`KnowledgeStore` over the page files of any ``DocumentStore``."""

    def __init__(
        self,
        documents: DocumentStore,
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        refresh_seconds: float = 1.0,
    ) -> None:
        """Open (lazily) the store on ``documents``; nothing is read or written yet.

        Args:
            documents: Where the files live; writes need one offering compare-and-swap
                (:attr:`DocumentStore.compare_and_swap`: the local and S3 stores do).
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid; ``None``: lexical only.
            cache_dir: The vector cache root.
            refresh_seconds: How old a listing reads may answer from: ``list``, ``read``,
                ``search``, ``index``, ``recent_log`` and ``overview`` see another writer's
                change within this many seconds (``0``: at once, one listing per call).
                Writes and ``check`` always list afresh; a store sees its own writes at once.
                A local folder's reads always compare its folders' tokens instead.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        super().__init__(
            BundlePageBackend(documents, page_types, refresh_seconds=refresh_seconds),
            page_types,
            embedder=embedder,
            cache_dir=cache_dir,
        )
        self._documents = documents

    @property
    def documents(self) -> DocumentStore:
        """The document store the files live in."""
        return self._documents

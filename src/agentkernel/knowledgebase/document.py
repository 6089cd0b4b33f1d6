"""``DocumentKnowledgeBase``: a knowledge base whose knowledge is documents in a ``DocumentStore``.

Storage and representation are independent axes. The store supplies bytes at paths and
guarantees containment; a subclass (``OKFManager`` reads OKF concepts) decides what the bytes
mean. Moving a bundle from a directory to an S3 prefix swaps the store, not the subclass.
"""

from __future__ import annotations

import dataclasses

from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.model import KnowledgeCapabilities
from agentkernel.storage.base import DocumentStore, bundle_name


class DocumentKnowledgeBase(KnowledgeBase):
    """A ``KnowledgeBase`` over a ``DocumentStore``; subclasses give the bytes a meaning.

    The store's writability folds into the declaration with ``and``: a read-only store
    beats a backend willing to write, and a backend declaring ``writable=False`` beats a
    writable store. The store is closed with the backend.
    """

    def __init__(
        self,
        store: DocumentStore,
        capabilities: KnowledgeCapabilities,
        name: str | None = None,
    ) -> None:
        """Attach the store and fold its writability into the declaration.

        Args:
            store: Where the documents live.
            capabilities: What the representation can do on a writable store.
            name: The backend's name.

        Raises:
            TypeError: ``store`` is not a ``DocumentStore``.
            ValueError: The folded declaration breaks an invariant.
        """
        if not isinstance(store, DocumentStore):
            raise TypeError(f"store must be a DocumentStore, got {type(store).__name__}")
        folded = dataclasses.replace(
            capabilities, writable=bool(capabilities.writable and store.writable)
        )
        super().__init__(folded, name)
        self._store = store

    @property
    def store(self) -> DocumentStore:
        """The document store this backend reads and writes."""
        return self._store

    @property
    def backend_name(self) -> str:
        """The backend's name; unnamed, the bundle's (see :func:`bundle_name`), never a path."""
        return self.name or bundle_name(self._store.label)

    def close(self) -> None:
        """Close the store."""
        self._store.close()

"""The in-process manifest of an OKF bundle: what search and browse answer from.

It holds one :class:`Concept` per concept (frontmatter and a bounded body head, never a whole
body), the reserved files (``index.md`` text cached, ``log.md`` only listed), the documents
that were skipped and why, the directory tree, and the lexical index. Every change goes
through :meth:`Manifest.put_concept`, :meth:`Manifest.put_reserved`,
:meth:`Manifest.put_skipped` or :meth:`Manifest.drop`, which keep all of them consistent and
update the index in place. The manifest does no I/O and takes no lock: its owner does both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agentkernel.knowledgebase.okf._tree import Children, DocumentTree
from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.retrieval import SearchIndex
from agentkernel.retrieval.index import PHRASE_BOOST

if TYPE_CHECKING:
    import numpy as np

    from agentkernel.retrieval.semantic import SemanticIndex


@dataclass
class ReservedFile:
    """An ``index.md`` or ``log.md``.

    Attributes:
        path: Bundle-relative path.
        token: The store's change token.
        size: Size in bytes.
        text: The whole text of an ``index.md`` read at walk time, or ``None`` (a ``log.md``,
            or an index too large for the leading read, read on demand).
    """

    path: str
    token: str
    size: int
    text: str | None = None


@dataclass
class Skipped:
    """A document that is not served, with the reason (a diagnostic).

    Attributes:
        path: Bundle-relative path.
        token: The change token the reason applies to (unchanged documents are not re-read).
        reason: Why it was skipped.
    """

    path: str
    token: str
    reason: str


class BundleContents(Protocol):
    """What search, browse and the schema read: the walked manifest, or a bundle index's view.

    Both are a :class:`~agentkernel.knowledgebase.okf._tree.DocumentTree` (paths, tokens,
    directories) holding concepts, reserved files and skipped documents.
    """

    @property
    def concepts(self) -> Mapping[str, Concept]:
        """Concepts by id."""

    @property
    def reserved(self) -> Mapping[str, ReservedFile]:
        """Reserved files (``index.md``, ``log.md``) by path."""

    @property
    def skipped(self) -> Mapping[str, Skipped]:
        """Documents not served, by path."""

    @property
    def truncated(self) -> bool:
        """Whether concepts were left out at the bundle's ``max_concepts``."""

    def token_of(self, path: str) -> str | None:
        """See :meth:`DocumentTree.token_of`."""

    def paths(self) -> list[str]:
        """See :meth:`DocumentTree.paths`."""

    def has_directory(self, path: str) -> bool:
        """See :meth:`DocumentTree.has_directory`."""

    def children(self, directory: str) -> Children:
        """See :meth:`DocumentTree.children`."""

    def concepts_under(self, directory: str) -> int:
        """See :meth:`DocumentTree.concepts_under`."""


class Manifest(DocumentTree):
    """Concepts, reserved files, skipped documents, directories and the lexical index."""

    def __init__(self, vectors: SemanticIndex | None = None) -> None:
        """Create an empty manifest.

        Args:
            vectors: The dense index kept next to the lexical one, when search is hybrid.
        """
        super().__init__()
        self.concepts: dict[str, Concept] = {}
        self.reserved: dict[str, ReservedFile] = {}
        self.skipped: dict[str, Skipped] = {}
        # with vectors, a search embeds its query (~15 ms of CPU), so the word-pair phrase
        # rule's ~50 us is free; without, it would cost the lexical-only latency target
        self.vectors = vectors
        self.index = self.blank_index()
        self.truncated = False

    def blank_index(self) -> SearchIndex:
        """A new, empty lexical index of the settings this manifest uses.

        Returns:
            The index.
        """
        return SearchIndex(phrase_boost=PHRASE_BOOST if self.vectors is not None else None)

    def put_concept(self, concept: Concept, vector: np.ndarray | None = None) -> None:
        """Add or replace a concept, indexing it.

        Args:
            concept: The parsed concept.
            vector: Its unit vector, when search is hybrid (``None``: embedded later).
        """
        self.drop(concept.path)
        self.concepts[concept.id] = concept
        self._add_document(concept.path, concept.token, concept=True)
        self.index.add(concept.id, search_fields(concept), status=concept.status)
        if self.vectors is not None and vector is not None:
            self.vectors.put(concept.id, vector)

    def adopt(
        self,
        concepts: list[Concept],
        reserved: list[ReservedFile],
        skipped: list[Skipped],
        index: SearchIndex,
    ) -> None:
        """Take a saved state whole (a warm start): its documents, and its analysed index.

        Args:
            concepts: The concepts, each already in ``index`` under its id.
            reserved: The reserved files.
            skipped: The skipped documents.
            index: The lexical index of exactly ``concepts``.

        Raises:
            ValueError: The manifest is not empty.
        """
        if self.paths():
            raise ValueError("adopt fills an empty manifest only")
        self.index = index
        for concept in concepts:
            self.concepts[concept.id] = concept
            self._add_document(concept.path, concept.token, concept=True)
        for entry in reserved:
            self.reserved[entry.path] = entry
            self._add_document(entry.path, entry.token, concept=False)
        for found in skipped:
            self.skipped[found.path] = found
            self._add_document(found.path, found.token, concept=False)

    def put_reserved(self, entry: ReservedFile) -> None:
        """Add or replace a reserved file.

        Args:
            entry: The reserved file.
        """
        self.drop(entry.path)
        self.reserved[entry.path] = entry
        self._add_document(entry.path, entry.token, concept=False)

    def put_skipped(self, entry: Skipped) -> None:
        """Record a skipped document, replacing whatever the path was before.

        Args:
            entry: The path, its token and the reason.
        """
        self.drop(entry.path)
        self.skipped[entry.path] = entry
        self._add_document(entry.path, entry.token, concept=False)

    def drop(self, path: str) -> bool:
        """Forget a document path, whatever it was.

        Args:
            path: Bundle-relative path.

        Returns:
            Whether the path was known.
        """
        if not self._remove_document(path):
            return False
        if self.reserved.pop(path, None) is None and self.skipped.pop(path, None) is None:
            concept_id = path[:-3]
            del self.concepts[concept_id]
            self.index.remove(concept_id)
            if self.vectors is not None:
                self.vectors.remove(concept_id)
        return True


def search_fields(concept: Concept) -> dict[str, str | list[str]]:
    """The fields the lexical index reads from a concept (the bundle index stores the same).

    Args:
        concept: The concept.

    Returns:
        Field name to text or list of texts.
    """
    aliases = concept.frontmatter.get("aliases")
    return {
        "title": concept.title,
        "aliases": [str(a) for a in aliases] if isinstance(aliases, list) else str(aliases or ""),
        "tags": concept.tags,
        "description": concept.description,
        "type": concept.type,
        "id": concept.id,
        "body": concept.body_head,
    }

"""The in-process manifest of an OKF bundle: what search and browse answer from.

It holds one :class:`Concept` per concept (frontmatter and a bounded body head, never a whole
body), the reserved files (``index.md`` text cached, ``log.md`` only listed), the documents
that were skipped and why, the directory tree, and the lexical index. Every change goes
through :meth:`Manifest.put_concept`, :meth:`Manifest.put_reserved`,
:meth:`Manifest.put_skipped` or :meth:`Manifest.drop`, which keep all of them consistent and
update the index in place. The manifest does no I/O and takes no lock: its owner does both.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.retrieval import SearchIndex

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


class Manifest:
    """Concepts, reserved files, skipped documents, directories and the lexical index."""

    def __init__(self, vectors: SemanticIndex | None = None) -> None:
        """Create an empty manifest.

        Args:
            vectors: The dense index kept next to the lexical one, when search is hybrid.
        """
        self.concepts: dict[str, Concept] = {}
        self.reserved: dict[str, ReservedFile] = {}
        self.skipped: dict[str, Skipped] = {}
        self.index = SearchIndex()
        self.vectors = vectors
        self.truncated = False
        self._path_owner: dict[str, str] = {}  # document path -> "concept" | "reserved" | "skipped"
        self._documents_under: Counter[str] = Counter()
        self._concepts_under: Counter[str] = Counter()
        self._child_concepts: dict[str, dict[str, None]] = {}
        self._child_dirs: dict[str, dict[str, None]] = {}

    # -- queries --------------------------------------------------------------------------

    def token_of(self, path: str) -> str | None:
        """Return the change token recorded for a document path, or ``None`` if unknown.

        Args:
            path: Bundle-relative path.

        Returns:
            The token the manifest entry was built from.
        """
        owner = self._path_owner.get(path)
        if owner == "concept":
            return self.concepts[_id(path)].token
        if owner == "reserved":
            return self.reserved[path].token
        if owner == "skipped":
            return self.skipped[path].token
        return None

    def paths(self) -> list[str]:
        """Return every document path the manifest knows (concepts, reserved, skipped).

        Returns:
            The paths.
        """
        return list(self._path_owner)

    def has_directory(self, path: str) -> bool:
        """Tell whether a directory holds any known document (``""`` is the root).

        Args:
            path: A clean bundle-relative directory path.

        Returns:
            Whether it exists in the manifest.
        """
        return path == "" or self._documents_under[path] > 0

    def child_concepts(self, directory: str) -> list[str]:
        """Return the ids of the concepts directly in a directory, sorted.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            Concept ids.
        """
        return sorted(self._child_concepts.get(directory, {}))

    def child_directories(self, directory: str) -> list[str]:
        """Return the paths of the subdirectories directly in a directory, sorted.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            Directory paths.
        """
        return sorted(self._child_dirs.get(directory, {}))

    def concepts_under(self, directory: str) -> int:
        """Count the concepts in a directory and below it.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            The count.
        """
        if directory == "":
            return len(self.concepts)
        return self._concepts_under[directory]

    # -- changes --------------------------------------------------------------------------

    def put_concept(self, concept: Concept, vector: np.ndarray | None = None) -> None:
        """Add or replace a concept, indexing it.

        Args:
            concept: The parsed concept.
            vector: Its unit vector, when search is hybrid (``None``: embedded later).
        """
        self.drop(concept.path)
        self.concepts[concept.id] = concept
        self._claim(concept.path, "concept")
        directory = posixpath.dirname(concept.path)
        self._child_concepts.setdefault(directory, {})[concept.id] = None
        for ancestor in _ancestors(directory):
            self._concepts_under[ancestor] += 1
        self.index.add(concept.id, search_fields(concept), status=concept.status)
        if self.vectors is not None and vector is not None:
            self.vectors.put(concept.id, vector)

    def put_reserved(self, entry: ReservedFile) -> None:
        """Add or replace a reserved file.

        Args:
            entry: The reserved file.
        """
        self.drop(entry.path)
        self.reserved[entry.path] = entry
        self._claim(entry.path, "reserved")

    def put_skipped(self, entry: Skipped) -> None:
        """Record a skipped document, replacing whatever the path was before.

        Args:
            entry: The path, its token and the reason.
        """
        self.drop(entry.path)
        self.skipped[entry.path] = entry
        self._claim(entry.path, "skipped")

    def drop(self, path: str) -> bool:
        """Forget a document path, whatever it was.

        Args:
            path: Bundle-relative path.

        Returns:
            Whether the path was known.
        """
        owner = self._path_owner.pop(path, None)
        if owner is None:
            return False
        directory = posixpath.dirname(path)
        if owner == "concept":
            concept_id = _id(path)
            del self.concepts[concept_id]
            self.index.remove(concept_id)
            if self.vectors is not None:
                self.vectors.remove(concept_id)
            siblings = self._child_concepts.get(directory, {})
            siblings.pop(concept_id, None)
            if not siblings:
                self._child_concepts.pop(directory, None)
            for ancestor in _ancestors(directory):
                self._concepts_under[ancestor] -= 1
                if self._concepts_under[ancestor] <= 0:
                    del self._concepts_under[ancestor]
        elif owner == "reserved":
            del self.reserved[path]
        else:
            del self.skipped[path]
        for ancestor in _ancestors(directory):
            self._documents_under[ancestor] -= 1
            if self._documents_under[ancestor] <= 0:
                del self._documents_under[ancestor]
                parent = posixpath.dirname(ancestor)
                children = self._child_dirs.get(parent, {})
                children.pop(ancestor, None)
                if not children:
                    self._child_dirs.pop(parent, None)
        return True

    def _claim(self, path: str, owner: str) -> None:
        self._path_owner[path] = owner
        for ancestor in _ancestors(posixpath.dirname(path)):
            if self._documents_under[ancestor] == 0:
                self._child_dirs.setdefault(posixpath.dirname(ancestor), {})[ancestor] = None
            self._documents_under[ancestor] += 1


def _id(path: str) -> str:
    return path[:-3]


def _ancestors(directory: str) -> list[str]:
    """Return ``a/b/c``, ``a/b``, ``a`` for ``a/b/c``; nothing for the root."""
    found = []
    while directory:
        found.append(directory)
        directory = posixpath.dirname(directory)
    return found


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

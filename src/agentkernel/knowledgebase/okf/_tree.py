"""A bundle's documents as a tree: each path's change token, its directories, concept counts.

Both things an :class:`~agentkernel.knowledgebase.okf.manager.OKFManager` serves from keep
one: the walked :class:`~agentkernel.knowledgebase.okf.manifest.Manifest` and a bundle
index's :class:`~agentkernel.knowledgebase.okf.bundleindex.view.IndexView`. Browsing, link
resolution and the refresh ask it their questions; it does no I/O and takes no lock.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Mapping
from typing import NamedTuple


class Children(NamedTuple):
    """What is directly in a directory.

    Attributes:
        directories: The subdirectories' paths, sorted.
        concepts: The concepts' ids, sorted.
    """

    directories: list[str]
    concepts: list[str]


class DocumentTree:
    """Document paths with their change tokens, and the directories and concepts they make.

    A directory exists while a document is in it or below it. A document is a concept (its
    id is its path without ``.md``) or another document (a reserved file, a skipped one).
    """

    def __init__(self) -> None:
        """Start empty."""
        # a concept at ``<id>.md`` keeps its token in its directory's entry (one string for
        # both the id and the path); other documents, and concepts with another spelling of
        # the suffix, are keyed by path here
        self._tokens: dict[str, str] = {}
        self._documents_under: Counter[str] = Counter()
        self._concepts_under: Counter[str] = Counter()  # "" counts every concept
        self._child_concepts: dict[str, dict[str, str | None]] = {}
        self._child_dirs: dict[str, dict[str, None]] = {}

    def token_of(self, path: str) -> str | None:
        """Return the change token recorded for a document path, or ``None`` if unknown.

        Args:
            path: Bundle-relative path.

        Returns:
            The token the document's entry was built from.
        """
        token = self._tokens.get(path)
        if token is None and path.endswith(_SUFFIX):
            token = self._child_concepts.get(posixpath.dirname(path), {}).get(path[:-3])
        return token

    def paths(self) -> list[str]:
        """Return every document path known (concepts, reserved, skipped).

        Returns:
            The paths.
        """
        return list(self._tokens) + [
            cid + _SUFFIX
            for siblings in self._child_concepts.values()
            for cid, token in siblings.items()
            if token is not None
        ]

    def tokens(self) -> dict[str, str]:
        """Return every document path known with its change token.

        Returns:
            ``{path: token}``.
        """
        found = dict(self._tokens)
        for siblings in self._child_concepts.values():
            found.update(
                (cid + _SUFFIX, token) for cid, token in siblings.items() if token is not None
            )
        return found

    def has_directory(self, path: str) -> bool:
        """Tell whether a directory holds any known document (``""`` is the root).

        Args:
            path: A clean bundle-relative directory path.

        Returns:
            Whether it exists.
        """
        return path == "" or self._documents_under[path] > 0

    def children(self, directory: str) -> Children:
        """Return what is directly in a directory: its subdirectories and its concepts.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            The subdirectories' paths and the concepts' ids, each sorted.
        """
        return Children(
            sorted(self._child_dirs.get(directory, {})),
            sorted(self._child_concepts.get(directory, {})),
        )

    def concepts_under(self, directory: str) -> int:
        """Count the concepts in a directory and below it.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            The count.
        """
        return self._concepts_under[directory]

    def _add_document(self, path: str, token: str, *, concept: bool) -> str | None:
        """Record a document the tree does not hold yet (remove a held one first).

        Returns:
            The concept id the tree keeps (one string object a caller may share), or ``None``
            for another document.
        """
        plain = concept and path.endswith(_SUFFIX)
        if not plain:
            self._tokens[path] = token
        directory = posixpath.dirname(path)
        ancestors = _ancestors(directory)
        for ancestor in ancestors:
            if self._documents_under[ancestor] == 0:
                self._child_dirs.setdefault(posixpath.dirname(ancestor), {})[ancestor] = None
            self._documents_under[ancestor] += 1
        if not concept:
            return None
        cid = path[:-3]
        self._child_concepts.setdefault(directory, {})[cid] = token if plain else None
        for ancestor in [*ancestors, ""]:
            self._concepts_under[ancestor] += 1
        return cid

    def _add_concepts(self, ids: list[str], directories: list[str], token: str) -> None:
        """Record many concepts at ``<id>.md`` the tree does not hold yet, all with one token.

        The same as :meth:`_add_document` for each ``<id>.md``, with the directory counts
        updated once per directory instead of once per concept (a bundle index's rows).

        Args:
            ids: Concept ids (the tree keeps these string objects).
            directories: Each id's directory (``posixpath.dirname`` of its path).
            token: The change token of every one.
        """
        child_concepts = self._child_concepts
        for cid, directory in zip(ids, directories, strict=True):
            siblings = child_concepts.get(directory)
            if siblings is None:
                siblings = child_concepts[directory] = {}
            siblings[cid] = token
        self._count_concepts(Counter(directories))

    def _count_concepts(self, counts: Mapping[str, int]) -> None:
        """Count concepts added to directories in the directory counts (not the entries).

        Args:
            counts: Concepts added per directory.
        """
        for directory, count in counts.items():
            ancestors = _ancestors(directory)
            for ancestor in ancestors:
                if self._documents_under[ancestor] == 0:
                    self._child_dirs.setdefault(posixpath.dirname(ancestor), {})[ancestor] = None
                self._documents_under[ancestor] += count
            for ancestor in [*ancestors, ""]:
                self._concepts_under[ancestor] += count

    def _remove_document(self, path: str) -> bool:
        """Forget a document path; whether it was held."""
        directory = posixpath.dirname(path)
        siblings = self._child_concepts.get(directory, {})
        if self._tokens.pop(path, None) is not None:
            concept = path[:-3] in siblings
        elif path.endswith(_SUFFIX) and siblings.get(path[:-3]) is not None:
            concept = True
        else:
            return False
        if concept:
            del siblings[path[:-3]]
            if not siblings:
                del self._child_concepts[directory]
        self._discount(directory, concept=concept)
        return True

    def _discount(self, directory: str, *, concept: bool) -> None:
        """Take one document out of the directory counts (not its entry).

        Args:
            directory: The document's directory.
            concept: Whether it is a concept.
        """
        ancestors = _ancestors(directory)
        if concept:
            for ancestor in [*ancestors, ""]:
                self._concepts_under[ancestor] -= 1
                if self._concepts_under[ancestor] <= 0:
                    del self._concepts_under[ancestor]
        for ancestor in ancestors:
            self._documents_under[ancestor] -= 1
            if self._documents_under[ancestor] <= 0:
                del self._documents_under[ancestor]
                parent = posixpath.dirname(ancestor)
                children = self._child_dirs.get(parent, {})
                children.pop(ancestor, None)
                if not children:
                    self._child_dirs.pop(parent, None)


_SUFFIX = ".md"


def _ancestors(directory: str) -> list[str]:
    """Return ``a/b/c``, ``a/b``, ``a`` for ``a/b/c``; nothing for the root."""
    found = []
    while directory:
        found.append(directory)
        directory = posixpath.dirname(directory)
    return found

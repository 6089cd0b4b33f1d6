"""The knowledge store over a folder of markdown files, written as an OKF bundle.

Layout::

    knowledge/
      index.md            the catalog (OKF index format), rewritten when a change alters it
      log.md              the operation log (OKF log format: date groups, newest first)
      overview.md         the living synthesis (type: overview)
      summaries/<slug>.md one folder per page type
      concepts/<slug>.md
      .knowledge.lock     serialises writers across processes
      .knowledgestore     marks the folder as the store's (written with its first write)
      .agentkernel-batches/ the record of a create_many while it is written (see _batches)

Every page has YAML frontmatter with its ``type`` and ``title``, so the folder is an
OKF-conformant bundle that ``OKFManager`` can serve read-only to other agents. Links between
pages are stored as relative file paths (``../concepts/bowline.md``), which OKF readers and
people follow, and are returned as ids (``concept/bowline``).

The store is :class:`~agentkernel.knowledgestore.pages_store.PagesStore` over a
:class:`FolderPageBackend`: the one page backend of markdown files
(:class:`~agentkernel.knowledgestore._bundle_backend.BundlePageBackend`, on S3 under
:class:`~agentkernel.knowledgestore.bundle_store.BundleKnowledgeStore`) over a
:class:`~agentkernel.storage.local.LocalDocumentStore` of the folder, which it owns: every
file is written atomically (temporary file, flushed, then renamed) and is a compare-and-swap
on the file's token, and every change happens under the lock file, so processes writing at
once (the same page included) lose nothing; a writer that is not this store (a person,
another tool) is caught by the compare-and-swap and the change retried.

Reading never writes: ``list``, ``read``, ``search``, ``index``, ``recent_log``, ``check`` and
``overview`` change no byte and create no file, not even the lock. The store writes only in a
folder it owns (see :mod:`agentkernel.knowledgestore._ownership`): opening a folder that holds
an OKF bundle or notes it didn't write is safe; such files are not served as pages
(:meth:`FileKnowledgeStore.ignored_files` names them) and every write is refused there with a
message saying what to do.

The store answers from an in-memory catalog kept current by change tokens
(:class:`~agentkernel.bundle.listing.FolderListing`): each call compares every folder's
``(device, inode, mtime)`` with the last one seen (a page written through any store is renamed
into its folder, which moves the folder's mtime) and re-reads only the files of a moved folder
that are new or were replaced. ``read`` also checks its page's own file, and every few seconds
a call compares every file, so an edit made in place by a person shows up too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import override

from agentkernel.bundle.listing import FolderListing, Listing
from agentkernel.knowledgestore import _ownership
from agentkernel.knowledgestore._bundle_backend import BundlePageBackend
from agentkernel.knowledgestore.model import PageType, is_slug
from agentkernel.knowledgestore.pages_store import PagesStore
from agentkernel.storage.fs import atomic_write, locked
from agentkernel.storage.local import LocalDocumentStore

if TYPE_CHECKING:
    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.storage.base import DocumentStore

LOCK_FILE = _ownership.LEGACY_LOCK_FILE
"""Serialises the changes of every process writing the folder (hidden: never listed)."""


class FolderPageBackend(BundlePageBackend):
    """The bundle backend over a local folder the store owns: created on the first write."""

    def __init__(
        self, knowledge_dir: str | os.PathLike[str], page_types: Sequence[PageType] | None = None
    ) -> None:
        """Open (lazily) in ``knowledge_dir``; nothing is read or written yet.

        Args:
            knowledge_dir: The folder; created on the first write.
            page_types: Declared page types, besides the built-ins.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._root = Path(knowledge_dir)
        super().__init__(None, page_types, label=self._root.name)
        self._folder: FolderListing | None = None  # opened once the folder exists

    @property
    def knowledge_dir(self) -> Path:
        """The folder the files are kept in."""
        return self._root

    @override
    def _listing(self) -> Listing | None:
        if self._folder is None or not self._root.is_dir():
            if not self._root.is_dir():
                self._folder = None
                return None
            self._folder = FolderListing(LocalDocumentStore(self._root))
        return self._folder

    @override
    def _documents_to_write(self) -> DocumentStore:
        self._root.mkdir(parents=True, exist_ok=True)
        return super()._documents_to_write()

    @override
    def _serialised(self) -> contextlib.AbstractContextManager[None]:
        """The folder's lock file: changes by processes on this folder queue, none conflicts."""
        return locked(self._root / LOCK_FILE)

    def _in_layout(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        return not folder or (folder in self._page_dirs and is_slug(name[:-3]))

    @override
    def _owned(self) -> bool:
        return (self._root / _ownership.MARKER_FILE).is_file()

    @override
    def _require_owned(self, documents: DocumentStore) -> None:
        """Write only in a folder the store owns or adopts (see :mod:`._ownership`).

        Checked before anything is written: a refused folder gets no new file.
        """
        if (self._root / _ownership.MARKER_FILE).is_file():
            return
        found = self._markdown_files()
        if _ownership.require_owned(self._root, found, self._in_layout, self._recogniser()):
            _ownership.claim(self._root, atomic_write)


class FileKnowledgeStore(PagesStore):
    """A :class:`KnowledgeStore` over the markdown files of one folder (an OKF bundle)."""

    def __init__(
        self,
        knowledge_dir: str | os.PathLike[str],
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Open (lazily) the store in ``knowledge_dir``; nothing is read or written yet.

        Args:
            knowledge_dir: The folder; created on the first write.
            page_types: Declared page types, besides the built-ins.
            embedder: An :class:`~agentkernel.retrieval.Embedder`, or a name, model folder
                or endpoint URL, which makes ``search()`` hybrid (lexical and dense scores
                fused); ``None`` keeps it lexical and imports no embedding code.
            cache_dir: Where vectors are cached (:mod:`agentkernel.retrieval._vectorcache`).

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._folder_backend = FolderPageBackend(knowledge_dir, page_types)
        super().__init__(self._folder_backend, page_types, embedder=embedder, cache_dir=cache_dir)

    @property
    def knowledge_dir(self) -> Path:
        """The folder the store keeps its files in."""
        return self._folder_backend.knowledge_dir


def create_file_knowledge_store(
    knowledge_dir: str | os.PathLike[str], page_types: Sequence[PageType] | None = None
) -> FileKnowledgeStore:
    """Create the knowledge store over the markdown files of ``knowledge_dir``.

    Args:
        knowledge_dir: The folder (created on the first write).
        page_types: Declared page types, besides the built-ins.

    Returns:
        The store.
    """
    return FileKnowledgeStore(knowledge_dir, page_types)

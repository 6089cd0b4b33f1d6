"""The batch side of the curated store over files: records, hidden pages, finishing batches.

:class:`BatchedPagesStore` is what ``bundle_store.BundlePagesStore`` adds to a
:class:`~agentkernel.knowledgestore._pagefiles.PageFilesStore` so that ``create_many`` is all
or none across a crash (the protocol is :mod:`._batches`'s): it writes and drops a
batch's record, leaves the pages of an incomplete batch out of the catalog, and finishes the
batches of writers that are gone.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentkernel.errors import DocumentTooLargeError, WriteConflictError
from agentkernel.knowledgestore import _batches
from agentkernel.knowledgestore._batches import Intent
from agentkernel.knowledgestore._pagefiles import PageFilesStore
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import PageConflictError
from agentkernel.storage.base import MAX_DOCUMENT_BYTES

if TYPE_CHECKING:
    from agentkernel.bundle.listing import Listing
    from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)


class BatchedPagesStore(PageFilesStore):
    """A :class:`PageFilesStore` whose batches are all or none (see :mod:`._batches`)."""

    @abstractmethod
    def _listing(self) -> Listing | None:
        """The listing of the store's files; ``None`` while there is nothing to list."""

    @abstractmethod
    def _undo(self, documents: DocumentStore, written: builtins.list[Stored]) -> builtins.list[str]:
        """Remove the pages a failed ``create_many`` wrote (unless someone changed them).

        Returns:
            The ids of the pages that could not be removed (storage failed); they stay.
        """

    @abstractmethod
    def _write_index(self, documents: DocumentStore) -> None:
        """Rewrite ``index.md`` from the pages as they are now."""

    @abstractmethod
    def _read_index(self, documents: DocumentStore) -> tuple[bytes | None, str | None]:
        """``index.md``'s token, and its bytes unless this store wrote it last."""

    @abstractmethod
    def _wrote(self, rel: str, token: str | None, before: object = None) -> None:
        """Record this store's own write (``token``) or removal (``None``) of ``rel``."""

    @abstractmethod
    def _refresh(self, *, fresh: bool = False, full: bool = False, own: bool = False) -> None:
        """Poll the listing and re-read the page files whose token changed."""

    def _begin_batch(
        self, documents: DocumentStore, valid: builtins.list[Stored], files: builtins.list[bytes]
    ) -> Intent | None:
        """Store the record of a batch of several pages; ``None``: one page, or no records."""
        listing = self._listing()
        if len(valid) < 2 or listing is None or listing.records is None:
            return None
        intent = _batches.new_intent(zip([s.rel for s in valid], files, strict=True))
        documents._write_record(intent.name, intent.encoded())
        self._own_batch = intent.name
        return intent

    def _fail_batch(
        self,
        documents: DocumentStore,
        intent: Intent | None,
        written: builtins.list[Stored],
        pending: Sequence[tuple[Stored, bytes]] = (),
    ) -> builtins.list[str]:
        """Undo a failed batch's pages, then drop its record (kept when the undo failed).

        Args:
            documents: Where the batch was written.
            intent: Its record (``None``: a batch of one page).
            written: The pages whose write was acknowledged.
            pending: The pages (and bytes) whose write was not: one that failed may still
                have landed (its answer lost), so each one holding the batch's bytes is
                taken back too.

        Returns:
            The ids of the pages that could not be taken back; while there are any, the
            batch's record stays, so readers hide them and the next writer undoes them.
        """
        self._own_batch = None
        try:
            left = self._undo(documents, written)
            if intent is not None:
                left += self._take_back_landed(documents, pending)
        except Exception:  # the record stays: the next writer undoes the batch
            logger.warning("could not undo a failed batch in %s", self, exc_info=True)
            return [stored.id for stored in written]
        if left:
            return left
        if written:  # in case what failed was an index write whose answer was lost
            with contextlib.suppress(Exception):
                self._write_index(documents)
        if intent is not None:
            with contextlib.suppress(OSError):
                documents._delete_record(intent.name)
        return []

    def _take_back_landed(
        self, documents: DocumentStore, pending: Sequence[tuple[Stored, bytes]]
    ) -> builtins.list[str]:
        """Remove each page file of ``pending`` that holds exactly the batch's bytes.

        Returns:
            The ids of those that could not be removed (storage failed).
        """
        left: builtins.list[str] = []
        for stored, data in pending:
            try:
                current, token = documents.read_versioned(stored.rel)
                if current == data:
                    with contextlib.suppress(WriteConflictError, FileNotFoundError):
                        documents.delete_if(stored.rel, token)
            except FileNotFoundError:
                continue
            except OSError:
                left.append(stored.id)
        return left

    def _end_batch(
        self,
        documents: DocumentStore,
        intent: Intent | None,
        valid: builtins.list[Stored],
        files: builtins.list[bytes],
    ) -> None:
        """Drop the record of a batch written whole.

        The call is acknowledged only when this writer removes its own record. If another
        writer took the batch for abandoned meanwhile (a writer on another host slower than
        :data:`_batches.ABANDONED_SECONDS`), the pages still holding the batch's bytes are
        undone and the call fails as a lost race: it never answers for a batch another writer
        may be undoing.

        Raises:
            PageConflictError: The batch was undone by another writer.
        """
        self._own_batch = None
        if intent is None:
            return
        try:
            there = documents._delete_record(intent.name)
        except OSError:  # the batch is written whole; the next writer drops the record
            logger.warning("could not remove the batch record %s of %s", intent.name, self)
            return
        if there:
            return
        # another writer took the batch for abandoned (and kept or undid it): it is not ours
        # to acknowledge any more, so it ends as none, and the caller may make it again
        kept = [
            stored
            for stored, data in zip(valid, files, strict=True)
            if self._read_or_none(documents, stored.rel) == data
        ]
        self._undo(documents, kept)
        self._write_index(documents)
        raise PageConflictError(valid[0].id)

    @staticmethod
    def _read_or_none(documents: DocumentStore, rel: str) -> bytes | None:
        try:  # a batch's page is never over the bound: a larger file is not one of its pages
            return documents.read_bounded(rel, MAX_DOCUMENT_BYTES)
        except (OSError, DocumentTooLargeError):
            return None

    def _watch_batches(self, listing: Listing, changed: builtins.list[str]) -> builtins.list[str]:
        """Follow the batch records: hide the pages of incomplete batches, show the others.

        Returns:
            The page files whose visibility changed (to be loaded or forgotten).
        """
        names = listing.records or []
        moved_files = set(changed)
        concerned = not moved_files.isdisjoint(self._hidden) or any(
            intent is not None and not moved_files.isdisjoint(intent.rels)
            for intent in self._intents.values()
        )
        if names == self._record_names and not concerned:
            return []
        documents = listing.documents
        intents: dict[str, Intent | None] = {}
        for name in names:
            if name in self._intents:
                intents[name] = self._intents[name]
                continue
            try:
                intents[name] = _batches.parse_intent(name, documents._read_record(name))
            except FileNotFoundError:
                continue  # finished meanwhile
            except OSError as exc:
                logger.warning("can't read the batch record %s of %s (%s)", name, self, exc)
                intents[name] = None
        self._intents = intents
        self._record_names = list(names)
        self._judged = {n: j for n, j in self._judged.items() if n in intents}
        hidden: set[str] = set()
        for name, intent in intents.items():
            if intent is not None and name != self._own_batch and not self._complete(intent):
                hidden.update(intent.rels)
        moved = hidden ^ self._hidden
        if moved:
            self._hidden = hidden
            self._pages_version += 1  # what is ignored changes too
        return sorted(moved)

    def _complete(self, intent: Intent) -> bool:
        """Whether every page file of a batch holds its bytes (judged again when one moved)."""
        listing = self._listing()
        if listing is None:
            return False
        tokens = tuple(listing.tokens.get(rel) for rel in intent.rels)
        judged = self._judged.get(intent.name)
        if judged is not None and judged[0] == tokens:
            return judged[1]
        complete = None not in tokens and _batches.holds_all(
            intent, lambda rel: self._read_or_none(listing.documents, rel)
        )
        self._judged[intent.name] = (tokens, complete)
        return complete

    def _finish_abandoned_batches(self, documents: DocumentStore) -> None:
        """Keep (complete) or undo (incomplete) the batches of writers that are gone.

        Decided from the store as it is now, never from what this process saw before: a
        record that is gone was finished by its writer (skipped), and a batch counts as
        complete when every page file exists, whatever it holds (a page someone changed
        after the batch was written is still the batch's page). Only an incomplete batch is
        undone, and only the page files still holding exactly the batch's bytes.
        """
        gone = [
            intent
            for name, intent in self._intents.items()
            if intent is not None and name != self._own_batch and intent.abandoned()
        ]
        finished = 0
        for intent in gone:
            try:
                current = documents._read_record(intent.name)
            except FileNotFoundError:
                continue  # its writer finished it: nothing to do
            except OSError as exc:
                logger.warning("can't read the batch record %s of %s (%s)", intent.name, self, exc)
                continue
            if _batches.parse_intent(intent.name, current) != intent:
                continue  # not the record this process judged: judged at the next write
            present: dict[str, tuple[bytes, str]] = {}
            try:
                for rel, _sha in intent.pages:
                    try:
                        present[rel] = documents.read_versioned_bounded(rel, MAX_DOCUMENT_BYTES)
                    except FileNotFoundError:
                        continue
                    except DocumentTooLargeError:  # there, and too large to be the batch's
                        present[rel] = (b"", "")
            except OSError as exc:  # can't tell now: left for a later write
                logger.warning("can't judge the batch %s of %s (%s)", intent.name, self, exc)
                continue
            if len(present) == len(intent.pages):
                logger.info("keeping the interrupted batch %s of %s: all there", intent.name, self)
            else:
                logger.info("undoing the interrupted batch %s of %s", intent.name, self)
                for rel, sha in intent.pages:
                    if rel not in present:
                        continue
                    data, token = present[rel]
                    if _batches.digest(data) == sha:  # still the batch's: nobody changed it
                        with contextlib.suppress(WriteConflictError, FileNotFoundError):
                            documents.delete_if(rel, token)
                        self._wrote(rel, None)
            documents._delete_record(intent.name)
            finished += 1
        if not finished:
            return
        self._index_seen = self._read_index(documents)
        self._refresh(fresh=True, full=True)
        self._write_index(documents)
        self._index_seen = self._read_index(documents)

"""The batch part of the bundle backend: records, hidden pages, finishing batches.

:class:`Batches` is what makes a ``create_many`` of the
:class:`~agentkernel.knowledgestore._bundle_backend.BundlePageBackend` all or none across a
crash (the protocol is :mod:`._batches`'s): it writes and drops a batch's record, says which
page files belong to incomplete batches (their pages are not served), and finishes the
batches of writers that are gone.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agentkernel.errors import DocumentTooLargeError, WriteConflictError
from agentkernel.knowledgestore import _batches
from agentkernel.knowledgestore._batches import Intent
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import PageConflictError
from agentkernel.storage.base import MAX_DOCUMENT_BYTES

if TYPE_CHECKING:
    from agentkernel.bundle.listing import Listing
    from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)

Undo = Callable[["DocumentStore", builtins.list[Stored]], builtins.list[str]]
"""Removes pages a failed batch wrote (unless changed since); returns those left in place."""


class Batches:
    """The batches of one backend: in progress (its own), interrupted, or another's."""

    def __init__(self, name: str) -> None:
        """Start knowing of no batch.

        Args:
            name: The backend's name, for the log.
        """
        self._name = name
        # batches in progress or interrupted (see ``_batches``): record name -> intent
        self._intents: dict[str, Intent | None] = {}
        self._record_names: builtins.list[str] = []
        self.hidden: set[str] = set()
        """Page files of incomplete batches: not served."""
        self._own: str | None = None  # the record of the batch this backend is writing
        # record name -> (the tokens of its files when last judged, complete then)
        self._judged: dict[str, tuple[tuple[str | None, ...], bool]] = {}

    @property
    def any(self) -> bool:
        """Whether some batch record is known."""
        return bool(self._intents)

    def begin(
        self,
        listing: Listing | None,
        documents: DocumentStore,
        valid: builtins.list[Stored],
        files: builtins.list[bytes],
    ) -> Intent | None:
        """Store the record of a batch of several pages; ``None``: one page, or no records."""
        if len(valid) < 2 or listing is None or listing.records is None:
            return None
        intent = _batches.new_intent(zip([s.rel for s in valid], files, strict=True))
        documents._write_record(intent.name, intent.encoded())
        self._own = intent.name
        return intent

    def fail(
        self,
        documents: DocumentStore,
        intent: Intent | None,
        written: builtins.list[Stored],
        pending: Sequence[tuple[Stored, bytes]],
        undo: Undo,
        write_index: Callable[[DocumentStore], None],
    ) -> builtins.list[str]:
        """Undo a failed batch's pages, then drop its record (kept when the undo failed).

        Args:
            documents: Where the batch was written.
            intent: Its record (``None``: a batch of one page).
            written: The pages whose write was acknowledged.
            pending: The pages (and bytes) whose write was not: one that failed may still
                have landed (its answer lost), so each one holding the batch's bytes is
                taken back too.
            undo: Removes pages the batch wrote.
            write_index: Rewrites ``index.md`` from the pages as they are now.

        Returns:
            The ids of the pages that could not be taken back; while there are any, the
            batch's record stays, so readers hide them and the next writer undoes them.
        """
        self._own = None
        try:
            left = undo(documents, written)
            if intent is not None:
                left += _take_back_landed(documents, pending)
        except Exception:  # the record stays: the next writer undoes the batch
            logger.warning("could not undo a failed batch in %s", self._name, exc_info=True)
            return [stored.id for stored in written]
        if left:
            return left
        if written:  # in case what failed was an index write whose answer was lost
            with contextlib.suppress(Exception):
                write_index(documents)
        if intent is not None:
            with contextlib.suppress(OSError):
                documents._delete_record(intent.name)
        return []

    def end(
        self,
        documents: DocumentStore,
        intent: Intent | None,
        valid: builtins.list[Stored],
        files: builtins.list[bytes],
        undo: Undo,
        write_index: Callable[[DocumentStore], None],
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
        self._own = None
        if intent is None:
            return
        try:
            there = documents._delete_record(intent.name)
        except OSError:  # the batch is written whole; the next writer drops the record
            logger.warning("could not remove the batch record %s of %s", intent.name, self._name)
            return
        if there:
            return
        # another writer took the batch for abandoned (and kept or undid it): it is not ours
        # to acknowledge any more, so it ends as none, and the caller may make it again
        kept = [
            stored
            for stored, data in zip(valid, files, strict=True)
            if _read_or_none(documents, stored.rel) == data
        ]
        undo(documents, kept)
        write_index(documents)
        raise PageConflictError(valid[0].id)

    def watch(self, listing: Listing, changed: builtins.list[str]) -> builtins.list[str]:
        """Follow the batch records: hide the pages of incomplete batches, show the others.

        Returns:
            The page files whose visibility changed (to be loaded or forgotten).
        """
        names = listing.records or []
        moved_files = set(changed)
        concerned = not moved_files.isdisjoint(self.hidden) or any(
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
                logger.warning("can't read the batch record %s of %s (%s)", name, self._name, exc)
                intents[name] = None
        self._intents = intents
        self._record_names = list(names)
        self._judged = {n: j for n, j in self._judged.items() if n in intents}
        hidden: set[str] = set()
        for name, intent in intents.items():
            if intent is not None and name != self._own and not self._complete(listing, intent):
                hidden.update(intent.rels)
        moved = hidden ^ self.hidden
        self.hidden = hidden
        return sorted(moved)

    def _complete(self, listing: Listing, intent: Intent) -> bool:
        """Whether every page file of a batch holds its bytes (judged again when one moved)."""
        tokens = tuple(listing.tokens.get(rel) for rel in intent.rels)
        judged = self._judged.get(intent.name)
        if judged is not None and judged[0] == tokens:
            return judged[1]
        complete = None not in tokens and _batches.holds_all(
            intent, lambda rel: _read_or_none(listing.documents, rel)
        )
        self._judged[intent.name] = (tokens, complete)
        return complete

    def finish_abandoned(self, documents: DocumentStore, removed: Callable[[str], None]) -> int:
        """Keep (complete) or undo (incomplete) the batches of writers that are gone.

        Decided from the store as it is now, never from what this process saw before: a
        record that is gone was finished by its writer (skipped), and a batch counts as
        complete when every page file exists, whatever it holds (a page someone changed
        after the batch was written is still the batch's page). Only an incomplete batch is
        undone, and only the page files still holding exactly the batch's bytes.

        Args:
            documents: The document store.
            removed: Told of each page file removed.

        Returns:
            How many batches were finished (the caller lists afresh and rewrites the index).
        """
        gone = [
            intent
            for name, intent in self._intents.items()
            if intent is not None and name != self._own and intent.abandoned()
        ]
        finished = 0
        for intent in gone:
            try:
                current = documents._read_record(intent.name)
            except FileNotFoundError:
                continue  # its writer finished it: nothing to do
            except OSError as exc:
                logger.warning(
                    "can't read the batch record %s of %s (%s)", intent.name, self._name, exc
                )
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
                logger.warning("can't judge the batch %s of %s (%s)", intent.name, self._name, exc)
                continue
            if len(present) == len(intent.pages):
                logger.info(
                    "keeping the interrupted batch %s of %s: all there", intent.name, self._name
                )
            else:
                logger.info("undoing the interrupted batch %s of %s", intent.name, self._name)
                for rel, sha in intent.pages:
                    if rel not in present:
                        continue
                    data, token = present[rel]
                    if _batches.digest(data) == sha:  # still the batch's: nobody changed it
                        with contextlib.suppress(WriteConflictError, FileNotFoundError):
                            documents.delete_if(rel, token)
                        removed(rel)
            documents._delete_record(intent.name)
            finished += 1
        return finished


def _take_back_landed(
    documents: DocumentStore, pending: Sequence[tuple[Stored, bytes]]
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


def _read_or_none(documents: DocumentStore, rel: str) -> bytes | None:
    try:  # a batch's page is never over the bound: a larger file is not one of its pages
        return documents.read_bounded(rel, MAX_DOCUMENT_BYTES)
    except (OSError, DocumentTooLargeError):
        return None

"""Walking a store into manifest changes, reading only what changed.

:func:`scan` lists the store once, compares each document's change token with the tokens the
manifest was built from, and reads (a bounded leading read) only new and changed documents.
Unchanged documents cost nothing beyond the listing; documents gone from the listing become
drops. It does no locking and changes nothing: the caller applies the returned
:class:`ScanResult` to its manifest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agentkernel.knowledgebase.errors import KnowledgePathError
from agentkernel.knowledgebase.okf.concept import (
    Concept,
    ConceptError,
    concept_id,
    decode_head,
    is_document,
    is_reserved,
    parse_concept,
)
from agentkernel.knowledgebase.okf.manifest import ReservedFile, Skipped
from agentkernel.storage.base import DocumentStore, StoredFile, is_walkable, oversized

logger = logging.getLogger(__name__)

PROGRESS_BATCH = 512


@dataclass
class ScanLimits:
    """Bounds of one walk.

    Attributes:
        max_concepts: The most concept documents served; the rest are left out (truncated).
        head_bytes: Size of the leading read each document gets.
        max_document_bytes: Documents larger than this are skipped without a read.
        workers: Concurrent reads allowed (the store decides whether threads pay).
    """

    max_concepts: int
    head_bytes: int
    max_document_bytes: int
    workers: int = 8


@dataclass
class ScanResult:
    """What a walk found, relative to the manifest it was compared with.

    Attributes:
        concepts: New or changed concepts.
        reserved: New or changed reserved files.
        skipped: New or changed documents that cannot be served, with the reason.
        drops: Paths the manifest knows that are gone (deleted, or beyond truncation).
        kept: Paths whose read failed transiently: the manifest keeps what it had.
        truncated: Whether concepts were left out at ``max_concepts``.
        store_diagnostics: What the store reported while walking (skipped unsafe entries).
        errors: Transient per-document failures, as diagnostics.
        listed: How many files the listing returned.
        reads: How many documents were read.
    """

    concepts: list[Concept] = field(default_factory=list)
    reserved: list[ReservedFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    drops: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    truncated: bool = False
    store_diagnostics: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    listed: int = 0
    reads: int = 0


def scan(
    store: DocumentStore,
    known: Mapping[str, str],
    limits: ScanLimits,
    progress: Callable[[int, int], None] | None = None,
) -> ScanResult:
    """List the store and read what changed since ``known``.

    Args:
        store: The document store.
        known: Path to change token, as the manifest holds them.
        limits: Bounds of the walk.
        progress: Called with (documents read, documents to read) after each batch of
            reads (the indexer's progress bar); reads then go in batches of
            :data:`PROGRESS_BATCH`.

    Returns:
        The changes to apply.

    Raises:
        OSError: The listing failed (the store is unreachable, the root vanished, ...).
        KnowledgeError: The store refused the listing.
    """
    earlier = store.diagnostics
    seen = len(earlier)
    listing = list(store.walk(""))
    current = store.diagnostics
    result = ScanResult(listed=len(listing))
    # stores start a fresh list per walk; one that keeps appending gets its tail taken
    result.store_diagnostics = list(current[seen:] if current is earlier else current)

    documents = sorted((f for f in listing if is_document(f.path)), key=lambda f: f.path)
    served = _served_concepts(documents, known, limits.max_concepts)
    to_read: list[StoredFile] = []
    present: set[str] = set()
    ids_taken: dict[str, str] = {}
    for stored in documents:
        reserved = is_reserved(stored.path)
        if not reserved:
            cid = concept_id(stored.path)
            if cid in ids_taken:
                present.add(stored.path)
                if known.get(stored.path) != stored.token:
                    result.skipped.append(
                        Skipped(stored.path, stored.token, f"same concept id as {ids_taken[cid]}")
                    )
                continue
            refused = path_refusal(stored.path)
            if refused:
                present.add(stored.path)
                if known.get(stored.path) != stored.token:
                    result.skipped.append(Skipped(stored.path, stored.token, refused))
                continue
            if served is not None and stored.path not in served:
                result.truncated = True
                continue
            ids_taken[cid] = stored.path
        present.add(stored.path)
        if known.get(stored.path) == stored.token:
            continue
        if reserved and not stored.path.lower().endswith("index.md"):
            result.reserved.append(ReservedFile(stored.path, stored.token, stored.size))
        elif not reserved and (too_big := size_refusal(stored.size, limits)):
            result.skipped.append(Skipped(stored.path, stored.token, too_big))
        else:
            to_read.append(stored)
    result.drops = [path for path in known if path not in present]
    _read_all(store, to_read, limits, result, progress)
    return result


def path_refusal(path: str) -> str | None:
    """Why a walk would never serve the document at ``path`` as a concept, whatever it holds.

    With :func:`size_refusal` and :func:`concept_from_head`, this is the one definition of
    what a walk accepts: the walk applies it to what it lists, and ``OKFManager.write``
    applies it to what it is about to write, so a write is refused exactly when no walk
    (another process, or this one after a restart) would serve it.

    Args:
        path: A bundle-relative path.

    Returns:
        The reason, or ``None`` when a document at this path can be a concept.
    """
    if not is_walkable(path):
        return "not a clean, visible bundle path (hidden and dot segments are never listed)"
    if not is_document(path):
        return "not a markdown document (a concept's path ends in .md)"
    if is_reserved(path):
        return "a reserved name (index.md and log.md are never concepts)"
    if "," in concept_id(path):
        return "a comma in the path (concept ids must be comma-free)"
    return None


def size_refusal(size: int, limits: ScanLimits) -> str | None:
    """Why a walk would skip a concept document of ``size`` bytes unread, or ``None``.

    Args:
        size: The document's size in bytes.
        limits: Bounds of the walk.

    Returns:
        The reason, naming the limit, or ``None`` when the size is accepted.
    """
    if size > limits.max_document_bytes:
        return oversized(size, limits.max_document_bytes)
    return None


def concept_from_head(stored: StoredFile, head: bytes, head_bytes: int) -> Concept:
    """Parse a document's leading read exactly as a walk does.

    Args:
        stored: The document as listed (its size decides whether ``head`` is all of it).
        head: Its first ``head_bytes`` bytes (or all of them, when it is shorter).
        head_bytes: The walk's leading-read size.

    Returns:
        The concept.

    Raises:
        ConceptError: Why the walk skips the document (binary, not UTF-8, no frontmatter,
            frontmatter not closing within the leading read, no ``type``).
    """
    complete = len(head) < head_bytes or len(head) >= stored.size
    return parse_concept(stored.path, stored.token, stored.size, head, complete=complete)


def _served_concepts(
    documents: list[StoredFile], known: Mapping[str, str], max_concepts: int
) -> set[str] | None:
    """Which concept documents are served when there are more than ``max_concepts``.

    Documents the manifest already holds keep their places, and new ones fill what is left
    in path order: a document added to a full bundle (by a writer, or by ``write()``)
    never pushes out a concept an agent could already find, and which concepts are served
    does not change from one refresh to the next. ``None`` when all of them fit.
    """
    candidates: list[str] = []
    seen: set[str] = set()
    for stored in documents:
        if is_reserved(stored.path):
            continue
        cid = concept_id(stored.path)
        if cid in seen or "," in cid:
            continue  # skipped with a reason by the caller; takes no place
        seen.add(cid)
        candidates.append(stored.path)
    if len(candidates) <= max_concepts:
        return None
    ranked = sorted(candidates, key=lambda path: path not in known)  # stable: path order
    return set(ranked[:max_concepts])


def _read_all(
    store: DocumentStore,
    files: list[StoredFile],
    limits: ScanLimits,
    result: ScanResult,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    result.reads = len(files)
    paths = [stored.path for stored in files]
    if progress is None:
        heads = store.read_heads(paths, limits.head_bytes, workers=limits.workers)
    else:
        heads = []
        progress(0, len(paths))
        for start in range(0, len(paths), PROGRESS_BATCH):
            batch = paths[start : start + PROGRESS_BATCH]
            heads += store.read_heads(batch, limits.head_bytes, workers=limits.workers)
            progress(len(heads), len(paths))
    for stored, data in zip(files, heads, strict=True):
        if isinstance(data, FileNotFoundError):
            result.drops.append(stored.path)  # deleted between listing and read
        elif isinstance(data, KnowledgePathError):
            result.skipped.append(Skipped(stored.path, stored.token, f"refused: {data}"))
        elif isinstance(data, Exception):
            logger.warning("could not read %s: %s", stored.path, data)
            result.kept.append(stored.path)
            result.errors.append(f"{stored.path}: read failed ({type(data).__name__}: {data})")
        elif is_reserved(stored.path):
            result.reserved.append(_reserved(stored, data, limits.head_bytes))
        else:
            try:
                concept = concept_from_head(stored, data, limits.head_bytes)
            except ConceptError as exc:
                result.skipped.append(Skipped(stored.path, stored.token, str(exc)))
            else:
                result.concepts.append(concept)


def _reserved(stored: StoredFile, data: bytes, head_bytes: int) -> ReservedFile:
    complete = len(data) < head_bytes or len(data) >= stored.size
    text: str | None = None
    if complete:
        try:
            text = decode_head(data, complete=True)
        except ConceptError:
            text = None
    return ReservedFile(stored.path, stored.token, stored.size, text)

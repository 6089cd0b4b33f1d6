"""``OKFManager``: an Open Knowledge Format bundle served from any ``DocumentStore``.

Search and browse answer from an in-process manifest (frontmatter plus a bounded token index
per concept); only fetch reads a whole document. ``connect()`` walks the store once, from
``__init__``; afterwards an operation costs one clock comparison, except the call crossing
the ``refresh_seconds`` boundary, which lists the store and re-reads only the documents whose
change token moved. A failed refresh keeps the last good manifest and records a diagnostic.
Writes go through to the store and update the manifest and the index in place.

With ``index=URI`` the manager walks nothing: search, browse and the schema come from a
shared bundle index (a Lance dataset built by ``agentkernel-kb index``, see
:mod:`agentkernel.knowledgebase.okf.bundleindex`), a refresh asks the index for its latest
version, and a write updates the document and then its row. With an embedder too, hybrid
search takes the concepts' vectors from the index (built with ``--embedder``, the same model),
loaded on the first search (:mod:`agentkernel.knowledgebase.okf.bundleindex.dense`).
"""

from __future__ import annotations

import logging
import math
import posixpath
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkernel.errors import echo
from agentkernel.knowledgebase._limits import is_positive
from agentkernel.knowledgebase.document import DocumentKnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError, KnowledgePathError
from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.okf import authoring
from agentkernel.knowledgebase.okf import browse as navigation
from agentkernel.knowledgebase.okf.concept import (
    Concept,
    ConceptError,
    concept_id,
    parse_concept,
)
from agentkernel.knowledgebase.okf.declared import okf_capabilities
from agentkernel.knowledgebase.okf.links import resolve_links
from agentkernel.knowledgebase.okf.manifest import BundleContents, Manifest
from agentkernel.knowledgebase.okf.records import (
    directory_record,
    format_records,
    full_record,
    reserved_record,
    summary_record,
)
from agentkernel.knowledgebase.okf.scan import (
    MAX_DOCUMENT_BYTES,
    ScanLimits,
    ScanResult,
    concept_from_head,
    path_refusal,
    scan,
    size_refusal,
)
from agentkernel.storage import frontmatter
from agentkernel.storage.base import DocumentStore, StoredFile, clean_path

if TYPE_CHECKING:
    import numpy as np

    from agentkernel.knowledgebase.okf.bundleindex.view import IndexView
    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.retrieval.semantic import SemanticIndex

logger = logging.getLogger(__name__)

OKF_VERSION = "0.2"
_MAX_SUFFIX = 1000


@dataclass(frozen=True)
class RefreshStats:
    """What the last walk did.

    Attributes:
        listed: Files the listing returned.
        reads: Documents read (bounded leading reads).
        changed: Concepts added or replaced.
        dropped: Documents that left the manifest.
        seconds: Wall time of the walk.
    """

    listed: int
    reads: int
    changed: int
    dropped: int
    seconds: float


class OKFManager(DocumentKnowledgeBase):
    """Serve an OKF 0.2 bundle to agents: lexical search, fetch, browse, write-through.

    Example:
        >>> from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
        >>> kb = OKFManager(LocalDocumentStore("./bundle", writable=False), name="OKF")
        ... # doctest: +SKIP
        >>> kb.search("orders freshness alert")  # doctest: +SKIP

    Class attributes bound each walk and may be overridden in a subclass:
    ``head_bytes`` (the leading read per document, 16 KiB), ``max_document_bytes``
    (larger documents are skipped, 4 MiB) and ``read_workers`` (concurrent reads on a
    network store, 8; a ``LocalDocumentStore`` reads sequentially, where threads only cost).
    """

    head_bytes: int = 16 * 1024
    max_document_bytes: int = MAX_DOCUMENT_BYTES
    read_workers: int = 8

    def __init__(
        self,
        store: DocumentStore,
        name: str = "",
        description: str | None = None,
        refresh_seconds: float | None = 300.0,
        max_concepts: int = 10_000,
        write_actor: str | None = None,
        write_prefix: str = "generated",
        clock: Callable[[], float] = time.time,
        index: str | None = None,
        index_options: Mapping[str, str] | None = None,
        index_fallback: str | None = None,
        embedder: Embedder | str | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        """Attach a store and walk it once (or open its bundle index).

        Args:
            store: Where the bundle lives (``LocalDocumentStore``, ``S3DocumentStore``, yours).
            name: The backend name agents address; defaults to the bundle's folder name (an
                S3 prefix's last segment).
            description: What the agent is told the bundle holds; derived when omitted.
            refresh_seconds: Seconds between refreshes; ``None`` disables refresh (call
                :meth:`reload` when the bundle changes).
            max_concepts: The most concepts served; a larger bundle is truncated (reported in
                the schema).
            write_actor: ``generated.by`` stamped on authored documents (an OKF actor such as
                ``ingest_agent/1.0``); defaults to ``agentkernel/okf``.
            write_prefix: Directory authored documents are written to.
            clock: Seconds since the epoch; drives refresh, staleness and ``generated.at``.
            index: A bundle index built by ``agentkernel-kb index`` (``s3://bucket/kb.lance``
                or a local folder): served instead of walking the store (needs the
                ``lancedb`` extra). The index holds what its indexer read (its own
                ``max_concepts``); this manager's ``max_concepts`` still bounds writes.
            index_options: Object-store options for the index (``aws_endpoint``,
                ``aws_region``, ``allow_http``...), as Lance names them.
            index_fallback: ``"walk"`` to walk the store when the index cannot be opened
                (said in the diagnostics); ``None`` makes that an error.
            embedder: Makes search hybrid (lexical and dense scores fused): an
                :class:`~agentkernel.retrieval.Embedder`, or a name, model folder or endpoint
                URL for :func:`~agentkernel.retrieval.load_embedder`. ``None``: lexical only.
                With ``index``, the concepts' vectors come from the index, which must have
                been built with the same embedder (``agentkernel-kb index --embedder``); an
                index without vectors is served lexically, with a WARNING.
            cache_dir: The vector cache root (outside the bundle); ``None`` for
                ``$XDG_CACHE_HOME/agentkernel/vectors``. Only used with an embedder.

        Raises:
            TypeError: An argument has the wrong type.
            ValueError: An argument is out of range.
            KnowledgePathError: ``write_prefix`` is not a clean relative path.
            OSError: The store cannot be listed (a misconfigured store fails here).
            KnowledgeError: ``index`` names no readable index and no fallback was asked for.
            EmbedderError: The embedder cannot be built, or the cache holds vectors of
                another dimension under its model id, or the index holds vectors of another
                model (``IndexModelError``).
        """
        if refresh_seconds is not None and not is_positive(refresh_seconds):
            raise ValueError(
                f"refresh_seconds must be a positive number or None, got {refresh_seconds!r}"
            )
        if not is_positive(max_concepts, whole=True):
            raise ValueError(f"max_concepts must be a positive integer, got {max_concepts!r}")
        if write_actor is not None and (
            not isinstance(write_actor, str) or not write_actor.strip()
        ):
            raise ValueError(f"write_actor must be a non-empty string or None, got {write_actor!r}")
        if not isinstance(write_prefix, str):
            raise TypeError(f"write_prefix must be a string, got {type(write_prefix).__name__}")
        if description is not None and not isinstance(description, str):
            raise TypeError(
                f"description must be a string or None, got {type(description).__name__}"
            )
        if index_fallback not in (None, "walk"):
            raise ValueError(f"index_fallback must be 'walk' or None, got {index_fallback!r}")
        semantic: SemanticIndex | None = None
        if embedder is not None:
            from agentkernel.retrieval.semantic import SemanticIndex

            # serving an index, the vectors come from it: the cache is read when a write embeds
            semantic = SemanticIndex(embedder, cache_dir, preload_cache=index is None)
        super().__init__(
            store, okf_capabilities(writable=True, semantic=semantic is not None), name or None
        )
        self._semantic = semantic
        self._index_uri = index
        self._index_options = dict(index_options or {})
        self._index_fallback = index_fallback
        self._view: IndexView | None = None
        self._writer: Any = None  # the lancedb table write-through commits to, on first write
        self._index_vectors: Any = None  # dense.IndexVectors: the index's vectors, when hybrid
        self._index_lexical: str | None = None  # why an index with an embedder serves lexically
        self._index_notes: list[str] = []
        self._description = description
        self._refresh_seconds = None if refresh_seconds is None else float(refresh_seconds)
        self._max_concepts = max_concepts
        self._write_actor = write_actor or "agentkernel/okf"
        self._write_prefix = clean_path(write_prefix.strip().strip("/"))
        self._clock = clock
        self._lock = threading.RLock()
        self._refresh_lock = threading.Lock()
        self._manifest = Manifest(semantic)
        self._walk_diagnostics: list[str] = []
        self._refresh_error: str | None = None
        self._next_refresh = math.inf
        self.last_refresh: RefreshStats | None = None
        self.connect()

    # -- lifecycle ------------------------------------------------------------------------

    def connect(self, **kwargs: Any) -> None:
        """Walk the whole store into the manifest (called from ``__init__``).

        Args:
            **kwargs: Unused; accepted for the ``KnowledgeBase`` signature.

        Raises:
            OSError: The store cannot be listed.
            KnowledgeError: The store refused the listing.
        """
        if self._index_uri is not None and self._open_index():
            return
        self._refresh(raise_errors=True)

    def reload(self) -> RefreshStats:
        """Refresh now, whatever the clock says: list the store, re-read what changed.

        Returns:
            What the walk did.

        Raises:
            OSError: The listing failed; the last good manifest is still served.
            KnowledgeError: The store refused the listing; likewise.
        """
        stats = self._refresh(raise_errors=True)
        assert stats is not None  # raise_errors: a failure raised instead
        return stats

    @property
    def diagnostics(self) -> list[str]:
        """Every current problem: skipped documents and why, store and refresh failures."""
        with self._lock:
            found = [f"{s.path}: {s.reason}" for s in self._served.skipped.values()]
            found.sort()
            found += self._walk_diagnostics
            found += self._index_notes
            if self._refresh_error:
                found.append(self._refresh_error)
        return found

    # -- the three abstract members ---------------------------------------------------------

    def get_description(self) -> str:
        """Describe the bundle for routing, with its diagnostics surfaced.

        Returns:
            The given description, or one derived from the manifest, followed by a count
            and the first few diagnostics when there are any.
        """
        self._tick()
        with self._lock:
            concepts = len(self._served.concepts)
            types = self._types()
            namespaces = self._served.children("").directories
        diagnostics = self.diagnostics
        if self._description:
            text = self._description
        else:
            kinds = ", ".join(t for t, _ in types.most_common(_TYPES_SHOWN)) or "none"
            if len(types) > _TYPES_SHOWN:
                kinds += f" and {len(types) - _TYPES_SHOWN} more"
            where = f" in {', '.join(namespaces[:8])}" if namespaces else ""
            text = (
                f"An OKF bundle ({self._store.label!r}) of {concepts} concepts "
                f"(types: {kinds}){where}. Browse it from the root, search it "
                f"{'by meaning and words' if self._semantic else 'lexically'}, "
                "fetch whole documents by id."
            )
        if diagnostics:
            shown = "; ".join(diagnostics[:3])
            more = f" (and {len(diagnostics) - 3} more)" if len(diagnostics) > 3 else ""
            text += f" {len(diagnostics)} diagnostic(s): {shown}{more}."
        return text

    # -- operations ---------------------------------------------------------------------

    def search(self, query: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Rank concepts with the retrieval engine over title, aliases, tags, id, description, body.

        With an embedder, the lexical scores are blended with the concepts' cosine
        similarity to the query (:func:`agentkernel.retrieval.semantic.blend`); if the query
        cannot be embedded, the lexical ranking is served (a WARNING is logged and the schema
        says so).

        Args:
            query: Keywords or a natural-language question.
            limit: The most records.
            **kwargs: Unused.

        Returns:
            Summaries, best first: description as text; id, title, type, trust, stale,
            status, tags and score in metadata. Nothing is filtered on trust, staleness or
            status (a ``deprecated`` concept ranks below a current one of equal relevance).
        """
        self._tick()
        if not isinstance(query, str) or not query.strip() or limit < 1:
            return []
        now = self._now()
        semantic = self._semantic
        if semantic is None:
            with self._lock:
                if self._view is not None:
                    return [summary_record(c, now, s) for c, s in self._view.search(query, limit)]
                hits = self._manifest.index.search(query, limit)
                return [summary_record(self._manifest.concepts[str(k)], now, s) for k, s in hits]
        from agentkernel.retrieval.semantic import CANDIDATES

        pool = max(limit, CANDIDATES)
        with self._lock:
            view = self._view
            if view is not None:
                candidates = view.ranked(query, limit if self._index_lexical else pool)
                if self._index_lexical:
                    return [summary_record(c, now, s) for c, s in view.records(candidates)]
                self._index_vectors.sync(view)  # the vectors of this version, read once
            else:
                hits = self._manifest.index.search(query, pool)
                candidates = [(str(h.key), h.score) for h in hits]
        fused = semantic.hybrid(query, candidates, limit)
        ranked = candidates[:limit] if fused is None else fused
        with self._lock:
            if view is not None:
                return [summary_record(c, now, s) for c, s in view.records(ranked)]
            held = self._manifest.concepts
            return [summary_record(held[k], now, s) for k, s in ranked if k in held]

    def fetch(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        """Read whole documents by id, with their links resolved.

        Concept ids return the document exactly as stored. ``<dir>/index`` and ``<dir>/log``
        return those reserved files verbatim; ``<dir>/`` returns the directory's listing.

        Args:
            ids: Concept ids (paths without ``.md``).
            **kwargs: Unused.

        Returns:
            One record per id found, in the order asked; unknown ids are left out.

        Raises:
            KnowledgePathError: An id climbs out of the bundle.
        """
        self._tick()
        if isinstance(ids, str):
            ids = [ids]
        rows: list[Record] = []
        for raw in ids:
            with self._lock:
                target = navigation.resolve(self._served, str(raw))
            record = self._fetch_one(target)
            if record is not None:
                rows.append(record)
        return rows

    def browse(self, path: str = "", limit: int = 50, **kwargs: Any) -> list[Record]:
        """List a directory: its ``index.md`` verbatim, else a listing derived from the manifest.

        Args:
            path: A directory (``""`` or ``/`` for the root), or a concept id for its summary.
            limit: The most entries in a derived listing.
            **kwargs: Unused.

        Returns:
            The records; empty when nothing is at ``path``.

        Raises:
            KnowledgePathError: The path climbs out of the bundle.
        """
        self._tick()
        now = self._now()
        with self._lock:
            served = self._served
            target = navigation.resolve(served, path)
            if target.kind == "concept":
                return [summary_record(served.concepts[target.path], now)]
            if target.kind == "reserved":
                directory = posixpath.dirname(target.path)
            elif target.kind == "directory":
                directory = target.path
            else:
                return []
            index = navigation.index_path(served, directory)
            cached = served.reserved[index].text if index else None
            if index is None:
                return self._listing(directory, max(limit, 1), now)
        if cached is None:
            cached = self._read_text(index)
        if cached is not None:
            return [reserved_record(index, cached)]
        with self._lock:
            return self._listing(directory, max(limit, 1), now)

    def write(self, records: Iterable[Record], **kwargs: Any) -> list[str]:
        """Write concepts through to the store; visible to every operation on the next call.

        A record without ``metadata["id"]`` is authored: titled from its first line, stamped
        ``generated: {by, at}``, written under ``write_prefix`` at a path slugged from the
        title (a suffix avoids collisions; nothing is overwritten). A record naming an id is
        written exactly as given, replacing that concept; its text must be a whole OKF
        document.

        Args:
            records: ``{"text": ..., "metadata": {...}}`` records. Authored records may give
                ``type`` (default ``Note``), ``title``, ``description``, ``tags``, ``status``,
                ``stale_after`` and ``source`` in metadata.
            **kwargs: Unused.

        Returns:
            The concept ids written, in order.

        Raises:
            KnowledgeError: A record is malformed, or the bundle would hold more than
                ``max_concepts`` concepts; nothing is written then.
            KnowledgePathError: A given id is unsafe or reserved.
        """
        self._tick()
        now = datetime.fromtimestamp(self._clock(), UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        drafts = [
            authoring.draft(r, actor=self._write_actor, now_iso=stamp, prefix=self._write_prefix)
            for r in records
        ]
        with self._lock:
            held = self._served.concepts
            new_exact = {d.path for d in drafts if d.exact and concept_id(d.path) not in held}
            adding = len(new_exact) + sum(1 for d in drafts if not d.exact)
            bound = self._bound()
            full = adding and len(held) + adding > bound
            count = len(held)
        if full:
            raise KnowledgeError(
                f"OKF bundle '{self.backend_name}' serves at most "
                f"max_concepts={bound} concepts and holds {count}; {adding} more "
                "would leave concepts out. Nothing "
                "was written: remove or replace concepts, or raise max_concepts."
            )
        for item in drafts:
            self._refuse_unservable(item)
        written: list[str] = []
        for item in drafts:
            written.append(self._write_one(item))
        return written

    def format_results(self, rows: Sequence[Record]) -> str:
        """Render records with id, title, type, trust, staleness and any status but ``stable``.

        Args:
            rows: Records from an operation.

        Returns:
            The text the agent sees.
        """
        return format_records(rows)

    # -- schema -------------------------------------------------------------------------

    def _derived_schema(self) -> dict[str, Any]:
        self._tick()
        with self._lock:
            manifest = self._served
            types = self._types()
            root_index = navigation.index_path(manifest, "")
            root_text = manifest.reserved[root_index].text if root_index else None
            reserved = sorted(manifest.reserved)
            schema: dict[str, Any] = {
                "format": "Open Knowledge Format",
                "okf_version": _declared_version(root_text) or OKF_VERSION,
                "location": self._store.label,
                "concepts": len(manifest.concepts),
                "types": dict(types.most_common()),
                "namespaces": manifest.children("").directories,
                "reserved_files": reserved[:200],
                "reserved_file_count": len(reserved),
                "diagnostics": len(self.diagnostics),
                "truncated": manifest.truncated,
                "max_concepts": self._bound(),
            }
            if self._view is not None:
                schema["index"] = {
                    "location": self._index_location(),
                    "version": self._view.version,
                    "indexed_at": self._view.meta.get("indexed_at"),
                }
        if self._semantic is None:
            schema["search"] = "lexical (BM25F)"
        elif self._index_lexical:
            schema["search"] = f"lexical only: {self._index_lexical}"
        else:
            schema["search"] = self._semantic.description
        if self.capabilities.writable:
            schema["write_prefix"] = self._write_prefix
        schema["usage"] = (
            "browse_kb with path '' shows the root (an index.md verbatim when the bundle has "
            "one); search_kb ranks concepts by title, description, tags, type, id and body; "
            "fetch_kb takes the [ids] shown (comma-separated) and returns whole documents "
            "with their links. Every record states its trust tier (unverified, "
            "machine-confirmed, human-reviewed) and whether it is stale; weigh both."
        )
        return schema

    # -- internals ----------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def _tick(self) -> None:
        if self._clock() >= self._next_refresh:
            self._refresh(raise_errors=False)

    @property
    def _served(self) -> BundleContents:
        """What browse and the schema read: the index view, else the walked manifest."""
        return self._view if self._view is not None else self._manifest

    def _types(self) -> Counter[str]:
        """Concepts per type; equal counts in name order, whatever order they were loaded in."""
        if self._view is not None:
            counts = +self._view.types  # drops the zero counts of removed types
        else:
            counts = Counter(c.type for c in self._manifest.concepts.values())
        return Counter(dict(sorted(counts.items())))

    def _bound(self) -> int:
        return self._max_concepts

    def _listing(self, directory: str, limit: int, now: datetime) -> list[Record]:
        served = self._served
        if self._view is not None:
            self._view.prefetch(self._view.children(directory).concepts[:limit])
        return navigation.derived_listing(served, directory, limit, now)

    def _index_location(self) -> str:
        from agentkernel.knowledgebase.okf.bundleindex import _lance

        return _lance.describe(self._index_uri or "")

    def _open_index(self) -> bool:
        """Open the bundle index; ``False`` when falling back to the walk (as asked).

        Raises:
            KnowledgeError: The index is missing or unreadable and no fallback was asked for.
        """
        from agentkernel.knowledgebase.okf.bundleindex._lance import open_dataset
        from agentkernel.knowledgebase.okf.bundleindex.view import IndexView

        try:
            view = IndexView(open_dataset(self._index_uri or "", self._index_options))
        except Exception as exc:
            where = self._index_location()
            problem = f"{type(exc).__name__}: {exc}"
            if self._index_fallback != "walk":
                raise KnowledgeError(
                    f"OKF bundle '{self.backend_name}': the bundle index {where} cannot be "
                    f"opened ({problem}). Build it with 'agentkernel-kb index "
                    f"{self._store.location} --to {self._index_uri}', fix the index options, "
                    "or pass index_fallback='walk' to walk the bundle instead."
                ) from exc
            note = (
                f"bundle index {where} could not be opened ({problem}); serving a walk of the "
                "bundle instead (index_fallback='walk')"
            )
            logger.warning("OKF bundle %s: %s", self._store.location, note)
            self._index_notes = [note]
            return False
        self._index_lexical = self._check_vectors(view, raise_errors=True)
        with self._lock:
            self._view = view
            self._walk_diagnostics = list(view.meta.get("diagnostics") or [])
            if view.truncated:
                self._walk_diagnostics.append(
                    f"truncated: the bundle holds more than max_concepts={self._bound()} "
                    "concepts; the rest are not in the index"
                )
        if self._refresh_seconds is not None:
            self._next_refresh = self._clock() + self._refresh_seconds
        return True

    def _refresh_index(self, *, raise_errors: bool, check_bundle: bool) -> RefreshStats | None:
        """Open the index's latest version if it moved (one small request when it has not)."""
        from agentkernel.knowledgebase.okf.bundleindex.view import IndexView

        assert self._view is not None
        started = time.perf_counter()
        current = self._view
        try:
            dataset = current.dataset
            latest = int(dataset.latest_version)  # one listing of the versions
            if latest == current.version:
                fresh = current
            else:
                fresh = IndexView(dataset.checkout_version(latest))
            notes = self._index_lag(fresh) if check_bundle else self._index_notes
            lexical = self._check_vectors(fresh, raise_errors=False)
        except Exception as exc:
            self._note_refresh_failure("index refresh", f"index version {current.version}", exc)
            if raise_errors:
                raise
            return None
        with self._lock:
            self._view = fresh
            self._index_lexical = lexical
            self._walk_diagnostics = list(fresh.meta.get("diagnostics") or [])
            self._index_notes = notes
            self._refresh_error = None
        stats = RefreshStats(0, 0, 0, 0, time.perf_counter() - started)
        self.last_refresh = stats
        return stats

    def _check_vectors(self, view: IndexView, *, raise_errors: bool) -> str | None:
        """Check the index's vectors against the embedder; why search is lexical, or ``None``.

        Raises:
            IndexModelError: (``raise_errors``) the index holds another model's vectors.
        """
        if self._semantic is None:
            return None
        from agentkernel.knowledgebase.okf.bundleindex import dense

        where = self._index_location()
        recorded = view.meta.get("embedder") if dense.has_vectors(view.dataset) else None
        reason = None
        if recorded is None:
            reason = (
                f"the bundle index {where} holds no vectors (it was built without an "
                f"embedder); index it with --embedder {self._semantic.embedder.model_id}"
            )
        else:
            try:
                dense.check_model(recorded, self._semantic, where)
            except dense.IndexModelError as exc:
                if raise_errors:
                    raise
                reason = str(exc)
        if reason is not None:
            if reason != self._index_lexical:
                logger.warning("OKF bundle %s: search is lexical only: %s", where, reason)
            return reason
        if self._index_vectors is None:
            self._index_vectors = dense.IndexVectors(self._semantic)
        return None

    def _note_refresh_failure(self, what: str, serving: str, exc: Exception) -> None:
        """Log a failed refresh and keep its message for the diagnostics; the old state serves."""
        message = (
            f"{what} failed at {self._now().strftime('%Y-%m-%dT%H:%M:%SZ')}, "
            f"serving {serving}: {type(exc).__name__}: {exc}"
        )
        logger.warning("OKF bundle %s: %s", self._store.location, message)
        with self._lock:
            self._refresh_error = message

    def _index_lag(self, view: IndexView) -> list[str]:
        """List the bundle and say how far the index is behind it (empty when it is not)."""
        listing = {f.path: f.token for f in self._store.walk("") if f.path.lower().endswith(".md")}
        held = view.tokens()
        new = sum(1 for p in listing if p not in held)
        changed = sum(1 for p, t in listing.items() if p in held and held[p] != t)
        gone = sum(1 for p in held if p not in listing)
        if not (new or changed or gone):
            return []
        return [
            f"the bundle index (version {view.version}, indexed at "
            f"{view.meta.get('indexed_at', 'an unknown time')}) is behind the bundle by "
            f"{new + changed + gone} document(s): {new} new, {changed} changed, {gone} "
            "deleted; run 'agentkernel-kb index' to catch up"
        ]

    def _limits(self) -> ScanLimits:
        return ScanLimits(
            max_concepts=self._max_concepts,
            head_bytes=self.head_bytes,
            max_document_bytes=self.max_document_bytes,
            workers=self.read_workers,
        )

    def _refresh(self, *, raise_errors: bool) -> RefreshStats | None:
        if not self._refresh_lock.acquire(blocking=raise_errors):
            return None  # another caller is refreshing; keep serving the current manifest
        try:
            if self._view is not None:
                # reload() (raise_errors) also lists the bundle to say how far behind it is
                return self._refresh_index(raise_errors=raise_errors, check_bundle=raise_errors)
            return self._walk_and_apply(raise_errors=raise_errors)
        finally:
            if self._refresh_seconds is not None:
                self._next_refresh = self._clock() + self._refresh_seconds
            self._refresh_lock.release()

    def _walk_and_apply(self, *, raise_errors: bool) -> RefreshStats | None:
        started = time.perf_counter()
        with self._lock:
            known = {path: self._manifest.token_of(path) or "" for path in self._manifest.paths()}
        try:
            result = scan(self._store, known, self._limits())
        except Exception as exc:
            self._note_refresh_failure("refresh", "the last good manifest", exc)
            if raise_errors:
                raise
            return None
        stats = self._apply(result, known, started)
        self.last_refresh = stats
        return stats

    def _apply(self, result: ScanResult, known: dict[str, str], started: float) -> RefreshStats:
        manifest = self._manifest
        vectors = self._embed(result.concepts)  # outside the lock: embedding is slow
        with self._lock:

            def untouched(path: str) -> bool:
                # a write since the snapshot wins over what the walk saw
                return (manifest.token_of(path) or "") == known.get(path, "")

            dropped = 0
            for path in result.drops:
                if untouched(path) and manifest.drop(path):
                    dropped += 1
            changed = 0
            for concept in result.concepts:
                if untouched(concept.path):
                    manifest.put_concept(concept, vectors.get(concept.id))
                    changed += 1
            for reserved in result.reserved:
                if untouched(reserved.path):
                    manifest.put_reserved(reserved)
            for skipped in result.skipped:
                if untouched(skipped.path):
                    manifest.put_skipped(skipped)
            manifest.truncated = result.truncated
            self._walk_diagnostics = result.store_diagnostics + result.errors
            if result.truncated:
                self._walk_diagnostics.append(
                    f"truncated: the bundle holds more than max_concepts={self._max_concepts} "
                    "concepts; the rest are not served"
                )
            self._refresh_error = None
            unembedded = (
                [manifest.concepts[k] for k in self._semantic.missing(list(manifest.concepts))]
                if self._semantic is not None
                else []
            )
        if unembedded:  # left without a vector by an earlier failed embedding
            healed = self._embed(unembedded)
            with self._lock:
                for concept in unembedded:
                    held = manifest.concepts.get(concept.id)
                    if held is concept and concept.id in healed:
                        manifest.put_concept(concept, healed[concept.id])
        seconds = time.perf_counter() - started
        return RefreshStats(result.listed, result.reads, changed, dropped, seconds)

    def _fetch_one(self, target: navigation.Target) -> Record | None:
        if target.kind == "reserved":
            text = self._read_text(target.path)
            return None if text is None else reserved_record(target.path, text)
        if target.kind == "directory":
            rows = self.browse(target.path, limit=1000)
            listing = directory_record(target.path, self._count_under(target.path))
            return {"text": format_records(rows), "metadata": listing["metadata"]}
        if target.kind != "concept":
            return None
        with self._lock:
            concept = self._served.concepts.get(target.path)
        if concept is None:
            return None
        try:
            data = self._store.read(concept.path)
        except FileNotFoundError:
            return None
        try:
            text = data.decode("utf-8")
            fresh = parse_concept(concept.path, concept.token, len(data), data, complete=True)
        except (UnicodeDecodeError, ConceptError) as exc:
            logger.warning("%s changed into something unreadable: %s", concept.path, exc)
            return None
        with self._lock:
            served = self._served
            links = resolve_links(
                concept.path,
                fresh.body_head,
                lambda cid: cid in served.concepts,
                served.has_directory,
            )
        return full_record(fresh, text, links, self._now())

    def _count_under(self, directory: str) -> int:
        with self._lock:
            return self._served.concepts_under(directory)

    def _read_text(self, path: str) -> str | None:
        try:
            return self._store.read(path).decode("utf-8")
        except (OSError, UnicodeDecodeError, KnowledgeError) as exc:
            logger.warning("could not read %s: %s", path, exc)
            return None

    def _refuse_unservable(self, item: authoring.Draft) -> None:
        """Refuse, before anything is written, a document that no walk would serve.

        Acknowledging such a write would be a lie: this process would show the concept until
        its next refresh, and every other process (or this one after a restart) never would.
        The rules are the walk's own (:func:`path_refusal`, :func:`size_refusal`,
        :func:`concept_from_head`), plus a whole-document parse, as ``fetch`` reads it.
        """
        cid = concept_id(item.path)
        reason = path_refusal(item.path) or size_refusal(len(item.data), self._limits())
        if reason is None and item.exact:
            with self._lock:
                held = self._served.concepts.get(cid)
            if held is not None and held.path != item.path:
                reason = f"the same concept id as {held.path}, which is served instead"
        if reason is None:
            try:
                parse_concept(item.path, "", len(item.data), item.data, complete=True)
                listed = StoredFile(item.path, len(item.data), "")
                concept_from_head(listed, item.data[: self.head_bytes], self.head_bytes)
            except ConceptError as exc:
                reason = str(exc)
        if reason is not None:
            raise KnowledgeError(
                f"Nothing was written to OKF bundle '{self.backend_name}': {echo(cid)} would "
                f"never be served ({reason}). Shorten or split the text, or fix what the reason "
                "names."
            )

    def _write_one(self, item: authoring.Draft) -> str:
        if item.exact:
            stored = self._store.write(item.path, item.data, overwrite=True)
            path = item.path
        else:
            for attempt in range(1, _MAX_SUFFIX + 1):
                path = authoring.with_suffix(item.path, attempt)
                with self._lock:
                    if self._served.token_of(path) is not None:
                        continue
                try:
                    stored = self._store.write(path, item.data, overwrite=False)
                    break
                except FileExistsError:
                    continue
            else:
                raise KnowledgePathError(
                    f"No free name for {echo(item.path)} after {_MAX_SUFFIX} attempts."
                )
        listed = StoredFile(path, stored.size, stored.token)
        concept = concept_from_head(listed, item.data[: self.head_bytes], self.head_bytes)
        vector = self._embed([concept]).get(concept.id)  # before the write is acknowledged
        if self._view is not None:
            self._upsert_row(concept, vector)
        with self._lock:
            if self._view is not None:
                self._view.put_concept(concept)
                if (held := self._hybrid_vectors()) is not None:
                    held.put(concept.id, concept.token, vector)
            else:
                self._manifest.put_concept(concept, vector)
        return concept.id

    def _hybrid_vectors(self) -> Any:
        """The index's vectors (``dense.IndexVectors``) while search is hybrid over them."""
        return None if self._index_lexical else self._index_vectors

    def _upsert_row(self, concept: Concept, vector: np.ndarray | None) -> None:
        """Write a concept's row (and its vector) to the index before the write is acknowledged.

        The vector goes in only when the index holds this embedder's vectors: an index without
        vectors gets none from one writer (the indexer embeds them all, with one model).
        """
        from agentkernel.knowledgebase.okf.bundleindex import rows
        from agentkernel.knowledgebase.okf.bundleindex.indexer import commit, open_table

        if self._writer is None:
            self._writer = open_table(self._index_uri or "", self._index_options)
        keep = vector if self._hybrid_vectors() is not None else None
        commit(self._writer, [rows.concept_row(concept, keep)], [])
        # serve the version holding the row: search runs over the dataset, not this process
        self._refresh_index(raise_errors=True, check_bundle=False)

    def _embed(self, concepts: Sequence[Concept]) -> dict[str, np.ndarray]:
        if self._semantic is None or not concepts:
            return {}
        from agentkernel.knowledgebase.okf.vectors import embed_concepts

        return embed_concepts(self._semantic, concepts)

    def served_concepts(self) -> list[Concept]:
        """Return every concept served now (frontmatter and body head), in no order.

        Returns:
            The concepts.
        """
        self._tick()
        with self._lock:
            return list(self._manifest.concepts.values())

    @property
    def semantic(self) -> SemanticIndex | None:
        """The dense index when search is hybrid (its cache, model and counters), else ``None``."""
        return self._semantic


_TYPES_SHOWN = 20  # concept types named in a description


def _declared_version(root_index: str | None) -> str | None:
    if not root_index:
        return None
    try:
        meta, _ = frontmatter.parse(root_index)
    except frontmatter.FrontmatterError:
        return None
    version = meta.get("okf_version")
    return str(version) if version is not None else None

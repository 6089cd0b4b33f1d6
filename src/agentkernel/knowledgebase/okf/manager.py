"""``OKFManager``: an Open Knowledge Format bundle served from any ``DocumentStore``.

The manager serves one :class:`~agentkernel.knowledgebase.okf._views.BundleView` and never asks
which: the walk (:mod:`~agentkernel.knowledgebase.okf._walkview`, an in-process manifest and
retrieval index; search and browse answer from it and only fetch reads a whole document) or,
with ``index=URI``, a shared bundle index (:mod:`~agentkernel.knowledgebase.okf._lanceview`, a
Lance dataset built by ``agentkernel-kb index``). ``connect()`` opens the view once, from
``__init__`` (or on a thread with ``background=True``, and only search fills the vectors:
:mod:`~agentkernel.knowledgebase.okf._loading`); afterwards an operation costs one clock
comparison, except the call crossing the ``refresh_seconds`` boundary, which refreshes the
walk (re-reading only the documents whose change token moved). An index is refreshed by a
background thread (:mod:`~agentkernel.knowledgebase.okf._background`), within
``refresh_seconds``. A failed refresh keeps the last good state and records a diagnostic.
Writes go through to the store, then to the view, before they are acknowledged
(:mod:`~agentkernel.knowledgebase.okf._writing`).
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkernel.knowledgebase.document import DocumentKnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.model import Readiness, Record
from agentkernel.knowledgebase.okf import _authoring as authoring
from agentkernel.knowledgebase.okf import _browse as navigation
from agentkernel.knowledgebase.okf import warmstart
from agentkernel.knowledgebase.okf._describing import (
    OKF_VERSION,
    SCHEMA_USAGE,
    bundle_schema,
    describe_bundle,
)
from agentkernel.knowledgebase.okf._fetching import fetched_record
from agentkernel.knowledgebase.okf._loading import Loading, with_search_note
from agentkernel.knowledgebase.okf._options import check_options
from agentkernel.knowledgebase.okf._records import (
    directory_record,
    format_records,
    reserved_record,
    summary_record,
)
from agentkernel.knowledgebase.okf._refreshing import RefreshSchedule
from agentkernel.knowledgebase.okf._views import BundleView, RefreshStats, ViewContext
from agentkernel.knowledgebase.okf._walkview import WalkView
from agentkernel.knowledgebase.okf._warming import Warming
from agentkernel.knowledgebase.okf._writing import (
    refuse_over_capacity,
    refuse_unservable,
    write_one,
)
from agentkernel.knowledgebase.okf.computation.contract import computations_of, is_computation
from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.knowledgebase.okf.declared import okf_capabilities
from agentkernel.knowledgebase.okf.manifest import BundleContents
from agentkernel.knowledgebase.okf.scan import ScanLimits
from agentkernel.storage.base import MAX_DOCUMENT_BYTES, DocumentStore, clean_path

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf._background import BackgroundRefresh
    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.retrieval.semantic import SemanticIndex

__all__ = ["OKF_VERSION", "OKFManager", "RefreshStats"]

logger = logging.getLogger(__name__)


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
        legacy_dates: bool = False,
        background: bool = False,
    ) -> None:
        """Attach a store and walk it once (or open its bundle index), now or on a thread.

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
            legacy_dates: Read a bare-date ``stale_after`` (``2026-09-23``) as midnight UTC,
                for bundles written before OKF 0.2 required a datetime with an offset. Off by
                default: such a value is ignored, as the spec says, so the concept is never
                stale by it (``agentkernel-kb check`` names each one and its fix).
            background: Return at once and load on a thread (a server that listens before
                its bundles are read): every operation waits for the walk or the index, and
                with an embedder, the vectors are filled next while searches answer
                lexically, saying so (:meth:`readiness` says how far). A load that fails is
                then raised by every operation, not here. Off: the walk (or the index) is
                read before this returns, and the first search fills the vectors.

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
        options = (refresh_seconds, max_concepts, write_actor, write_prefix, description)
        check_options(*options, legacy_dates, index_fallback)
        semantic: SemanticIndex | None = None
        if embedder is not None:
            from agentkernel.retrieval.semantic import SemanticIndex

            # the cache is read by the first lookup: fetch and browse never read it, and an
            # index's vectors come from the index (the cache is read when a write embeds)
            semantic = SemanticIndex(embedder, cache_dir, preload_cache=False)
        super().__init__(
            store, okf_capabilities(writable=True, semantic=semantic is not None), name or None
        )
        self._semantic = semantic
        self._index_uri = index
        self._index_options = dict(index_options or {})
        self._index_fallback = index_fallback
        self._description = description
        self._schedule = RefreshSchedule(refresh_seconds, clock)
        self._max_concepts = max_concepts
        self._write_actor = write_actor or "agentkernel/okf"
        self._write_prefix = clean_path(write_prefix.strip().strip("/"))
        self._clock = clock
        self._legacy_dates = legacy_dates
        self._lock = threading.RLock()
        self._context = ViewContext(store, self._lock, clock, self._limits(), semantic)
        self._view: BundleView = WalkView(self._context)
        self._poller: BackgroundRefresh | None = None  # a bundle index's refresh thread
        self.answered_by = ""
        """What answered the latest search (the engines, or why lexically), as the schema says."""
        self._loading = Loading(self.backend_name, background=background)
        self._loading.open(self.connect, self._fill if semantic is not None else None)

    # -- lifecycle ------------------------------------------------------------------------

    def connect(self, **kwargs: Any) -> None:
        """Open the view: walk the whole store, or open the bundle index (from ``__init__``).

        Args:
            **kwargs: Unused; accepted for the ``KnowledgeBase`` signature.

        Raises:
            OSError: The store cannot be listed.
            KnowledgeError: The store refused the listing, or the index cannot be opened and
                no fallback was asked for.
        """
        self._loading.opening(self._connect)

    def _connect(self, warming: Warming) -> None:
        if self._index_uri is not None:
            warming.begin("index")
            if self._open_index():
                if self._schedule.seconds is not None:
                    from agentkernel.knowledgebase.okf._background import BackgroundRefresh

                    self._schedule.start()
                    self._poller = BackgroundRefresh(
                        self._poll,
                        self._schedule.seconds,
                        self._clock,
                        self._index_uri,
                        self._poller,
                    )
                return
        warming.begin("walk")
        walk = WalkView(self._context)
        self._view = walk
        # an unchanged bundle starts from the last walk's saved manifest and analysed index
        warmstart.walk_warm(
            walk.manifest, self._store, self._limits(), lambda: self._refresh(raise_errors=True)
        )

    def reload(self) -> RefreshStats:
        """Refresh now, whatever the clock says (an index: its newest version, at a poll's cost).

        Returns:
            What the refresh did.

        Raises:
            OSError: The listing failed; the last good state is still served.
            KnowledgeError: The store refused the listing; likewise.
        """
        if self._loading.warming.error:  # the first load failed: load again
            self.connect()
            return self.last_refresh or RefreshStats(0, 0, 0, 0, 0.0)
        stats = self._refresh(raise_errors=True)
        assert stats is not None  # raise_errors: a failure raised instead
        return stats

    def close(self) -> None:
        """Stop a bundle index's background refresh, then close the store."""
        self._loading.stop()
        if self._poller is not None:
            self._poller.stop()
        super().close()

    def readiness(self) -> Readiness:
        """How far the bundle is from answering fully (cheap: no I/O, no scan).

        Returns:
            What is warming (``walk``, ``index``, ``vectors``) and how far; lexical-ready
            once every operation answers; vectors-ready once hybrid search holds every
            concept's vector (or at once, without an embedder).
        """
        return self._loading.readiness(self._view, self._semantic, self._lock)

    def served_index(self) -> dict[str, Any] | None:
        """The served bundle index's version and when it was indexed; ``None`` when walking.

        Cheap (no I/O, no refresh): what ``/metrics`` reads at every scrape.

        Returns:
            ``{"location": ..., "version": N, "indexed_at": "2026-...Z"}``, or ``None``.
        """
        index = self._view.schema().get("index")
        return dict(index) if isinstance(index, dict) else None

    @property
    def last_refresh(self) -> RefreshStats | None:
        """What the latest refresh did; ``None`` before the first."""
        return self._schedule.last

    @property
    def legacy_dates(self) -> bool:
        """Whether a bare-date ``stale_after`` is read as midnight UTC (off by default)."""
        return self._legacy_dates

    @property
    def diagnostics(self) -> list[str]:
        """Every current problem: skipped documents and why, store and refresh failures."""
        return self._view.diagnostics()

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
        return describe_bundle(
            self._store.label,
            concepts,
            types,
            namespaces,
            self.diagnostics,
            description=self._description,
            semantic=self._loading.hybrid_now(self._view, self._semantic),
        )

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
        legacy = self._legacy_dates
        found, self.answered_by, lexical = self._loading.search(
            self._view, self._semantic, self._lock, query, limit
        )
        rows = [summary_record(c, now, s, legacy_dates=legacy) for c, s in found]
        for row in rows if lexical else ():  # though hybrid: format_results says so
            row["metadata"]["lexical_only"] = self.answered_by
        return rows

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
                concept = served.concepts[target.path]
                return [summary_record(concept, now, legacy_dates=self._legacy_dates)]
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
        title (a suffix avoids collisions; nothing is overwritten). One whose text opens with
        ``---`` frontmatter (an agent writing OKF) is authored as that concept: its ``type``
        is required, its lines are kept as written and only what it lacks is added. A record
        naming an id is written exactly as given, replacing that concept; its text must be a
        whole OKF document.

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
        refuse_over_capacity(drafts, self._view, self._context, self._bound(), self.backend_name)
        for item in drafts:
            refuse_unservable(item, self._view, self._context, self.backend_name)
        written: list[str] = []
        for item in drafts:
            written.append(write_one(item, self._view, self._context))
        return written

    def format_results(self, rows: Sequence[Record]) -> str:
        """Render records with id, title, type, trust, staleness and any status but ``stable``.

        Args:
            rows: Records from an operation.

        Returns:
            The text the agent sees; a search answered lexically though hybrid is
            configured (its vectors still being built) opens with a line saying so.
        """
        return with_search_note(rows, format_records(rows))

    def served_concepts(self) -> list[Concept]:
        """Return every concept served now (frontmatter and, from a walk, body head), in no order.

        Returns:
            The concepts (from a bundle index, without their body heads: fetch reads bodies).
        """
        self._tick()
        return self._view.all_concepts()

    @property
    def semantic(self) -> SemanticIndex | None:
        """The dense index when search is hybrid (its cache, model and counters), else ``None``."""
        return self._semantic

    # -- schema -------------------------------------------------------------------------

    def _derived_schema(self) -> dict[str, Any]:
        self._tick()
        with self._lock:
            types = self._types()
            schema = bundle_schema(
                self._store.label, self._served, types, len(self.diagnostics), self._bound()
            )
        schema.update(self._view.schema())
        if self._semantic is not None and not self._loading.hybrid_now(self._view, self._semantic):
            schema["search"] = self._loading.engine(self._view, self._semantic, self._lock, False)
        if any(is_computation(kind) for kind in types):  # the scan only where one is held
            schema["computations"] = computations_of(self._view.all_concepts())
        if self.capabilities.writable:
            schema["write_prefix"] = self._write_prefix
        schema["usage"] = SCHEMA_USAGE
        return schema

    # -- internals ----------------------------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def _tick(self) -> None:
        self._loading.wait()
        if self._schedule.due():
            self._refresh(raise_errors=False)

    @property
    def _served(self) -> BundleContents:
        """What browse, fetch and the schema read: the view's tree."""
        return self._view.contents

    def _fill(self, progress: Callable[[int, int], None] | None) -> None:
        self._view.fill_vectors(progress)

    def _types(self) -> Counter[str]:
        """Concepts per type; equal counts in name order, whatever order they were loaded in."""
        return Counter(dict(sorted(self._view.types().items())))

    def _bound(self) -> int:
        return self._max_concepts

    def _listing(self, directory: str, limit: int, now: datetime) -> list[Record]:
        served = self._served
        self._view.prefetch(served.children(directory).concepts[:limit])
        return navigation.derived_listing(
            served, directory, limit, now, legacy_dates=self._legacy_dates
        )

    def _open_index(self) -> bool:
        """Open the bundle index; ``False`` when falling back to the walk (as asked)."""
        from agentkernel.knowledgebase.okf._lanceview import open_index

        uri, fallback = self._index_uri or "", self._index_fallback
        view = open_index(self._context, uri, self._index_options, fallback, self.backend_name)
        if view is not None:
            self._view = view
        return view is not None

    def _limits(self) -> ScanLimits:
        return ScanLimits(
            max_concepts=self._max_concepts,
            head_bytes=self.head_bytes,
            max_document_bytes=self.max_document_bytes,
            workers=self.read_workers,
        )

    def _refresh(self, *, raise_errors: bool, polled: bool = False) -> RefreshStats | None:
        return self._schedule.run(self._view, raise_errors=raise_errors, polled=polled)

    def _poll(self) -> tuple[bool, float | None]:
        """One refresh of the background thread: whether it switched, when to poll again."""
        before = getattr(self._served, "version", None)  # not the view: it goes when replaced
        self._refresh(raise_errors=False, polled=True)
        return getattr(self._served, "version", None) != before, self._view.retry_after

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
            data = self._read_document(concept)
        except FileNotFoundError:
            return None
        return fetched_record(
            concept, data, self._lock, lambda: self._served, self._now, self._legacy_dates
        )

    def _count_under(self, directory: str) -> int:
        with self._lock:
            return self._served.concepts_under(directory)

    def _read_document(self, concept: Concept) -> bytes:
        """A concept's document, as the view reads it (a bundle index: from the node cache)."""
        return self._view.read_document(concept)

    def _read_text(self, path: str) -> str | None:
        try:
            return self._store.read_bounded(path, self.max_document_bytes).decode("utf-8")
        except (OSError, UnicodeDecodeError, KnowledgeError) as exc:
            logger.warning("could not read %s: %s", path, exc)
            return None

"""A reader's view of a bundle index: what ``OKFManager(store, index=...)`` serves from.

Opening streams three short columns of every row (path, kind, type) in batches and derives
the directory tree, the type counts and the concept ids from them, held compactly
(:class:`~agentkernel.knowledgebase.okf.bundleindex._ids.ConceptIds`: one buffer of ids, not a
Python string each); everything else (titles, descriptions, trust, change tokens, ...) is read per
row when a listing, a search or a refresh asks for it. Reserved
files and skipped documents (few) are held whole. The view answers the same questions as the
in-process :class:`~agentkernel.knowledgebase.okf.manifest.Manifest`
(:class:`~agentkernel.knowledgebase.okf.manifest.BundleContents`), so browsing code serves
both alike.

Search runs the dataset's full-text index over the rows' pre-analysed terms: the query is
analysed by the lexical engine (:func:`agentkernel.retrieval.analysis.parse_query`) and each
term asked for with the engine's query weight. Lance ranks with BM25 over those terms (its
own ``k1``/``b``, one field: the weights are repetitions), then the ranking rules every mode
shares (:func:`agentkernel.retrieval.ranking.rank`: an exact title match first, a title inside
the query boosted, the status penalty, trust on ties) are applied to the candidates.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from agentkernel.knowledgebase.okf._tree import Children, DocumentTree
from agentkernel.knowledgebase.okf.bundleindex import rows
from agentkernel.knowledgebase.okf.bundleindex._ids import ConceptIds
from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.knowledgebase.okf.manifest import ReservedFile, Skipped
from agentkernel.retrieval.analysis import parse_query
from agentkernel.retrieval.ranking import (
    HEAD_POOL,
    Candidate,
    Hit,
    head_scorer,
    head_terms,
    rank,
    title_match,
)

logger = logging.getLogger(__name__)

_CACHE_ROWS = 4096
_POOL_EXTRA = 16
_RANK_COLUMNS = ["id", "kind", "status", "trust", "title_key"]
_HEAD_COLUMNS = ["title", "description", "tags", "frontmatter"]  # the head rule's fields
_IN_BATCH = 500
_LOAD_BATCH = 8192
_LOAD_COLUMNS = ["path", "kind", "type"]
_UNREAD = ""  # the token of a row whose token is still in the dataset, not in memory
_SUFFIX = ".md"


class IndexView(DocumentTree):
    """One version of a bundle index, opened for reading.

    Not thread-safe: its owner (``OKFManager``) serialises calls.
    """

    def __init__(self, dataset: Any) -> None:
        """Load the short columns of the dataset's version.

        Args:
            dataset: A ``lance.LanceDataset`` at the version to serve.
        """
        super().__init__()
        self.dataset = dataset
        self.version = int(dataset.version)
        self.reserved: dict[str, ReservedFile] = {}
        self.skipped: dict[str, Skipped] = {}
        self.meta: dict[str, Any] = {}
        self.types: Counter[str] = Counter()
        self._ids = ConceptIds()  # concept id -> type
        self._cache: OrderedDict[str, Concept] = OrderedDict()
        self._load()

    @property
    def concepts(self) -> Mapping[str, Concept]:
        """The concept ids held, their rows read on demand.

        A new small object each time, not an attribute: one held by the view would make a
        reference cycle, and a pod switching versions would keep every old view (100,000
        rows of strings) until the cyclic collector ran (``bench/RESULTS.md``, issue 24).
        """
        return _Concepts(self)

    @property
    def truncated(self) -> bool:
        """Whether the indexer left concepts out at its ``max_concepts``."""
        return bool(self.meta.get("truncated"))

    # -- rows -----------------------------------------------------------------------------

    def prefetch(self, ids: list[str]) -> None:
        """Read the rows of concepts about to be shown, in as few requests as possible.

        Args:
            ids: Concept ids.
        """
        missing = [cid for cid in ids if cid in self._ids and cid not in self._cache]
        for where, count in in_filters("id", missing):
            for found in self._select(where, count):
                self._remember(found)

    def concept(self, cid: str) -> Concept | None:
        """Return a concept by id, reading its row when it is not cached.

        Args:
            cid: The concept id.

        Returns:
            The concept, or ``None`` when the index has none by that id.
        """
        if cid not in self._ids:
            return None
        cached = self._cache.get(cid)
        if cached is not None:
            self._cache.move_to_end(cid)
            return cached
        self.prefetch([cid])
        return self._cache.get(cid)

    def put_concept(self, concept: Concept) -> None:
        """Show a concept this process just wrote (its row is upserted by the caller).

        Args:
            concept: The concept.
        """
        self._forget(concept.path)
        self._add(concept.path, rows.KIND_CONCEPT, concept.type, concept.token)
        self._remember(concept)

    # -- search ---------------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[tuple[Concept, float]]:
        """Rank concepts for a query as the lexical engine does, over the full-text index.

        Args:
            query: Free text.
            limit: The most results.

        Returns:
            ``(concept, score)`` pairs, best first.
        """
        return self.records(self.ranked(query, limit))

    def records(self, ranked: list[Hit]) -> list[tuple[Concept, float]]:
        """Read the rows of ranked concepts (one read for those not cached).

        Args:
            ranked: Hits (concept ids) best first.

        Returns:
            ``(concept, score)`` in the same order, without ids the view does not hold.
        """
        self.prefetch([str(hit.key) for hit in ranked])
        return [(concept, hit.score) for hit in ranked if (concept := self.concept(str(hit.key)))]

    def ranked(self, query: str, limit: int) -> list[Hit]:
        """Rank concept ids for a query (the engine's rules over Lance's BM25), reading no row.

        Args:
            query: Free text.
            limit: The most results.

        Returns:
            Hits (concept ids, with their tiers), best first.
        """
        import lance.query

        queries: Any = lance.query
        weights, key = parse_query(query)
        if not weights:
            return []
        clauses = [
            (queries.Occur.SHOULD, queries.MatchQuery(term, "terms", boost=weight))
            for term, weight in weights.items()
        ]
        pool = max(limit + _POOL_EXTRA, HEAD_POOL)
        found = self.dataset.to_table(
            columns=[*_RANK_COLUMNS, *_HEAD_COLUMNS, "_score"],
            full_text_query=queries.BooleanQuery(clauses),
            limit=pool,
        ).to_pylist()
        query_key = frozenset(key)
        if query_key:
            where = f"title_key = '{_escape(' '.join(sorted(query_key)))}'"
            found += self.dataset.to_table(
                columns=[*_RANK_COLUMNS, *_HEAD_COLUMNS], filter=where, limit=64
            ).to_pylist()
        candidates: dict[str, Candidate] = {}
        share_of = head_scorer(weights)
        for position, row in enumerate(found):
            cid = row["id"]
            if row["kind"] != rows.KIND_CONCEPT or cid not in self._ids or cid in candidates:
                continue  # a row of a later version than the one served, or seen already
            title = frozenset((row["title_key"] or "").split())
            tier, share = title_match(title, query_key)
            score = float(row.get("_score") or 0.0)
            # the head rule re-scores the best HEAD_POOL by BM25 (the rows come best first)
            head = share_of(head_terms(_head_fields(row))) if position < HEAD_POOL else 0.0
            candidates[cid] = Candidate(
                cid, score, tier, share, row["status"], row.get("trust"), head=head
            )
        return rank(candidates.values(), limit)

    # -- internals ------------------------------------------------------------------------

    def token_of(self, path: str) -> str | None:
        """Return a document's change token, reading it from the index when not held.

        Args:
            path: Bundle-relative path.

        Returns:
            The token, or ``None`` when the index has no such document.
        """
        token = super().token_of(path)
        if token is None and path.endswith(_SUFFIX) and self._ids.is_loaded(path[:-3]):
            token = _UNREAD  # a loaded concept: its token is in the dataset
        if token != _UNREAD:
            return token
        found = self.dataset.to_table(
            columns=["token"], filter=f"path = '{_escape(path)}'", limit=1
        ).column("token")
        return str(found[0]) if len(found) else None

    def tokens(self) -> dict[str, str]:
        """Return every document path with its change token (one scan of two columns).

        Returns:
            ``{path: token}``.
        """
        held = super().tokens()
        held.update((cid + _SUFFIX, _UNREAD) for cid in self._ids.loaded())
        unread = {path for path, token in held.items() if token == _UNREAD}
        for batch in self.dataset.to_batches(columns=["path", "token"], batch_size=_LOAD_BATCH):
            for path, token in zip(
                batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
            ):
                if path in unread:
                    held[path] = token
        return held

    def paths(self) -> list[str]:
        """Return every document path known (concepts, reserved, skipped).

        Returns:
            The paths.
        """
        return super().paths() + [cid + _SUFFIX for cid in self._ids.loaded()]

    def children(self, directory: str) -> Children:
        """Return what is directly in a directory: its subdirectories and its concepts.

        Args:
            directory: A clean directory path (``""`` is the root).

        Returns:
            The subdirectories' paths and the concepts' ids, each sorted.
        """
        found = super().children(directory)
        loaded = self._ids.loaded_in(directory)
        if not loaded:
            return found
        if found.concepts:
            loaded = sorted({*loaded, *found.concepts})
        return Children(found.directories, loaded)

    def _load(self) -> None:
        # the ids stay in Arrow arrays until they are packed (ConceptIds): no Python string
        # per row outlives its batch. Arrow allocates them from the C allocator, whatever
        # the process' default pool: jemalloc (pyarrow's default) would keep the pages of
        # this one-off load, about 12 MB at 100,000 concepts, for the life of the process.
        import pyarrow as pa
        import pyarrow.compute as pc

        pool = pa.system_memory_pool()
        others: list[str] = []
        loaded: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        for batch in self.dataset.to_batches(
            columns=_LOAD_COLUMNS, batch_size=_LOAD_BATCH, scan_in_order=True
        ):
            paths, kinds, types = (batch.column(i) for i in range(3))
            concept = pc.fill_null(pc.equal(kinds, rows.KIND_CONCEPT, memory_pool=pool), False)
            others += pc.filter(paths, pc.invert(concept), memory_pool=pool).to_pylist()
            paths = pc.filter(paths, concept, memory_pool=pool)
            types = pc.coalesce(pc.filter(types, concept, memory_pool=pool), "", memory_pool=pool)
            if _plain(paths):  # every path <dir>/<name>.md: loaded in bulk
                loaded[0].append(pc.utf8_slice_codeunits(paths, 0, -3, memory_pool=pool))
                loaded[1].append(
                    pc.replace_substring_regex(paths, r"(^|/)[^/]*$", "", memory_pool=pool)
                )
                loaded[2].append(types)
            else:
                for path, kind_type in zip(paths.to_pylist(), types.to_pylist(), strict=True):
                    self._add(path, rows.KIND_CONCEPT, kind_type, _UNREAD)
        ids, directories, kind_types = (
            pa.chunked_array(part) if part else pa.chunked_array([], pa.string()) for part in loaded
        )
        self._count_concepts(self._ids.load(ids, directories, kind_types, pool))
        self.types.update(self._ids.type_counts())
        if others:
            wanted = ["path", "kind", "token", "size", "text", "reason"]
            for where, _ in in_filters("path", others):
                for row in self.dataset.to_table(columns=wanted, filter=where).to_pylist():
                    self._add_other(row)

    def _add_other(self, row: Mapping[str, Any]) -> None:
        kind = row["kind"]
        if kind == rows.KIND_META:
            self.meta = json.loads(row["text"] or "{}")
            return
        path = row["path"]
        if kind == rows.KIND_RESERVED:
            self.reserved[path] = ReservedFile(path, row["token"], int(row["size"]), row["text"])
        else:
            self.skipped[path] = Skipped(path, row["token"], row["reason"] or "")
        self._add(path, kind, None, row["token"])

    def _add(self, path: str, kind: str, kind_type: str | None, token: str) -> None:
        cid = self._add_document(path, token, concept=kind == rows.KIND_CONCEPT)
        if cid is not None:
            self._ids.add(cid, kind_type or "")
            self.types[kind_type or ""] += 1

    def _forget(self, path: str) -> None:
        cid = path[:-3]
        loaded = path.endswith(_SUFFIX) and self._ids.is_loaded(cid)
        if not self._remove_document(path) and loaded:  # a loaded concept: counted only
            self._discount(posixpath.dirname(path), concept=True)
        kind_type = self._ids.remove(cid)
        if kind_type is not None:
            self.types[kind_type] -= 1
            self._cache.pop(cid, None)

    def _select(self, where: str, limit: int) -> list[Concept]:
        table = self.dataset.to_table(columns=rows.SUMMARY_COLUMNS, filter=where, limit=limit)
        found = []
        for row in table.to_pylist():
            concept = self._row_concept(row)
            if concept is not None:
                found.append(concept)
        return found

    def _row_concept(self, row: Mapping[str, Any]) -> Concept | None:
        if row.get("kind") != rows.KIND_CONCEPT:
            return None
        cid = row["id"]
        if cid not in self._ids:
            return None  # a row of a later version than the one this view serves
        cached = self._cache.get(cid)
        if cached is not None and cached.token == row["token"]:
            return cached
        concept = rows.concept_from_row(row)
        self._remember(concept)
        return concept

    def _remember(self, concept: Concept) -> None:
        self._cache[concept.id] = concept
        self._cache.move_to_end(concept.id)
        while len(self._cache) > _CACHE_ROWS:
            self._cache.popitem(last=False)


class _Concepts(Mapping[str, Concept]):
    """``view.concepts``: the concept ids held, their rows read on demand."""

    def __init__(self, view: IndexView) -> None:
        self._view = view

    def __getitem__(self, cid: str) -> Concept:
        concept = self._view.concept(cid)
        if concept is None:
            raise KeyError(cid)
        return concept

    def __contains__(self, cid: object) -> bool:
        return cid in self._view._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._view._ids)

    def __len__(self) -> int:
        return len(self._view._ids)


def _plain(paths: Any) -> bool:
    """Whether every path is ``<dir>/<name>.md`` with a clean directory and a name."""
    import pyarrow.compute as pc

    odd = pc.or_(
        pc.invert(pc.ends_with(paths, ".md")),
        pc.or_(pc.match_substring(paths, "//"), pc.match_substring_regex(paths, r"(^|/)\.md$")),
    )
    return not pc.any(odd).as_py()


def _escape(value: str) -> str:
    return value.replace("'", "''")


def in_filters(column: str, values: list[str]) -> Iterator[tuple[str, int]]:
    """Lance filters ``column IN ('a', 'b', ...)`` over values, a bounded batch each.

    Args:
        column: The column compared.
        values: Strings (quotes are doubled).

    Yields:
        ``(filter, number of values in it)``.
    """
    for start in range(0, len(values), _IN_BATCH):
        batch = values[start : start + _IN_BATCH]
        listed = ", ".join(f"'{_escape(v)}'" for v in batch)
        yield f"{column} IN ({listed})", len(batch)


def _head_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """A concept row's head fields, as the walk indexes them (aliases from the frontmatter)."""
    try:
        aliases = json.loads(row["frontmatter"] or "{}").get("aliases")
    except (ValueError, AttributeError):
        aliases = None
    return {
        "title": row["title"] or "",
        "aliases": [str(a) for a in aliases] if isinstance(aliases, list) else str(aliases or ""),
        "tags": row["tags"] or [],
        "description": row["description"] or "",
    }

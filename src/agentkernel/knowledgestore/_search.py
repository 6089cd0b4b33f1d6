"""Search over a store's pages with the shared retrieval engine, title first, status-aware.

Both stores keep one :class:`PageSearch` in their catalog and tell it about every page that
changes, so a query costs a lookup in an in-memory index, not a pass over every page. The
ranking is :class:`agentkernel.retrieval.SearchIndex` (BM25F over title, aliases, tags,
description and body, with stemming and a query stop list), ordered in three tiers:

1. pages whose title says what the query says (the same stems in any order, stop words
   aside: ``roast yields`` for *Roast yield*), as the engine's own title rule has it;
2. pages with an alias that does;
3. every other page, by score.

A superseded page keeps its place in the search, with its score lowered: it ranks below a
current page of equal relevance, so an agent asking for the old definition still finds it. A
retired page leaves the search, as the store contract says. The order is
:func:`agentkernel.retrieval.ranking.rank`'s, the rule set every search mode shares; a hit's
score is shown as ``10000 * tier + BM25F`` (tier 2: title, 1: alias), so a title (then
alias) match always outranks the other pages. The curated pages carry no trust tier.

With an embedder (a store built with ``embedder=``), the third tier is hybrid: the lexical
scores blended with the pages' cosine similarity to the query
(:class:`agentkernel.retrieval.semantic.SemanticIndex`), so a page that shares no word with the
question can still be found; the score is then ``10000 * tier + fused score``. Pages are
embedded in batches, through the vector cache, by the first search after they change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import STATUS_RETIRED, PageInfo, SearchHit
from agentkernel.retrieval import Hit, SearchIndex, analyze, analyze_query
from agentkernel.retrieval.analysis import plain_key
from agentkernel.retrieval.embedders import document_texts
from agentkernel.retrieval.index import PHRASE_BOOST
from agentkernel.retrieval.ranking import TIER_ALIAS, TIER_NONE, Candidate, rank, title_match

if TYPE_CHECKING:
    from agentkernel.retrieval.semantic import SemanticIndex

MAX_QUERY_CHARS = 4_000
"""The longest query searched; a longer one is refused with a message saying so."""

_MAX_QUERY_WORDS = 64  # a pasted paragraph is searched by its first words
_TIER = 10_000.0
_SNIPPET = 200
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1f\ud800-\udfff]")


def require_query(query: object) -> str:
    """Check a search query and return it, cut to the words that are searched.

    Args:
        query: The candidate query.

    Returns:
        Its first words, ``""`` when it has none.

    Raises:
        KnowledgeStoreError: Not text, binary data, or longer than :data:`MAX_QUERY_CHARS`.
    """
    if not isinstance(query, str):
        raise KnowledgeStoreError(
            f"A search query must be text (a few words), got {type(query).__name__}."
        )
    if len(query) > MAX_QUERY_CHARS:
        raise KnowledgeStoreError(
            f"A search query is a few words; this one has {len(query):,} characters "
            f"(at most {MAX_QUERY_CHARS:,}). Search for the words that matter."
        )
    if _BINARY.search(query):
        raise KnowledgeStoreError(
            "A search query must be text (a few words); this one holds binary data."
        )
    return " ".join(query.split()[:_MAX_QUERY_WORDS])


def _key(text: str) -> frozenset[str]:
    """What a title, an alias or a query says: its stems, stop words aside, in any order."""
    return frozenset(plain_key(text))


def _split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class _Shown:
    """What a hit shows of a page, and the keys its aliases match queries by."""

    title: str
    type: str
    status: str
    description: str
    alias_keys: tuple[frozenset[str], ...]


class PageSearch:
    """The search index of one store's pages, updated page by page.

    Not thread-safe by itself: its store serialises access.
    """

    def __init__(self, semantic: SemanticIndex | None = None) -> None:
        """Start empty.

        Args:
            semantic: The dense index, when search is hybrid.
        """
        self._index = SearchIndex(phrase_boost=PHRASE_BOOST)  # a quoted line finds its page
        self.semantic = semantic
        self._unembedded: dict[str, tuple[str, str]] = {}  # page id -> texts, for the next search
        self._shown: dict[str, _Shown] = {}
        self._by_alias: dict[frozenset[str], set[str]] = {}
        self._title_keys: dict[str, frozenset[str]] = {}  # worked out for hits, when first asked
        self._warm = False  # the engine's arrays of common words built (the first search)

    def __len__(self) -> int:
        return len(self._shown)

    def put(self, info: PageInfo, content: str) -> None:
        """Index a page, replacing its earlier version (a retired page is only removed).

        Args:
            info: The page's listing line (title, status, fields).
            content: Its body, links as ids.
        """
        self.drop(info.id)
        if info.status == STATUS_RETIRED:
            return
        fields = info.fields
        aliases = _split_list(fields.get("aliases", ""))
        document = {
            "title": info.title,
            "aliases": aliases,
            "tags": _split_list(fields.get("tags", "")),
            "description": fields.get("description", ""),
            "body": content,
        }
        self._index.add(info.id, document, status=info.status)
        alias_keys = tuple(dict.fromkeys(key for a in aliases if (key := _key(a))))
        for key in alias_keys:
            self._by_alias.setdefault(key, set()).add(info.id)
        self._shown[info.id] = _Shown(
            info.title, info.type, info.status, info.description, alias_keys
        )
        if self.semantic is not None:
            self._unembedded[info.id] = document_texts(info.title, info.description, content)

    def drop(self, page_id: str) -> None:
        """Remove a page from the index, if it is there.

        Args:
            page_id: ``type/slug``.
        """
        shown = self._shown.pop(page_id, None)
        if shown is None:
            return
        self._title_keys.pop(page_id, None)
        self._index.remove(page_id)
        if self.semantic is not None:
            self._unembedded.pop(page_id, None)
            self.semantic.remove(page_id)
        for key in shown.alias_keys:
            holders = self._by_alias.get(key)
            if holders is not None:
                holders.discard(page_id)
                if not holders:
                    del self._by_alias[key]

    def _hybrid(self, query: str, ranked: list[Hit], limit: int) -> list[Hit]:
        """Fuse the lexical ranking with the dense one; the lexical one if embedding fails."""
        semantic = self.semantic
        assert semantic is not None
        if self._unembedded:
            ids = list(self._unembedded)
            vectors = semantic.document_vectors([self._unembedded[i] for i in ids])
            if vectors is not None:
                for page_id, vector in zip(ids, vectors, strict=True):
                    semantic.put(page_id, vector)
                self._unembedded.clear()
        pool = semantic.pool(limit)
        if len(ranked) < pool:
            ranked = self._index.search(query, pool)
        fused = semantic.rerank(query, ranked, max(limit, 1))
        return [hit for hit in fused if hit.key in self._shown]

    def _title_key(self, page_id: str, shown: _Shown) -> frozenset[str]:
        key = self._title_keys.get(page_id)
        if key is None:
            key = self._title_keys[page_id] = _key(shown.title)
        return key

    def search(self, query: str, limit: int, content_of: Callable[[str], str]) -> list[SearchHit]:
        """Rank the pages for a query, best first.

        Args:
            query: Words to look for, as :func:`require_query` returned them.
            limit: How many hits at most.
            content_of: A page's body by id (for the snippet of each hit).

        Returns:
            The hits, title matches first, then alias matches, then by score.
        """
        if not query:
            return []
        if not self._warm:
            # a store loads every page before its first search: the arrays of the common
            # words are built once here, not word by word in the searches that follow
            self._index.warm_up()
            self._warm = True
        key = _key(query)
        by_alias = self._by_alias.get(key, set())
        ranked = self._index.search(query, limit + len(by_alias))
        if self.semantic is not None:
            ranked = self._hybrid(query, ranked, limit + len(by_alias))
        found = {str(hit.key): hit.score for hit in ranked}
        for page_id in by_alias:
            found.setdefault(page_id, 0.0)
        candidates = []
        for page_id, score in found.items():
            shown = self._shown[page_id]
            tier, _ = title_match(self._title_key(page_id, shown), key)
            if tier == TIER_NONE and page_id in by_alias:
                tier = TIER_ALIAS
            # the status penalty is in the engine's score already
            candidates.append(
                Candidate(page_id, score, tier, tiebreak=(shown.title.casefold(), page_id))
            )
        terms = set(analyze_query(query))
        hits = []
        for hit in rank(candidates, limit):
            page_id = str(hit.key)
            shown = self._shown[page_id]
            snippet = _best_line(content_of(page_id), terms)
            hits.append(
                SearchHit(
                    page_id,
                    shown.title,
                    shown.type,
                    hit.tier * _TIER + hit.score,
                    snippet or shown.description or shown.title,
                    shown.status,
                )
            )
        return hits


def _best_line(content: str, terms: set[str]) -> str:
    """The line of ``content`` that holds the most query terms, cut around the first one."""
    best, best_count = "", 0
    for line in content.split("\n"):
        if not line.strip():
            continue
        count = len(terms.intersection(analyze(line)))
        if count > best_count:
            best, best_count = line, count
    if not best:
        return ""
    text = " ".join(best.split())
    if len(text) <= _SNIPPET:
        return text
    lowered = text.casefold()
    starts = [lowered.find(word.casefold()) for word in text.split() if terms & set(analyze(word))]
    first = min((s for s in starts if s >= 0), default=0)
    start = max(0, min(first - _SNIPPET // 4, len(text) - _SNIPPET))
    piece = text[start : start + _SNIPPET].strip()
    return f"{'…' if start else ''}{piece}{'…' if start + _SNIPPET < len(text) else ''}"

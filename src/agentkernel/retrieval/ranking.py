"""The ranking rules every search applies, in one place: title first, status, trust.

A relevance score (BM25F, Lance's BM25, or a fused lexical and dense score) says how well a
document's words answer a query. These rules then order the documents, the same way in every
mode (the in-memory engine, the Lance bundle index, hybrid fusion, the curated stores):

* **Title first.** A hit carries a *tier*: :data:`TIER_TITLE` when the document's title says
  exactly what the query says (the same stems in any order, stop words aside),
  :data:`TIER_ALIAS` when one of its aliases does (the curated stores), :data:`TIER_NONE`
  otherwise. A higher tier always ranks first, whatever the scores. A title whose words
  are all in the query, without being all of it, multiplies the score by
  ``1 + title_boost * share`` (``share``: the fraction of the query's words it covers).
* **Said up front.** Among the best :data:`HEAD_POOL` documents by relevance (a second
  pass: documents further down are not looked at), a document whose *head* (the fields in
  which it says what it is: title, aliases, tags, description) holds query words has its
  score multiplied by ``1 + head_boost * head``, ``head`` being the share of the query's
  term weight found there (:func:`head_scorer`). A long body mentions many words in
  passing; the head says what the document is about, and that is what a question asks for.
* **Status.** A ``deprecated``, ``superseded`` or ``retired`` document has its score
  multiplied by :data:`STATUS_PENALTY`: it ranks below a current document of equal relevance
  and is never filtered out.
* **Trust.** Among hits of one tier and one score, ``human-reviewed`` ranks before
  ``machine-confirmed`` before anything else (:data:`TRUST_RANK`); then the caller's tie-break.

:func:`rank` is the one function that applies them. The hits it returns carry their tier, so
a later fusion (:meth:`agentkernel.retrieval.semantic.SemanticIndex.hybrid`) orders fused
scores by the same rules instead of losing "title first".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from itertools import repeat
from operator import itemgetter
from typing import Any, NamedTuple

from agentkernel.retrieval.analysis import SURFACE, analyze

TIER_NONE = 0
TIER_ALIAS = 1
TIER_TITLE = 2

STATUS_PENALTY: dict[str, float] = {"deprecated": 0.7, "superseded": 0.7, "retired": 0.6}
"""Score multiplier per status; any other status (``stable``, ``draft``, none) keeps 1."""

TRUST_RANK: dict[str, int] = {"human-reviewed": 2, "machine-confirmed": 1}
"""Tie-break among equal tier and score; any other trust tier (``unverified``, none) is 0."""

DEFAULT_TITLE_BOOST = 0.5
DEFAULT_HEAD_BOOST = 0.5
"""The measured strength of the head rule, chosen on tuning sets only: the dev questions
(``bench/questions.jsonl``, ``bench/dev_questions_debian.jsonl``: top-1 0.807 / 0.341 without
the rule, 0.821 / 0.378 at 0.5, 0.848 / 0.402 at 2) and the held-out known-item queries of
``bench/heldout_bench.py`` (seed 99, 10,000 concepts: MRR@10 0.863 without, 0.860 at 0.5,
0.849 at 1, 0.828 at 2, where a package whose description holds some quoted words rises over
the one whose body is quoted). The held-out questions (``bench/heldout_questions.jsonl``) are
only reported (issue 40)."""
HEAD_FIELDS = ("title", "aliases", "tags", "description")
"""The fields in which a document says what it is (the head rule reads them)."""
HEAD_POOL = 10
"""The head rule re-scores this many of the best documents by relevance, whatever the
number of results asked for, so a longer result list starts with the shorter one. 10 and 20
rank the dev questions alike (``bench/heldout_questions_bench.py``); each document re-scored
costs about a microsecond of a lexical search (0.2 ms at 10,000 concepts)."""


class Hit(NamedTuple):
    """One ranked document.

    Attributes:
        key: The document's key (a concept id, a page id, an index slot).
        score: Its final score, the rules applied.
        tier: :data:`TIER_TITLE`, :data:`TIER_ALIAS` or :data:`TIER_NONE`; a higher tier
            ranks first whatever the scores.
    """

    key: Hashable
    score: float
    tier: int = TIER_NONE


class Candidate(NamedTuple):
    """A document before the rules: its relevance and what the rules read.

    Attributes:
        key: The document's key.
        score: Its relevance (higher is better).
        tier: Its tier (see :class:`Hit`).
        share: The fraction of the query's words its title covers when the whole title is
            inside the query (0: not, or already an exact match).
        status: Its lifecycle status (``None``: already applied to ``score``, or none).
        trust: Its trust tier, or ``None``.
        tiebreak: Orders hits equal in every rule (``None``: the key).
        head: The share of the query's weight its head fields hold (:func:`head_scorer`).
    """

    key: Hashable
    score: float
    tier: int = TIER_NONE
    share: float = 0.0
    status: str | None = None
    trust: str | None = None
    tiebreak: Any = None
    head: float = 0.0


def status_factor(status: str | None) -> float:
    """The score multiplier of a lifecycle status.

    Args:
        status: The status, any case; ``None`` or unknown keeps the score.

    Returns:
        A factor in ``(0, 1]``.
    """
    return STATUS_PENALTY.get((status or "").strip().lower(), 1.0)


def title_match(title_key: frozenset[str], query_key: frozenset[str]) -> tuple[int, float]:
    """Compare a title's key with the query's (both as :func:`~.analysis.plain_key` gives).

    Args:
        title_key: The title's stems.
        query_key: The query's stems, stop words aside.

    Returns:
        ``(tier, share)``: :data:`TIER_TITLE` and 0 for an exact match; :data:`TIER_NONE`
        and the share of the query the title covers when the title is inside it; else
        ``(TIER_NONE, 0.0)``.
    """
    if not title_key or not query_key or not title_key <= query_key:
        return TIER_NONE, 0.0
    if len(title_key) == len(query_key):
        return TIER_TITLE, 0.0
    return TIER_NONE, len(title_key) / len(query_key)


def head_terms(fields: Mapping[str, Any], names: Iterable[str] = HEAD_FIELDS) -> tuple[str, ...]:
    """The distinct stems of a document's head fields, as the engine analyses documents.

    Args:
        fields: Field name to text or to a list of texts (aliases, tags).
        names: The head fields.

    Returns:
        The terms, in order of first appearance.
    """
    texts: list[str] = []
    for name in names:
        value = fields.get(name)
        if isinstance(value, str):
            texts.append(value)
        elif value:
            texts.extend(str(item) for item in value)
    if not texts:
        return ()
    # stems only: a word's surface form would count an exact spelling twice (its stem is
    # there too), lifting a title that repeats a query word over one that answers it
    return tuple(dict.fromkeys(t for t in analyze(" ".join(texts)) if not t.startswith(SURFACE)))


def head_scorer(weights: Mapping[str, float]) -> Callable[[Iterable[str]], float]:
    """How much of a query's term weight a document's head fields hold (the head rule's share).

    IDF is left out on purpose: measured on the dev questions, the plain share ranked as well
    or better, and an engine that does not expose IDF (Lance's BM25) computes the same share.

    Args:
        weights: The query's terms and their weights (:func:`~.analysis.parse_query`), terms
            no document holds left out.

    Returns:
        A function of a document's distinct head terms (:func:`head_terms`) giving its share
        in ``[0, 1]`` (always 0 for a query of no weight). One per query, called per document.
    """
    total = sum(weights.values())
    if total <= 0.0:
        return lambda head: 0.0
    get = weights.get
    zeros = repeat(0.0)  # map stops with the head terms: the endless zeros are never used up
    scale = 1.0 / total
    return lambda head: sum(map(get, head, zeros)) * scale


def rank(
    candidates: Iterable[Candidate] | Iterable[tuple[Any, ...]],
    limit: int | None = None,
    *,
    title_boost: float = DEFAULT_TITLE_BOOST,
    head_boost: float = DEFAULT_HEAD_BOOST,
) -> list[Hit]:
    """Apply the ranking rules and order the candidates, best first.

    Args:
        candidates: Documents with their relevance and what the rules read: each a
            :class:`Candidate` or a plain tuple of its eight fields.
        limit: The most hits returned (``None``: all).
        title_boost: How much a title inside the query raises a score.
        head_boost: How much query words in the head fields raise a score.

    Returns:
        Hits with their final score and tier: by tier, then score, then trust, then the
        candidates' tie-break.
    """
    penalty = STATUS_PENALTY
    trusted = TRUST_RANK
    rows: list[tuple[int, float, int, Any, Hashable, float, int]] = []
    for key, score, tier, share, status, trust, tiebreak, head in candidates:
        if head:
            score *= 1.0 + head_boost * head
        if status:
            factor = penalty.get(status)
            score *= factor if factor is not None else status_factor(status)
        if share:
            score *= 1.0 + title_boost * share
        order = 0
        if trust:
            found = trusted.get(trust)
            order = found if found is not None else trusted.get(trust.strip().lower(), 0)
        rows.append(
            (-tier, -score, -order, key if tiebreak is None else tiebreak, key, score, tier)
        )
    rows.sort(key=_ORDER)
    kept = rows if limit is None else rows[:limit]
    return [Hit(key, score, tier) for _, _, _, _, key, score, tier in kept]


_ORDER = itemgetter(0, 1, 2, 3)


def fused(hits: Iterable[tuple[Hashable, float]], tiers: dict[Hashable, int]) -> list[Hit]:
    """Order fused scores by the rules: the tiers the lexical hits carried come back first.

    A fusion mixes scores of different scales; the status penalty is already in the lexical
    score, so only the tiers (and the fused order, as the tie-break) are applied here.

    Args:
        hits: ``(key, fused score)`` best first.
        tiers: Each lexical hit's tier by key (absent: :data:`TIER_NONE`).

    Returns:
        The hits, title matches first.
    """
    return rank(
        Candidate(key, score, tiers.get(key, TIER_NONE), tiebreak=position)
        for position, (key, score) in enumerate(hits)
    )

"""One analysis for documents and queries: folding, identifiers, stop words, stemming.

Text becomes *terms* in four steps, the same for a document and a query so that both meet
in one vocabulary:

1. Accents fold away (``café`` -> ``cafe``) and case folds (``Straße`` -> ``strasse``).
2. Words are runs of letters, digits and ``_``; everything else separates them.
3. An identifier (a word with ``_`` or an inner capital: ``fct_orders``, ``VoteTypeId``,
   ``posts_answers__posts_questions``) yields itself whole, lower-cased and unstemmed, and
   then each of its parts, so ``fct_orders`` in a query matches the exact name first and the
   words ``fct`` and ``orders`` second.
4. Every other word, and every part, is reduced to its Snowball English stem (PyStemmer,
   the Snowball project's own C build): ``purchased``, ``purchases`` and ``purchasing`` all
   become ``purchas``.

Queries also drop stop words (:data:`QUERY_STOPWORDS`: the words a question is built from,
``how``, ``which``, ``many``, ``I``...), unless that would leave nothing, in which case the
query keeps them all. Function words (``the``, ``of``: :data:`FUNCTION_WORDS`) stay in the
query, where their low IDF already makes them count little and they still tell an exact
phrase apart, but titles are compared without them. Documents keep every word, so a query
made only of stop words still finds something.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import Stemmer

# the function words that carry no topic: titles are compared without them. Queries keep them
# (at FUNCTION_WEIGHT): dropping them, or a longer general list (``not``, ``only``, ``other``),
# lost known-item phrases on the Debian bench
_FUNCTION_WORDS = """a an and are as at be but by for from has have in into is it its of on or
that the their then there these this to was were will with"""

# the words people wrap a question or a request in; none of them names a concept
_QUESTION_WORDS = """how what which who whom whose why when where whats hows wheres i me my
mine myself we our ours you your yours he him his she her they them do does did doing done can
could would should shall may might must am been being had having many much some any something
anything someone anyone somebody anybody thing things way ways please tell show find give get
gets got need needs want wants know let lets also else ever im ive dont doesnt isnt arent cant
wont eg ie etc if about"""

QUERY_STOPWORDS = frozenset(_QUESTION_WORDS.split())
"""Words a query drops before matching (never all of them: see :func:`analyze_query`)."""

FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
"""Words a query weighs at :data:`FUNCTION_WEIGHT` and titles are compared without."""

_RAW_WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CAMEL_BOUNDARY = re.compile(r"[a-z\d][A-Z]|[A-Z][A-Z][a-z]")
# ASCII text takes a faster road to the same words: bytes that cannot be in a word become
# spaces, and ``split`` cuts there (case is kept: inner capitals mark identifier parts)
_ASCII_WORD_BYTES = bytes(
    c if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95) else 32 for c in range(256)
)
_CACHE_LIMIT = 500_000
SURFACE = "="
"""Prefix of a word's own form, indexed beside its stem when the two differ."""
KEEP_SURFACE = True
MAX_QUERY_WORDS = 256
"""A query's distinct words beyond this many are ignored (a pasted megabyte stays cheap)."""
MAX_TITLE_WORDS = 12
"""A title of more distinct words is never compared with a query (see :func:`title_key`)."""
STEM_WEIGHT = 0.5
FUNCTION_WEIGHT = 1.0
"""Query weight of a function word; 1 was best on held-out Debian queries (0.25 and 0.5 lost
known-item phrases at 10,000 and 40,000 concepts and gained no paraphrase)."""
"""Query weight of a stem standing in for an inflected word (see :func:`query_weights`)."""

_stemmer = Stemmer.Stemmer("english")

K = TypeVar("K")
V = TypeVar("V")


class Memo(dict[K, V]):
    """The memo of a pure function: a dict filled on first lookup, emptied when full.

    ``memo[key]`` computes a missing value and keeps it; ``memo.get(key)`` only looks. The
    limit bounds memory over a long-running process (the words of a large corpus).
    """

    def __init__(self, compute: Callable[[K], V], limit: int = _CACHE_LIMIT) -> None:
        """Start empty.

        Args:
            compute: The function memoised.
            limit: The most entries; reaching it empties the memo.
        """
        super().__init__()
        self._compute = compute
        self._limit = limit

    def __missing__(self, key: K) -> V:
        if len(self) >= self._limit:
            self.clear()
        value = self[key] = self._compute(key)
        return value


_stems: Memo[str, str] = Memo(_stemmer.stemWord)


def fold(text: str) -> str:
    """Fold accents away from ``text`` (case is left alone: see :func:`words`).

    Args:
        text: Any text.

    Returns:
        The text with combining marks removed after compatibility decomposition.
    """
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Split text into raw words (letters, digits and ``_``), accents folded, case kept.

    Args:
        text: Any text.

    Returns:
        The words, in order.
    """
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()
    return _RAW_WORD.findall(fold(text))


def stem(word: str) -> str:
    """Return the Snowball English stem of one lower-case word (memoised).

    Args:
        word: A lower-case word.

    Returns:
        Its stem.
    """
    return _stems[word]


def split_identifier(word: str) -> list[str]:
    """Split an identifier into its lower-case parts at ``_`` and at inner capitals.

    Args:
        word: A raw word (case kept).

    Returns:
        The parts; a plain word gives itself, lower-cased.

    Example:
        >>> split_identifier("VoteTypeId")
        ['vote', 'type', 'id']
        >>> split_identifier("posts_answers__posts_questions")
        ['posts', 'answers', 'posts', 'questions']
    """
    parts: list[str] = []
    for piece in word.split("_"):
        if not piece:
            continue
        if not _CAMEL_BOUNDARY.search(piece):
            parts.append(piece.casefold())
        else:
            parts.extend(p.casefold() for p in _CAMEL.findall(piece) or [piece])
    return parts


def expand(word: str) -> tuple[str, ...]:
    """Return the terms one raw word contributes (memoised).

    A plain word gives its stem; an identifier gives itself whole (lower-cased, unstemmed)
    followed by the stem of each part.

    Args:
        word: A raw word from :func:`words`.

    Returns:
        The terms.
    """
    return _expansions[word]


def _expand(word: str) -> tuple[str, ...]:
    parts = split_identifier(word)
    if not parts:
        return ()
    if len(parts) == 1:
        part = parts[0]
        root = stem(part)
        return (root,) if root == part or not KEEP_SURFACE else (root, SURFACE + part)
    return (word.casefold().strip("_"), *(stem(p) for p in parts))


_expansions: Memo[str, tuple[str, ...]] = Memo(_expand)


def expansions() -> Mapping[str, tuple[str, ...]]:
    """The memo of :func:`expand`: raw word to its terms (look up here, fill through it).

    Returns:
        The live memo (read only).
    """
    return _expansions


def analyze(text: str) -> list[str]:
    """Turn document text into terms (every word kept, identifiers whole and split).

    Args:
        text: Any text.

    Returns:
        The terms, in order.
    """
    terms: list[str] = []
    for word in words(text):
        terms.extend(expand(word))
    return terms


def word_counts_of(counted: Iterable[tuple[Mapping[str, int], float]]) -> dict[str, float]:
    """Turn word counts into term counts, each group of words weighed by its own factor.

    Args:
        counted: ``(word to count, weight)`` pairs, e.g. all of a document's words at 1 and
            a heavier field's words at the part of its weight above 1.

    Returns:
        Term to weighted count.
    """
    counts: dict[str, float] = {}
    get = counts.get
    cache = _expansions
    for found, weight in counted:
        for word, count in found.items():
            terms = cache.get(word)
            if terms is None:
                terms = expand(word)
            gain = count if weight == 1 else count * weight
            for term in terms:
                counts[term] = get(term, 0) + gain
    return counts


def analyze_query(text: str) -> list[str]:
    """Turn a query into terms: like :func:`analyze`, without stop words unless all are.

    Args:
        text: The query.

    Returns:
        The terms of its first :data:`MAX_QUERY_WORDS` distinct words, in order.
    """
    terms: list[str] = []
    for word in _query_words(text):
        terms.extend(expand(word))
    return terms


def query_weights(text: str) -> dict[str, float]:
    """Weigh each distinct query term: a word's own form 1, its stem :data:`STEM_WEIGHT`.

    A stem shared by the word's own form (``order`` for ``order``) and every identifier
    term weigh 1. So a document with the very word asked for outranks one with only an
    inflection of it, and the inflection still counts.

    Args:
        text: The query.

    Returns:
        Term to weight, in query order.
    """
    return parse_query(text)[0]


def parse_query(text: str) -> tuple[dict[str, float], tuple[str, ...]]:
    """Both readings of a query in one pass: :func:`query_weights` and :func:`plain_key`.

    Args:
        text: The query.

    Returns:
        The weighted terms and the key.
    """
    found: dict[str, float] = {}
    key: list[str] = []
    rest: list[str] = []  # the key of the function words, used when there is nothing else
    cache = _expansions
    for word in _query_words(text):
        terms = cache.get(word) or expand(word)
        function = word.casefold() in FUNCTION_WORDS
        scale = FUNCTION_WEIGHT if function else 1.0
        if len(terms) == 2 and terms[1].startswith(SURFACE):
            found[terms[0]] = max(found.get(terms[0], 0.0), STEM_WEIGHT * scale)
            found[terms[1]] = max(found.get(terms[1], 0.0), scale)
            stems: tuple[str, ...] = terms[:1]
        else:
            for term in terms:
                found[term] = max(found.get(term, 0.0), scale)
            stems = terms[1:] if len(terms) > 1 else terms
        (rest if function else key).extend(stems)
    return found, tuple(key or rest)


def plain_key(text: str) -> tuple[str, ...]:
    """Return the stems of the words of ``text`` that name something, identifiers split.

    Question words and function words are left out (all of them kept when nothing else is
    left). Two texts with the same key say the same words (``Roast yield`` and ``roast
    yields``, ``fct_orders`` and ``fct orders``); the index compares titles and queries with it.

    Args:
        text: A title or a query.

    Returns:
        The key, in order.
    """
    return parse_query(text)[1]


def title_key(title: str, most: int = MAX_TITLE_WORDS) -> frozenset[str]:
    """The words a title is compared with queries by: its :func:`plain_key`, as a set.

    Args:
        title: A title.
        most: The most distinct words a title compared with queries may have.

    Returns:
        The key; empty for a longer title (never compared).
    """
    if len(words(title)) > most * 2:
        return frozenset()
    key = frozenset(plain_key(title))
    return key if len(key) <= most else frozenset()


def _query_words(text: str) -> list[str]:
    raw = list(dict.fromkeys(words(text)))
    kept = [w for w in raw if not _is_stopword(w)] or raw
    return kept[:MAX_QUERY_WORDS]


def _is_stopword(word: str) -> bool:
    return word.casefold() in QUERY_STOPWORDS


def analyze_all(texts: Iterable[str]) -> list[str]:
    """Analyze several texts as one (a list of aliases or tags).

    Args:
        texts: The texts.

    Returns:
        Their terms, in order.
    """
    terms: list[str] = []
    for text in texts:
        terms.extend(analyze(text))
    return terms

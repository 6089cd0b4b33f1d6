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

Queries also drop stop words (:data:`QUERY_STOPWORDS`: the usual English list and the words
a question is built from, ``how``, ``which``, ``many``...), unless that would leave nothing,
in which case the query keeps them all. Documents keep every word, so a query made only of
stop words still finds something.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import Stemmer

_ENGLISH_STOPWORDS = """a about above after again against all am an and any are as at be because
been before being below between both but by can cannot could did do does doing down during each
few for from further had has have having he her here hers herself him himself his i if in into
is it its itself just me more most my myself no nor not now of off on once only or other ought
our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves"""

# the words people wrap a question or a request in; none of them names a concept
_QUESTION_WORDS = """how many much whose whats hows wheres im ive dont doesnt isnt arent cant
wont something anything someone anyone somebody anybody thing things way ways please tell show
find give get gets got need needs want wants know let lets may might must shall also else ever
eg ie etc"""

QUERY_STOPWORDS = frozenset((_ENGLISH_STOPWORDS + " " + _QUESTION_WORDS).split())
"""Words a query drops before matching (never all of them: see :func:`analyze_query`)."""

_RAW_WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CAMEL_BOUNDARY = re.compile(r"[a-z\d][A-Z]|[A-Z][A-Z][a-z]")
# ASCII text takes a faster road to the same words: bytes that cannot be in a word become
# spaces, and ``split`` cuts there (case is kept: inner capitals mark identifier parts)
_ASCII_WORD_BYTES = bytes(
    c if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95) else 32 for c in range(256)
)
_CACHE_LIMIT = 500_000

_stemmer = Stemmer.Stemmer("english")
_expansions: dict[str, tuple[str, ...]] = {}
_stems: dict[str, str] = {}


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
    found = _stems.get(word)
    if found is None:
        if len(_stems) >= _CACHE_LIMIT:
            _stems.clear()
        found = _stems[word] = _stemmer.stemWord(word)
    return found


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
    found = _expansions.get(word)
    if found is not None:
        return found
    parts = split_identifier(word)
    if not parts:
        found = ()
    elif len(parts) == 1:
        found = (stem(parts[0]),)
    else:
        found = (word.casefold().strip("_"), *(stem(p) for p in parts))
    if len(_expansions) >= _CACHE_LIMIT:
        _expansions.clear()
    _expansions[word] = found
    return found


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


def analyze_query(text: str) -> list[str]:
    """Turn a query into terms: like :func:`analyze`, without stop words unless all are.

    Args:
        text: The query.

    Returns:
        The terms, in order, duplicates kept (callers that score sets dedupe).
    """
    raw = words(text)
    kept = [w for w in raw if not _is_stopword(w)]
    terms: list[str] = []
    for word in kept or raw:
        terms.extend(expand(word))
    return terms


def plain_key(text: str) -> tuple[str, ...]:
    """Return the stems of the non-stop words of ``text``, identifiers split, in order.

    Two texts with the same key say the same words (``Roast yield`` and ``roast yields``,
    ``fct_orders`` and ``fct orders``); the index compares titles and queries with it.

    Args:
        text: A title or a query.

    Returns:
        The key (the stop words too when the text has nothing else).
    """
    raw = words(text)
    kept = [w for w in raw if not _is_stopword(w)] or raw
    key: list[str] = []
    for word in kept:
        terms = expand(word)
        key.extend(terms[1:] if len(terms) > 1 else terms)
    return tuple(key)


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

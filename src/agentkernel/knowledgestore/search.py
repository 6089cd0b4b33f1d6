"""Search ranking every store shares: title above aliases above body, accents and case ignored.

A store may find candidates however it likes (the SQLite store asks FTS5); the order and the
snippet come from here, so a query ranks pages the same way whatever stores them.

A term matches where a word starts with it (``tide`` finds "Tides", not "riptide"), the
way FTS5 prefix queries match tokens. The score of a page is
``10000 * t + 100 * a + min(b, 99)``, where ``t`` is how many query terms match its title,
``a`` how many match its aliases and ``b`` how many (term, line) pairs of its body match.
A title match therefore always outranks any alias or body match, and an alias match any
body match.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentkernel.knowledgestore._pages import description_of
from agentkernel.knowledgestore.model import SearchHit

_WORD = re.compile(r"[^\W_]+")
_MAX_TERMS = 32
_SNIPPET = 200


_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def fold(text: str) -> str:
    """Fold text for matching: case-insensitive and accent-insensitive.

    Args:
        text: Any text.

    Returns:
        The text casefolded, decomposed, with combining marks removed (``"Café"`` -> ``"cafe"``).
    """
    if text.isascii():
        return text.lower()
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text.casefold()))


def query_terms(query: str) -> list[str]:
    """Split a query into folded terms, each once.

    Terms of one character are dropped unless the query has nothing longer.

    Args:
        query: Words to look for.

    Returns:
        At most 32 terms, in query order.
    """
    words = list(dict.fromkeys(_WORD.findall(fold(query))))
    longer = [w for w in words if len(w) > 1]
    return (longer or words)[:_MAX_TERMS]


@functools.lru_cache(maxsize=64)
def _patterns(terms: tuple[str, ...]) -> list[re.Pattern[str]]:
    """A term matches at the start of a word (as FTS5 prefix queries do), not mid-word."""
    return [re.compile(r"(?<![^\W_])" + re.escape(term)) for term in terms]


@dataclass(frozen=True)
class Searchable:
    """What ranking needs of a page.

    Attributes:
        id: ``type/slug``.
        type: The type's name.
        title: The title.
        aliases: Its ``aliases`` field, comma-separated (``""`` if none).
        content: Its body, links as ids.
        fields: Its fields; the description made from them (or from the content) is the
            snippet when the body did not match.
    """

    id: str
    type: str
    title: str
    content: str
    fields: Mapping[str, str]


def _snippet(line: str, terms: list[str]) -> str:
    text = " ".join(line.split())
    if len(text) <= _SNIPPET:
        return text
    folded = fold(text)
    first = min((folded.find(t) for t in terms if t in folded), default=0)
    start = max(0, min(first - _SNIPPET // 4, len(text) - _SNIPPET))
    piece = text[start : start + _SNIPPET].strip()
    return f"{'…' if start else ''}{piece}{'…' if start + _SNIPPET < len(text) else ''}"


def score_page(terms: list[str], page: Searchable) -> SearchHit | None:
    """Score one page against folded query terms.

    Args:
        terms: From :func:`query_terms`.
        page: The page.

    Returns:
        A hit, or ``None`` when nothing matched.
    """
    if not terms:
        return None
    patterns = _patterns(tuple(terms))
    title = fold(page.title)
    aliases = fold(page.fields.get("aliases", ""))
    in_title = sum(bool(p.search(title)) for p in patterns)
    in_aliases = sum(bool(p.search(aliases)) for p in patterns)
    body = 0
    best_line, best_count = "", 0
    folded_content = fold(page.content)
    if not any(p.search(folded_content) for p in patterns):
        lines: list[tuple[str, str]] = []
    else:
        lines = list(zip(page.content.split("\n"), folded_content.split("\n"), strict=False))
    for line, folded in lines:
        if not line.strip():
            continue
        count = sum(bool(p.search(folded)) for p in patterns)
        body += count
        if count > best_count:
            best_line, best_count = line, count
    if not (in_title or in_aliases or body):
        return None
    score = 10_000 * in_title + 100 * in_aliases + min(body, 99)
    if best_line:
        snippet = _snippet(best_line, terms)
    else:
        snippet = description_of(page.fields, page.content) or page.title
    return SearchHit(page.id, page.title, page.type, float(score), snippet)


def rank(query: str, pages: Iterable[Searchable], limit: int = 10) -> list[SearchHit]:
    """Rank pages for a query, best first.

    Args:
        query: Words to look for.
        pages: The candidates (retired pages already left out).
        limit: How many hits at most.

    Returns:
        The hits, by score, then title, then id.
    """
    terms = query_terms(query)
    hits = [hit for page in pages if (hit := score_page(terms, page)) is not None]
    hits.sort(key=lambda h: (-h.score, h.title.casefold(), h.id))
    return hits[:limit]

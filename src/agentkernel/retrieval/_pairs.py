"""The word-pair filter behind the rule for words in order (see :mod:`.index`).

Each document keeps a small bit set of its adjacent word pairs (stems compared); a query's
pairs are looked up in the filters of the best BM25 candidates, and a candidate holding some
of them has its score raised by the share it holds.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Mapping

from agentkernel.retrieval.analysis import QUERY_STOPWORDS, Memo, stem, words

MAX_QUERY_PAIRS = 16
"""A longer query's later word pairs are not looked for."""
PHRASE_SKIP: frozenset[str] = QUERY_STOPWORDS
"""Query word pairs holding one of these words are not looked for (see :func:`query_pairs`)."""

_word_hashes: Memo[str, int] = Memo(lambda word: zlib.crc32(stem(word).encode("utf-8")))

Fields = Mapping[str, "str | Iterable[str] | None"]


def pair_hashes(found: list[str]) -> list[int]:
    """32-bit hashes of each two consecutive words' stems (case and inflection aside).

    Args:
        found: Raw words, in order.

    Returns:
        One hash per adjacent pair.
    """
    hashes = [word_hash(word) for word in map(str.lower, found)]
    return [(a * 1_000_003 ^ b) & 0xFFFFFFFF for a, b in itertools.pairwise(hashes)]


def word_hash(word: str) -> int:
    """The CRC-32 of a lower-case word's stem (memoised).

    Not ``hash()``: Python salts it per process, so the phrase filter's rare false matches,
    and with them the ranking, would differ between two processes over the same bundle.

    Args:
        word: A lower-case word.

    Returns:
        The hash.
    """
    return _word_hashes[word]


def pairs_of(fields: Fields) -> bytes:
    """A filter of every field's adjacent word pairs (none across fields).

    A bit set of 16 bits per pair (a power of two, at least 64) with two bits set per pair
    (its hash and :func:`second`, masked): a pair that is held is always found; one that is
    not is taken for held about once in a hundred tries (a small bonus given by mistake,
    never a result lost).

    Args:
        fields: Field name to text or texts.

    Returns:
        The filter; empty when no field holds two words.
    """
    hashes: list[int] = []
    for value in fields.values():
        if value:
            for text in [value] if isinstance(value, str) else value:
                hashes += pair_hashes(words(text))
    if not hashes:
        return b""
    size = max(64, 1 << (len(hashes) * 16 - 1).bit_length())
    found = bytearray(size // 8)
    mask = size - 1
    for pair in hashes:
        first, other = pair & mask, second(pair) & mask
        found[first >> 3] |= 1 << (first & 7)
        found[other >> 3] |= 1 << (other & 7)
    return bytes(found)


def second(pair: int) -> int:
    """A pair's second bit position before the filter's mask (the first is the hash).

    Args:
        pair: A pair hash.

    Returns:
        The unmasked bit position.
    """
    return pair >> 16 ^ pair * 0x9E3779B1


def query_pairs(query: str) -> list[int]:
    """The hashes of the query's distinct adjacent word pairs, as :func:`pairs_of` takes them.

    A pair holding a question word (``how many``, ``do I``) is left out, as BM25 leaves the
    word out: it says how the question is asked, not what it is about.

    Args:
        query: The query.

    Returns:
        The pair hashes, in query order.
    """
    found = words(query)[: MAX_QUERY_PAIRS + 1]
    hashes = pair_hashes(found)
    skip = PHRASE_SKIP
    kept = [
        value
        for value, first, other in zip(hashes, found, found[1:], strict=False)
        if first.casefold() not in skip and other.casefold() not in skip
    ]
    return list(dict.fromkeys(kept))


def raise_by_pairs(
    filters: list[bytes], candidates: dict[int, float], needles: list[int], boost: float
) -> None:
    """Raise each candidate's score by the share of the query's word pairs it holds.

    Args:
        filters: Slot to its pair filter.
        candidates: Slot to score, changed in place.
        needles: The query's pair hashes (:func:`query_pairs`), at least one.
        boost: The score multiplier at a share of 1 is ``1 + boost``.
    """
    gain = boost / len(needles)
    seeds = [(needle, second(needle)) for needle in needles]
    probes: dict[int, list[tuple[int, int, int, int]]] = {}  # filter bytes -> bits
    for slot, score in candidates.items():
        bits = filters[slot]
        if not bits:
            continue
        wanted = probes.get(len(bits))
        if wanted is None:
            mask = len(bits) * 8 - 1
            wanted = probes[len(bits)] = [
                ((a & mask) >> 3, 1 << (a & 7), (b & mask) >> 3, 1 << (b & 7)) for a, b in seeds
            ]
        held = 0
        for first, first_bit, other, other_bit in wanted:
            if bits[first] & first_bit and bits[other] & other_bit:
                held += 1
        if held:
            candidates[slot] = score * (1.0 + gain * held)

"""A small, deterministic embedder for tests that need no model: counts of known words.

It is a real :class:`agentkernel.retrieval.Embedder` (texts in, unit vectors out, the same
vectors in every process), not a stand-in for a hosted service: a vector counts each word of
a fixed vocabulary in the text (lower-cased), plus a small constant component so no text has
a zero vector. Two texts are near when they use the same vocabulary words. Tests choose the
words, so they can make the dense ranking disagree with the lexical one on purpose.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_WORD = re.compile(r"[a-z]+")
_BIAS = 0.01


class VocabularyEmbedder:
    """Word counts over a fixed vocabulary, normalised."""

    def __init__(self, vocabulary: Sequence[str]) -> None:
        self.vocabulary = {word: i for i, word in enumerate(vocabulary)}
        self.dimension = len(vocabulary) + 1
        self.model_id = f"test-vocabulary:{'-'.join(vocabulary)}"
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        vectors = []
        for text in texts:
            row = [0.0] * self.dimension
            row[-1] = _BIAS
            for word in _WORD.findall(text.lower()):
                slot = self.vocabulary.get(word)
                if slot is not None:
                    row[slot] += 1.0
            norm = math.sqrt(sum(v * v for v in row))
            vectors.append([v / norm for v in row])
        return vectors

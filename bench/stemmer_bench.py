#!/usr/bin/env python3
"""Snowball English stemmers side by side: speed on real words, and whether they agree.

The words are every distinct lower-case word of the Debian bench corpus (``bench/_corpus.py``).
Compared: PyStemmer (the Snowball project's C library behind a Python binding, what the
retrieval analysis uses) and snowballstemmer (the same project's pure-Python build).

Usage:
    python bench/stemmer_bench.py
"""

from __future__ import annotations

import sys
import time
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    import _corpus
    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    from agentkernel.retrieval.analysis import words

    corpus = _corpus.prepare(HERE / ".data", 10_000, 10, 20260530, lambda m: None)
    distinct = sorted({w.lower() for c in corpus.concepts for w in words(c.body)})
    c_stemmer = Stemmer.Stemmer("english", 0)  # no cache: every call stems
    # snowballstemmer.stemmer() hands out PyStemmer whenever it is importable; its own
    # pure-Python English stemmer is taken directly
    py_stemmer = EnglishStemmer()
    rows = []
    results = {}
    for name, stem_all in (
        (f"PyStemmer {version('PyStemmer')}", c_stemmer.stemWords),
        (f"snowballstemmer {version('snowballstemmer')} (pure Python)", py_stemmer.stemWords),
    ):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            out = stem_all(distinct)
            best = min(best, time.perf_counter() - start)
        results[name] = out
        rows.append((name, best))
    a, b = results.values()
    same = sum(x == y for x, y in zip(a, b, strict=True))
    print(f"{len(distinct)} distinct words of the Debian corpus, best of 3")
    print()
    print("| stemmer | seconds | us per word |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {seconds / len(distinct) * 1e6:.2f} |")
    print()
    print(f"same stem for {same} of {len(distinct)} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())

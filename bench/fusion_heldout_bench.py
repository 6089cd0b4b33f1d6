#!/usr/bin/env python3
"""Fusion of lexical and dense rankings, chosen on held-out paraphrase queries.

The paraphrase bench's corpus (10,000 Debian packages without their one-line descriptions,
the same bundle and the same cached vectors as ``semantic_bench.py``), but queries drawn with
other seeds (99, 7, 3), leaving out every package the bench's own 500 queries target; the
question set is never read. Each query's lexical ranking (BM25F scores, ``OKFManager``
without an embedder) and its dense one (cosine) are computed once, top 100 each; then each fusion is
scored on the same lists. Needs the vector cache filled (``semantic_bench.py`` fills it).

Usage:
    python bench/fusion_heldout_bench.py                 # 300 queries per seed
    python bench/fusion_heldout_bench.py --queries 100 --seeds 99
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import retrieval_bench  # noqa: E402

SEED = 20260530  # the bench's corpus seed; its queries come from Random(SEED + 1)
Lists = tuple[list[tuple[str, float]], list[tuple[str, float]]]  # lexical, dense: top 100
Fusion = Callable[[Lists], list[str]]


def minmax_blend(
    lexical: list[tuple[str, float]], dense: list[tuple[str, float]], weight: float
) -> list[str]:
    """The fusion before (for comparison): min-max normalised scores, weighted and summed."""
    scores: dict[str, float] = {}
    for ranking, share in ((lexical, weight), (dense, 1.0 - weight)):
        if ranking:
            high, low = ranking[0][1], ranking[-1][1] if len(ranking) > 1 else 0.0
            for key, value in ranking:
                scores[key] = scores.get(key, 0.0) + share * (value - low) / ((high - low) or 1.0)
    return sorted(scores, key=lambda key: -scores[key])[:10]


def fusions() -> dict[str, Fusion]:
    from agentkernel.retrieval.semantic import blend, fuse

    def dense_top(dense: list[tuple[str, float]], n: int) -> list[tuple[str, float]]:
        return dense[:n]

    out: dict[str, Fusion] = {
        "lexical": lambda pair: [k for k, _ in pair[0][:10]],
        "dense": lambda pair: [k for k, _ in dense_top(pair[1], 10)],
    }
    for n in (20, 50, 100):
        for k in (10, 60):
            out[f"RRF k={k}, top {n}"] = lambda pair, k=k, n=n: [
                str(key)
                for key, _ in fuse(
                    [[key for key, _ in pair[0][:n]], [key for key, _ in dense_top(pair[1], n)]],
                    10,
                    k,
                )
            ]
        out[f"min-max blend, lexical 0.4, top {n} (before)"] = lambda pair, n=n: minmax_blend(
            pair[0][:n], pair[1][:n], 0.4
        )
        for weight in (0.3, 0.4, 0.45, 0.5, 0.6):
            out[f"z-score blend, lexical {weight}, top {n}"] = lambda pair, w=weight, n=n: [
                key for key, _ in blend(pair[0][:n], dense_top(pair[1], n), 10, w)
            ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fusion_heldout_bench.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    parser.add_argument("--seeds", default="99,7,3")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    corpus = _corpus.prepare(args.data, 10_000, 10, SEED, lambda _: None)
    usable = [c for c in corpus.concepts if c.description.strip()]
    tested = {c.id for c in random.Random(SEED + 1).sample(usable, min(500, len(usable)))}
    heldout = [c for c in usable if c.id not in tested]
    seeds = [int(s) for s in args.seeds.split(",")]
    sets = {s: random.Random(s).sample(heldout, args.queries) for s in seeds}
    scratch = Path(tempfile.mkdtemp(prefix="fusion-"))
    try:
        root = retrieval_bench.paraphrase_bundle(corpus, scratch)
        lexical = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
        hybrid = OKFManager(
            LocalDocumentStore(root, writable=False),
            refresh_seconds=None,
            embedder="default",
            cache_dir=args.cache,
        )
        assert hybrid.semantic is not None
        print(f"vectors embedded at start (0 when the cache is warm): {hybrid.semantic.embedded}")
        methods = fusions()
        rows: dict[str, list[tuple[float, float]]] = {name: [] for name in methods}
        for seed in seeds:
            lists: list[tuple[Lists, str]] = []
            for concept in sets[seed]:
                query = concept.description
                lex = [
                    (str(r["metadata"]["id"]), float(r["metadata"]["score"]))
                    for r in lexical.search(query, 100)
                ]
                dense = hybrid.semantic.search(query, 100) or []
                lists.append(((lex, dense), concept.id))
            for name, method in methods.items():
                top1 = r10 = 0
                for pair, target in lists:
                    ranked = method(pair)
                    top1 += bool(ranked) and ranked[0] == target
                    r10 += target in ranked
                rows[name].append((top1 / len(lists), r10 / len(lists)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{args.queries} held-out queries per seed, 10,000 concepts\n")
    header = ["fusion", *(f"seed {s} top-1 / R@10" for s in seeds), "mean top-1", "mean R@10"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, values in rows.items():
        cells = [f"{t:.3f} / {r:.3f}" for t, r in values]
        mean_t = sum(t for t, _ in values) / len(values)
        mean_r = sum(r for _, r in values) / len(values)
        print(f"| {name} | " + " | ".join(cells) + f" | {mean_t:.3f} | {mean_r:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

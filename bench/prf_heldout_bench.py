#!/usr/bin/env python3
"""Pseudo-relevance feedback on the dense side of hybrid search, on held-out data only.

The query vector moves toward the centroid of its first ``k`` results (Rocchio without
negatives): ``unit(q + beta * mean(top k document vectors))``, then the dense top 100 is taken
again and fused with the same lexical list by ``semantic.blend``. The ``k`` results come from
the hybrid ranking (``prf hybrid``: the lexical side steers the query vector) or from the dense
ranking alone (``prf dense``).

Sets (as ``multivec_heldout_bench.py``; never ``bench/questions.jsonl``): the 82 dev questions
over the 10,000 Debian packages, and the paraphrase corpus with seeds 99, 7 and 3. The document
side is what the library keeps (unit(0.8 whole + 0.2 name)), the lexical side BM25F with the
word-pair phrase rule.

Usage:
    python bench/prf_heldout_bench.py
    python bench/prf_heldout_bench.py --embedder /path/to/model --cache /path/to/cache
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import multivec_heldout_bench as mv  # noqa: E402
import retrieval_bench  # noqa: E402

DEPTHS = (1, 3, 5)
BETAS = (0.25, 0.5, 1.0)


def variants(bundle: mv.Bundle, pairs: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    """(top-1, R@10, MRR@10) of lexical, dense, hybrid and each feedback variant."""
    from agentkernel.retrieval.semantic import TEXT_WEIGHTS, blend

    whole, name = TEXT_WEIGHTS
    mix = whole * bundle.matrices["full"] + name * bundle.matrices["short"]
    documents = mix / np.linalg.norm(mix, axis=1, keepdims=True)
    queries = bundle.query_matrix([q for q, _ in pairs])
    lexical = bundle.lexical_lists([q for q, _ in pairs])["bm25f+phrase"]
    slot = {key: i for i, key in enumerate(bundle.keys)}
    dense = [mv.top(bundle.keys, row, 100) for row in queries @ documents.T]
    hybrid = [blend(lex, den, 100) for lex, den in zip(lexical, dense, strict=True)]
    out: dict[str, np.ndarray] = {}

    def score(name: str, ranked: list[list[str]]) -> None:
        acc = np.zeros(3)
        for keys, (_, target) in zip(ranked, pairs, strict=True):
            acc += mv.metrics(keys, target)
        out[name] = acc / len(pairs)

    score("lexical", [[k for k, _ in lex[:10]] for lex in lexical])
    score("dense", [[k for k, _ in den[:10]] for den in dense])
    score("hybrid", [[k for k, _ in fused[:10]] for fused in hybrid])
    for source, firsts in (("hybrid", hybrid), ("dense", dense)):
        for depth in DEPTHS:
            for beta in BETAS:
                ranked = []
                for i, first in enumerate(firsts):
                    centroid = documents[[slot[key] for key, _ in first[:depth]]].mean(axis=0)
                    moved = queries[i] + beta * centroid
                    moved /= np.linalg.norm(moved)
                    again = mv.top(bundle.keys, documents @ moved, 100)
                    ranked.append([key for key, _ in blend(lexical[i], again, 10)])
                score(f"prf {source} k={depth} beta={beta}", ranked)
    return out


def show(title: str, runs: list[dict[str, np.ndarray]]) -> None:
    print(f"\n### {title}\n")
    print("| system | top-1 | R@10 | MRR@10 | per set top-1 |")
    print("|---|---|---|---|---|")
    for name in runs[0]:
        values = np.asarray([run[name] for run in runs])
        t1, r10, mrr = values.mean(axis=0)
        per = " / ".join(f"{v:.3f}" for v in values[:, 0])
        print(f"| {name} | {t1:.3f} | {r10:.3f} | {mrr:.3f} | {per} |")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="prf_heldout_bench.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    parser.add_argument("--dev", type=Path, default=HERE / "dev_questions_debian.jsonl")
    parser.add_argument("--embedder", default="default")
    parser.add_argument("--seeds", default="99,7,3")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    from agentkernel.retrieval import load_embedder

    embedder = load_embedder(args.embedder)
    corpus = _corpus.prepare(args.data, 10_000, 10, mv.SEED, mv._log)
    rows = [json.loads(x) for x in args.dev.read_text().splitlines() if x.strip()]
    dev = mv.Bundle(corpus.bundle, args.cache, embedder, ("full", "short"))
    show(
        f"dev questions ({len(rows)})",
        [variants(dev, [(r["question"], r["concept"]) for r in rows])],
    )
    heldout = mv.heldout_concepts(corpus)
    scratch = Path(tempfile.mkdtemp(prefix="prf-"))
    try:
        para = mv.Bundle(
            retrieval_bench.paraphrase_bundle(corpus, scratch),
            args.cache,
            embedder,
            ("full", "short"),
        )
        runs = [
            variants(
                para,
                [
                    (c.description, c.id)
                    for c in random.Random(int(s)).sample(heldout, args.queries)
                ],
            )
            for s in args.seeds.split(",")
        ]
        show(f"paraphrase held out ({args.queries} queries x seeds {args.seeds})", runs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Embedding models side by side on held-out data: lexical, dense and hybrid, and what each costs.

Issue 16 asks whether a stronger model than the packaged all-MiniLM-L6-v2 closes the gap on
natural questions. This bench answers it without touching ``bench/questions.jsonl``:

* **dev questions**: ``bench/dev_questions_debian.jsonl`` (82 natural questions over the
  10,000 Debian packages with their descriptions), scored over one **common pool** for every
  model: the concepts whose whole text every model has cached, plus the 82 targets
  (``--pool common``), or every concept (``--pool all``, which embeds all 10,000 with each
  model);
* **paraphrase held out** (``--sets dev,paraphrase``): seeds 99, 7 and 3 over the paraphrase
  corpus, as ``multivec_heldout_bench.py`` (every concept embedded with each model).

Each model's document side is what the library keeps (the unit vector along 0.8 x whole + 0.2
x name), the lexical side BM25F with the word-pair phrase rule, fused by ``semantic.blend`` at
the library's lexical weight; the same lexical lists serve every model. Cost per model, in the
same run: query embedding p50 (one short question, as a search embeds it) and document
throughput (64 whole texts of the corpus, one batch), and the ratio to the first model.

Usage:
    python bench/model_heldout_bench.py --models default,/path/to/all-mpnet-base-v2 \\
        --caches bench/.data/vectors,/tmp/mpnet-cache
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import multivec_heldout_bench as mv  # noqa: E402
import retrieval_bench  # noqa: E402

_QUERIES = (
    "how do I extract the text out of a pdf file from the terminal?",
    "library to parse xml with namespaces",
    "which package gives me a spell checker",
    "tool to resize images in bulk",
    "why is my wifi driver missing",
)


def _log(message: str) -> None:
    print(f"[models] {message}", file=sys.stderr, flush=True)


def cached_ids(root: Path, cache: Path, embedder: Any) -> set[str]:
    """The concepts of a bundle whose whole text this model has cached."""
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
    from agentkernel.retrieval.embedders import text_hash
    from agentkernel.retrieval.semantic import SemanticIndex

    manager = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    semantic = SemanticIndex(embedder, cache)
    concepts = list(manager._view.contents.concepts.values())
    hashes = [text_hash(mv.texts_of(c)["full"]) for c in concepts]
    held = semantic.cache.get(hashes)
    return {c.id for c, h in zip(concepts, hashes, strict=True) if h in held}


def scores(
    bundle: mv.Bundle, pairs: list[tuple[str, str]], lexical: list[mv.Scored]
) -> dict[str, tuple[float, float, float]]:
    """Lexical, dense and hybrid (top-1, R@10, MRR@10) of one model over one query set."""
    from agentkernel.retrieval.semantic import TEXT_WEIGHTS, blend

    whole, name = TEXT_WEIGHTS
    mix = whole * bundle.matrices["full"] + name * bundle.matrices["short"]
    documents = mix / np.linalg.norm(mix, axis=1, keepdims=True)
    sims = bundle.query_matrix([q for q, _ in pairs]) @ documents.T
    dense = [mv.top(bundle.keys, row, 100) for row in sims]
    out: dict[str, tuple[float, float, float]] = {}
    for system, ranked in (
        ("lexical", [[k for k, _ in lex[:10]] for lex in lexical]),
        ("dense", [[k for k, _ in den[:10]] for den in dense]),
        (
            "hybrid",
            [[k for k, _ in blend(lex, den, 10)] for lex, den in zip(lexical, dense, strict=True)],
        ),
    ):
        acc = np.zeros(3)
        for keys, (_, target) in zip(ranked, pairs, strict=True):
            acc += mv.metrics(keys, target)
        out[system] = tuple(acc / len(pairs))  # type: ignore[assignment]
    return out


def cost(embedder: Any, corpus_texts: list[str]) -> tuple[float, float]:
    """Query embedding p50 (ms) and document throughput (texts/s) of one model."""
    embedder.embed(["warm up"])
    times = []
    for _ in range(4):
        for query in _QUERIES:
            start = time.perf_counter()
            embedder.embed([query])
            times.append(time.perf_counter() - start)
    start = time.perf_counter()
    embedder.embed(corpus_texts)
    return statistics.median(times) * 1000, len(corpus_texts) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="model_heldout_bench.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--models", default="default", help="comma-separated embedder specs")
    parser.add_argument("--caches", default=str(HERE / ".data" / "vectors"))
    parser.add_argument("--dev", type=Path, default=HERE / "dev_questions_debian.jsonl")
    parser.add_argument("--pool", choices=("common", "all"), default="common")
    parser.add_argument("--sets", default="dev")
    parser.add_argument("--seeds", default="99,7,3")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    from agentkernel.retrieval import load_embedder

    specs = args.models.split(",")
    caches = [Path(c) for c in args.caches.split(",")]
    if len(caches) != len(specs):
        parser.error("give one cache folder per model")
    embedders = [load_embedder(spec) for spec in specs]
    corpus = _corpus.prepare(args.data, 10_000, 10, mv.SEED, _log)
    rows: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    sizes: dict[str, int] = {}

    def run(set_name: str, root: Path, sets: list[list[tuple[str, str]]], pool: Any) -> None:
        lexical_lists: list[list[mv.Scored]] | None = None
        for spec, embedder, cache in zip(specs, embedders, caches, strict=True):
            bundle = mv.Bundle(root, cache, embedder, ("full", "short"), pool=pool)
            sizes[set_name] = len(bundle.keys)
            if lexical_lists is None:  # one lexical ranking for every model
                lexical_lists = [
                    bundle.lexical_lists([q for q, _ in pairs])["bm25f+phrase"] for pairs in sets
                ]
            for pairs, lexical in zip(sets, lexical_lists, strict=True):
                for system, value in scores(bundle, pairs, lexical).items():
                    rows.setdefault(set_name, {}).setdefault(f"{system}|{spec}", []).append(value)

    if "dev" in args.sets.split(","):
        dev_rows = [json.loads(x) for x in args.dev.read_text().splitlines() if x.strip()]
        pairs = [(r["question"], r["concept"]) for r in dev_rows]
        pool: frozenset[str] | None = None
        if args.pool == "common":
            common = set.intersection(
                *(cached_ids(corpus.bundle, c, e) for e, c in zip(embedders, caches, strict=True))
            )
            pool = frozenset(common | {t for _, t in pairs})
        run("dev questions", corpus.bundle, [pairs], pool)
    if "paraphrase" in args.sets.split(","):
        heldout = mv.heldout_concepts(corpus)
        sets = [
            [(c.description, c.id) for c in random.Random(int(s)).sample(heldout, args.queries)]
            for s in args.seeds.split(",")
        ]
        scratch = Path(tempfile.mkdtemp(prefix="models-"))
        try:
            run(
                "paraphrase held out",
                retrieval_bench.paraphrase_bundle(corpus, scratch),
                sets,
                None,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    for set_name, table in rows.items():
        print(f"\n### {set_name} ({sizes[set_name]} concepts)\n")
        print("| system | model | top-1 | R@10 | MRR@10 |")
        print("|---|---|---|---|---|")
        for key, values in table.items():
            system, spec = key.split("|", 1)
            t1, r10, mrr = np.mean(np.asarray(values), axis=0)
            if system == "lexical" and spec != specs[0]:
                continue  # the same lists for every model
            label = "-" if system == "lexical" else Path(spec).name
            print(f"| {system} | {label} | {t1:.3f} | {r10:.3f} | {mrr:.3f} |")
    texts = [mv.texts_of(c)["full"] for c in corpus_concepts(corpus)[:64]]
    print("\n### cost (same run)\n")
    print("| model | query p50 ms | x first | whole texts/s | x first |")
    print("|---|---|---|---|---|")
    base: tuple[float, float] | None = None
    for spec, embedder in zip(specs, embedders, strict=True):
        p50, rate = cost(embedder, texts)
        base = base or (p50, rate)
        name = Path(spec).name
        print(f"| {name} | {p50:.1f} | {p50 / base[0]:.2f} | {rate:.1f} | {rate / base[1]:.2f} |")
    return 0


def corpus_concepts(corpus: Any) -> list[Any]:
    """The corpus bundle's concepts as the manager reads them (for their embedded texts)."""
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    manager = OKFManager(LocalDocumentStore(corpus.bundle, writable=False), refresh_seconds=None)
    return sorted(manager._view.contents.concepts.values(), key=lambda c: c.id)


if __name__ == "__main__":
    sys.exit(main())

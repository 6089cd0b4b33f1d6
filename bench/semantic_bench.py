#!/usr/bin/env python3
"""Lexical, dense and hybrid search side by side, and what hybrid costs, in one run.

Quality (top-1, MRR@10, R@10), over the same sets as ``retrieval_bench.py``:

* **Questions**: ``bench/questions.jsonl`` over the ga4, crypto_bitcoin and example bundles.
* **Paraphrase**: the 10,000-package Debian corpus without its one-line descriptions; each
  query is a package's one-line description, the target that package.

"lexical" is ``OKFManager`` without an embedder, "dense" the same bundle's vectors alone
(cosine), "hybrid" ``OKFManager(embedder=...)`` (what an agent gets). The fusion variants
table re-fuses the same two candidate lists (top 100 each) with other constants.

Cost, on the paraphrase bundle: cold embedding throughput (documents embedded with no cache),
the walk without an embedder against a warm start with every vector cached, the query p50 of
each (hybrid includes embedding the query), re-embedding after 1% of the concepts change,
and the process RSS. The embedder is the packaged all-MiniLM-L6-v2 on the CPU.

Usage:
    python bench/semantic_bench.py                      # both sets, 500 paraphrase queries
    python bench/semantic_bench.py --paraphrase 0       # questions only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import retrieval_bench  # noqa: E402

Ranked = Callable[[str, int], list[str]]
SYSTEMS = ("lexical", "dense", "hybrid")  # table order


def _log(message: str) -> None:
    print(f"[semantic] {message}", file=sys.stderr, flush=True)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def open_pair(root: Path, embedder: Any, cache: Path) -> tuple[Any, Any, float, float]:
    """A lexical and a hybrid manager over one bundle, and the seconds each took to open."""
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    start = time.perf_counter()
    lexical = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    lexical_s = time.perf_counter() - start
    start = time.perf_counter()
    hybrid = OKFManager(
        LocalDocumentStore(root, writable=False),
        refresh_seconds=None,
        embedder=embedder,
        cache_dir=cache,
    )
    return lexical, hybrid, lexical_s, time.perf_counter() - start


def rankers(lexical: Any, hybrid: Any) -> dict[str, Ranked]:
    def ids(manager: Any) -> Ranked:
        return lambda q, k: [str(r["metadata"]["id"]) for r in manager.search(q, k)]

    def dense(q: str, k: int) -> list[str]:
        return [key for key, _ in hybrid.semantic.search(q, k) or []]

    # hybrid is scored before dense: dense would leave each query's vector memoised
    return {"lexical": ids(lexical), "hybrid": ids(hybrid), "dense": dense}


def score(search: Ranked, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    top1 = mrr = r10 = 0.0
    times: list[float] = []
    for query, target in pairs:
        start = time.perf_counter()
        found = search(query, 10)
        times.append(time.perf_counter() - start)
        rank = found.index(target) + 1 if target in found else 0
        top1 += rank == 1
        r10 += rank > 0
        mrr += 1.0 / rank if rank else 0.0
    n = len(pairs) or 1
    times.sort()
    return {
        "top1": top1 / n,
        "mrr10": mrr / n,
        "r10": r10 / n,
        "p50_ms": times[len(times) // 2] * 1e3 if times else 0.0,
        "n": len(pairs),
    }


def variants(lexical: Any, hybrid: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, float]:
    """top-1 and R@10 of fusion methods over the same candidate lists (top CANDIDATES of each)."""
    from agentkernel.retrieval.semantic import CANDIDATES, blend, fuse

    out: dict[str, list[float]] = {}
    for query, target in pairs:
        lex = [
            (str(r["metadata"]["id"]), r["metadata"]["score"])
            for r in lexical.search(query, CANDIDATES)
        ]
        den = hybrid.semantic.search(query, CANDIDATES) or []
        methods: dict[str, list[str]] = {}
        for k in (1, 10, 60):
            fused = fuse([[key for key, _ in lex], [key for key, _ in den]], 10, k)
            methods[f"RRF k={k}"] = [str(key) for key, _ in fused]
        for weight in (0.3, 0.4, 0.45, 0.5, 0.6):
            methods[f"z-score blend, lexical {weight}"] = [
                key for key, _ in blend(lex, den, 10, weight)
            ]
        for name, ranked in methods.items():
            hit = out.setdefault(name, [0.0, 0.0])
            hit[0] += bool(ranked) and ranked[0] == target
            hit[1] += target in ranked
    n = len(pairs) or 1
    return {name: (v[0] / n, v[1] / n) for name, v in out.items()}  # type: ignore[misc]


def merge(per_bundle: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for name, bundles in per_bundle.items():
        total = sum(b["n"] for b in bundles.values())
        merged[name] = {
            m: sum(b[m] * b["n"] for b in bundles.values()) / total
            for m in ("top1", "mrr10", "r10", "p50_ms")
        }
        merged[name]["n"] = total
    return merged


def questions(path: Path, shared: Path, embedder: Any, cache: Path) -> tuple[dict, dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    per: dict[str, dict[str, dict[str, Any]]] = {}
    fusion: dict[str, list[float]] = {}
    for bundle, root in retrieval_bench.bundle_roots(shared).items():
        pairs = [(r["question"], r["concept"]) for r in rows if r["bundle"] == bundle]
        lexical, hybrid, _, _ = open_pair(root, embedder, cache)
        for name, search in rankers(lexical, hybrid).items():
            per.setdefault(name, {})[bundle] = score(search, pairs)
        for name, (t1, r10) in variants(lexical, hybrid, pairs).items():
            acc = fusion.setdefault(name, [0.0, 0.0])
            acc[0] += t1 * len(pairs)
            acc[1] += r10 * len(pairs)
    n = len(rows)
    return merge(per), {k: (v[0] / n, v[1] / n) for k, v in fusion.items()}


def paraphrase(
    data: Path, size: int, count: int, seed: int, embedder: Any, cache: Path
) -> dict[str, Any]:
    corpus = _corpus.prepare(data, size, 10, seed, _log)
    rng = random.Random(seed + 1)
    usable = [c for c in corpus.concepts if c.description.strip()]
    pairs = [(c.description, c.id) for c in rng.sample(usable, min(count, len(usable)))]
    scratch = Path(tempfile.mkdtemp(prefix="semantic-"))
    out: dict[str, Any] = {}
    try:
        root = retrieval_bench.paraphrase_bundle(corpus, scratch)
        rss_before = rss_mb()
        lexical, hybrid, lexical_s, hybrid_s = open_pair(root, embedder, cache)
        out["walk_lexical_s"], out["warm_start_s"] = lexical_s, hybrid_s
        out["embedded_at_start"] = hybrid.semantic.embedded
        out["rss_mb"] = (rss_before, rss_mb())
        out["results"] = {n: score(s, pairs) for n, s in rankers(lexical, hybrid).items()}
        out["fusion"] = variants(lexical, hybrid, pairs[:200])
        changed = random.Random(seed + 2).sample(corpus.concepts, size // 100)
        for concept in changed:
            target = root / concept.path
            # a new text every run, so the cache cannot already hold it
            target.write_text(target.read_text() + f"\nRevised at {time.time_ns()}.\n")
        before = hybrid.semantic.embedded
        start = time.perf_counter()
        hybrid.reload()
        out["changed"] = (len(changed), hybrid.semantic.embedded - before)
        out["reembed_s"] = time.perf_counter() - start
        out["cold_docs_s"] = cold_throughput(embedder, corpus.concepts[:256])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def cold_throughput(embedder: Any, concepts: Sequence[Any]) -> float:
    """Concepts embedded a second with no cache: both texts of each (its whole and its name)."""
    from agentkernel.retrieval import document_texts

    texts = [f"{t} (cold)" for c in concepts for t in document_texts(c.title, "", c.body)]
    start = time.perf_counter()
    embedder.embed(texts)
    return len(concepts) / (time.perf_counter() - start)


def table(title: str, results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| system | top-1 | MRR@10 | R@10 | p50 ms |",
        "|---|---|---|---|---|",
    ]
    for name in SYSTEMS:
        r = results[name]
        lines.append(
            f"| {name} | {r['top1']:.3f} | {r['mrr10']:.3f} | {r['r10']:.3f} | {r['p50_ms']:.1f} |"
        )
    return [*lines, ""]


def fusion_table(title: str, fusion: dict[str, tuple[float, float]]) -> list[str]:
    lines = [f"### {title}", "", "| fusion | top-1 | R@10 |", "|---|---|---|"]
    lines += [f"| {name} | {t1:.3f} | {r10:.3f} |" for name, (t1, r10) in fusion.items()]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="semantic_bench.py", description=__doc__)
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--shared", type=Path, default=retrieval_bench.SHARED)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--paraphrase", type=int, default=500, help="queries (0: skip)")
    parser.add_argument("--seed", type=int, default=20260530)
    parser.add_argument("--embedder", default="default")
    args = parser.parse_args(argv)
    from agentkernel.retrieval import load_embedder

    start = time.perf_counter()
    embedder = load_embedder(args.embedder)
    out = [f"Embedder {embedder.model_id}, loaded in {time.perf_counter() - start:.1f} s", ""]
    found, fusion = questions(args.questions, args.shared, embedder, args.cache)
    out += table(f"Questions ({found['lexical']['n']})", found)
    out += fusion_table("Questions: fusion variants", fusion)
    if args.paraphrase:
        para = paraphrase(args.data, args.size, args.paraphrase, args.seed, embedder, args.cache)
        out += table(
            f"Paraphrase ({args.paraphrase} queries, {args.size} concepts)", para["results"]
        )
        out += fusion_table("Paraphrase: fusion variants (200 queries)", para["fusion"])
        lexical_s, warm_s = para["walk_lexical_s"], para["warm_start_s"]
        changed, embedded = para["changed"]
        out += [
            f"### Cost at {args.size} concepts",
            "",
            "| measure | value |",
            "|---|---|",
            f"| cold embedding throughput (2 texts a concept) | {para['cold_docs_s']:.0f} "
            "concepts/s |",
            f"| walk, lexical only | {lexical_s:.2f} s |",
            f"| warm start, every vector cached | {warm_s:.2f} s ({warm_s / lexical_s:.2f}x), "
            f"{para['embedded_at_start']} embedded |",
            f"| query p50 lexical / hybrid | {para['results']['lexical']['p50_ms']:.1f} / "
            f"{para['results']['hybrid']['p50_ms']:.1f} ms |",
            f"| re-embed after changing {changed} concepts' bodies (1%) | {embedded} texts "
            "embedded, "
            f"{para['reembed_s']:.1f} s |",
            f"| RSS before / after both managers (model loaded) | {para['rss_mb'][0]:.0f} / "
            f"{para['rss_mb'][1]:.0f} MB |",
            "",
        ]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

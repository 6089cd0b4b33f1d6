#!/usr/bin/env python3
"""What a hybrid query costs, the old query path beside the new one, interleaved in one run.

"old" embeds a query the way ``SentenceTransformerEmbedder`` did before (``encode`` on
torch's default intra-op threads, two on this machine); "new" is the embedder now (a text of
a few words runs on one thread). Both arms use the same loaded model and alternate query by
query, so the machine's load falls on both alike. For each arm: the query embedding alone
and a whole ``OKFManager.search`` (lexical, dense, fusion; every query distinct, so the
query memo never answers), wall p50/p95 and the CPU time of the calling thread (what a query
costs on an idle core). Then the vectors: the new path against the old batch path (what the
cache holds), minimum cosine over every text.

The queries are Debian one-line descriptions (the paraphrase corpus), never the question set.

Usage:
    python bench/query_latency_bench.py                   # 200 queries per arm
    python bench/query_latency_bench.py --queries 100 --bundle /work/shared/data/okf-bundles/ga4
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import retrieval_bench  # noqa: E402


class OldPath:
    """The embedder as it was: ``encode`` on torch's default threads, whatever the batch."""

    def __init__(self, new: Any) -> None:
        self._model = new._model
        self.model_id: str = new.model_id
        self.dimension: int = new.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(
            list(texts),
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        rows: list[list[float]] = vectors.tolist()
        return rows


def timed(call: Callable[..., object], *args: object) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    call(*args)
    return (time.perf_counter() - wall) * 1e3, (time.thread_time() - cpu) * 1e3


def summary(samples: list[tuple[float, float]]) -> str:
    walls = sorted(w for w, _ in samples)
    cpu = statistics.median(c for _, c in samples)
    p95 = walls[min(len(walls) - 1, int(len(walls) * 0.95))]
    return f"{statistics.median(walls):.1f} | {p95:.1f} | {cpu:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="query_latency_bench.py", description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--bundle", type=Path, default=retrieval_bench.SHARED / "ga4")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    args = parser.parse_args(argv)
    import numpy as np
    import torch

    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
    from agentkernel.retrieval import load_embedder

    new = load_embedder("default")
    old = OldPath(new)
    corpus = _corpus.prepare(args.data, 10_000, 10, 20260530, lambda _: None)
    texts = [c.description for c in corpus.concepts if c.description.strip()]
    queries = texts[: 3 * args.queries]  # three disjoint sets: embedding, search, cosine
    managers = {
        name: OKFManager(
            LocalDocumentStore(args.bundle, writable=False),
            refresh_seconds=None,
            embedder=embedder,
            cache_dir=args.cache,
        )
        for name, embedder in (("old", old), ("new", new))
    }
    samples: dict[str, list[tuple[float, float]]] = {}
    for embedder in (old, new):  # warm both paths once
        embedder.embed(["warm up"])
    for i in range(args.queries):
        for name, embedder in (("old", old), ("new", new))[:: 1 if i % 2 else -1]:
            embed = timed(embedder.embed, [queries[i]])
            samples.setdefault(f"{name} embed", []).append(embed)
            search = timed(managers[name].search, queries[args.queries + i], 10)
            samples.setdefault(f"{name} search", []).append(search)
    load = os.getloadavg()
    print(
        f"{args.queries} distinct queries per arm, interleaved; torch default threads "
        f"{torch.get_num_threads()}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.1f} / {load[1]:.1f}; search over {args.bundle.name} "
        f"({managers['new'].schema()['concepts']} concepts)\n"
    )
    print("| path | measure | wall p50 ms | wall p95 ms | CPU p50 ms (calling thread) |")
    print("|---|---|---|---|---|")
    for key in ("old embed", "new embed", "old search", "new search"):
        name, what = key.split()
        label = "query embedding alone" if what == "embed" else "OKFManager.search, hybrid"
        print(f"| {name} | {label} | {summary(samples[key])} |")
    check = queries[2 * args.queries :]
    batch = np.asarray(old.embed(check), dtype=np.float32)  # the cache's path: batches
    single = np.asarray([new.embed([t])[0] for t in check], dtype=np.float32)
    cosine = np.sum(batch * single, axis=1)
    print(
        f"\nnew single-text vectors vs old batch vectors ({len(check)} texts): "
        f"min cosine {cosine.min():.7f}, max |diff| {np.abs(batch - single).max():.2e}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

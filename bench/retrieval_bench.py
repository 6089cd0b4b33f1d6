#!/usr/bin/env python3
"""Ranking quality of the retrieval engine, side by side with lexical peers, in one run.

Two sets, every system over the same documents:

* **Questions**: ``bench/questions.jsonl``, natural-language questions and keyword queries
  over the shared ``ga4`` and ``crypto_bitcoin`` bundles and the example bundle, each with its
  best concept. They were written and committed before any engine ran on them and are never
  edited (``git log bench/questions.jsonl``).
* **Paraphrase**: the Debian bench corpus (``bench/_corpus.py``) with each package's one-line
  description removed from its concept; the query is that one-line description, the target
  its package. The words rarely match the long description one for one.

"ours" is ``OKFManager`` over a ``LocalDocumentStore`` (what an agent calls). The peers index
each concept's id, title, description, tags, type and body as one text (see ``_peers.py``),
unstemmed and stemmed. Reported: top-1 (hit@1), MRR@10 and R@5 (hit@5: one relevant concept).

Usage:
    python bench/retrieval_bench.py                 # both sets, prints the tables
    python bench/retrieval_bench.py --paraphrase 0  # questions only
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402
import _peers  # noqa: E402

SHARED = Path("/work/shared/data/okf-bundles")
EXAMPLE = HERE.parent / "examples/cli/knowledgebase/openai/okf/bundle"
SYSTEMS = ("ours", "bm25s", "tantivy", "fts5", "bm25s-stem", "tantivy-stem", "fts5-porter")
LABEL = {
    "ours": "ours (OKFManager)",
    "bm25s": "bm25s",
    "tantivy": "tantivy",
    "fts5": "FTS5 unicode61",
    "bm25s-stem": "bm25s + PyStemmer",
    "tantivy-stem": "tantivy en_stem",
    "fts5-porter": "FTS5 porter",
}
Search = Callable[[str, int], list[str]]


def _log(message: str) -> None:
    print(f"[retrieval] {message}", file=sys.stderr, flush=True)


def bundle_roots(shared: Path) -> dict[str, Path]:
    return {"ga4": shared / "ga4", "crypto_bitcoin": shared / "crypto_bitcoin", "example": EXAMPLE}


def ours(root: Path) -> Search:
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    manager = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)

    def search(query: str, k: int) -> list[str]:
        return [str(r["metadata"]["id"]) for r in manager.search(query, k)]

    return search


def peer(name: str, docs: list[_peers.Doc]) -> Search:
    engine = _peers.PEERS[name]()
    engine.build(docs)
    return engine.search


def build(name: str, root: Path, docs: list[_peers.Doc]) -> tuple[Search, float]:
    start = time.perf_counter()
    search = ours(root) if name == "ours" else peer(name, docs)
    return search, time.perf_counter() - start


def score(search: Search, queries: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """top-1, MRR@10 and R@5 of one system over ``(query, target)`` pairs, and latency."""
    top1 = mrr = r5 = 0.0
    misses: list[str] = []
    times: list[float] = []
    for query, target in queries:
        start = time.perf_counter()
        found = search(query, 10)
        times.append(time.perf_counter() - start)
        rank = found.index(target) + 1 if target in found else 0
        top1 += rank == 1
        r5 += 0 < rank <= 5
        mrr += 1.0 / rank if rank else 0.0
        if rank != 1:
            misses.append(f"{query!r} -> {found[:1]} (want {target}, rank {rank or '>10'})")
    n = len(queries) or 1
    times.sort()
    return {
        "top1": top1 / n,
        "mrr10": mrr / n,
        "r5": r5 / n,
        "p50_ms": times[len(times) // 2] * 1e3 if times else 0.0,
        "misses": misses,
        "n": len(queries),
    }


def questions(path: Path, shared: Path, systems: Sequence[str]) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    roots = bundle_roots(shared)
    per_bundle: dict[str, dict[str, dict[str, Any]]] = {}
    for bundle, root in roots.items():
        pairs = [(r["question"], r["concept"]) for r in rows if r["bundle"] == bundle]
        docs = _peers.load_bundle(root)
        for name in systems:
            search, _ = build(name, root, docs)
            per_bundle.setdefault(name, {})[bundle] = score(search, pairs)
    merged: dict[str, dict[str, Any]] = {}
    for name, bundles in per_bundle.items():
        total = sum(b["n"] for b in bundles.values())
        merged[name] = {
            metric: sum(b[metric] * b["n"] for b in bundles.values()) / total
            for metric in ("top1", "mrr10", "r5")
        }
        merged[name]["n"] = total
        merged[name]["bundles"] = bundles
        merged[name]["misses"] = [m for b in bundles.values() for m in b["misses"]]
    return merged


def paraphrase_bundle(corpus: _corpus.Corpus, scratch: Path) -> Path:
    """The corpus with every concept's one-line description left out."""
    from agentkernel.knowledgebase.okf import frontmatter

    root = scratch / "paraphrase"
    for concept in corpus.concepts:
        target = root / concept.path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = {"type": "package", "title": concept.title, "tags": concept.tags}
        target.write_text(frontmatter.render(data, concept.body), encoding="utf-8")
    return root


def paraphrase(
    data: Path, size: int, count: int, seed: int, systems: Sequence[str]
) -> dict[str, dict[str, Any]]:
    corpus = _corpus.prepare(data, size, 10, seed, _log)
    rng = random.Random(seed + 1)
    usable = [c for c in corpus.concepts if c.description.strip()]
    pairs = [(c.description, c.id) for c in rng.sample(usable, min(count, len(usable)))]
    results: dict[str, dict[str, Any]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="paraphrase-"))
    try:
        root = paraphrase_bundle(corpus, scratch)
        docs = _peers.load_bundle(root)
        for name in systems:
            _log(f"paraphrase: {name} ...")
            search, seconds = build(name, root, docs)
            results[name] = score(search, pairs)
            results[name]["build_s"] = seconds
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def rewrites(count: int) -> list[str]:
    """Search time over 100 live documents, fresh and after ``count`` rewrites."""
    from agentkernel.retrieval import SearchIndex

    index = SearchIndex()
    for i in range(100):
        index.add(f"d{i}", {"title": f"doc {i}", "body": f"alpha beta gamma {i} " * 3})

    def per_search() -> float:
        start = time.perf_counter()
        for i in range(2000):
            index.search(f"alpha doc {i % 100}", 10)
        return (time.perf_counter() - start) / 2000 * 1e6

    fresh = per_search()
    for i in range(count):
        index.add(f"d{i % 100}", {"title": f"doc {i % 100}", "body": f"alpha beta gamma {i} " * 3})
    after = per_search()
    return [
        f"Rewrites: 100 live documents, search {fresh:.1f} us fresh, {after:.1f} us after "
        f"{count:,} rewrites (slots allocated: {index.capacity})",
        "",
    ]


def table(title: str, results: dict[str, dict[str, Any]], extra: bool = False) -> list[str]:
    header = ["system", "top-1", "MRR@10", "R@5"]
    if extra:
        header += ["build s", "search p50 ms"]
    rows = []
    for name, found in results.items():
        row = [LABEL[name], f"{found['top1']:.3f}", f"{found['mrr10']:.3f}", f"{found['r5']:.3f}"]
        if extra:
            row += [f"{found.get('build_s', 0.0):.2f}", f"{found['p50_ms']:.3f}"]
        rows.append(row)
    return [title, "", *grid(header, rows)]


def grid(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return [line(header), rule, *(line(r) for r in rows), ""]


def per_bundle_table(results: dict[str, dict[str, Any]]) -> list[str]:
    bundles = list(next(iter(results.values()))["bundles"])
    header = ["system", *(f"{b} top-1 / MRR@10" for b in bundles)]
    rows = [
        [
            LABEL[name],
            *(f"{r['bundles'][b]['top1']:.3f} / {r['bundles'][b]['mrr10']:.3f}" for b in bundles),
        ]
        for name, r in results.items()
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return [line(header), rule, *(line(r) for r in rows), ""]


def targets(results: dict[str, dict[str, Any]]) -> list[str]:
    mine = results["ours"]
    peers = {k: v for k, v in results.items() if k != "ours"}
    best = max(peers, key=lambda k: peers[k]["top1"])
    lines = [
        f"- questions top-1 >= 0.80: {mine['top1']:.3f} "
        f"({'PASS' if mine['top1'] >= 0.80 else 'FAIL'})",
        f"- questions top-1 >= best lexical peer + 0.05: {mine['top1']:.3f} vs "
        f"{LABEL[best]} {peers[best]['top1']:.3f} "
        f"({'PASS' if mine['top1'] >= peers[best]['top1'] + 0.05 - 1e-9 else 'FAIL'})",
        f"- questions MRR@10 >= 0.88: {mine['mrr10']:.3f} "
        f"({'PASS' if mine['mrr10'] >= 0.88 else 'FAIL'})",
    ]
    return lines


def _engine_defaults(engine: dict[str, Any]) -> None:
    """Set the engine's defaults (field weights, the phrase rule) for a checking run."""
    from agentkernel.retrieval import index

    index.DEFAULT_WEIGHTS.update(engine.get("weights", {}))
    index.DEFAULT_PHRASE_BOOST = engine.get("phrase_boost", index.DEFAULT_PHRASE_BOOST)
    index.DEFAULT_PHRASE_POOL = engine.get("phrase_pool", index.DEFAULT_PHRASE_POOL)
    if engine:
        _log(f"engine: {engine}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="retrieval_bench.py", description=__doc__)
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared OKF bundles")
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--size", type=int, default=10_000, help="paraphrase corpus size")
    parser.add_argument("--paraphrase", type=int, default=500, help="paraphrase queries (0: skip)")
    parser.add_argument("--seed", type=int, default=20260530)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--misses", action="store_true", help="list ours' questions not at rank 1")
    parser.add_argument("--rewrites", type=int, default=1_000_000, help="rewrites (0: skip)")
    parser.add_argument(
        "--engine",
        type=json.loads,
        default={},
        help='engine defaults to try, e.g. \'{"weights": {"title": 2}, "phrase_boost": 0.5}\'',
    )
    args = parser.parse_args(argv)
    _engine_defaults(args.engine)
    systems = [s for s in args.systems.split(",") if s]
    found = questions(args.questions, args.shared, systems)
    out = table(f"Questions ({found[systems[0]]['n']} over ga4, crypto_bitcoin, example)", found)
    out += per_bundle_table(found)
    if "ours" in found and len(found) > 1:
        out += [*targets(found), ""]
    if args.misses and "ours" in found:
        out += ["ours, not at rank 1:", *found["ours"]["misses"], ""]
    if args.paraphrase:
        para = paraphrase(args.data, args.size, args.paraphrase, args.seed, systems)
        out += table(
            f"Paraphrase ({args.paraphrase} one-line descriptions -> {args.size} packages)",
            para,
            extra=True,
        )
    if args.rewrites:
        out += rewrites(args.rewrites)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The shared bundle index (issue 17) against the in-memory manager, side by side, one run.

For each bundle size (Debian package concepts, ``bench/_corpus.py``):

* **indexer**: a cold build, then a rebuild after 1% of the documents changed (how many it
  read, how long it took), to a local folder and to the S3 API server (moto, 127.0.0.1);
* **pods**: a fresh process per mode (the in-memory walk, the index in a local folder, the
  index over S3 through a counting proxy): cold start (construction plus a first search:
  seconds, peak RSS, S3 requests), search p50/p95 over the corpus' known-item queries
  (and their top-1), and an unchanged refresh (seconds, S3 requests);
* **quality**: top-1 on ``bench/questions.jsonl`` over the shared bundles and the example
  bundle, in both modes.

With ``--hybrid``: hybrid search (the packaged all-MiniLM-L6-v2, the vector cache
``bench/.data/vectors``) from the index against the in-memory hybrid manager: the indexer with
the embedder (cold, and after 1% changed: how many it read and embedded), a fresh pod per mode
(construction, the first search, which loads the index's vectors, peak and private RSS,
search p50/p95 and known-item top-1), the dense ranking alone held in memory against Lance's
exact nearest search over the same vectors, and the question set's top-1 in both modes.

Usage:
    python bench/index_bench.py                      # 10,000 and 60,000 concepts
    python bench/index_bench.py --sizes 10000 --queries 100
    python bench/index_bench.py --hybrid --sizes 10000
    python bench/index_bench.py --pod MODE ...       # (internal) one pod measurement
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402
import _s3  # noqa: E402
import _workers  # noqa: E402

SEED = 20260530
MODES = ("memory", "index-local", "index-s3")
HYBRID_MODES = ("memory-hybrid", "index-hybrid")
EMBEDDER = "default"
S3_OPTIONS = {
    "allow_http": "true",
    "aws_region": "us-east-1",
    "aws_access_key_id": "bench",
    "aws_secret_access_key": "bench",
}


def _log(message: str) -> None:
    print(f"[index] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ one pod, in a child


def pod(
    mode: str, bundle: str, index: str, endpoint: str, queries_path: str, cache: str = ""
) -> dict[str, Any]:
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    queries = json.loads(Path(queries_path).read_text())
    proxy = None
    kwargs: dict[str, Any] = {"refresh_seconds": None, "max_concepts": 1_000_000}
    if mode.endswith("-hybrid"):
        kwargs |= {"embedder": EMBEDDER, "cache_dir": cache}
    if mode in ("index-local", "index-hybrid"):
        kwargs["index"] = index
    elif mode == "index-s3":
        from _proxy import CountingProxy

        proxy = CountingProxy(endpoint)
        kwargs["index"] = index
        kwargs["index_options"] = {**S3_OPTIONS, "aws_endpoint": proxy.endpoint}
    store = LocalDocumentStore(bundle, writable=False)
    start = time.perf_counter()
    kb = OKFManager(store, **kwargs)
    built = time.perf_counter() - start
    kb.search(queries[0][0], 10)
    cold = time.perf_counter() - start
    rss = _workers.peak_rss_mb()
    private = _private_mb()
    cold_requests = proxy.take() if proxy else None
    times = []
    hits = 0
    for text, target in queries:
        t0 = time.perf_counter()
        found = kb.search(text, 10)
        times.append(time.perf_counter() - t0)
        hits += bool(found) and found[0]["metadata"]["id"] == target
    search_requests = proxy.take() if proxy else None
    t0 = time.perf_counter()
    if mode == "memory":
        kb.reload()
    else:
        kb._refresh(raise_errors=False)  # the scheduled refresh: the index's version only
    refresh = time.perf_counter() - t0
    refresh_requests = proxy.take() if proxy else None
    times.sort()
    result = {
        "cold_s": cold,
        "rss_mb": rss,
        "private_mb": private,
        "cold_requests": cold_requests,
        "p50_ms": times[len(times) // 2] * 1e3,
        "p95_ms": times[int(len(times) * 0.95)] * 1e3,
        "top1": hits / len(queries),
        "search_requests_per_query": (
            sum(search_requests.values()) / len(queries) if search_requests else None
        ),
        "refresh_s": refresh,
        "refresh_requests": refresh_requests,
        "concepts": kb.schema()["concepts"],
        "construct_s": built,
        "first_search_s": cold - built,
    }
    if mode == "index-hybrid":
        result |= dense_compare(kb, [text for text, _ in queries], Path(index).parent)
    if proxy:
        proxy.close()
    return result


def dense_compare(kb: Any, queries: list[str], scratch: Path) -> dict[str, Any]:
    """The dense ranking (top 100) held in memory vs Lance's exact nearest search.

    The same unit vectors, copied into a dataset with a fixed-size vector column (Lance's
    nearest search needs one); query vectors are embedded first, so both time the ranking only.
    """
    import lance
    import numpy as np
    import pyarrow as pa

    from agentkernel.retrieval.semantic import CANDIDATES

    semantic = kb.semantic
    ids = [key for key in semantic._slots.key_of if key is not None]
    matrix = np.stack([semantic._matrix[semantic._slots.slot_of[key]] for key in ids])
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.reshape(-1), pa.float32()), matrix.shape[1]
    )
    path = str(scratch / "nearest.lance")
    lance.write_dataset(pa.table({"id": ids, "vector": vectors}), path, mode="overwrite")
    dataset = lance.dataset(path)
    memory, lance_ms, agree = [], [], 0
    for text in queries:
        query = semantic._query_vector(text)
        t0 = time.perf_counter()
        mine = semantic.search(text, CANDIDATES)
        memory.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        found = dataset.to_table(
            columns=["id"],
            nearest={"column": "vector", "q": query, "k": CANDIDATES, "metric": "dot"},
        )
        lance_ms.append(time.perf_counter() - t0)
        agree += found.column("id").to_pylist()[:10] == [k for k, _ in mine[:10]]
    memory.sort()
    lance_ms.sort()
    return {
        "dense_memory_p50_ms": memory[len(memory) // 2] * 1e3,
        "dense_lance_p50_ms": lance_ms[len(lance_ms) // 2] * 1e3,
        "dense_top10_agree": agree / len(queries),
        "vectors_read": kb._index_vectors.read,
        "vectors_mb": matrix.nbytes / 2**20,
    }


def _private_mb() -> float:
    """Anonymous (private) resident memory: what one more pod on a node costs, shared
    library pages (Lance's native code, mapped from one file) left out."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_pod(
    mode: str, bundle: Path, index: str, endpoint: str, queries: Path, cache: str = ""
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--pod", mode, str(bundle), index, endpoint, str(queries)]
    command.append(cache)
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pod {mode} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --------------------------------------------------------------------------------- the run


def change_one_percent(bundle: Path, concepts: list[_corpus.Concept]) -> int:
    picked = concepts[::100]
    for concept in picked:
        path = bundle / concept.path
        path.write_text(path.read_text() + "\nRevised for the bench.\n")
    return len(picked)


def indexer_runs(
    bundle: Path, index: str, options: dict[str, str] | None, cache: Path | None = None
) -> dict[str, Any]:
    from agentkernel.knowledgebase import LocalDocumentStore
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    store = LocalDocumentStore(bundle, writable=False)
    embedding: dict[str, Any] = {} if cache is None else {"embedder": EMBEDDER, "cache_dir": cache}
    stats = index_bundle(store, index, storage_options=options, **embedding)
    return {
        "seconds": stats.seconds,
        "reads": stats.reads,
        "listed": stats.listed,
        "embedded": stats.embedded,
    }


def moto(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _s3._free_port()
    binary = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            _s3.client(endpoint).create_bucket(Bucket="index-bench")
            return process, endpoint
        except Exception:
            if time.monotonic() > deadline:
                process.kill()
                raise
            time.sleep(0.5)


def workspace(corpus: Any, work: Path) -> tuple[Path, Path, Path]:
    """A copy of the corpus bundle to index, and its queries as JSON, under ``work``."""
    bundle = work / "bundle"
    _log(f"{work.name}: copying the bundle to {bundle}")
    shutil.copytree(corpus.bundle, bundle)
    queries = work / "queries.json"
    queries.write_text(json.dumps([[q.text, q.target] for q in corpus.queries]))
    return work, bundle, queries


def size_run(size: int, n_queries: int, data: Path, scratch: Path) -> dict[str, Any]:
    corpus = _corpus.prepare(data, size, n_queries, SEED, _corpus.stderr_log)
    work, bundle, queries = workspace(corpus, scratch / f"n{size}")
    local = str(work / "kb.lance")
    process, endpoint = moto(work / "moto.log")
    try:
        remote = f"s3://index-bench/n{size}/kb.lance"
        options = {**S3_OPTIONS, "aws_endpoint": endpoint}
        result: dict[str, Any] = {"size": size}
        _log(f"{size}: cold index, local")
        result["cold_local"] = indexer_runs(bundle, local, None)
        _log(f"{size}: cold index, S3")
        result["cold_s3"] = indexer_runs(bundle, remote, options)
        result["changed"] = change_one_percent(bundle, corpus.concepts)
        _log(f"{size}: 1% changed ({result['changed']} documents), local and S3")
        result["delta_local"] = indexer_runs(bundle, local, None)
        result["delta_s3"] = indexer_runs(bundle, remote, options)
        for mode in MODES:
            _log(f"{size}: pod {mode}")
            index = remote if mode == "index-s3" else local
            result[mode] = run_pod(mode, bundle, index, endpoint, queries)
        return result
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(work, ignore_errors=True)


def hybrid_run(size: int, n_queries: int, data: Path, scratch: Path, cache: Path) -> dict[str, Any]:
    """Hybrid from the index vs hybrid in memory at one size (local folder)."""
    corpus = _corpus.prepare(data, size, n_queries, SEED, _corpus.stderr_log)
    work, bundle, queries = workspace(corpus, scratch / f"h{size}")
    local = str(work / "kb.lance")
    try:
        result: dict[str, Any] = {"size": size}
        _log(f"{size}: cold index with the embedder")
        result["cold_local"] = indexer_runs(bundle, local, None, cache)
        result["changed"] = change_one_percent(bundle, corpus.concepts)
        _log(f"{size}: 1% changed ({result['changed']} documents)")
        result["delta_local"] = indexer_runs(bundle, local, None, cache)
        for mode in ("memory", "index-local", *HYBRID_MODES):
            _log(f"{size}: pod {mode}")
            result[mode] = run_pod(mode, bundle, local, "", queries, str(cache))
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def question_quality(cache: Path | None = None) -> dict[str, float]:
    """Question-set top-1 in memory and from the index; hybrid with ``cache`` (its vectors)."""
    import retrieval_bench as rb

    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    embedding: dict[str, Any] = {} if cache is None else {"embedder": EMBEDDER, "cache_dir": cache}
    rows = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines()]
    totals = {"memory": 0.0, "index": 0.0, "same_top1": 0.0, "same_top5": 0.0}
    count = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, root in rb.bundle_roots(rb.SHARED).items():
            pairs = [(r["question"], r["concept"]) for r in rows if r["bundle"] == name]
            store = LocalDocumentStore(root, writable=False)
            index = str(Path(scratch) / f"{name}.lance")
            index_bundle(store, index, **embedding)
            managers = {
                "memory": OKFManager(store, refresh_seconds=None, **embedding),
                "index": OKFManager(store, refresh_seconds=None, index=index, **embedding),
            }
            for mode, kb in managers.items():

                def search(query: str, k: int, kb: OKFManager = kb) -> list[str]:
                    return [str(r["metadata"]["id"]) for r in kb.search(query, k)]

                totals[mode] += rb.score(search, pairs)["top1"] * len(pairs)
            for question, _ in pairs:
                # do the two modes show the same concepts, in the same order?
                shown = [
                    [r["metadata"]["id"] for r in kb.search(question, 5)]
                    for kb in managers.values()
                ]
                totals["same_top1"] += shown[0][:1] == shown[1][:1]
                totals["same_top5"] += shown[0] == shown[1]
            count += len(pairs)
    return {mode: value / count for mode, value in totals.items()} | {"n": float(count)}


def _requests(found: dict[str, int] | None) -> str:
    if not found:
        return "-"
    return f"{sum(found.values())} ({', '.join(f'{k} {v}' for k, v in sorted(found.items()))})"


def render(results: list[dict[str, Any]], quality: dict[str, float]) -> str:
    lines = []
    for r in results:
        size = r["size"]
        lines += [
            f"### {size:,} concepts",
            "",
            "| indexer | local folder | S3 API server |",
            "|---|---|---|",
            f"| cold build | {r['cold_local']['seconds']:.1f} s "
            f"({r['cold_local']['reads'] / r['cold_local']['seconds']:,.0f} docs/s) | "
            f"{r['cold_s3']['seconds']:.1f} s "
            f"({r['cold_s3']['reads'] / r['cold_s3']['seconds']:,.0f} docs/s) |",
            f"| after 1% changed ({r['changed']} docs) | {r['delta_local']['seconds']:.1f} s, "
            f"read {r['delta_local']['reads']} | {r['delta_s3']['seconds']:.1f} s, "
            f"read {r['delta_s3']['reads']} |",
            "",
            "| pod | in-memory walk | index, local | index, S3 |",
            "|---|---|---|---|",
        ]
        pods = [r[m] for m in MODES]
        rows = [
            ("cold start (s)", lambda p: f"{p['cold_s']:.2f}"),
            ("peak RSS (MB)", lambda p: f"{p['rss_mb']:.0f}"),
            ("private (anonymous) RSS after start (MB)", lambda p: f"{p['private_mb']:.0f}"),
            ("cold start S3 requests", lambda p: _requests(p["cold_requests"])),
            ("search p50 (ms)", lambda p: f"{p['p50_ms']:.1f}"),
            ("search p95 (ms)", lambda p: f"{p['p95_ms']:.1f}"),
            (
                "S3 requests per search",
                lambda p: (
                    "-"
                    if p["search_requests_per_query"] is None
                    else f"{p['search_requests_per_query']:.1f}"
                ),
            ),
            ("known-item top-1", lambda p: f"{p['top1']:.3f}"),
            ("unchanged refresh (s)", lambda p: f"{p['refresh_s']:.3f}"),
            ("unchanged refresh S3 requests", lambda p: _requests(p["refresh_requests"])),
        ]
        for label, cell in rows:
            lines.append(f"| {label} | " + " | ".join(cell(p) for p in pods) + " |")
        lines.append("")
    lines += [
        f"Question set ({int(quality['n'])} questions): top-1 in-memory "
        f"{quality['memory']:.3f}, index {quality['index']:.3f} "
        f"(difference {quality['index'] - quality['memory']:+.3f}).",
        "",
    ]
    return "\n".join(lines)


def render_hybrid(
    results: list[dict[str, Any]], quality: dict[str, float], lexical: dict[str, float]
) -> str:
    lines = []
    for r in results:
        cold, delta = r["cold_local"], r["delta_local"]
        lines += [
            f"### Hybrid at {r['size']:,} concepts (index in a local folder)",
            "",
            "| indexer with the embedder | seconds | read | embedded |",
            "|---|---|---|---|",
            f"| cold build | {cold['seconds']:.1f} | {cold['reads']} | {cold['embedded']} |",
            f"| after 1% changed ({r['changed']} docs) | {delta['seconds']:.1f} | "
            f"{delta['reads']} | {delta['embedded']} |",
            "",
            "| pod | walk, lexical | index, lexical | walk, hybrid | index, hybrid |",
            "|---|---|---|---|---|",
        ]
        pods = [r[m] for m in ("memory", "index-local", *HYBRID_MODES)]
        rows = [
            ("construction (s)", lambda p: f"{p['construct_s']:.2f}"),
            ("first search (s)", lambda p: f"{p['first_search_s']:.2f}"),
            ("cold start (s)", lambda p: f"{p['cold_s']:.2f}"),
            ("peak RSS (MB)", lambda p: f"{p['rss_mb']:.0f}"),
            ("private (anonymous) RSS after start (MB)", lambda p: f"{p['private_mb']:.0f}"),
            ("search p50 (ms)", lambda p: f"{p['p50_ms']:.1f}"),
            ("search p95 (ms)", lambda p: f"{p['p95_ms']:.1f}"),
            ("known-item top-1", lambda p: f"{p['top1']:.3f}"),
        ]
        for label, cell in rows:
            lines.append(f"| {label} | " + " | ".join(cell(p) for p in pods) + " |")
        d = r["index-hybrid"]
        lines += [
            "",
            f"Dense ranking alone (top {100}, query vectors embedded beforehand), index pod: "
            f"held in memory p50 {d['dense_memory_p50_ms']:.2f} ms ({d['vectors_mb']:.1f} MB "
            f"of vectors, {d['vectors_read']} concepts read from the index); Lance's exact "
            f"nearest search over the same vectors p50 {d['dense_lance_p50_ms']:.2f} ms; same "
            f"top 10 for {d['dense_top10_agree']:.3f} of the queries.",
            "",
        ]
    lines += [
        f"Question set ({int(quality['n'])} questions), top-1: hybrid in memory "
        f"{quality['memory']:.3f}, hybrid from the index {quality['index']:.3f} "
        f"(difference {quality['index'] - quality['memory']:+.3f}); lexical in memory "
        f"{lexical['memory']:.3f}, lexical from the index {lexical['index']:.3f}. The two "
        f"modes show the same top-1 concept for {quality['same_top1']:.3f} of the questions "
        f"hybrid ({lexical['same_top1']:.3f} lexical), the same top-5 list for "
        f"{quality['same_top5']:.3f} ({lexical['same_top5']:.3f}).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--pod":
        print(json.dumps(pod(*args[1:7])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 60_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parser.add_argument("--hybrid", action="store_true", help="hybrid: index vs in memory")
    parser.add_argument("--vector-cache", type=Path, default=HERE / ".data" / "vectors")
    parsed = parser.parse_args(args)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    if parsed.hybrid:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        lexical = question_quality()
        hybrid = question_quality(parsed.vector_cache)
        _log(f"question set: lexical {lexical}, hybrid {hybrid}")
        with tempfile.TemporaryDirectory(prefix="index-bench-") as scratch:
            runs = []
            for size in parsed.sizes:
                runs.append(
                    hybrid_run(
                        size, parsed.queries, parsed.data, Path(scratch), parsed.vector_cache
                    )
                )
                _log(json.dumps(runs[-1]))
        print(render_hybrid(runs, hybrid, lexical))
        return 0
    quality = question_quality()
    _log(f"question set: {quality}")
    results = []
    with tempfile.TemporaryDirectory(prefix="index-bench-") as scratch:
        for size in parsed.sizes:
            results.append(size_run(size, parsed.queries, parsed.data, Path(scratch)))
            _log(json.dumps(results[-1]))
    print(render(results, quality))
    return 0


if __name__ == "__main__":
    sys.exit(main())

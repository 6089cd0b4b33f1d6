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

Usage:
    python bench/index_bench.py                      # 10,000 and 60,000 concepts
    python bench/index_bench.py --sizes 10000 --queries 100
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
S3_OPTIONS = {
    "allow_http": "true",
    "aws_region": "us-east-1",
    "aws_access_key_id": "bench",
    "aws_secret_access_key": "bench",
}


def _log(message: str) -> None:
    print(f"[index] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ one pod, in a child


def pod(mode: str, bundle: str, index: str, endpoint: str, queries_path: str) -> dict[str, Any]:
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    queries = json.loads(Path(queries_path).read_text())
    proxy = None
    kwargs: dict[str, Any] = {"refresh_seconds": None, "max_concepts": 1_000_000}
    if mode == "index-local":
        kwargs["index"] = index
    elif mode == "index-s3":
        from _proxy import CountingProxy

        proxy = CountingProxy(endpoint)
        kwargs["index"] = index
        kwargs["index_options"] = {**S3_OPTIONS, "aws_endpoint": proxy.endpoint}
    store = LocalDocumentStore(bundle, writable=False)
    start = time.perf_counter()
    kb = OKFManager(store, **kwargs)
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
    }
    if proxy:
        proxy.close()
    return result


def _private_mb() -> float:
    """Anonymous (private) resident memory: what one more pod on a node costs, shared
    library pages (Lance's native code, mapped from one file) left out."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_pod(mode: str, bundle: Path, index: str, endpoint: str, queries: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--pod", mode, str(bundle), index, endpoint, str(queries)]
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


def indexer_runs(bundle: Path, index: str, options: dict[str, str] | None) -> dict[str, Any]:
    from agentkernel.knowledgebase import LocalDocumentStore
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    store = LocalDocumentStore(bundle, writable=False)
    stats = index_bundle(store, index, storage_options=options)
    return {"seconds": stats.seconds, "reads": stats.reads, "listed": stats.listed}


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


def size_run(size: int, n_queries: int, data: Path, scratch: Path) -> dict[str, Any]:
    corpus = _corpus.prepare(data, size, n_queries, SEED, _corpus.stderr_log)
    work = scratch / f"n{size}"
    bundle = work / "bundle"
    _log(f"{size}: copying the bundle to {bundle}")
    shutil.copytree(corpus.bundle, bundle)
    queries = work / "queries.json"
    queries.write_text(json.dumps([[q.text, q.target] for q in corpus.queries]))
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


def question_quality() -> dict[str, float]:
    import retrieval_bench as rb

    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    rows = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines()]
    totals = {"memory": 0.0, "index": 0.0}
    count = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, root in rb.bundle_roots(rb.SHARED).items():
            pairs = [(r["question"], r["concept"]) for r in rows if r["bundle"] == name]
            store = LocalDocumentStore(root, writable=False)
            index = str(Path(scratch) / f"{name}.lance")
            index_bundle(store, index)
            managers = {
                "memory": OKFManager(store, refresh_seconds=None),
                "index": OKFManager(store, refresh_seconds=None, index=index),
            }
            for mode, kb in managers.items():

                def search(query: str, k: int, kb: OKFManager = kb) -> list[str]:
                    return [str(r["metadata"]["id"]) for r in kb.search(query, k)]

                totals[mode] += rb.score(search, pairs)["top1"] * len(pairs)
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--pod":
        print(json.dumps(pod(*args[1:6])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 60_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parsed = parser.parse_args(args)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
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

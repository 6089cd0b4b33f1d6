#!/usr/bin/env python3
"""Pods over a bundle index in S3 as a real bucket serves it: 20 ms a request, every one counted.

The index lives on the S3 API server (moto, 127.0.0.1); every pod reaches it through a
latency proxy (``tests/support/latency_proxy.py``: 20 ms added to each request, requests and
response bytes counted), run inside the pod's own process so the counts are the pod's.

* **one pod, three ways** (fresh processes): the node cache empty (cold start), the node cache
  warm (a restart), and Lance reading S3 directly (``node_cache=off``, what issue 17 shipped):
  seconds to the first answer, requests and bytes, search p50/p95 and requests per search over
  the corpus' known-item queries (top-1 beside), an unchanged refresh, then, after 1% of the
  documents changed and the indexer ran, the refresh to the new version (requests, bytes, the
  bytes that version added on S3); private memory (``RssAnon``, ``Pss``) and peak RSS;
* **the fleet** (``--pods``, default 16): pods sharing one node cache folder, refreshing every
  ``--refresh`` seconds and searching meanwhile, while an indexer commits a 1% change every
  ``--every`` seconds for ``--seconds``: requests per pod per minute in steady state, how stale
  a pod got (versions behind, seconds from a commit to a pod serving it), errors;
* **on S3**: the index's bytes (all versions), the newest version's bytes (what a cold pod
  downloads).

Usage:
    python bench/index_pods_bench.py --size 100000
    python bench/index_pods_bench.py --size 10000 --pods 16 --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402
import _s3  # noqa: E402
import index_bench  # noqa: E402
from _proxy import LatencyProxy  # noqa: E402

DELAY = 0.020
# what docs/index.md puts in a pod's spec: Arrow's buffers from the C allocator (freed
# memory goes back), two malloc arenas instead of one per thread, large blocks mapped on
# their own (`--pod-tune` instead: each pod applies its own tree's `agentkernel-kb` settings)
POD_ENV = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}
SEED = index_bench.SEED
RELOADS = 5  # explicit reloads of the unchanged index; the median is reported


def _log(message: str) -> None:
    print(f"[pods] {message}", file=sys.stderr, flush=True)


def memory() -> dict[str, float]:
    """Private (RssAnon), proportional (Pss) and peak (VmHWM) memory of this process, MB."""
    found: dict[str, float] = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "VmHWM", "RssFile"):
                found[key] = int(value.split()[0]) / 1024
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                found["Pss"] = int(line.split()[1]) / 1024
    return found


# ------------------------------------------------------------------------ one pod, in a child


def open_pod(config: dict[str, Any], proxy: LatencyProxy, refresh: float | None) -> Any:
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    options = {
        **index_bench.S3_OPTIONS,
        "aws_endpoint": proxy.endpoint,
        "node_cache": config["cache"] or "off",
    }
    return OKFManager(
        LocalDocumentStore(config["bundle"], writable=False),
        index=config["uri"],
        index_options=options,
        refresh_seconds=refresh,
        max_concepts=2_000_000,
    )


def single_pod(config: dict[str, Any]) -> dict[str, Any]:
    queries = json.loads(Path(config["queries"]).read_text())[: config["n_queries"]]
    proxy = LatencyProxy(config["endpoint"], DELAY)
    started = time.perf_counter()
    kb = open_pod(config, proxy, None)
    kb.search(queries[0][0], 10)
    result: dict[str, Any] = {"cold_s": time.perf_counter() - started}
    result["cold_bytes"] = proxy.bytes_out
    result["cold_requests"] = sum(proxy.take().values())
    times, hits = [], 0
    for text, target in queries:
        begun = time.perf_counter()
        found = kb.search(text, 10)
        times.append(time.perf_counter() - begun)
        hits += bool(found) and found[0]["metadata"]["id"] == target
    result["search_requests"] = sum(proxy.take().values()) / len(queries)
    times.sort()
    result |= {
        "p50_ms": times[len(times) // 2] * 1e3,
        "p95_ms": times[int(len(times) * 0.95)] * 1e3,
        "top1": hits / len(queries),
    }
    begun = time.perf_counter()
    kb._refresh(raise_errors=False)  # the scheduled refresh
    assert kb._view.refresh_error is None, kb._view.refresh_error
    result["refresh_s"] = time.perf_counter() - begun
    result["refresh_requests"] = sum(proxy.take().values())
    reloads = []
    for _ in range(RELOADS):  # asked for explicitly: the same version, nothing fetched
        begun = time.perf_counter()
        kb.reload()
        reloads.append(time.perf_counter() - begun)
    result["reload_s"] = sorted(reloads)[len(reloads) // 2]
    result["reload_requests"] = sum(proxy.take().values()) / len(reloads)
    result["memory"] = memory()
    if config.get("wait"):
        print(json.dumps({"ready": True}), flush=True)
        sys.stdin.readline()  # the bench changed 1% and indexed it
        proxy.take()
        version = kb.schema()["index"]["version"]
        begun = time.perf_counter()
        kb._refresh(raise_errors=False)
        assert kb._view.refresh_error is None, kb._view.refresh_error
        result["changed_refresh_s"] = time.perf_counter() - begun
        result["changed_bytes"] = proxy.bytes_out
        result["changed_requests"] = proxy.take()
        result["changed_versions"] = [version, kb.schema()["index"]["version"]]
    proxy.close()
    return result


def memory_pod(config: dict[str, Any]) -> dict[str, Any]:
    """A pod without the proxy in its process (straight to the server): its memory alone."""
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    queries = json.loads(Path(config["queries"]).read_text())[: config["n_queries"]]
    started = time.perf_counter()
    kb = OKFManager(
        LocalDocumentStore(config["bundle"], writable=False),
        index=config["uri"],
        index_options={
            **index_bench.S3_OPTIONS,
            "aws_endpoint": config["endpoint"],
            "node_cache": config["cache"],
        },
        refresh_seconds=None,
        max_concepts=2_000_000,
    )
    kb.search(queries[0][0], 10)
    cold = time.perf_counter() - started
    at_start = memory()
    for text, _ in queries:
        kb.search(text, 10)
    kb._refresh(raise_errors=False)
    return {"cold_s": cold, "at_start": at_start, "after": memory()}


def fleet_pod(config: dict[str, Any]) -> dict[str, Any]:
    """Search until ``stop`` exists, refreshing on schedule; log each version switch."""
    queries = json.loads(Path(config["queries"]).read_text())
    proxy = LatencyProxy(config["endpoint"], DELAY)
    started = time.perf_counter()
    kb = open_pod(config, proxy, config["refresh"])
    kb.search(queries[0][0], 10)
    cold = time.perf_counter() - started
    proxy.take()
    steady_from = time.time()
    switches = [(time.time(), kb.schema()["index"]["version"], 0.0)]
    served = [(time.time(), switches[0][1])]  # when the view changed, whoever changed it
    watching = threading.Event()

    def watch() -> None:  # 20 ms resolution, one attribute read: the moment a version is served
        while not watching.wait(0.02):
            version = getattr(kb._view.contents, "version", -1)
            if version != served[-1][1]:
                served.append((time.time(), version))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    errors: list[str] = []
    durations: list[float] = []  # each search's seconds, a switch on the call path included
    searches = 0
    while not os.path.exists(config["stop"]):
        text = queries[searches % len(queries)][0]
        begun = time.perf_counter()
        try:
            kb.search(text, 10)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
        durations.append(time.perf_counter() - begun)
        searches += 1
        version = getattr(kb._view.contents, "version", -1)
        if version != switches[-1][1]:
            took = kb.last_refresh.seconds if kb.last_refresh is not None else -1.0
            switches.append((time.time(), version, took))
        if kb._view.refresh_error:
            errors.append(kb._view.refresh_error[:300])
            kb._view.refresh_error = None
        time.sleep(config["pause"])
    minutes = (time.time() - steady_from) / 60
    counts = proxy.take()
    watching.set()
    watcher.join()
    kb.close()
    return {
        "cold_s": cold,
        "switches": switches,
        "served": served,
        "search_s": durations,
        "errors": errors,
        "searches": searches,
        "requests_per_min": sum(counts.values()) / minutes,
        "counts": counts,
        "memory": memory(),
    }


def child(config: dict[str, Any], stdin: bool = False) -> subprocess.Popen[str]:
    src = config.get("src") or str(HERE.parent / "src")
    env = {**os.environ, **config.get("env", {}), "PYTHONPATH": f"{src}{os.pathsep}{HERE.parent}"}
    return subprocess.Popen(
        [sys.executable, __file__, "--pod", json.dumps(config)],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(process: subprocess.Popen[str], timeout: float = 1800) -> dict[str, Any]:
    out, err = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise RuntimeError(f"pod failed:\n{err[-3000:]}")
    return dict(json.loads(out.strip().splitlines()[-1]))


# --------------------------------------------------------------------------------- the run


def s3_bytes(endpoint: str, bucket: str, prefix: str) -> dict[str, int]:
    client = _s3.client(endpoint)
    total = files = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", ()):
            total += int(item["Size"])
            files += 1
    return {"bytes": total, "objects": files}


def index_to(bundle: Path, uri: str, endpoint: str) -> dict[str, Any]:
    options = {**index_bench.S3_OPTIONS, "aws_endpoint": endpoint}
    from agentkernel.knowledgebase import LocalDocumentStore
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    stats = index_bundle(LocalDocumentStore(bundle, writable=False), uri, storage_options=options)
    return {"seconds": stats.seconds, "reads": stats.reads, "version": stats.version}


def seed_from_local(corpus: _corpus.Corpus, data: Path, uri: str, endpoint: str) -> dict[str, Any]:
    """Build the index once in a local folder (kept in ``data``), then upload its files.

    A Lance dataset names its files relative to its root, so the uploaded copy is the same
    index the indexer would have written to S3 (only faster to get there: the pods, not the
    first build, are measured here).
    """
    from concurrent.futures import ThreadPoolExecutor

    from agentkernel.knowledgebase import LocalDocumentStore
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    local = data / f"index-{corpus.bundle.parent.name}.lance"
    built: dict[str, Any] = {"seconds": 0.0, "reads": 0, "version": None, "local": True}
    if not (local / "_versions").exists():
        _log(f"building the index locally in {local} (first run only)")
        stats = index_bundle(LocalDocumentStore(corpus.bundle, writable=False), str(local))
        built |= {"seconds": stats.seconds, "reads": stats.reads, "version": stats.version}
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    client = _s3.client(endpoint)
    files = [p for p in local.rglob("*") if p.is_file()]
    _log(f"uploading {len(files)} files of the local index to {uri}")

    def put(path: Path) -> None:
        client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))
    return built


def change(bundle: Path, concepts: list[_corpus.Concept], round_: int) -> int:
    picked = concepts[round_ % 100 :: 100]
    for concept in picked:
        path = bundle / concept.path
        fresh = path.with_name(f".{path.name}.new")  # hidden: never listed
        fresh.write_text(path.read_text() + f"\nRevision {round_} for the bench.\n")
        os.replace(fresh, path)  # a new file: the corpus cache behind the link is untouched
    return len(picked)


def run(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    corpus = _corpus.prepare(args.data, args.size, args.queries, SEED, _corpus.stderr_log)
    bundle = scratch / "bundle"
    _log(f"linking the {args.size}-concept bundle")
    # hard links: a changed document is replaced (change()), never written through a link
    shutil.copytree(corpus.bundle, bundle, copy_function=os.link)
    queries = scratch / "queries.json"
    queries.write_text(json.dumps([[q.text, q.target] for q in corpus.queries]))
    process, endpoint = index_bench.moto(scratch / "moto.log")
    result: dict[str, Any] = {"size": args.size}
    try:
        uri = f"s3://index-bench/n{args.size}/kb.lance"
        if args.build_in_s3:
            _log("indexing into S3 (direct)")
            result["index"] = index_to(bundle, uri, endpoint)
        else:
            result["index"] = seed_from_local(corpus, args.data, uri, endpoint)
        result["s3"] = s3_bytes(endpoint, "index-bench", f"n{args.size}/kb.lance/")
        base = {"bundle": str(bundle), "uri": uri, "endpoint": endpoint, "queries": str(queries)}
        cache = str(scratch / "node")
        pods: dict[str, Any] = {}
        if args.baseline:
            result["compare"] = compare(args, base, scratch)
            if args.only_compare:
                return result
        if args.only_fleet:
            result["fleet"] = fleet(args, base, bundle, corpus, uri, endpoint, scratch)
            return result
        _log("pod: node cache empty (cold), then 1% changed")
        cold = child({**base, "cache": cache, "n_queries": args.queries, "wait": True}, True)
        assert cold.stdout is not None and cold.stdin is not None
        json.loads(cold.stdout.readline())  # ready
        changed = change(bundle, corpus.concepts, 0)
        before = result["s3"]["bytes"]
        result["delta_index"] = index_to(bundle, uri, endpoint)
        result["delta_added_bytes"] = (
            s3_bytes(endpoint, "index-bench", f"n{args.size}/kb.lance/")["bytes"] - before
        )
        result["changed_docs"] = changed
        cold.stdin.write("go\n")
        cold.stdin.flush()
        pods["cache, cold"] = finish(cold)
        _log(json.dumps(pods["cache, cold"]))
        _log("pod: node cache warm (a restart)")
        pods["cache, warm"] = finish(child({**base, "cache": cache, "n_queries": args.queries}))
        _log(json.dumps(pods["cache, warm"]))
        result["node_cache_bytes"] = sum(
            p.stat().st_size for p in Path(cache).rglob("*") if p.is_file()
        )
        _log("pod: node cache warm, no proxy in its process (memory)")
        result["memory_pod"] = finish(
            child({**base, "cache": cache, "n_queries": args.queries, "mode": "memory"})
        )
        _log(json.dumps(result["memory_pod"]))
        if args.direct_queries:
            _log("pod: Lance over S3 directly")
            direct = {**base, "cache": "", "n_queries": args.direct_queries}
            pods["S3 direct"] = finish(child(direct))
            _log(json.dumps(pods["S3 direct"]))
        result["pods"] = pods
        if args.pods:
            result["fleet"] = fleet(args, base, bundle, corpus, uri, endpoint, scratch)
        return result
    finally:
        process.kill()
        process.wait()


def compare(args: argparse.Namespace, base: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """Baseline and this tree side by side, alternating: cold, warm restart, memory."""
    tree = str(HERE.parent / "src")
    baseline = str(args.baseline.resolve())
    variants: dict[str, tuple[str, dict[str, str]]] = {"baseline": (baseline, {})}
    if args.pod_env:
        variants["baseline, pod env"] = (baseline, POD_ENV)
    variants["this tree"] = (tree, {})
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for round_ in range(args.rounds):
        for name, (src, env) in variants.items():
            cache = str(scratch / f"cmp-{round_}-{name.replace(' ', '_').replace(',', '')}")
            config = {**base, "cache": cache, "n_queries": args.queries, "src": src, "env": env}
            config["tune"] = args.pod_tune
            cold = finish(child(config))
            warm = finish(child(config))
            mem = finish(child({**config, "mode": "memory"}))
            found[name].append({"cold": cold, "warm": warm, "memory": mem})
            _log(
                f"compare {name} round {round_}: cold {cold['cold_s']:.2f} s, warm "
                f"{warm['cold_s']:.2f} s, p50 {warm['p50_ms']:.1f} ms, private "
                f"{mem['after']['RssAnon']:.0f} MB"
            )
    return found


def render_compare(found: dict[str, list[dict[str, Any]]]) -> list[str]:
    def med(values: list[float]) -> float:
        values = sorted(values)
        return values[len(values) // 2]

    metrics = {
        "cold start, empty node cache (s)": lambda r: r["cold"]["cold_s"],
        "requests to the first answer (cold)": lambda r: r["cold"]["cold_requests"],
        "restart on a warm node cache (s)": lambda r: r["warm"]["cold_s"],
        "warm search p50 (ms)": lambda r: r["warm"]["p50_ms"],
        "warm search p95 (ms)": lambda r: r["warm"]["p95_ms"],
        "requests per search": lambda r: r["warm"]["search_requests"],
        "unchanged reload() (ms)": lambda r: r["warm"]["reload_s"] * 1e3,
        "requests per unchanged reload()": lambda r: r["warm"]["reload_requests"],
        "top-1": lambda r: r["warm"]["top1"],
        "private RssAnon at start (MB)": lambda r: r["memory"]["at_start"]["RssAnon"],
        "private RssAnon after searches (MB)": lambda r: r["memory"]["after"]["RssAnon"],
        "PSS after searches (MB)": lambda r: r["memory"]["after"]["Pss"],
        "peak RSS (MB)": lambda r: r["memory"]["after"]["VmHWM"],
    }
    rounds = len(found["baseline"])
    others = [name for name in found if name != "baseline"]
    lines = [
        f"Side by side (fresh processes, alternating, median of {rounds} round(s)):",
        "",
        "| measure | baseline | " + " | ".join(f"{n} | ratio" for n in others) + " |",
        "|---|---|" + "---|---|" * len(others),
    ]
    for label, pick in metrics.items():
        a = med([pick(r) for r in found["baseline"]])
        cells = []
        for name in others:
            b = med([pick(r) for r in found[name]])
            cells.append(f"{b:.3g} | " + (f"{b / a:.2f}" if a else "-"))
        lines.append(f"| {label} | {a:.3g} | " + " | ".join(cells) + " |")
    return lines


def fleet(
    args: argparse.Namespace,
    base: dict[str, Any],
    bundle: Path,
    corpus: _corpus.Corpus,
    uri: str,
    endpoint: str,
    scratch: Path,
) -> dict[str, Any]:
    stop = scratch / "stop"
    config = {
        **base,
        "env": POD_ENV if args.pod_env else {},
        "tune": args.pod_tune,
        "src": str(args.fleet_src.resolve()) if args.fleet_src else None,
        "cache": str(scratch / "fleet-node"),
        "refresh": args.refresh,
        "stop": str(stop),
        "pause": args.pause,
    }
    _log(f"fleet: {args.pods} pods, refresh {args.refresh} s, a 1% commit every {args.every} s")
    pods = [child({**config, "fleet": True}) for _ in range(args.pods)]
    commits: list[tuple[float, int, float]] = []
    failure: list[str] = []

    def indexer() -> None:
        round_ = 1
        deadline = time.time() + args.seconds
        while time.time() < deadline:
            begun = time.time()
            change(bundle, corpus.concepts, round_)
            try:
                stats = index_to(bundle, uri, endpoint)
            except Exception as exc:  # reported, never hidden
                failure.append(f"{type(exc).__name__}: {exc}"[:300])
                break
            ended = time.time()
            # staleness counts from the version's own commit (Lance's timestamp), not the
            # run's end: the fold's commit comes a little before the run returns
            stamped = committed_at(uri, endpoint, int(stats["version"])) or ended
            commits.append((stamped, int(stats["version"]), ended - begun))
            round_ += 1
            time.sleep(max(0.0, args.every - (time.time() - begun)))

    time.sleep(args.warmup)
    worker = threading.Thread(target=indexer)
    load = [os.getloadavg()[0]]
    worker.start()
    worker.join()
    load.append(os.getloadavg()[0])
    time.sleep(args.refresh + 2)  # one refresh interval after the last commit
    stop.touch()
    results = [finish(pod, timeout=600) for pod in pods]
    return {
        "commits": commits,
        "indexer_errors": failure,
        "pods": results,
        "load": load,
    } | staleness(commits, results)


def committed_at(uri: str, endpoint: str, version: int) -> float | None:
    """When ``version`` of the index was committed (its manifest's timestamp), or ``None``."""
    import lance

    options = {**index_bench.S3_OPTIONS, "aws_endpoint": endpoint}
    found = lance.dataset(uri, storage_options=options).versions()
    return next((v["timestamp"].timestamp() for v in found if v["version"] == version), None)


def staleness(
    commits: list[tuple[float, int, float]], pods: list[dict[str, Any]]
) -> dict[str, Any]:
    """Seconds from each commit to each pod serving it (or a later version); versions behind.

    "At first search": the pod's first search on that version or a later one; "at switch":
    the moment the pod's view changed to it (the pod's watcher, every 20 ms).
    """
    delays: list[float] = []
    at_switch: list[float] = []
    behind = 0
    for at, version, _ in commits:
        for pod in pods:
            served = [t for t, v, _ in pod["switches"] if v >= version]
            delays.append(max(0.0, served[0] - at) if served else float("inf"))
            swapped = [t for t, v in pod.get("served", []) if v >= version]
            at_switch.append(max(0.0, swapped[0] - at) if swapped else float("inf"))
    at_switch.sort()
    for pod in pods:
        for t, served, _ in pod["switches"]:
            newest = max((v for at, v, _ in commits if at <= t), default=served)
            behind = max(behind, newest - served)
    delays.sort()
    refreshes = sorted(took for pod in pods for _, _, took in pod["switches"][1:] if took >= 0)
    searches = sorted(s for pod in pods for s in pod.get("search_s", []))
    return {
        "search_ms": [searches[int(q * (len(searches) - 1))] * 1e3 for q in (0.5, 0.95, 0.99, 1.0)]
        if searches
        else [],
        "switch_refresh_p50_s": refreshes[len(refreshes) // 2] if refreshes else 0.0,
        "switch_refresh_max_s": refreshes[-1] if refreshes else 0.0,
        "stale_p50_s": delays[len(delays) // 2] if delays else 0.0,
        "stale_max_s": delays[-1] if delays else 0.0,
        "switch_stale_p50_s": at_switch[len(at_switch) // 2] if at_switch else 0.0,
        "switch_stale_max_s": at_switch[-1] if at_switch else 0.0,
        "versions_behind_max": behind,
    }


# ---------------------------------------------------------------------------------- report


def render(r: dict[str, Any]) -> str:
    if "pods" not in r and "fleet" in r:
        return render_fleet(r["fleet"])
    if "pods" not in r:
        return "\n".join(render_compare(r["compare"]))
    pods = r["pods"]
    lines = [
        f"### {r['size']:,} concepts, every request through the 20 ms proxy",
        "",
        f"On S3: {r['s3']['bytes'] / 2**20:.1f} MB in {r['s3']['objects']} objects after the "
        f"first build ({r['index']['seconds']:.0f} s); the node cache after a cold start: "
        f"{r['node_cache_bytes'] / 2**20:.1f} MB. A 1% change ({r['changed_docs']} documents, "
        f"indexed in {r['delta_index']['seconds']:.1f} s) added "
        f"{r['delta_added_bytes'] / 2**20:.2f} MB on S3.",
        "",
        "| pod | first answer | requests (bytes) to it | search p50 / p95 | requests per "
        "search | top-1 | unchanged refresh | unchanged reload() (median of "
        f"{RELOADS}) | private (RssAnon) / PSS / peak RSS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, p in pods.items():
        m = p["memory"]
        lines.append(
            f"| {name} | {p['cold_s']:.2f} s | {p['cold_requests']} "
            f"({p['cold_bytes'] / 2**20:.1f} MB) | {p['p50_ms']:.1f} / {p['p95_ms']:.1f} ms | "
            f"{p['search_requests']:.1f} | {p['top1']:.3f} | {p['refresh_requests']} req, "
            f"{p['refresh_s'] * 1e3:.0f} ms | {p['reload_requests']:.1f} req, "
            f"{p['reload_s'] * 1e3:.0f} ms | {m['RssAnon']:.0f} / {m['Pss']:.0f} / "
            f"{m['VmHWM']:.0f} MB |"
        )
    if "compare" in r:
        lines += ["", *render_compare(r["compare"])]
    if "memory_pod" in r:
        mem = r["memory_pod"]
        lines += [
            "",
            f"A pod on the warm node cache without the proxy in its process (straight to the "
            f"server; its memory alone): started in {mem['cold_s']:.2f} s; private (RssAnon) / "
            f"PSS / peak RSS {mem['at_start']['RssAnon']:.0f} / {mem['at_start']['Pss']:.0f} / "
            f"{mem['at_start']['VmHWM']:.0f} MB at start, {mem['after']['RssAnon']:.0f} / "
            f"{mem['after']['Pss']:.0f} / {mem['after']['VmHWM']:.0f} MB after the searches.",
        ]
    cold = pods["cache, cold"]
    if "changed_requests" in cold:
        lines += [
            "",
            f"After 1% changed, the cold pod's refresh to version {cold['changed_versions'][1]} "
            f"took {cold['changed_refresh_s']:.2f} s, "
            f"{sum(cold['changed_requests'].values())} requests "
            f"({json.dumps(cold['changed_requests'])}), {cold['changed_bytes'] / 2**20:.2f} MB "
            f"(the version added {r['delta_added_bytes'] / 2**20:.2f} MB on S3).",
        ]
    if "fleet" in r:
        lines += ["", render_fleet(r["fleet"])]
    return "\n".join(lines)


def render_fleet(f: dict[str, Any]) -> str:
    lines: list[str] = []
    per_min = sorted(p["requests_per_min"] for p in f["pods"])
    errors = sum(len(p["errors"]) for p in f["pods"]) + len(f["indexer_errors"])
    private = sorted(p["memory"]["RssAnon"] for p in f["pods"])
    pss = sorted(p["memory"]["Pss"] for p in f["pods"])
    peak = sorted(p["memory"]["VmHWM"] for p in f["pods"])
    switched = sorted(len(p["switches"]) - 1 for p in f["pods"])
    lines += [
        "",
        f"Fleet: {len(f['pods'])} pods, one node cache folder, {len(f['commits'])} commits "
        f"of 1% each (indexer {min(c[2] for c in f['commits']):.1f}-"
        f"{max(c[2] for c in f['commits']):.1f} s per run):"
        if f["commits"]
        else "Fleet:",
        "",
        "| requests per pod per minute (min / median / max) | staleness at switch p50 / max "
        "| at first search p50 / max | versions behind (max) | errors | searches "
        "| private / PSS per pod (median) |",
        "|---|---|---|---|---|---|---|",
        f"| {per_min[0]:.1f} / {per_min[len(per_min) // 2]:.1f} / {per_min[-1]:.1f} | "
        f"{f['switch_stale_p50_s']:.1f} / {f['switch_stale_max_s']:.1f} s | "
        f"{f['stale_p50_s']:.1f} / {f['stale_max_s']:.1f} s | {f['versions_behind_max']} | "
        f"{errors} | {sum(p['searches'] for p in f['pods'])} | "
        f"{private[len(private) // 2]:.0f} / {pss[len(pss) // 2]:.0f} MB |",
        "",
        f"A refresh that switched version took {f['switch_refresh_p50_s']:.2f} s (median) "
        f"and {f['switch_refresh_max_s']:.2f} s (max), download included. Each pod switched "
        f"{switched[0]}-{switched[-1]} times; at the end, private (RssAnon) "
        f"{private[0]:.0f}-{private[-1]:.0f} MB, PSS {pss[0]:.0f}-{pss[-1]:.0f} MB, peak RSS "
        f"{peak[0]:.0f}-{peak[-1]:.0f} MB (median {peak[len(peak) // 2]:.0f}). Searches "
        "p50 / p95 / p99 / max: "
        + " / ".join(f"{ms:.0f}" for ms in f.get("search_ms", []))
        + f" ms. Load average "
        f"{f['load'][0]:.1f} when the indexer started, {f['load'][-1]:.1f} when it stopped.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--pod":
        config = json.loads(args[1])
        if config.get("tune"):  # as `agentkernel-kb serve` starts: its allocator settings
            from agentkernel.cli._allocator import tune_process

            tune_process()
        mode = "fleet" if config.get("fleet") else config.get("mode", "single")
        pod = {"fleet": fleet_pod, "memory": memory_pod, "single": single_pod}[mode]
        print(json.dumps(pod(config)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--direct-queries", type=int, default=20, help="0: no pod reading S3 directly"
    )
    parser.add_argument("--pods", type=int, default=16)
    parser.add_argument("--refresh", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=15.0)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between a pod's searches")
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parser.add_argument("--baseline", type=Path, help="another tree's src/ to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fleet-src", type=Path, help="the fleet pods' src/ (default: this tree)")
    parser.add_argument("--only-compare", action="store_true")
    parser.add_argument("--only-fleet", action="store_true")
    parser.add_argument(
        "--pod-env",
        action="store_true",
        help="also compare baseline pods run with POD_ENV; the fleet's pods get it too",
    )
    parser.add_argument(
        "--pod-tune",
        action="store_true",
        help="pods apply their own tree's allocator settings first, as `agentkernel-kb serve`",
    )
    parser.add_argument(
        "--build-in-s3",
        action="store_true",
        help="run the first build against S3 (default: build locally once, upload the files)",
    )
    parsed = parser.parse_args(args)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    with tempfile.TemporaryDirectory(prefix="index-pods-") as scratch:
        result = run(parsed, Path(scratch))
    _log(json.dumps(result, default=str)[:20000])
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

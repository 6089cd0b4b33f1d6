#!/usr/bin/env python3
"""One index pod, stage by stage, in this fresh process: seconds and memory of each stage.

Prints one JSON line: cold start (construction plus a first search), search p50 and top-1
over the queries, and after each stage (importing the library, importing Lance, constructing
``OKFManager(index=...)``, the first search, every query, a browse and the schema) the peak
RSS (``VmHWM``), private (``RssAnon``) and file-backed (``RssFile``) memory in MB, and the
seconds since the interpreter started (``at_s``; ``interpreter_s`` is the interpreter's own
start before this script ran). Inside the construction, the time spent in each part of the
open (``open_parts``: the version listing, making the version complete in the node cache,
Lance's open, the view's load) is timed by wrapping those functions. Run it with
``PYTHONPATH`` pointing at the source tree to measure (an older commit's ``src`` for "before").

With ``--s3 ENDPOINT`` the index is ``s3://index-bench/n<SIZE>/kb.lance`` on that S3 API
server, read through the latency proxy (20 ms a request, in this process) into the node
cache ``--cache``: a first run fills it (cold start), a second is a restart on a warm cache.

Usage:
    agentkernel-kb index BUNDLE --to INDEX
    python bench/index_pod_stages.py BUNDLE INDEX QUERIES.json   # [[text, target id], ...]
    python bench/index_pod_stages.py BUNDLE s3://index-bench/n100000/kb.lance QUERIES.json \
        --s3 http://127.0.0.1:PORT --cache /tmp/node
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from typing import Any

_T0 = time.perf_counter()


def _memory() -> dict[str, float]:
    found: dict[str, float] = {"at_s": round(time.perf_counter() - _T0, 3)}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                found[key] = int(value.split()[0]) // 1024
    return found


def _interpreter_seconds() -> float:
    """Seconds from this process' start to this script's first line (the interpreter's own)."""
    import os

    with open(f"/proc/{os.getpid()}/stat") as handle:
        started_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as handle:
        uptime = float(handle.read().split()[0])
    ticks = os.sysconf("SC_CLK_TCK")
    return max(0.0, uptime - started_ticks / ticks - (time.perf_counter() - _T0))


def _timed(parts: dict[str, float], owner: Any, name: str, label: str) -> None:
    """Wrap ``owner.name`` so the seconds spent in it add up in ``parts[label]``."""
    inner = getattr(owner, name, None)
    if inner is None:
        return

    @functools.wraps(inner)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        begun = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            parts[label] = round(parts.get(label, 0.0) + time.perf_counter() - begun, 3)

    setattr(owner, name, wrapper)


def main(args: argparse.Namespace) -> dict[str, Any]:
    interpreter = _interpreter_seconds()
    with open(args.queries) as handle:
        queries = json.load(handle)
    stages: dict[str, dict[str, float]] = {}
    parts: dict[str, float] = {}
    started = time.perf_counter()
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    stages["import agentkernel"] = _memory()
    proxy = None
    options: dict[str, str] = {}
    if args.s3:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from _proxy import LatencyProxy

        proxy = LatencyProxy(args.s3, args.delay)
        options = {
            "allow_http": "true",
            "aws_region": "us-east-1",
            "aws_access_key_id": "bench",
            "aws_secret_access_key": "bench",
            "aws_endpoint": proxy.endpoint,
            "node_cache": args.cache,
        }
    if not args.lazy:
        import lance  # noqa: F401

        stages["import lance"] = _memory()
    from agentkernel.knowledgebase.okf.bundleindex import _mirror as mirror
    from agentkernel.knowledgebase.okf.bundleindex import view

    _timed(parts, mirror.MirroredIndex, "latest", "version listing")
    _timed(parts, mirror.MirroredIndex, "_complete", "complete in node cache")
    _timed(parts, view.IndexView, "_load", "view load")
    store = LocalDocumentStore(args.bundle, writable=False)
    kb = OKFManager(
        store,
        index=args.index,
        index_options=options or None,
        refresh_seconds=None,
        max_concepts=10_000_000,
    )
    stages["construct"] = _memory()
    kb.search(queries[0][0], 10)
    cold = time.perf_counter() - started
    stages["first search"] = _memory()
    requests = sum(proxy.take().values()) if proxy else 0
    times = []
    hits = 0
    for text, target in queries:
        begun = time.perf_counter()
        found = kb.search(text, 10)
        times.append(time.perf_counter() - begun)
        hits += bool(found) and found[0]["metadata"]["id"] == target
    stages["all searches"] = _memory()
    kb.browse("", limit=50)
    kb.schema()
    stages["browse, schema"] = _memory()
    times.sort()
    return {
        "interpreter_s": round(interpreter, 3),
        "cold_s": round(cold, 3),
        "requests_to_first_answer": requests,
        "search_requests": sum(proxy.take().values()) / len(queries) if proxy else 0,
        "p50_ms": round(times[len(times) // 2] * 1e3, 1),
        "p95_ms": round(times[int(len(times) * 0.95)] * 1e3, 1),
        "top1": hits / len(queries),
        "open_parts": parts,
        "stages": stages,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    parser.add_argument("index")
    parser.add_argument("queries")
    parser.add_argument("--s3", help="the S3 API server's endpoint (the index is s3://...)")
    parser.add_argument("--cache", default="", help="the node cache folder (with --s3)")
    parser.add_argument("--delay", type=float, default=0.020, help="seconds added per request")
    parser.add_argument(
        "--lazy", action="store_true", help="do not import Lance before constructing"
    )
    print(json.dumps(main(parser.parse_args())))

#!/usr/bin/env python3
"""One index pod's memory, stage by stage, in this fresh process (before/after comparisons).

Prints one JSON line: cold start (construction plus a first search), search p50 and top-1
over the queries, and after each stage (importing the library, importing Lance, constructing
``OKFManager(index=...)``, the first search, every query, a browse and the schema) the peak
RSS (``VmHWM``), private (``RssAnon``) and file-backed (``RssFile``) memory in MB. Run it
with ``PYTHONPATH`` pointing at the source tree to measure (an older commit's ``src`` for
"before").

Usage:
    agentkernel-kb index BUNDLE --to INDEX
    python bench/index_pod_stages.py BUNDLE INDEX QUERIES.json   # [[text, target id], ...]
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def _memory() -> dict[str, int]:
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                found[key] = int(value.split()[0]) // 1024
    return found


def main(bundle: str, index: str, queries_path: str) -> dict[str, Any]:
    with open(queries_path) as handle:
        queries = json.load(handle)
    stages: dict[str, dict[str, int]] = {}
    started = time.perf_counter()
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    stages["import agentkernel"] = _memory()
    import lance  # noqa: F401

    stages["import lance"] = _memory()
    store = LocalDocumentStore(bundle, writable=False)
    kb = OKFManager(store, index=index, refresh_seconds=None, max_concepts=10_000_000)
    stages["construct"] = _memory()
    kb.search(queries[0][0], 10)
    cold = time.perf_counter() - started
    stages["first search"] = _memory()
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
        "cold_s": round(cold, 3),
        "p50_ms": round(times[len(times) // 2] * 1e3, 1),
        "top1": hits / len(queries),
        "stages": stages,
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))

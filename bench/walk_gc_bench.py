#!/usr/bin/env python3
"""What the cyclic garbage collector costs an OKF walk, and what ``gc.freeze()`` would buy.

Each mode walks the Debian bench bundle (``bench/_corpus.py``) in a fresh process:

* ``paused``: the collector switched off around the walk (what ``collector_paused()`` did);
* ``nothing``: the collector left alone;
* ``freeze``: left alone during the walk, then ``gc.freeze()`` moves everything alive into
  the permanent generation, so later full collections skip the manifest.

Reported per mode: walk wall and CPU seconds, how many collections ran during it, and the time
of one full ``gc.collect()`` afterwards (what every later generation-2 pass of a long-running
process costs with the manifest in it).

Usage:
    python bench/walk_gc_bench.py [--size 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MODES = ("paused", "nothing", "freeze")


def worker(mode: str, bundle: Path) -> dict[str, float]:
    import gc

    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    store = LocalDocumentStore(bundle, writable=False)
    before = sum(s["collections"] for s in gc.get_stats())
    wall, cpu = time.perf_counter(), time.process_time()
    if mode == "paused":
        gc.disable()
    manager = OKFManager(store, refresh_seconds=None, max_concepts=1_000_000)
    if mode == "paused":
        gc.enable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    collections = sum(s["collections"] for s in gc.get_stats()) - before
    if mode == "freeze":
        gc.freeze()
    start = time.perf_counter()
    gc.collect()
    full = time.perf_counter() - start
    assert manager.search("package", 1)
    return {"walk_s": wall, "cpu_s": cpu, "collections": collections, "full_gc_ms": full * 1e3}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="walk_gc_bench.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per mode")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--bundle", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.bundle)))
        return 0
    import _corpus

    corpus = _corpus.prepare(args.data, args.size, 10, 20260530, lambda m: None)
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for _ in range(args.runs):
        for mode in MODES:  # interleaved, so machine noise falls on every mode alike
            command = [sys.executable, __file__, "--worker", mode, "--bundle", str(corpus.bundle)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            samples[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"Walk of {args.size} Debian concepts, median of {args.runs} fresh processes per mode")
    print()
    print("| mode    | walk s | walk CPU s | collections in walk | full gc.collect() after, ms |")
    print("|---------|--------|------------|---------------------|-----------------------------|")
    for mode, runs in samples.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"| {mode:<7} | {med['walk_s']:6.2f} | {med['cpu_s']:10.2f} "
            f"| {med['collections']:19.0f} | {med['full_gc_ms']:27.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

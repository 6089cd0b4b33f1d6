#!/usr/bin/env python3
"""The walk's peak memory, side by side with another tree: a fresh process per walk.

Each walk is ``OKFManager(LocalDocumentStore(bundle))`` then one search, in a fresh process,
over the Debian bench bundle (``bench/_corpus.py``) of each ``--sizes``; three ways:

* ``off``: the lexical warm start off (``AGENTKERNEL_LEXICAL_CACHE=off``): the walk alone;
* ``cold``: the warm start on, its folder empty (the default on a first start): the walk,
  then the save of its file;
* ``warm``: the same folder again: the load of that file, and a listing.

Reported per tree and way: peak RSS (``VmHWM``), RSS after, walk wall and CPU seconds, the
median and range of ``--rounds`` rounds, the trees alternating in each round (this tree
first in even rounds), and the ratio of medians.

Usage:
    python bench/walk_memory_bench.py --other /work/wt/base12/src --sizes 10000,40000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
WAYS = ("off", "cold", "warm")


def worker(bundle: str) -> dict[str, float]:
    """Walk ``bundle`` in this process; its peak and the walk's seconds."""
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    wall, cpu = time.perf_counter(), time.process_time()
    kb = OKFManager(
        LocalDocumentStore(bundle, writable=False), refresh_seconds=None, max_concepts=10**7
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert kb.search("package", 1)
    found = {"walk_s": wall, "cpu_s": cpu}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                found[key] = int(value.split()[0]) / 1024
    return found


def walk(src: str, bundle: Path, cache: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": src, "AGENTKERNEL_LEXICAL_CACHE": cache}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", str(bundle)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="walk_memory_bench.py", description=__doc__)
    parser.add_argument("--other", help="the other tree's src/ folder (required)")
    parser.add_argument("--sizes", default="10000,40000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    if not args.other:
        parser.error("--other is required")
    import _corpus

    trees = [("this tree", str(HERE.parent / "src")), ("other", str(Path(args.other).resolve()))]
    sizes = [int(size) for size in args.sizes.split(",")]
    found: dict[tuple[str, int, str], list[dict[str, float]]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="walk-memory-"))
    try:
        for size in sizes:
            bundle = _corpus.prepare(args.data, size, 10, 20260530, _corpus.stderr_log).bundle
            for round_ in range(args.rounds):
                for name, src in trees if round_ % 2 == 0 else trees[::-1]:
                    cache = scratch / f"{name.replace(' ', '-')}-{size}"
                    shutil.rmtree(cache, ignore_errors=True)
                    for way in WAYS:
                        run = walk(src, bundle, "off" if way == "off" else str(cache))
                        found.setdefault((name, size, way), []).append(run)
                        print(f"[walk] {size} {name} {way}: {json.dumps(run)}", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(render(found, sizes, args.rounds))
    return 0


def render(
    found: dict[tuple[str, int, str], list[dict[str, Any]]], sizes: list[int], rounds: int
) -> str:
    lines = [
        f"Peak RSS of a fresh process walking the Debian bundle: median (min-max) of {rounds} "
        "rounds, trees alternating",
        "",
        "| concepts | warm start | measure | other | this tree | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for size in sizes:
        for way in WAYS:
            for key, label in (("VmHWM", "peak RSS MB"), ("walk_s", "walk s"), ("cpu_s", "CPU s")):
                cells = []
                medians = []
                for name in ("other", "this tree"):
                    values = [run[key] for run in found[(name, size, way)]]
                    medians.append(statistics.median(values))
                    cells.append(f"{medians[-1]:.3g} ({min(values):.3g}-{max(values):.3g})")
                ratio = medians[1] / medians[0] if medians[0] else float("nan")
                lines.append(
                    f"| {size:,} | {way} | {label} | {cells[0]} | {cells[1]} | {ratio:.2f} |"
                )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

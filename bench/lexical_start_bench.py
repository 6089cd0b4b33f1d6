"""Lexical start-up, side by side: this tree against another checkout (main), fresh processes.

For each version, in alternation, each measure in a fresh interpreter of its own:

* **build**: ``SearchIndex`` over the bundle's concepts (parsed beforehand in the same process,
  not timed): the engine build alone, wall and CPU seconds;
* **connect**: ``OKFManager(LocalDocumentStore(bundle))`` with the warm start off: the walk
  (list, read, parse) plus the build;
* **search, cold**: ``agentkernel-kb search BUNDLE QUERY`` end to end (``python -m
  agentkernel.cli``), an empty warm-start folder;
* **search, warm**: the same again, the folder holding the first run's file (this tree only:
  the other has no warm start, so its warm run is another cold one).

The machine is shared and noisy, so each row reports the median of ``--runs`` processes and
the ratio to the other version measured in the same minutes, and CPU seconds beside wall
seconds (CPU is not inflated by waiting for a core). Known-item latency against tantivy is
``okf_bench.py --systems okf,tantivy`` (run it once per checkout).

    python bench/lexical_start_bench.py --other /tmp/main-checkout [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402

QUERY = "python library for parsing yaml"

BUILD = """
import json, sys, time
from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.okf.manifest import search_fields
from agentkernel.retrieval import SearchIndex
kb = OKFManager(LocalDocumentStore(sys.argv[1], writable=False), refresh_seconds=None)
docs = [(c.id, search_fields(c), c.status) for c in kb._view.contents.concepts.values()]
wall, cpu = time.perf_counter(), time.process_time()
index = SearchIndex()
for key, fields, status in docs:
    index.add(key, fields, status=status)
index.search("warm", 1)  # a queued build counts its documents here
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""

CONNECT = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
kb = OKFManager(LocalDocumentStore(sys.argv[1], writable=False), refresh_seconds=None)
kb.search("warm", 1)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def _env(src: Path, cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    env["AGENTKERNEL_LEXICAL_CACHE"] = cache
    return env


def _inner(src: Path, script: str, bundle: Path) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", script, str(bundle)],
        env=_env(src, "off"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    wall, cpu = json.loads(out.strip().splitlines()[-1])
    return float(wall), float(cpu)


def _cli(src: Path, bundle: Path, cache: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # lexical: hybrid is the default where the embeddings extra is installed (issue 26)
    lexical = (
        ["--lexical"] if "--lexical" in (src / "agentkernel/cli/_bundle.py").read_text() else []
    )
    subprocess.run(
        [sys.executable, "-m", "agentkernel.cli", "search", str(bundle), QUERY, *lexical],
        env=_env(src, cache),
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per row (5)")
    parser.add_argument("--size", type=int, default=10_000, help="concepts (10000)")
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    args = parser.parse_args(argv)
    corpus = _corpus.prepare(args.data.resolve(), args.size, 200, 20260530, _corpus.stderr_log)
    bundle = corpus.bundle
    versions = {"this": HERE.parent / "src", "other": args.other.resolve() / "src"}
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for run in range(args.runs):
        for name, src in versions.items():
            row = rows.setdefault(name, {})
            row.setdefault("build", []).append(_inner(src, BUILD, bundle))
            row.setdefault("connect", []).append(_inner(src, CONNECT, bundle))
            folder = tempfile.mkdtemp(prefix="lexwarm-")
            try:
                row.setdefault("search, cold", []).append(_cli(src, bundle, folder))
                row.setdefault("search, warm", []).append(_cli(src, bundle, folder))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        print(f"[bench] run {run + 1}/{args.runs} done", file=sys.stderr)
    print(f"{len(corpus.concepts)} concepts, {args.runs} fresh processes per cell, medians")
    print()
    print("| measure | this: wall s | this: CPU s | other: wall s | other: CPU s | ratio (CPU) |")
    print("|---|---|---|---|---|---|")
    for measure in rows["this"]:
        cells = []
        cpus = []
        for name in versions:
            samples = rows[name][measure]
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            cells += [f"{wall:.2f}", f"{cpu:.2f}"]
            cpus.append(cpu)
        print(f"| {measure} | {' | '.join(cells)} | {cpus[0] / cpus[1]:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

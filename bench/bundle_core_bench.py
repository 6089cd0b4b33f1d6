#!/usr/bin/env python3
"""FileKnowledgeStore of two source trees side by side: the previous version against this one.

Issue #23 put ``FileKnowledgeStore`` on the bundle core (``BundlePagesStore`` over a
``LocalDocumentStore``, kept current by folder change tokens). This bench times the same
operations on the store of an older tree (``--before``, e.g. main's ``src`` extracted with
``git archive``) and of this tree, each in a fresh subprocess importing only its own tree,
alternating ``--rounds`` times so a shared machine's moments fall on both.

Per round and tree: a new folder grown to ``--pages`` pages (``create_many`` in batches of
100; every page links to the two created just before it, so ``check`` has links to follow),
then a new store object is opened on it and each operation is timed one call at a time (wall
clock p50 and user CPU mean over calls (``os.times().user``: the library's own work, without
the kernel's, which a busy disk inflates), then the median over rounds is reported; the disk's
``fsync`` dominates a write's wall clock on a shared machine):

* ``create``: 100 new pages, one ``create`` each (rewrites ``index.md``);
* ``edit``: 100 edits of distinct existing pages (a body change: ``index.md`` lines stay);
* ``check``: 20 calls;
* ``search``: 200 queries of three words of a page;
* ``read``: 200 reads.

Usage:
    git archive main src | tar -x -C /tmp/before
    python bench/bundle_core_bench.py --before /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
WORDS = [f"w{n:04d}" for n in range(4000)]
OPS = ("create", "edit", "check", "search", "read")


def _content(rng: random.Random, n: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(60))
    links = " ".join(f"[p{m}](concept/p{m})" for m in (n - 1, n - 2) if m >= 0)
    return f"{words}.\n\nSee {links}.\n\nEND {n}." if links else f"{words}.\n\nEND {n}."


def _worker(pages: int, folder: Path) -> dict[str, float]:
    from agentkernel.knowledgestore import FileKnowledgeStore, NewPage

    rng = random.Random(7)
    grow = FileKnowledgeStore(folder)
    batch: list[Any] = []
    texts: dict[int, str] = {}
    for n in range(pages):
        texts[n] = _content(rng, n)
        batch.append(NewPage("concept", f"p{n}", f"Page {n}", texts[n]))
        if len(batch) == 100:
            grow.create_many(batch)
            batch = []
    if batch:
        grow.create_many(batch)
    store = FileKnowledgeStore(folder)
    store.list()  # loads the catalog: not timed
    times: dict[str, list[float]] = {op: [] for op in OPS}
    cpu: dict[str, float] = dict.fromkeys(OPS, 0.0)  # user CPU of all calls of each operation

    def timed(op: str, call: Any) -> None:
        start_cpu = os.times().user  # 10 ms ticks: summed over an operation's calls, then split
        start = time.perf_counter()
        call()
        times[op].append(time.perf_counter() - start)
        cpu[op] += os.times().user - start_cpu

    for k in range(100):
        n = pages + k
        texts[n] = _content(rng, n)
        timed("create", lambda n=n: store.create("concept", f"p{n}", f"Page {n}", texts[n]))
    for n in rng.sample(range(pages), 100):  # distinct pages: each edit finds its text
        timed("edit", lambda n=n: store.edit(f"concept/p{n}", f"END {n}.", f"END {n} ed."))
        texts[n] = texts[n].replace(f"END {n}.", f"END {n} ed.")
    for _ in range(20):
        timed("check", store.check)
    for _ in range(200):
        words = texts[rng.randrange(pages)].split()[:60]
        start = rng.randrange(len(words) - 3)
        query = " ".join(words[start : start + 3])
        timed("search", lambda query=query: store.search(query))
    for n in [rng.randrange(pages) for _ in range(200)]:
        timed("read", lambda n=n: store.read(f"concept/p{n}"))
    result = {op: statistics.median(values) * 1000 for op, values in times.items()}
    result.update({f"{op} user": cpu[op] * 1000 / len(times[op]) for op in OPS})
    return result


def _run(src: Path, pages: int, scratch: Path) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(dir=scratch))
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--pages", str(pages), "--folder", str(folder)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    """Run the comparison (or, with ``--worker``, one side of it) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, help="the older tree's src folder")
    parser.add_argument("--pages", type=int, default=1100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.pages, args.folder)))
        return
    trees = {"before": args.before, "this tree": HERE / "src"}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(args.rounds):
            for name, src in trees.items():
                rows[name].append(_run(src, args.pages, Path(scratch)))
                print(f"round {number + 1}: {name} done", file=sys.stderr)
    keys = [*OPS, *(f"{op} user" for op in OPS)]
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in keys}
        for name, runs in rows.items()
    }
    print(
        f"FileKnowledgeStore, {args.pages:,} pages, ms per call: wall clock p50, then user"
        f" CPU mean (median of {args.rounds} rounds)\n"
    )
    print("| tree | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for name, values in medians.items():
        print(f"| {name} | " + " | ".join(f"{values[key]:.3f}" for key in keys) + " |")
    ratio = {
        key: medians["this tree"][key] / medians["before"][key] if medians["before"][key] else 0.0
        for key in keys
    }
    print("| this / before | " + " | ".join(f"{ratio[key]:.2f}x" for key in keys) + " |")
    print("\nPer round (this / before):")
    for number in range(args.rounds):
        before, now = rows["before"][number], rows["this tree"][number]
        print(
            f"round {number + 1}: " + ", ".join(f"{op} {now[op] / before[op]:.2f}x" for op in OPS)
        )


if __name__ == "__main__":
    main()

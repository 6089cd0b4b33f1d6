#!/usr/bin/env python3
"""The cost of the one ranking-rule set: the engine's search, this tree beside another.

Issue 23 moved the title, status and trust rules into ``agentkernel.retrieval.ranking.rank``,
which the engine now calls on every search's candidate pool. This bench builds the same
``SearchIndex`` over the Debian bench corpus (``bench/_corpus.py``: 10,000 concepts, the
fields ``OKFManager`` indexes) in each tree's code, each in its own process, runs the same
known-item queries, and prints p50/p95 search latency side by side, with the ratio, and
whether the two trees return the same top-10 ids for every query.

Usage:
    git archive main src | tar -x -C /tmp/main-tree     # the previous version's code
    python bench/ranking_bench.py --other /tmp/main-tree/src
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402

WORKER = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from agentkernel.retrieval import SearchIndex
rows = json.load(open(sys.argv[2]))
index = SearchIndex()
for row in rows["concepts"]:
    index.add(row["id"], row["fields"], status=row.get("status"))
index.warm_up()
tops, times = [], []
for round_ in range(int(sys.argv[3])):
    for query in rows["queries"]:
        started = time.perf_counter()
        hits = index.search(query, 10)
        times.append(time.perf_counter() - started)
        if round_ == 0:
            tops.append([str(h[0]) for h in hits])
times.sort()
print(json.dumps({
    "p50_us": 1e6 * times[len(times) // 2],
    "p95_us": 1e6 * times[int(len(times) * 0.95)],
    "tops": tops,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(prog="ranking_bench.py", description=__doc__)
    parser.add_argument("--other", type=Path, required=True, help="the other tree's src")
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20260530)
    args = parser.parse_args()
    corpus = _corpus.prepare(args.data, args.size, args.queries, args.seed, _corpus.stderr_log)
    statuses = ("deprecated", "superseded", None, None, None, None, None, None)
    rows = {
        "concepts": [
            {
                "id": c.id,
                "status": statuses[i % len(statuses)],
                "fields": {
                    "title": c.title,
                    "tags": c.tags,
                    "description": c.description,
                    "type": "package",
                    "id": c.id,
                    "body": c.body[:16384],
                },
            }
            for i, c in enumerate(corpus.concepts)
        ],
        # known-item queries, then each concept's title (the title rule's case)
        "queries": [q.text for q in corpus.queries]
        + [c.title for c in corpus.concepts[: args.queries]],
    }
    payload = args.data / "ranking_bench.json"
    payload.write_text(json.dumps(rows))
    mine = HERE.parent / "src"
    results = {}
    for name, src in (("this tree", mine), ("other", args.other.resolve())):
        out = subprocess.run(
            [sys.executable, "-c", WORKER, str(src), str(payload), str(args.rounds)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        results[name] = json.loads(out)
    this, other = results["this tree"], results["other"]
    same = sum(a == b for a, b in zip(this["tops"], other["tops"], strict=True))
    print(
        f"SearchIndex.search, {args.size} concepts, {len(rows['queries'])} queries x {args.rounds}"
    )
    print("| tree | p50 us | p95 us |\n|---|---|---|")
    for name, found in results.items():
        print(f"| {name} | {found['p50_us']:.0f} | {found['p95_us']:.0f} |")
    ratio = this["p50_us"] / other["p50_us"]
    print(f"p50 ratio this/other: {ratio:.2f}; same top-10 ids: {same}/{len(this['tops'])}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Is the answer ranked first? Natural-language questions, lexical and hybrid, per question set.

Three question sets, each over the bundles its questions were written for:

* ``questions`` (dev, tuned on): ``bench/questions.jsonl``, 145 questions over the shared ga4
  and crypto_bitcoin bundles and the example bundle;
* ``debian dev`` (dev, tuned on): ``bench/dev_questions_debian.jsonl``, 82 questions over the
  10,000-package Debian bundle of seed 20260530;
* ``held-out`` (never tuned on): ``bench/heldout_questions.jsonl``, 94 questions written
  before the ranking changes of issue 40 over knowledge-catalog's stackoverflow and
  acme_retail bundles and the Debian bundle of seed 13.

"lexical" is ``OKFManager`` without an embedder, "hybrid" with the default embedder (what an
agent gets); each search asks for 10 results. Top-1, MRR@10 and R@5 per set and per bundle.
Run it once per tree (``PYTHONPATH=<tree>/src``) to compare versions side by side.

The knowledge-catalog bundles are not in the repository: extract them from a clone at
commit e794541 (the commit the shared ga4 and crypto_bitcoin come from), e.g.
``git -C <clone> archive e794541 okf/bundles | tar -x -C /tmp/kc``, then ``--kc
/tmp/kc/okf/bundles``.

Usage:
    python bench/heldout_questions_bench.py --kc /tmp/kc/okf/bundles
    python bench/heldout_questions_bench.py --kc DIR --systems lexical --sets held-out
    python bench/heldout_questions_bench.py --kc DIR --json out.json   # every question's rank
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import retrieval_bench  # noqa: E402

SETS = {
    "questions": HERE / "questions.jsonl",
    "debian dev": HERE / "dev_questions_debian.jsonl",
    "held-out": HERE / "heldout_questions.jsonl",
}
DEBIAN = {"debian-10000": 20260530, "debian-10000-s13": 13}
Search = Callable[[str], list[str]]


def _log(message: str) -> None:
    print(f"[questions] {message}", file=sys.stderr, flush=True)


def load(path: Path) -> list[dict[str, str]]:
    """The questions of one file (``#`` lines are comments)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in lines if x.strip() and not x.lstrip().startswith("#")]


def roots(args: argparse.Namespace, wanted: set[str]) -> dict[str, Path]:
    """Each wanted bundle's folder."""
    found: dict[str, Path] = dict(retrieval_bench.bundle_roots(args.shared))
    for name in ("stackoverflow", "acme_retail"):
        if args.kc is not None:
            found[name] = args.kc / name
    for name, seed in DEBIAN.items():
        if name in wanted:
            found[name] = _corpus.prepare(args.data, 10_000, 10, seed, _log).bundle
    missing = wanted - found.keys()
    if missing:
        raise SystemExit(f"no folder for {sorted(missing)} (--kc?)")
    return {name: found[name] for name in wanted}


def searcher(root: Path, system: str, cache: Path) -> Search:
    from agentkernel.knowledgebase import LocalDocumentStore, OKFManager

    manager = OKFManager(
        LocalDocumentStore(root, writable=False),
        refresh_seconds=None,
        embedder="default" if system == "hybrid" else None,
        cache_dir=cache if system == "hybrid" else None,
    )
    return lambda q: [str(r["metadata"]["id"]) for r in manager.search(q, 10)]


def metrics(ranks: Sequence[int]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "top1": sum(r == 1 for r in ranks) / n,
        "mrr10": sum(1.0 / r for r in ranks if r) / n,
        "r5": sum(0 < r <= 5 for r in ranks) / n,
        "n": len(ranks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="heldout_questions_bench.py", description=__doc__)
    parser.add_argument("--kc", type=Path, help="knowledge-catalog's okf/bundles folder")
    parser.add_argument("--shared", type=Path, default=retrieval_bench.SHARED)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    parser.add_argument("--systems", default="lexical,hybrid")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", type=Path, help="write every question's rank here")
    args = parser.parse_args(argv)
    sets = {name: load(SETS[name]) for name in args.sets.split(",")}
    wanted = {q["bundle"] for rows in sets.values() for q in rows}
    folders = roots(args, wanted)
    ranks: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for system in args.systems.split(","):
        for bundle, root in sorted(folders.items()):
            _log(f"{system}: {bundle}")
            search = searcher(root, system, args.cache)
            for set_name, rows in sets.items():
                for q in rows:
                    if q["bundle"] != bundle:
                        continue
                    found = search(q["question"])
                    rank = found.index(q["concept"]) + 1 if q["concept"] in found else 0
                    ranks.setdefault(system, {}).setdefault(set_name, []).append(
                        {**q, "rank": rank, "top": found[:3]}
                    )
    print("| set | system | top-1 | MRR@10 | R@5 | n |\n|---|---|---|---|---|---|")
    for set_name in sets:
        for system, by_set in ranks.items():
            rows = by_set.get(set_name, [])
            m = metrics([r["rank"] for r in rows])
            print(
                f"| {set_name} | {system} | {m['top1']:.3f} | {m['mrr10']:.3f} | "
                f"{m['r5']:.3f} | {m['n']} |"
            )
    print("\n| set | bundle | system | top-1 | MRR@10 | R@5 | n |\n|---|---|---|---|---|---|---|")
    for set_name in sets:
        for system, by_set in ranks.items():
            rows = by_set.get(set_name, [])
            for bundle in sorted({r["bundle"] for r in rows}):
                m = metrics([r["rank"] for r in rows if r["bundle"] == bundle])
                print(
                    f"| {set_name} | {bundle} | {system} | {m['top1']:.3f} | {m['mrr10']:.3f} "
                    f"| {m['r5']:.3f} | {m['n']} |"
                )
    if args.json:
        args.json.write_text(json.dumps(ranks, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

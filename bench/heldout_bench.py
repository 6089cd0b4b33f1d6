"""Engine parameters on held-out Debian known-item queries (how the retune was chosen).

The queries are made like the bench's own (8 consecutive body words, the target their
concept) but with other seeds, so the bench's 200 queries and the questions stay unseen by
the tuning. Each configuration is a ``SearchIndex`` over the same fields OKFManager gives
it; tantivy (plain and ``en_stem``) runs beside them over the joined text.

    python bench/heldout_bench.py --size 40000             # seeds 99, 7, 3; 600 queries each
    python bench/heldout_bench.py --size 10000 --seeds 99
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402
import _peers  # noqa: E402

from agentkernel.retrieval import SearchIndex  # noqa: E402

SEED = 20260530  # the bench's corpus seed (its own queries are drawn with it, never used here)
BEFORE = {"title": 3, "aliases": 2, "tags": 2, "id": 1.5, "description": 1.5, "type": 1, "body": 1}
FLAT = dict.fromkeys(BEFORE, 1.0)
GRADED = {**FLAT, "title": 2, "aliases": 1.5, "tags": 1.5, "description": 1.25}
MILD = {**FLAT, "title": 1.5, "aliases": 1.25, "tags": 1.25, "description": 1.125}
MILDER = {**FLAT, "title": 1.25, "aliases": 1.125, "tags": 1.125, "description": 1.0625}
CONFIGS: dict[str, tuple[dict[str, float], float, float, float]] = {
    "before (3/2/2/1.5/1.5, k1 0.5, boost 1)": (BEFORE, 0.5, 0.5, 1.0),
    "before, k1 0.3, boost 0.5": (BEFORE, 0.3, 0.5, 0.5),
    "flat, k1 0.3, boost 0.5": (FLAT, 0.3, 0.5, 0.5),
    "flat, k1 0.4, boost 0.5": (FLAT, 0.4, 0.5, 0.5),
    # graded (issue 12: title > aliases and tags > description > body), k1 0.4, boost 0.5
    "graded 2/1.5/1.5/1.25 (title/aliases,tags/description), id 1": (GRADED, 0.4, 0.5, 0.5),
    "graded 1.5/1.25/1.25/1.125, id 1": (MILD, 0.4, 0.5, 0.5),
    "graded 1.25/1.125/1.125/1.0625, id 1 (default)": (MILDER, 0.4, 0.5, 0.5),
}
# the phrase rule on the default engine: name -> (phrase_boost, phrase_pool)
PHRASES: dict[str, tuple[float, int]] = {
    f"default + phrase {boost} pool {pool}": (boost, pool)
    for boost in (0.1, 0.25, 0.5, 1.0)
    for pool in (0, 50)
}


def mrr(search: Callable[[str], list[str]], queries: list[_corpus.Query]) -> float:
    total = 0.0
    for query in queries:
        ids = search(query.text)
        if query.target in ids:
            total += 1.0 / (ids.index(query.target) + 1)
    return total / len(queries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40_000)
    parser.add_argument("--seeds", default="99,7,3")
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--data", type=Path, default=HERE / ".data")
    parser.add_argument("--configs", default="", help="comma-separated names to run")
    parser.add_argument("--no-peers", action="store_true", help="skip tantivy")
    args = parser.parse_args()
    corpus = _corpus.prepare(args.data, args.size, 10, SEED, _corpus.stderr_log)
    concepts = corpus.concepts
    seeds = [int(s) for s in args.seeds.split(",")]
    sets = {seed: _corpus.make_queries(concepts, args.queries, seed) for seed in seeds}
    rows: dict[str, list[float]] = {}
    runs = {name: (*config, 0.0, 0) for name, config in CONFIGS.items()}
    runs.update({name: (MILDER, 0.4, 0.5, 0.5, *phrase) for name, phrase in PHRASES.items()})
    for name, (weights, k1, b, boost, phrase, pool) in runs.items():
        if not any(part in name for part in args.configs.split(",")):
            continue
        index = SearchIndex(
            weights, k1=k1, b=b, title_boost=boost, phrase_boost=phrase, phrase_pool=pool
        )
        for c in concepts:
            index.add(c.id, {"title": c.title, "tags": c.tags, "description": c.description,
                             "type": "package", "id": c.id, "body": c.body})  # fmt: skip
        rows[name] = [
            mrr(lambda q, i=index: [str(h.key) for h in i.search(q, 10)], sets[s]) for s in seeds
        ]
    docs = [
        _peers.Doc(c.id, c.title, c.description, " ".join(c.tags), "package", c.body)
        for c in concepts
    ]
    for stem in () if args.no_peers else (False, True):
        peer = _peers.TantivyPeer(stem)
        peer.build(docs)
        rows[peer.name] = [mrr(lambda q, p=peer: p.search(q, 10), sets[s]) for s in seeds]
    print(f"Known-item MRR@10, {args.size} concepts, {args.queries} held-out queries per seed\n")
    header = ["engine", *(f"seed {s}" for s in seeds), "mean"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, values in rows.items():
        cells = [f"{v:.3f}" for v in [*values, sum(values) / len(values)]]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(json.dumps({name: [round(v, 4) for v in values] for name, values in rows.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""The query side of hybrid search, chosen on held-out data: what is embedded, fusion weight, depth.

Same two held-out sets as ``multivec_heldout_bench.py`` (never ``bench/questions.jsonl``): the
paraphrase corpus with query seeds 99, 7 and 3 (300 each, packages the official 500 queries
leave out) and the 82 dev questions over the 10,000 Debian packages with their descriptions
(``bench/dev_questions_debian.jsonl``), every concept in the pool. The document side is what
the library keeps (the unit vector along 0.8 x whole + 0.2 x name); the lexical side is BM25F
with the word-pair phrase rule (what a manager with an embedder builds).

Variants, each fused by ``semantic.blend``:

* what the query embedding sees: the raw query, the query without its question words
  (``analysis.QUERY_STOPWORDS``; all of them kept when nothing else is left), the unit mean of
  both vectors, and the stripped text only for question-shaped queries;
* the lexical weight of a question-shaped query (``wq``; other queries keep 0.45), under two
  rules for "question-shaped": ``lead`` (starts with a question word, or ends with ``?``) and
  ``any`` (contains a question word, or ends with ``?``) and ``stop`` (has a word of
  ``QUERY_STOPWORDS``: ``I``, ``my``, ``need``..., or ends with ``?``), and one weight for every
  query (``all``);
* candidate depth: each ranking's top 50, 100 or 200.

Usage:
    python bench/query_heldout_bench.py
    python bench/query_heldout_bench.py --queries 100 --seeds 99
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _corpus  # noqa: E402
import multivec_heldout_bench as mv  # noqa: E402
import retrieval_bench  # noqa: E402

WH = ("how", "what", "which", "why", "where", "when", "who")
_WORD = re.compile(r"[\w']+")
Pairs = list[tuple[str, str]]


def lead_rule(query: str) -> bool:
    """Question-shaped: starts with a question word or ends with a question mark."""
    words = _WORD.findall(query.casefold())
    return query.rstrip().endswith("?") or (bool(words) and words[0] in WH)


def any_rule(query: str) -> bool:
    """Question-shaped: contains a question word anywhere, or ends with a question mark."""
    return query.rstrip().endswith("?") or any(w in WH for w in _WORD.findall(query.casefold()))


def stop_rule(query: str) -> bool:
    """Worded like a person asks: has a word the lexical side drops, or ends with ``?``."""
    return query.rstrip().endswith("?") or stripped(query) != query


RULES: dict[str, Callable[[str], bool]] = {
    "lead": lead_rule,
    "any": any_rule,
    "stop": stop_rule,
    "all": lambda q: True,
}


def stripped(query: str) -> str:
    """The query without its question words (all kept when nothing else is left)."""
    from agentkernel.retrieval.analysis import QUERY_STOPWORDS

    tokens = query.split()
    kept = [t for t in tokens if re.sub(r"\W", "", t.casefold()) not in QUERY_STOPWORDS]
    return " ".join(kept) if kept else query


def unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def query_vectors(bundle: mv.Bundle, queries: Sequence[str]) -> dict[str, np.ndarray]:
    """The query matrix of each way to embed a query (not cached: queries are not documents)."""

    def embed(texts: list[str]) -> np.ndarray:
        out = [bundle.semantic._embed(texts[i : i + 64]) for i in range(0, len(texts), 64)]
        assert all(o is not None for o in out)
        return np.concatenate(out)  # type: ignore[arg-type]

    raw = embed(list(queries))
    strip = embed([stripped(q) for q in queries])
    question = np.asarray([lead_rule(q) for q in queries])[:, None]
    return {
        "raw": raw,
        "stripped": strip,
        "mean": unit(raw + strip),
        "stripped if question": np.where(question, strip, raw),
    }


def score(
    bundle: mv.Bundle, sets: dict[str, Pairs], weights: Sequence[float], texts: Sequence[str]
) -> dict[tuple[str, int, str, float], list[tuple[float, float, float]]]:
    """(query text, depth, rule, wq) -> one (top-1, R@10, MRR@10) per query set."""
    from agentkernel.retrieval.semantic import LEXICAL_WEIGHT, TEXT_WEIGHTS, blend

    full, short = bundle.matrices["full"], bundle.matrices["short"]
    docs = unit(TEXT_WEIGHTS[0] * full + TEXT_WEIGHTS[1] * short)
    rows: dict[tuple[str, int, str, float], list[tuple[float, float, float]]] = {}
    for name, pairs in sets.items():
        queries = [q for q, _ in pairs]
        targets = [t for _, t in pairs]
        shapes = {rule: [test(q) for q in queries] for rule, test in RULES.items()}
        mv._log(
            f"{name}: question-shaped lead {sum(shapes['lead'])}, any {sum(shapes['any'])} "
            f"of {len(queries)}"
        )
        lexical = {
            depth: [
                [(str(h.key), h.score) for h in bundle.phrase.search(q, depth)] for q in queries
            ]
            for depth in (50, 100, 200)
        }
        acc: dict[tuple[str, int, str, float], list[tuple[float, float, float]]] = {}
        for text, qm in query_vectors(bundle, queries).items():
            if text not in texts:
                continue
            sims = qm @ docs.T
            for depth in (50, 100, 200):
                dense = [mv.top(bundle.keys, row, depth) for row in sims]
                for rule, shape in shapes.items():
                    for wq in weights:
                        if rule == "all" and wq != LEXICAL_WEIGHT and depth != 100:
                            continue
                        got = [
                            mv.metrics(
                                [k for k, _ in blend(lex, den, 10, wq if q else LEXICAL_WEIGHT)],
                                target,
                            )
                            for lex, den, q, target in zip(
                                lexical[depth], dense, shape, targets, strict=True
                            )
                        ]
                        acc[(text, depth, rule, wq)] = [tuple(np.mean(got, axis=0))]  # type: ignore[list-item]
        for key, value in acc.items():
            rows.setdefault(key, []).extend(value)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="query_heldout_bench.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    parser.add_argument("--dev", type=Path, default=HERE / "dev_questions_debian.jsonl")
    parser.add_argument("--seeds", default="99,7,3")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--weights", default="0.15,0.2,0.25,0.3,0.35,0.4,0.45")
    parser.add_argument("--texts", default="raw,stripped,mean,stripped if question")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    from agentkernel.retrieval import load_embedder

    embedder = load_embedder("default")
    weights = [float(w) for w in args.weights.split(",")]
    corpus = _corpus.prepare(args.data, 10_000, 10, mv.SEED, mv._log)
    lines = [json.loads(x) for x in args.dev.read_text().splitlines() if x.strip()]
    dev_pairs = [(r["question"], r["concept"]) for r in lines]
    dev = mv.Bundle(corpus.bundle, args.cache, embedder, ("full", "short"))
    dev_rows = score(dev, {"dev": dev_pairs}, weights, args.texts.split(","))
    pool = len(dev.keys)
    del dev
    heldout = mv.heldout_concepts(corpus)
    seeds = [int(s) for s in args.seeds.split(",")]
    sets = {
        str(s): [(c.description, c.id) for c in random.Random(s).sample(heldout, args.queries)]
        for s in seeds
    }
    scratch = Path(tempfile.mkdtemp(prefix="queryside-"))
    try:
        para = mv.Bundle(
            retrieval_bench.paraphrase_bundle(corpus, scratch),
            args.cache,
            embedder,
            ("full", "short"),
        )
        para_rows = score(para, sets, weights, args.texts.split(","))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"\n### query side: dev questions ({len(dev_pairs)}, {pool} concepts) "
        f"and paraphrase held out ({args.queries} x seeds {args.seeds})\n"
    )
    print(
        "| query text | depth | rule | wq | dev top-1 | dev R@10 | dev MRR@10 "
        "| para top-1 | para R@10 | para MRR@10 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    table = []
    for key, dvals in dev_rows.items():
        d = dvals[0]
        p = np.mean(np.asarray(para_rows[key]), axis=0)
        table.append((key, d, p))
    table.sort(key=lambda r: -(r[1][0] + r[2][0]))
    for (text, depth, rule, wq), d, p in table:
        print(
            f"| {text} | {depth} | {rule} | {wq} | {d[0]:.3f} | {d[1]:.3f} | {d[2]:.3f} | "
            f"{p[0]:.3f} | {p[1]:.3f} | {p[2]:.3f} |"
        )
    if args.out:
        args.out.write_text(
            json.dumps([[list(k), list(d), [list(v) for v in para_rows[k]]] for k, d, _ in table])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Vectors per concept, the lexical side and the fusion of hybrid search, chosen on held-out data.

Two held-out sets, never ``bench/questions.jsonl``:

* **paraphrase, held out**: the paraphrase bench's corpus (10,000 Debian packages without
  their one-line descriptions), queries drawn with seeds 99, 7 and 3 (300 each) among the
  packages the bench's own 500 queries leave out (as ``fusion_heldout_bench.py``);
* **dev questions**: ``bench/dev_questions_debian.jsonl``, natural questions over the same
  10,000 packages *with* their descriptions (the corpus bundle as built), written and
  committed before any engine ran on them.

For each concept several texts are embedded (through the shared vector cache, so each is
embedded once): ``full`` (the whole: title, description, body head, what one vector held
before), ``short`` (the name: title and description; on the paraphrase bundle the title
alone), and on request (``--kinds``) ``lead`` (title, description and the body's first
paragraph) and ``sentence`` (title, description and the body's first sentence). A dense
variant scores a concept by one of them, the best of several, a weighted sum, or the unit
vector along a weighted sum (``unit(...)``: what ``SemanticIndex.document_vectors`` keeps);
each is fused with the lexical ranking (BM25F, with and without the word-pair phrase rule) by
``semantic.blend`` at lexical weight 0.45; the ``--focus`` variants also at other weights and
by a gap-adaptive blend (the lexical weight moved, on the logit scale, toward the ranker whose
top score stands further above its second). Tables: top-1, R@10 and MRR@10 per variant.

Usage:
    python bench/multivec_heldout_bench.py               # both sets
    python bench/multivec_heldout_bench.py --queries 100 --seeds 99
    python bench/multivec_heldout_bench.py --sets dev --dev-pool cached
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _corpus  # noqa: E402
import retrieval_bench  # noqa: E402

SEED = 20260530  # the bench's corpus seed; its queries come from Random(SEED + 1)
Scored = list[tuple[str, float]]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def _log(message: str) -> None:
    print(f"[multivec] {message}", file=sys.stderr, flush=True)


def heldout_concepts(corpus: Any) -> list[Any]:
    """The paraphrase corpus's packages that the official bench's 500 queries leave out."""
    usable = [c for c in corpus.concepts if c.description.strip()]
    tested = {c.id for c in random.Random(SEED + 1).sample(usable, min(500, len(usable)))}
    return [c for c in usable if c.id not in tested]


def paragraph(body: str) -> str:
    return body.strip().split("\n\n", 1)[0].strip()


def sentence(body: str) -> str:
    return _SENTENCE.split(paragraph(body), 1)[0].strip()


def texts_of(concept: Any) -> dict[str, str]:
    from agentkernel.retrieval.embedders import document_text

    head = concept.body_head
    return {
        "full": document_text(concept.title, concept.description, head),
        "short": document_text(concept.title, concept.description, ""),
        "lead": document_text(concept.title, concept.description, paragraph(head)),
        "sentence": document_text(concept.title, concept.description, sentence(head)),
    }


def dense_variants(
    kinds: dict[str, np.ndarray], norms: dict[tuple[str, float], np.ndarray]
) -> dict[str, np.ndarray]:
    """Similarity matrices (queries x concepts) of each way to score a concept.

    ``norms[(other, w)]`` is the length of each concept's ``w * full + (1 - w) * other``:
    dividing by it scores the concept by one unit vector, their normalised mix.
    """
    full = kinds["full"]
    others = [k for k in kinds if k != "full"]
    out = dict(kinds)
    for other in others:
        out[f"max(full, {other})"] = np.maximum(full, kinds[other])
        for w in WEIGHTS:
            out[f"{w} full + {1 - w:.2f} {other}"] = mix = w * full + (1 - w) * kinds[other]
            out[f"unit({w} full + {1 - w:.2f} {other})"] = mix / norms[(other, w)]
    if len(kinds) > 2:
        out["max(all)"] = np.maximum.reduce(list(kinds.values()))
        out["mean(all)"] = sum(kinds.values()) / len(kinds)
    return out


WEIGHTS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9)


def top(keys: Sequence[str], row: np.ndarray, n: int) -> Scored:
    idx = np.argpartition(-row, n - 1)[:n]
    idx = idx[np.argsort(-row[idx], kind="stable")]
    return [(keys[i], float(row[i])) for i in idx]


def metrics(ranked: Sequence[str], target: str) -> tuple[float, float, float]:
    rank = ranked.index(target) + 1 if target in ranked[:10] else 0
    return float(rank == 1), float(rank > 0), 1.0 / rank if rank else 0.0


class Bundle:
    """One bundle opened with the embedder: concepts, their texts' vectors, lexical indexes."""

    def __init__(
        self,
        root: Path,
        cache: Path,
        embedder: Any,
        kinds: Sequence[str],
        keep: frozenset[str] | None = None,
        pool: frozenset[str] | None = None,
    ) -> None:
        from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
        from agentkernel.knowledgebase.okf.manifest import search_fields
        from agentkernel.retrieval.index import PHRASE_BOOST, SearchIndex
        from agentkernel.retrieval.semantic import SemanticIndex

        start = time.perf_counter()
        # lexical only: the texts of each kind are embedded below, through the same cache
        self.manager = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
        semantic = SemanticIndex(embedder, cache)
        concepts = list(self.manager._view.contents.concepts.values())
        if keep is not None:
            # a pool: the concepts whose whole text is cached already, and those in ``keep``
            from agentkernel.retrieval.embedders import text_hash

            cached = semantic.cache.get([text_hash(texts_of(c)["full"]) for c in concepts])
            concepts = [
                c for c in concepts if c.id in keep or text_hash(texts_of(c)["full"]) in cached
            ]
        if pool is not None:  # exactly these concepts (a pool shared by several models)
            concepts = [c for c in concepts if c.id in pool]
        self.keys = [c.id for c in concepts]
        texts = [texts_of(c) for c in concepts]
        self.matrices: dict[str, np.ndarray] = {}
        for kind in kinds:
            before = semantic.embedded
            vectors = semantic.vectors_for([t[kind] for t in texts], lambda done: None)
            assert vectors is not None
            self.matrices[kind] = np.stack(vectors)
            _log(f"{root.name}: {kind} ({semantic.embedded - before} embedded)")
        self.lexical = SearchIndex()  # what OKFManager's manifest builds
        self.phrase = SearchIndex(phrase_boost=PHRASE_BOOST)
        for c in concepts:
            self.lexical.add(c.id, search_fields(c), status=c.status)
            self.phrase.add(c.id, search_fields(c), status=c.status)
        self.semantic = semantic
        _log(f"{root.name}: opened in {time.perf_counter() - start:.0f} s")

    def lexical_lists(self, queries: Sequence[str]) -> dict[str, list[Scored]]:
        return {
            name: [[(str(h.key), h.score) for h in index.search(q, 100)] for q in queries]
            for name, index in (("bm25f", self.lexical), ("bm25f+phrase", self.phrase))
        }

    def query_matrix(self, queries: Sequence[str]) -> np.ndarray:
        vectors = []
        for q in queries:
            v = self.semantic._query_vector(q)
            assert v is not None
            vectors.append(v)
        return np.stack(vectors)


Fuser = Callable[[Scored, Scored], list[str]]


def fusers() -> dict[str, Fuser]:
    from agentkernel.retrieval.semantic import blend

    out: dict[str, Fuser] = {"dense only": lambda lex, den: [k for k, _ in den[:10]]}
    for w in (0.35, 0.4, 0.45, 0.5, 0.55):
        out[f"blend {w}"] = lambda lex, den, w=w: [k for k, _ in blend(lex, den, 10, w)]
    for w in (0.4, 0.45, 0.5):
        for a in (0.25, 0.5, 1.0):
            out[f"gap-adaptive blend {w}, a={a}"] = lambda lex, den, w=w, a=a: [
                k for k, _ in blend(lex, den, 10, adaptive_weight(lex, den, w, a))
            ]
    return out


def gap(scored: Scored) -> float:
    """How far a list's best stands out: its top-2 score gap in standard deviations."""
    if len(scored) < 2:
        return 0.0
    values = np.asarray([v for _, v in scored])
    spread = float(values.std())
    return (scored[0][1] - scored[1][1]) / spread if spread > 0 else 0.0


def adaptive_weight(lex: Scored, den: Scored, weight: float, strength: float) -> float:
    """The lexical weight moved (on the logit scale) toward the ranker more sure of its top."""
    logit = float(np.log(weight / (1 - weight))) + strength * (gap(lex) - gap(den))
    return 1.0 / (1.0 + float(np.exp(-logit)))


BASIC = ("dense only", "blend 0.45")
"""The fusions every dense variant is scored with; the focus variants get every fusion."""


def evaluate(
    bundle: Bundle,
    sets: dict[str, list[tuple[str, str]]],
    dense_names: Sequence[str] | None,
    focus: Sequence[str] = ("full",),
) -> dict[tuple[str, str, str], list[tuple[float, float, float]]]:
    """(lexical, dense variant, fuser) -> one (top-1, R@10, MRR@10) per query set."""
    rows: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    for pairs in sets.values():
        queries = [q for q, _ in pairs]
        targets = [t for _, t in pairs]
        qm = bundle.query_matrix(queries)
        kinds = {k: qm @ m.T for k, m in bundle.matrices.items()}
        full = bundle.matrices["full"]
        norms = {
            (other, w): np.linalg.norm(w * full + (1 - w) * bundle.matrices[other], axis=1)
            for other in bundle.matrices
            if other != "full"
            for w in WEIGHTS
        }
        variants = dense_variants(kinds, norms)
        if dense_names is not None:
            variants = {k: v for k, v in variants.items() if k in dense_names}
        lexical = bundle.lexical_lists(queries)
        for lex_name, lex_lists in lexical.items():
            acc = [0.0, 0.0, 0.0]
            for ranked, target in zip(lex_lists, targets, strict=True):
                acc = [
                    a + m for a, m in zip(acc, metrics([k for k, _ in ranked], target), strict=True)
                ]
            rows.setdefault((lex_name, "-", "lexical only"), []).append(
                tuple(a / len(pairs) for a in acc)  # type: ignore[arg-type]
            )
        for dense_name, sims in variants.items():
            dense_lists = [top(bundle.keys, row, 100) for row in sims]
            for lex_name, lex_lists in lexical.items():
                for fuse_name, fuse in fusers().items():
                    if fuse_name == "dense only" and lex_name != "bm25f":
                        continue
                    if dense_name not in focus and fuse_name not in BASIC:
                        continue
                    acc = [0.0, 0.0, 0.0]
                    for lex, den, target in zip(lex_lists, dense_lists, targets, strict=True):
                        acc = [
                            a + m for a, m in zip(acc, metrics(fuse(lex, den), target), strict=True)
                        ]
                    rows.setdefault((lex_name, dense_name, fuse_name), []).append(
                        tuple(a / len(pairs) for a in acc)  # type: ignore[arg-type]
                    )
    return rows


def print_rows(
    title: str, rows: dict[tuple[str, str, str], list[tuple[float, float, float]]]
) -> None:
    print(f"\n### {title}\n")
    print("| lexical | dense | fusion | top-1 | R@10 | MRR@10 | per set top-1 / R@10 |")
    print("|---|---|---|---|---|---|---|")
    ordered = sorted(rows.items(), key=lambda item: -np.mean([v[2] for v in item[1]]))
    for (lex, den, fuse), values in ordered:
        mean = np.mean(np.asarray(values), axis=0)
        per = ", ".join(f"{t:.3f}/{r:.3f}" for t, r, _ in values)
        print(f"| {lex} | {den} | {fuse} | {mean[0]:.3f} | {mean[1]:.3f} | {mean[2]:.3f} | {per} |")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="multivec_heldout_bench.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=HERE / ".data", help="Debian corpus cache")
    parser.add_argument("--cache", type=Path, default=HERE / ".data" / "vectors")
    parser.add_argument("--dev", type=Path, default=HERE / "dev_questions_debian.jsonl")
    parser.add_argument("--seeds", default="99,7,3")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--kinds", default="full,short")
    parser.add_argument("--sets", default="paraphrase,dev")
    parser.add_argument(
        "--focus", default="full", help="dense variants scored with every fusion (';'-separated)"
    )
    parser.add_argument(
        "--dev-pool",
        choices=("all", "cached"),
        default="all",
        help="dev questions over every concept, or only those already embedded and the targets",
    )
    parser.add_argument("--embed-only", action="store_true", help="fill the cache, no tables")
    parser.add_argument("--embedder", default="default", help="model name, folder or endpoint")
    args = parser.parse_args(argv)
    from agentkernel.retrieval import load_embedder

    embedder = load_embedder(args.embedder)
    kinds = args.kinds.split(",")
    corpus = _corpus.prepare(args.data, 10_000, 10, SEED, _log)
    chosen = args.sets.split(",")
    if "dev" in chosen:
        rows = [json.loads(x) for x in args.dev.read_text().splitlines() if x.strip()]
        targets = frozenset(r["concept"] for r in rows)
        keep = targets if args.dev_pool == "cached" else None
        dev = Bundle(corpus.bundle, args.cache, embedder, kinds, keep)
        if args.embed_only:
            chosen.remove("dev")
        pairs = [(r["question"], r["concept"]) for r in rows]
        missing = [t for _, t in pairs if t not in set(dev.keys)]
        assert not missing, missing
    if "dev" in chosen:
        print_rows(
            f"dev questions ({len(pairs)}), {len(dev.keys)} concepts",
            evaluate(dev, {"dev": pairs}, None, args.focus.split(";")),
        )
    if "paraphrase" in chosen:
        heldout = heldout_concepts(corpus)
        seeds = [int(s) for s in args.seeds.split(",")]
        sets = {
            str(s): [(c.description, c.id) for c in random.Random(s).sample(heldout, args.queries)]
            for s in seeds
        }
        scratch = Path(tempfile.mkdtemp(prefix="multivec-"))
        try:
            root = retrieval_bench.paraphrase_bundle(corpus, scratch)
            para = Bundle(root, args.cache, embedder, kinds)
            if args.embed_only:
                return 0
            print_rows(
                f"paraphrase held out ({args.queries} queries x seeds {args.seeds})",
                evaluate(para, sets, None, args.focus.split(";")),
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
